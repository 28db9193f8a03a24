// Reading the count and displacement arrays of v-collectives (see
// descriptor.h): team-size arrays of element counts and displacements,
// 32-bit entries unless the descriptor says 64. Both the host (validating
// user arguments) and the engine (after mapping the arrays through its
// memory adapter) read them with these functions.
#pragma once

#include <cstdint>
#include <cstring>

namespace ucc::off {

inline uint64_t vec_entry(const void* arr, bool wide, uint32_t i) {
  if (wide) {
    uint64_t v;
    memcpy(&v, static_cast<const char*>(arr) + 8 * size_t{i}, 8);
    return v;
  }
  uint32_t v;
  memcpy(&v, static_cast<const char*>(arr) + 4 * size_t{i}, 4);
  return v;
}

inline uint64_t vec_bytes(bool wide, uint32_t n) {
  return (wide ? 8 : 4) * uint64_t{n};
}

// The end (in elements) of the furthest non-empty block and the sum of
// the counts; `displs` may be null (blocks packed in rank order). false
// when a sum overflows.
inline bool vec_extent(const void* counts, const void* displs, bool wc, bool wd,
                       uint32_t n, uint64_t* end, uint64_t* total) {
  uint64_t packed = 0, far = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t c = vec_entry(counts, wc, i);
    uint64_t o = displs != nullptr ? vec_entry(displs, wd, i) : packed;
    uint64_t e;
    if (__builtin_add_overflow(o, c, &e) ||
        __builtin_add_overflow(packed, c, &packed))
      return false;
    if (c != 0 && e > far) far = e;
  }
  *end = far;
  *total = packed;
  return true;
}

}  // namespace ucc::off

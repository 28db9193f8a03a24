// Reading the count and displacement arrays of v-collectives (see
// descriptor.h and coll_traits.h): team-size arrays of element counts and
// displacements, 32-bit entries unless the descriptor says 64. The host
// (validating user arguments, reading its own memory) and the engine
// (through its memory adapter) scan them with the same function; only
// the reader differs.
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

// What a side's arrays say, in elements.
struct VecFacts {
  uint64_t end = 0;      // end of the furthest non-empty block
  uint64_t total = 0;    // sum of the counts
  uint64_t mine = 0;     // the count of block `me`
  uint64_t largest = 0;  // the largest count
};

// A reader of array entries: read(addr, wide, first, cnt, out) puts
// entries [first, first + cnt) of the n-entry array at `addr`, widened to
// 64 bits, into out[0, cnt); false when they cannot be read.
//
// Scans a counts array and a displacement array (0: blocks packed in rank
// order) of n entries. false when an array cannot be read or a sum
// overflows. The arrays come in pieces through a small buffer on the
// stack, so no memory of team size is needed.
template <typename Reader>
bool vec_scan(Reader&& read, uint64_t counts, uint64_t displs, bool wc, bool wd,
              uint32_t n, uint32_t me, VecFacts* f) {
  constexpr uint32_t kPiece = 64;
  uint64_t c[kPiece], o[kPiece];
  uint64_t packed = 0, far = 0, mine = 0, largest = 0;
  if (counts == 0) return false;
  for (uint32_t first = 0; first < n; first += kPiece) {
    const uint32_t m = n - first < kPiece ? n - first : kPiece;
    if (!read(counts, wc, first, m, c) ||
        (displs != 0 && !read(displs, wd, first, m, o)))
      return false;
    for (uint32_t i = 0; i < m; ++i) {
      const uint64_t at = displs != 0 ? o[i] : packed;
      uint64_t e;
      if (__builtin_add_overflow(at, c[i], &e) ||
          __builtin_add_overflow(packed, c[i], &packed))
        return false;
      if (c[i] != 0 && e > far) far = e;
      if (c[i] > largest) largest = c[i];
      if (first + i == me) mine = c[i];
    }
  }
  f->end = far;
  f->total = packed;
  f->mine = mine;
  f->largest = largest;
  return true;
}

// The reader for arrays in this process's own memory.
struct DirectReader {
  bool operator()(uint64_t addr, bool wide, uint32_t first, uint32_t cnt,
                  uint64_t* out) const {
    const void* arr = reinterpret_cast<const void*>(addr);
    for (uint32_t i = 0; i < cnt; ++i) out[i] = vec_entry(arr, wide, first + i);
    return true;
  }
};

}  // namespace ucc::off

// Monotonic time in nanoseconds (vDSO clock_gettime: no syscall).
#pragma once

#include <time.h>

#include <cstdint>

namespace ucc::plat {

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ucc::plat

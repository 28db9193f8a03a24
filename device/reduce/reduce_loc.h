// MAXLOC and MINLOC: reductions of {value, index} pairs, for reduce.cc
// and the GPU kernels; see reduce.h for the contract.
//
// Words: a "pair" is two values of one type T, the value first and its
// index second (MPI's 2INT layout); `n` counts pairs. The winner of two
// pairs is the one whose value is larger (MAXLOC) or smaller (MINLOC);
// when the values are equal, the one with the smaller index. A NaN value
// wins over every number for both ops (a NaN anywhere in the input shows
// in the result), and two NaN values tie. This ranks every pair in one
// total order (value class, value, index), so the result does not depend
// on the order in which a collective combines the ranks' pairs: only pairs
// that tie on both value and index can differ in their bits (+0.0 and
// -0.0, or two NaN payloads, with one index), and either may come back.
//
// The winner's value and index are copied together, bit for bit.
#pragma once

#include <cstddef>
#include <type_traits>

#include "device/reduce/hd.h"

namespace ucc::dev::loc {

// Also the GPU kernels' (device/gpu/gpu_kernels.h).
template <typename T, bool kMax>
UCC_HD inline bool x_wins(T xv, T xi, T yv, T yi) {
  const bool better = kMax ? xv > yv : xv < yv;
  if constexpr (std::is_floating_point_v<T>) {
    const bool xn = xv != xv, yn = yv != yv;
    const bool tie = xv == yv || (xn && yn);
    return (xn && !yn) || better || (tie && xi < yi);
  } else {
    return better || (xv == yv && xi < yi);
  }
}

// dst[i] = winner(a[i], b[i]) for i < n pairs. dst may be a or b exactly:
// both pairs are read before either half of dst is written.
template <typename T, bool kMax>
void loop(void* dst, const void* a, const void* b, size_t n) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) {
    const T xv = x[2 * i], xi = x[2 * i + 1];
    const T yv = y[2 * i], yi = y[2 * i + 1];
    const bool take_x = x_wins<T, kMax>(xv, xi, yv, yi);
    d[2 * i] = take_x ? xv : yv;
    d[2 * i + 1] = take_x ? xi : yi;
  }
}

template <typename T>
void reduce_pairs(bool is_max, void* d, const void* a, const void* b,
                  size_t n) {
  if (is_max)
    loop<T, true>(d, a, b, n);
  else
    loop<T, false>(d, a, b, n);
}

}  // namespace ucc::dev::loc

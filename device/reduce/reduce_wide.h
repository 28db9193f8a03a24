// Reduction loops for the wide types: 128-bit integers, IEEE binary128,
// x87 extended (kFloat80) and the complex types. Included by reduce.cc only (it
// is not an interface); kept apart so that reduce.cc's loops for the original
// twelve types stay exactly as they were.
//
// Words: a "component" is one real number of a complex element, real part
// first, then imaginary part.
//
// Element access goes through memcpy. These types are 16 or 32 bytes
// (float32 complex: 8) and their natural alignment (16 for __int128 and
// __float128) is more than user buffers often have: std::complex<double>
// is 8-aligned, and a packed stream of 128-bit values need not be 16-
// aligned. GCC turns each memcpy into unaligned moves (movdqu on x86-64,
// ldp/stp on AArch64), no slower than aligned ones on aligned data, so
// the loops work at any byte alignment instead of faulting where the
// vectoriser assumed 16. Each element is read whole before its slot is
// written: exact aliasing (dst == a or dst == b) is fine.
//
// Complex multiplication is written out as (a+bi)(c+di) = (ac-bd) +
// (ad+bc)i, not taken from std::complex: GCC's operator* calls
// __mulsc3/__muldc3 (C99 Annex G, which recovers infinities from NaN
// results, e.g. (inf+inf i)(1+0i)) unless built with -ffast-math or
// -fcx-limited-range, so its results on non-finite inputs would depend on
// build flags. The plain formula gives the same result on every build
// (NaN+NaN i in that example) and stays a branch-free, vectorisable loop.
// One caveat: where -march has FMA, GCC's default -ffp-contract=fast may
// fuse ac-bd into one multiply-add (one rounding fewer); the default
// x86-64 target has no FMA.
//
// binary128 arithmetic is software (libgcc's __addtf3, __multf3, ...; no
// libquadmath): correct, not fast. Measured on one AMD EPYC core at -O3,
// 4096 elements in L1/L2: float128 sum about 1.2 GB/s of output against
// 39 GB/s for float64; int128 sum 21 GB/s, complex64 prod 23 GB/s.
#pragma once

#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "offload/types.h"

namespace ucc::dev::wide {

using off::ROp;

#if defined(__SIZEOF_INT128__)
inline constexpr bool kHaveInt128 = true;
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 Uint128;
#else
inline constexpr bool kHaveInt128 = false;
#endif

// binary128: GCC's __float128 where it has one (x86-64), else C long
// double where that is binary128 (AArch64, where GCC has no __float128).
#if defined(__SIZEOF_FLOAT128__)
inline constexpr bool kHaveFloat128 = true;
__extension__ typedef __float128 Float128;
#define UCC_HAVE_FLOAT128 1
#elif LDBL_MANT_DIG == 113
inline constexpr bool kHaveFloat128 = true;
typedef long double Float128;
#define UCC_HAVE_FLOAT128 1
#else
inline constexpr bool kHaveFloat128 = false;
#endif

// x87 extended (off::DType::kFloat80): reduced where C long double is that
// format in a 16-byte slot (x86-64), natively; elsewhere unavailable.
#if LDBL_MANT_DIG == 64 && __SIZEOF_LONG_DOUBLE__ == 16
inline constexpr bool kHaveFloat80 = true;
#define UCC_HAVE_FLOAT80 1
#else
inline constexpr bool kHaveFloat80 = false;
#endif

template <typename T>
struct Complex {
  T re;
  T im;
};
static_assert(sizeof(Complex<float>) ==
              off::dtype_size(off::DType::kFloat32Complex));
static_assert(sizeof(Complex<double>) ==
              off::dtype_size(off::DType::kFloat64Complex));
#if defined(__SIZEOF_INT128__)
static_assert(sizeof(Uint128) == off::dtype_size(off::DType::kUint128));
#endif
#if defined(UCC_HAVE_FLOAT128)
static_assert(sizeof(Float128) == off::dtype_size(off::DType::kFloat128));
static_assert(sizeof(Complex<Float128>) ==
              off::dtype_size(off::DType::kFloat128Complex));
#endif

template <typename T>
inline T load(const void* base, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(base) + i * sizeof(T),
              sizeof(T));
  return v;
}

template <typename T>
inline void store(void* base, size_t i, const T& v) {
  std::memcpy(static_cast<unsigned char*>(base) + i * sizeof(T), &v, sizeof(T));
}

#if defined(UCC_HAVE_FLOAT80)
// An x87 value fills 10 bytes of its 16-byte slot; what a store of a long
// double leaves in the other 6 is whatever the stack held. Results are
// written with those 6 bytes zero, so that equal values give equal bytes
// (and no stack bytes leave the engine).
inline constexpr size_t kFloat80Bytes = 10;
static_assert(sizeof(long double) == off::dtype_size(off::DType::kFloat80));
static_assert(sizeof(Complex<long double>) ==
              off::dtype_size(off::DType::kFloat80Complex));

template <>
inline void store<long double>(void* base, size_t i, const long double& v) {
  unsigned char slot[sizeof(v)] = {};
  std::memcpy(slot, &v, kFloat80Bytes);
  std::memcpy(static_cast<unsigned char*>(base) + i * sizeof(v), slot,
              sizeof(v));
}

template <>
inline void store<Complex<long double>>(void* base, size_t i,
                                        const Complex<long double>& v) {
  store<long double>(base, 2 * i, v.re);
  store<long double>(base, 2 * i + 1, v.im);
}
#endif

// d[i] = f(a[i], b[i]) for i < n, at any alignment. F is a captureless
// lambda: one instantiation per (type, op), inlined like reduce.cc's
// functors.
template <typename T, typename F>
void each(void* d, const void* a, const void* b, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) store(d, i, f(load<T>(a, i), load<T>(b, i)));
}

#if defined(__SIZEOF_INT128__)
// Same rules as the narrow integers: everything but signed max/min works
// on the unsigned type, where wrap-around is defined.
inline void reduce_int128(ROp op, bool is_signed, void* d, const void* a,
                          const void* b, size_t n) {
  using U = Uint128;
  using S = Int128;
  switch (op) {
    case ROp::kSum:
      return each<U>(d, a, b, n, [](U x, U y) { return x + y; });
    case ROp::kProd:
      return each<U>(d, a, b, n, [](U x, U y) { return x * y; });
    case ROp::kMax:
      if (is_signed)
        return each<S>(d, a, b, n, [](S x, S y) { return x > y ? x : y; });
      return each<U>(d, a, b, n, [](U x, U y) { return x > y ? x : y; });
    case ROp::kMin:
      if (is_signed)
        return each<S>(d, a, b, n, [](S x, S y) { return x < y ? x : y; });
      return each<U>(d, a, b, n, [](U x, U y) { return x < y ? x : y; });
    case ROp::kLand:
      return each<U>(d, a, b, n,
                     [](U x, U y) { return U((x != 0) & (y != 0)); });
    case ROp::kLor:
      return each<U>(d, a, b, n,
                     [](U x, U y) { return U((x != 0) | (y != 0)); });
    case ROp::kLxor:
      return each<U>(d, a, b, n,
                     [](U x, U y) { return U((x != 0) ^ (y != 0)); });
    case ROp::kBand:
      return each<U>(d, a, b, n, [](U x, U y) { return x & y; });
    case ROp::kBor:
      return each<U>(d, a, b, n, [](U x, U y) { return x | y; });
    case ROp::kBxor:
      return each<U>(d, a, b, n, [](U x, U y) { return x ^ y; });
    default:
      return;  // kAvg, kNone
  }
}
#endif

// max/min keep the narrow types' rule: a NaN on either side returns b.
// T: Float128 (binary128) or long double (x87).
template <typename T>
inline void reduce_wide_float(ROp op, void* d, const void* a, const void* b,
                              size_t n) {
  switch (op) {
    case ROp::kSum:
    case ROp::kAvg:
      return each<T>(d, a, b, n, [](T x, T y) { return x + y; });
    case ROp::kProd:
      return each<T>(d, a, b, n, [](T x, T y) { return x * y; });
    case ROp::kMax:
      return each<T>(d, a, b, n, [](T x, T y) { return x > y ? x : y; });
    case ROp::kMin:
      return each<T>(d, a, b, n, [](T x, T y) { return x < y ? x : y; });
    default:
      return;  // logical and bitwise ops are integer-only
  }
}

// T is the component type: float, double, Float128 or long double (x87).
// Complex numbers are not ordered: no max/min.
template <typename T>
void reduce_complex(ROp op, void* d, const void* a, const void* b, size_t n) {
  using C = Complex<T>;
  switch (op) {
    case ROp::kSum:
    case ROp::kAvg:
      return each<C>(d, a, b, n, [](C x, C y) {
        return C{x.re + y.re, x.im + y.im};
      });
    case ROp::kProd:
      // The plain formula on purpose; see the top of this file.
      return each<C>(d, a, b, n, [](C x, C y) {
        return C{x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re};
      });
    default:
      return;
  }
}

// d[i] = d[i] / q for `ncomp` components (2 per complex element): dividing
// a complex number by a real one divides each part, rounded once each.
template <typename T>
void scale_components(void* d, size_t ncomp, T q) {
  for (size_t i = 0; i < ncomp; ++i) store(d, i, T(load<T>(d, i) / q));
}

}  // namespace ucc::dev::wide

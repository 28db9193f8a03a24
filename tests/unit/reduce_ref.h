// Independent references shared by the reduce and 16-bit conversion unit
// tests (test_reduce.cc, test_reduce_wide.cc, test_half.cc): a
// deterministic generator, an exact binary16 encoder/decoder, and 128-bit
// integer and binary128 references built from 64-bit words. None of them
// calls the library, nor the compiler's __int128 / __float128 arithmetic.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "offload/types.h"

namespace ucct::unit {

struct Rng {  // splitmix64: deterministic across platforms
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int small(int lo, int hi) {  // inclusive
    return lo + static_cast<int>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
};

// ---- Exact 16-bit encoders/decoders for the reference -------------------

// Value of a binary16 bit pattern, by the textbook formula.
inline double ref_half_value(uint16_t h) {
  const int sign = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v;
  if (e == 0x1F) {
    v = m ? std::numeric_limits<double>::quiet_NaN()
          : std::numeric_limits<double>::infinity();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), -24);
  } else {
    v = std::ldexp(static_cast<double>(m + 1024), e - 25);
  }
  return sign ? -v : v;
}

// Encodes a finite value exactly representable in binary16 (or, past
// 65504, infinity); rounds to nearest even otherwise, independently of the
// library: scale to the target ulp and let nearbyint (default mode: ties
// to even) round.
inline uint16_t ref_half_bits(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  double a = std::fabs(v);
  if (std::isnan(v)) return 0x7E00;
  if (std::isinf(v)) return sign | 0x7C00;
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);               // a = f * 2^e, f in [0.5, 1)
  int exp = std::max(e - 1, -14);  // unbiased exponent, clamped at subnormals
  double r = std::nearbyint(std::ldexp(a, 10 - exp));  // mantissa incl. lead
  if (r >= 2048) {  // rounding carried into the next binade
    r /= 2;
    ++exp;
  }
  if (exp > 15) return sign | 0x7C00;
  const int m = static_cast<int>(r);
  if (m < 1024) return sign | static_cast<uint16_t>(m);  // subnormal
  return sign | static_cast<uint16_t>(((exp + 15) << 10) | (m - 1024));
}

// ---- 128-bit words ------------------------------------------------------

// A 128-bit value as two 64-bit words. Its memory image is the native one
// of a 128-bit integer (and of binary128): low word first on little-endian
// hosts.
struct W128 {
  uint64_t lo;
  uint64_t hi;
  bool operator==(const W128& o) const { return lo == o.lo && hi == o.hi; }
};

inline constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

inline void put_w128(void* out, W128 w) {
  auto* p = static_cast<unsigned char*>(out);
  std::memcpy(p + (kLittleEndian ? 0 : 8), &w.lo, 8);
  std::memcpy(p + (kLittleEndian ? 8 : 0), &w.hi, 8);
}

inline W128 get_w128(const void* in) {
  const auto* p = static_cast<const unsigned char*>(in);
  W128 w;
  std::memcpy(&w.lo, p + (kLittleEndian ? 0 : 8), 8);
  std::memcpy(&w.hi, p + (kLittleEndian ? 8 : 0), 8);
  return w;
}

// Two's-complement arithmetic modulo 2^128, from 32-bit limbs.
inline W128 ref_add128(W128 a, W128 b) {
  const uint64_t lo = a.lo + b.lo;
  return {lo, a.hi + b.hi + (lo < a.lo ? 1 : 0)};
}

inline W128 ref_mul64_full(uint64_t a, uint64_t b) {
  const uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32;
  const uint64_t b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
  const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
  return {(mid << 32) | (p00 & 0xFFFFFFFFu),
          p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32)};
}

inline W128 ref_mul128(W128 a, W128 b) {
  W128 r = ref_mul64_full(a.lo, b.lo);
  r.hi += a.lo * b.hi + a.hi * b.lo;  // the rest is >= 2^128
  return r;
}

// a < b, as signed (two's complement) or unsigned 128-bit integers.
inline bool ref_less128(W128 a, W128 b, bool is_signed) {
  if (a.hi != b.hi) {
    return is_signed ? static_cast<int64_t>(a.hi) < static_cast<int64_t>(b.hi)
                     : a.hi < b.hi;
  }
  return a.lo < b.lo;
}

// ---- binary128 -----------------------------------------------------------

// binary128 image of a double that is zero or normal (every test value):
// same sign, exponent rebiased from 1023 to 16383, the 52 fraction bits
// at the top of the 112.
inline W128 ref_f128_bits(double v) {
  uint64_t u;
  std::memcpy(&u, &v, 8);
  const uint64_t sign = u >> 63, e = (u >> 52) & 0x7FF;
  const uint64_t m = u & ((uint64_t{1} << 52) - 1);
  W128 w{0, sign << 63};
  if (e == 0) return w;  // zero; test values have no subnormals
  w.hi |= (e - 1023 + 16383) << 48 | m >> 4;
  w.lo = m << 60;
  return w;
}

// The double a binary128 image stands for, when it has one exactly (the
// results of the tests' exact inputs do); NaN otherwise, so that a
// comparison of values fails loudly.
inline double ref_f128_value(W128 w) {
  const uint64_t sign = w.hi >> 63, e = (w.hi >> 48) & 0x7FFF;
  if (e == 0 && (w.hi << 16) == 0 && w.lo == 0) return sign ? -0.0 : 0.0;
  const int64_t ue = static_cast<int64_t>(e) - 16383;
  if ((w.lo << 4) != 0 || ue < -1022 || ue > 1023)
    return std::numeric_limits<double>::quiet_NaN();
  const uint64_t m = (w.hi & ((uint64_t{1} << 48) - 1)) << 4 | w.lo >> 60;
  const uint64_t u = sign << 63 | static_cast<uint64_t>(ue + 1023) << 52 | m;
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

// sum (avg), prod, max, min of two real values in double: the reference of
// the floating types wherever the inputs keep every result exact.
inline double ref_float(ucc::off::ROp op, double a, double b) {
  using ucc::off::ROp;
  switch (op) {
    case ROp::kSum:
    case ROp::kAvg:
      return a + b;
    case ROp::kProd:
      return a * b;
    case ROp::kMax:
      return std::max(a, b);
    case ROp::kMin:
      return std::min(a, b);
    default:
      ADD_FAILURE() << "bad op";
      return 0;
  }
}

}  // namespace ucct::unit

// Independent references shared by the reduce and 16-bit conversion unit
// tests (test_reduce.cc, test_half.cc): a deterministic generator and an
// exact binary16 encoder/decoder. None of them calls the library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

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

}  // namespace ucct::unit

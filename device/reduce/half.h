// Conversions between float32 and the two 16-bit floating formats.
//
// float16 is IEEE 754 binary16 (1 sign, 5 exponent, 10 mantissa bits);
// bfloat16 is the top half of a binary32 (1 sign, 8 exponent, 7 mantissa).
// Narrowing rounds to nearest, ties to even; infinities keep their sign;
// NaNs stay NaN (quieted, sign and top payload bits kept); float16
// subnormals are produced and read exactly; overflow gives infinity.
//
// Every function is branch-free (selects, not jumps) and inline so that
// block loops over them auto-vectorise: they are the inner loop of every
// 16-bit reduction. No compiler _Float16 or F16C dependency, so the same
// bits come out on the host, on a device core without those, and in the
// CUDA kernels (device/gpu), which include this file.
//
// Threads: pure functions, callable from anywhere.
#pragma once

#include <cstdint>
#include <cstring>

#include "device/reduce/hd.h"

namespace ucc::dev {

UCC_HD inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

UCC_HD inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// cond ? a : b, as masks rather than a ternary: GCC would sink the float
// arithmetic feeding a ternary into a branch, and then refuse to if-convert
// that branch (float ops may trap), leaving the loop scalar.
UCC_HD inline uint32_t select_u32(bool cond, uint32_t a, uint32_t b) {
  const uint32_t m = 0u - static_cast<uint32_t>(cond);
  return (a & m) | (b & ~m);
}

// The *_bits forms carry the 16-bit pattern in the low half of a uint32
// (upper half zero) and keep every intermediate 32 bits wide. Vector loops
// use them directly: given values it can prove fit in 16 bits, GCC narrows
// lanes to 16 bits and then spends shuffles converting masks back, so
// comparisons here are made on quantities that need the full width, and
// signed (SSE2 has no unsigned 32-bit compare or int-to-float convert).

// Widening is exact for every input.
UCC_HD inline float half_bits_to_float(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  // Exponent and mantissa moved to their float32 positions.
  const uint32_t t = (h & 0x7FFFu) << 13;
  const auto ti = static_cast<int32_t>(t);
  // Normal: rebias the exponent from 15 to 127 ((127 - 15) << 23).
  const uint32_t normal = t + (112u << 23);
  // Inf/NaN: all-ones exponent stays all-ones; the payload shifts along.
  const uint32_t inf_nan = t | 0x7F800000u;
  // Zero/subnormal: value is mantissa * 2^-24 = t * 2^-37; t < 2^23
  // converts to float exactly and the scaling is exact, so float does the
  // normalising.
  const uint32_t sub = f32_bits(static_cast<float>(ti) * 0x1p-37f);
  const uint32_t mag = select_u32(ti >= (0x7C00 << 13), inf_nan,
                                  select_u32(ti < (0x0400 << 13), sub, normal));
  return f32_from_bits(sign | mag);
}

// Returns the binary16 pattern in the low 16 bits.
UCC_HD inline uint32_t float_to_half_bits(float f) {
  const uint32_t x = f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7FFFFFFFu;
  const auto axi = static_cast<int32_t>(ax);
  // |f| >= 2^16 (or inf): overflow. Values in [65520, 2^16) overflow too,
  // but through the carry of the normal path below. NaN: quiet, keep the
  // top of the payload.
  const uint32_t inf_nan =
      select_u32(axi > 0x7F800000, 0x7E00u | ((ax >> 13) & 0x03FFu), 0x7C00u);
  // Normal (|f| >= 2^-14): rebias, then round on the 13 dropped bits:
  // adding 0xFFF plus the kept LSB carries exactly when above half, or at
  // half with an odd LSB (ties to even).
  const uint32_t normal =
      (ax - (112u << 23) + 0x0FFFu + ((ax >> 13) & 1u)) >> 13;
  // Subnormal/zero (|f| < 2^-14): adding 0.5 puts the ulp at 2^-24, the
  // float16 subnormal step, so the FPU's own round-to-even does the work
  // and the low mantissa bits are the result (0x400 = smallest normal).
  const uint32_t sub = f32_bits(f32_from_bits(ax) + 0.5f) - f32_bits(0.5f);
  const uint32_t mag = select_u32(axi >= 0x47800000, inf_nan,
                                  select_u32(axi < 0x38800000, sub, normal));
  return sign | mag;
}

// Widening is exact for every input.
UCC_HD inline float bf16_bits_to_float(uint32_t b) {
  return f32_from_bits(b << 16);
}

// Returns the bfloat16 pattern in the low 16 bits.
UCC_HD inline uint32_t float_to_bf16_bits(float f) {
  const uint32_t x = f32_bits(f);
  // A NaN must neither round into infinity nor (all-ones payload) carry
  // into the sign: it gets no rounding increment, and the quiet bit.
  const bool is_nan = static_cast<int32_t>(x & 0x7FFFFFFFu) > 0x7F800000;
  // Round on the 16 dropped bits, ties to even; finite values at the top
  // carry into the exponent and become infinity, as they should.
  const uint32_t inc = select_u32(is_nan, 0u, 0x7FFFu + ((x >> 16) & 1u));
  const uint32_t quiet = select_u32(is_nan, 0x0040u, 0u);
  return ((x + inc) >> 16) | quiet;
}

UCC_HD inline float half_to_float(uint16_t h) { return half_bits_to_float(h); }
UCC_HD inline uint16_t float_to_half(float f) {
  return static_cast<uint16_t>(float_to_half_bits(f));
}
UCC_HD inline float bf16_to_float(uint16_t b) { return bf16_bits_to_float(b); }
UCC_HD inline uint16_t float_to_bf16(float f) {
  return static_cast<uint16_t>(float_to_bf16_bits(f));
}

}  // namespace ucc::dev

// Unit tests for device/reduce/half.h: float16 and bfloat16 conversions at
// known bit patterns, exhaustively over every 16-bit pattern and midpoint,
// and against the independent nearbyint-based reference (reduce_ref.h) for
// random floats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "device/reduce/half.h"
#include "tests/unit/reduce_ref.h"

namespace {

using ucct::unit::ref_half_bits;
using ucct::unit::ref_half_value;
using ucct::unit::Rng;

// ---- 16-bit conversions
// -------------------------------------------------------

float f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Half, KnownBitPatterns) {
  using ucc::dev::float_to_half;
  using ucc::dev::half_to_float;
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(0.0f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);     // min subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1023.0f, -24)), 0x03FF);  // max subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400);     // min normal
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xFC00);
  const uint16_t qnan = float_to_half(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(qnan & 0x7C00, 0x7C00);
  EXPECT_NE(qnan & 0x03FF, 0);
  // A NaN whose payload lives only in the dropped bits stays NaN.
  const uint16_t low_nan = float_to_half(f32(0xFF800001u));
  EXPECT_EQ(low_nan & 0xFC00, 0xFC00);
  EXPECT_NE(low_nan & 0x03FF, 0);

  // Rounding: ties to even, both directions, in normals and subnormals.
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie, down
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)),
            0x3C02);                                   // tie, up
  EXPECT_EQ(float_to_half(f32(0x3F801001u)), 0x3C01);  // just above a tie
  EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // tie rounds to even = overflow
  EXPECT_EQ(float_to_half(1e6f), 0x7C00);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie to 0
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);  // tie to 2
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25) * 1.0001f), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(2047.0f, -25)), 0x0400);  // into normal
  EXPECT_EQ(float_to_half(-1e-10f), 0x8000);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -149)), 0x0000);  // float denormal

  EXPECT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(half_to_float(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
  EXPECT_EQ(half_to_float(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(half_to_float(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(half_to_float(0x7E00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7C01)));
}

// Every pattern widens to the textbook value and narrows back to itself.
TEST(Half, ExhaustiveRoundTrip) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = ucc::dev::half_to_float(static_cast<uint16_t>(h));
    const double want = ref_half_value(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << h;
      const uint16_t back = ucc::dev::float_to_half(f);
      ASSERT_EQ(back & 0xFC00, h & 0xFC00) << h;  // sign and exponent
      ASSERT_NE(back & 0x03FF, 0) << h;
      if (h & 0x0200) {
        ASSERT_EQ(back, h) << h;  // quiet NaNs keep their payload
      }
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), want) << h;
    ASSERT_EQ(ucc::dev::float_to_half(f), h) << h;
  }
}

// Every midpoint between neighbouring finite halves is a tie; one float ulp
// either side is not. Checked against the nearbyint-based reference.
TEST(Half, ExhaustiveMidpoints) {
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    const double lo = ref_half_value(static_cast<uint16_t>(h));
    const double hi = h + 1 == 0x7C00
                          ? 65536.0
                          : ref_half_value(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);  // exact in float
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    const uint16_t even =
        (h & 1) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h);
    for (float sign : {1.0f, -1.0f}) {
      const uint16_t sbit = sign < 0 ? 0x8000 : 0;
      ASSERT_EQ(ucc::dev::float_to_half(sign * mid), even | sbit) << h;
      ASSERT_EQ(ucc::dev::float_to_half(sign * std::nextafter(mid, 0.0f)),
                h | sbit)
          << h;
      ASSERT_EQ(ucc::dev::float_to_half(sign * std::nextafter(mid, 1e30f)),
                (h + 1) | sbit)
          << h;
    }
  }
}

TEST(Half, RandomFloatsMatchReference) {
  Rng r{42};
  for (int i = 0; i < 1 << 20; ++i) {
    // Bias exponents toward the float16 range so all paths get traffic.
    uint32_t u = static_cast<uint32_t>(r.next());
    if (i & 1)
      u = (u & 0x807FFFFFu) | (static_cast<uint32_t>(r.small(100, 145)) << 23);
    const float f = f32(u);
    if (std::isnan(f)) continue;
    ASSERT_EQ(ucc::dev::float_to_half(f), ref_half_bits(f)) << std::hex << u;
  }
}

TEST(Bf16, KnownBitPatterns) {
  using ucc::dev::bf16_to_float;
  using ucc::dev::float_to_bf16;
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(float_to_bf16(f32(0x7F7F0000u)), 0x7F7F);  // max finite
  EXPECT_EQ(float_to_bf16(f32(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX rounds to inf
  EXPECT_EQ(float_to_bf16(f32(0x00010000u)), 0x0001);  // min subnormal
  EXPECT_EQ(float_to_bf16(f32(0x00008000u)), 0x0000);  // tie to even 0
  EXPECT_EQ(float_to_bf16(f32(0x00018000u)), 0x0002);  // tie to even 2
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  // NaNs with payload only in the low half must not become infinity, nor
  // (all-ones payload) carry into the sign.
  for (uint32_t u :
       {0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7FC00000u}) {
    const uint16_t b = float_to_bf16(f32(u));
    EXPECT_EQ(b & 0xFF80, (u >> 16) & 0xFF80) << std::hex << u;
    EXPECT_NE(b & 0x007F, 0) << std::hex << u;
  }
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie, down
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie, up
  EXPECT_EQ(float_to_bf16(f32(0x3F808001u)), 0x3F81);  // above a tie

  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xC000), -2.0f);
  EXPECT_EQ(bf16_to_float(0x0001), f32(0x00010000u));
  EXPECT_EQ(bf16_to_float(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16_to_float(0x7FC0)));
}

TEST(Bf16, ExhaustiveRoundTrip) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = ucc::dev::bf16_to_float(static_cast<uint16_t>(b));
    const uint16_t back = ucc::dev::float_to_bf16(f);
    if (std::isnan(f)) {
      ASSERT_EQ(back, b | 0x0040) << b;  // quieted, otherwise the same
    } else {
      ASSERT_EQ(back, b) << b;
    }
  }
}

}  // namespace

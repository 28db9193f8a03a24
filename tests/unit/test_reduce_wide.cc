// Unit tests for device/reduce on the wide types: int128, uint128,
// float128 and the three complex types. The support table, every supported
// (dtype, op) pair against an independent scalar reference with poisoned
// tails, aliasing and unaligned buffers, 128-bit wrap-around, complex
// multiplication, scale_div, and the names.
//
// The reference never calls the library nor the compiler's 128-bit
// arithmetic: integers are two 64-bit words (reduce_ref.h), floats are
// computed in double from exact inputs (small integers and halves) and
// encoded by hand, so every expected result is exact and is compared bit
// for bit with memcmp.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "device/reduce/reduce.h"
#include "offload/types.h"
#include "tests/unit/reduce_ref.h"

namespace {

using ucc::off::DType;
using ucc::off::ROp;
using ucct::unit::get_w128;
using ucct::unit::put_w128;
using ucct::unit::ref_f128_bits;
using ucct::unit::ref_f128_value;
using ucct::unit::Rng;
using ucct::unit::W128;

constexpr DType kWide[] = {DType::kInt128,         DType::kUint128,
                           DType::kFloat128,       DType::kFloat32Complex,
                           DType::kFloat64Complex, DType::kFloat128Complex};
constexpr size_t kCounts[] = {0, 1, 3, 7, 64, 257};
constexpr size_t kTail = 4;  // poisoned elements after `count`
constexpr uint8_t kPoison = 0xA5;
constexpr int kNumROps = static_cast<int>(ROp::kNone) + 1;  // incl. kNone

#if defined(__SIZEOF_FLOAT128__) || LDBL_MANT_DIG == 113
constexpr bool kHaveF128 = true;
#else
constexpr bool kHaveF128 = false;
#endif
// x87 extended in a 16-byte slot: this machine's long double (x86-64).
constexpr bool kHaveF80 = LDBL_MANT_DIG == 64 && sizeof(long double) == 16;

// ---- Support table ----------------------------------------------------------

// One row per type; character i is ROp i, in the order
// sum prod max min land lor lxor band bor bxor avg maxloc minloc none;
// 'y' = supported.
struct Row {
  DType dt;
  const char* ops;
};
constexpr Row kTable[] = {
    {DType::kInt128, "yyyyyyyyyy...."},           //
    {DType::kUint128, "yyyyyyyyyy...."},          //
    {DType::kFloat128, "yyyy......y..."},         // none if no __float128
    {DType::kFloat32Complex, "yy........y..."},   //
    {DType::kFloat64Complex, "yy........y..."},   //
    {DType::kFloat128Complex, "yy........y..."},  // none if no __float128
    {DType::kGeneric, ".............."},          // the user's callback
    {DType::kFloat80, "yyyy......y..."},          // none if not x87
    {DType::kFloat80Complex, "yy........y..."},   // none if not x87
};

bool needs_f128(DType dt) {
  return dt == DType::kFloat128 || dt == DType::kFloat128Complex;
}
bool needs_f80(DType dt) {
  return dt == DType::kFloat80 || dt == DType::kFloat80Complex;
}

bool expect_supported(DType dt, ROp op) {
  for (const Row& r : kTable) {
    if (r.dt != dt) continue;
    if (needs_f128(dt) && !kHaveF128) return false;
    if (needs_f80(dt) && !kHaveF80) return false;
    return static_cast<int>(op) < kNumROps &&
           r.ops[static_cast<int>(op)] == 'y';
  }
  ADD_FAILURE() << "no row for " << ucc::off::dtype_name(dt);
  return false;
}

TEST(ReduceWideSupported, MatchesTable) {
  for (const Row& r : kTable)
    ASSERT_EQ(std::strlen(r.ops), static_cast<size_t>(kNumROps));
  for (DType dt :
       {DType::kInt128, DType::kUint128, DType::kFloat128,
        DType::kFloat32Complex, DType::kFloat64Complex, DType::kFloat128Complex,
        DType::kGeneric, DType::kFloat80, DType::kFloat80Complex}) {
    for (int o = 0; o < kNumROps; ++o) {
      const auto op = static_cast<ROp>(o);
      EXPECT_EQ(ucc::dev::reduce_supported(dt, op), expect_supported(dt, op))
          << ucc::off::dtype_name(dt) << " " << ucc::off::rop_name(op);
    }
    EXPECT_FALSE(ucc::dev::reduce_supported(dt, static_cast<ROp>(200)));
  }
  EXPECT_FALSE(ucc::dev::reduce_supported(DType::kCount, ROp::kSum));
  EXPECT_FALSE(ucc::dev::reduce_supported(static_cast<DType>(200), ROp::kSum));
}

TEST(ReduceWideSupported, SizesAndNames) {
  const char* names[] = {"int128",          "uint128",
                         "float128",        "float32_complex",
                         "float64_complex", "float128_complex"};
  const size_t sizes[] = {16, 16, 16, 8, 16, 32};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_STREQ(ucc::off::dtype_name(kWide[i]), names[i]);
    EXPECT_EQ(ucc::off::dtype_size(kWide[i]), sizes[i]);
  }
  // Appended: the original values did not move.
  EXPECT_EQ(static_cast<int>(DType::kFloat64), 11);
  EXPECT_EQ(static_cast<int>(DType::kInt128), 12);
  EXPECT_EQ(static_cast<int>(DType::kGeneric), 18);
  EXPECT_EQ(static_cast<int>(DType::kFloat80), 19);
  EXPECT_EQ(static_cast<int>(DType::kCount), 21);
  EXPECT_EQ(ucc::off::dtype_size(DType::kFloat80), 16u);
  EXPECT_EQ(ucc::off::dtype_size(DType::kFloat80Complex), 32u);
  EXPECT_STREQ(ucc::off::dtype_name(DType::kFloat80), "float128(x87)");
  EXPECT_EQ(ucc::off::dtype_size(DType::kGeneric), 0u);
}

// ---- The reference ----------------------------------------------------------

W128 ref_int128(ROp op, W128 a, W128 b, bool is_signed) {
  const bool za = (a.lo | a.hi) != 0, zb = (b.lo | b.hi) != 0;
  switch (op) {
    case ROp::kSum:
      return ucct::unit::ref_add128(a, b);
    case ROp::kProd:
      return ucct::unit::ref_mul128(a, b);
    case ROp::kMax:
      return ucct::unit::ref_less128(b, a, is_signed) ? a : b;
    case ROp::kMin:
      return ucct::unit::ref_less128(a, b, is_signed) ? a : b;
    case ROp::kLand:
      return {za && zb ? 1u : 0u, 0};
    case ROp::kLor:
      return {za || zb ? 1u : 0u, 0};
    case ROp::kLxor:
      return {za != zb ? 1u : 0u, 0};
    case ROp::kBand:
      return {a.lo & b.lo, a.hi & b.hi};
    case ROp::kBor:
      return {a.lo | b.lo, a.hi | b.hi};
    case ROp::kBxor:
      return {a.lo ^ b.lo, a.hi ^ b.hi};
    default:
      ADD_FAILURE() << "bad op";
      return {0, 0};
  }
}

// Real and complex values travel as (re, im) doubles; im is 0 and unused
// for float128.
struct Val {
  double re;
  double im;
};

Val ref_float(ROp op, Val a, Val b) {
  switch (op) {
    case ROp::kSum:
    case ROp::kAvg:
      return {a.re + b.re, a.im + b.im};
    case ROp::kProd:  // the real case has im == 0 throughout
      return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
    case ROp::kMax:
      return {a.re > b.re ? a.re : b.re, 0};
    case ROp::kMin:
      return {a.re < b.re ? a.re : b.re, 0};
    default:
      ADD_FAILURE() << "bad op";
      return {0, 0};
  }
}

// Encode/decode one component of a floating dtype.
void put_comp(DType dt, double v, void* out) {
  if (dt == DType::kFloat32Complex) {
    const float f = static_cast<float>(v);
    ASSERT_EQ(static_cast<double>(f), v) << "not exact in float";
    std::memcpy(out, &f, 4);
  } else if (dt == DType::kFloat64Complex) {
    std::memcpy(out, &v, 8);
  } else {
    put_w128(out, ref_f128_bits(v));
  }
}

double get_comp(DType dt, const void* in) {
  if (dt == DType::kFloat32Complex) {
    float f;
    std::memcpy(&f, in, 4);
    return f;
  }
  if (dt == DType::kFloat64Complex) {
    double d;
    std::memcpy(&d, in, 8);
    return d;
  }
  return ref_f128_value(get_w128(in));
}

bool is_complex(DType dt) {
  return dt == DType::kFloat32Complex || dt == DType::kFloat64Complex ||
         dt == DType::kFloat128Complex;
}

struct Element {
  DType dt;
  size_t size;

  bool is_int() const { return dt == DType::kInt128 || dt == DType::kUint128; }
  size_t comp() const { return is_complex(dt) ? size / 2 : size; }

  void put(Val v, void* out) const {
    put_comp(dt, v.re, out);
    if (is_complex(dt)) put_comp(dt, v.im, static_cast<char*>(out) + comp());
  }
  Val get(const void* in) const {
    const double im = is_complex(dt)
                          ? get_comp(dt, static_cast<const char*>(in) + comp())
                          : 0.0;
    return {get_comp(dt, in), im};
  }

  // Integers: the full range, with zeros, ones, small negatives, the ends
  // of the signed and unsigned ranges, and values whose low word carries.
  // Floats: components k/2, |k| <= 40, so sums and products are exact.
  void gen(Rng& r, void* out) const {
    if (is_int()) {
      W128 w{r.next(), r.next()};
      switch (r.small(0, 9)) {
        case 0:
          w = {0, 0};
          break;
        case 1:
          w = {1, 0};
          break;
        case 2:
          w = {static_cast<uint64_t>(-r.small(1, 5)), ~uint64_t{0}};
          break;
        case 3:
          w = {~uint64_t{0} - static_cast<uint64_t>(r.small(0, 2)),
               ~uint64_t{0} >> 1};  // near INT128_MAX
          break;
        case 4:
          w = {static_cast<uint64_t>(r.small(0, 2)), uint64_t{1} << 63};
          break;  // near INT128_MIN
        case 5:
          w = {~uint64_t{0}, ~uint64_t{0}};  // -1 / UINT128_MAX
          break;
        case 6:
          w.hi = 0;  // low word only: carries into the high one
          break;
        default:
          break;
      }
      put_w128(out, w);
      return;
    }
    const double re = r.small(-40, 40) / 2.0;
    const double im = is_complex(dt) ? r.small(-40, 40) / 2.0 : 0.0;
    put({re, im}, out);
  }

  void ref(ROp op, const void* a, const void* b, void* out) const {
    if (is_int()) {
      put_w128(out,
               ref_int128(op, get_w128(a), get_w128(b), dt == DType::kInt128));
      return;
    }
    put(ref_float(op, get(a), get(b)), out);
  }

  std::string show(const void* p) const {
    std::string s = "0x";
    const auto* c = static_cast<const unsigned char*>(p);
    char buf[4];
    for (size_t i = size; i-- > 0;) {  // most significant byte first (LE)
      std::snprintf(buf, sizeof(buf), "%02x", c[i]);
      s += buf;
    }
    if (!is_int()) {
      const Val v = get(p);
      s += " (" + std::to_string(v.re);
      if (is_complex(dt)) s += ", " + std::to_string(v.im);
      s += ")";
    }
    return s;
  }
};

// ---- Every pair, every count ------------------------------------------------

enum class Alias { kNone, kDstIsA, kDstIsB, kAll };

class ReduceWidePair : public ::testing::TestWithParam<std::tuple<int, int>> {
 protected:
  // One (count, aliasing, byte offset) case; checks every element and the
  // poisoned bytes on both sides.
  void run_case(DType dt, ROp op, size_t count, Alias alias, size_t shift,
                uint64_t seed) {
    const Element el{dt, ucc::off::dtype_size(dt)};
    const size_t sz = el.size;
    const size_t total = shift + (count + kTail) * sz;
    std::vector<uint8_t> a(total), b(total), dst(total, kPoison);
    std::vector<uint8_t> want(count * sz + 1);
    Rng r{seed};
    for (size_t i = 0; i < count; ++i) {
      uint8_t* pa = &a[shift + i * sz];
      uint8_t* pb = &b[shift + i * sz];
      el.gen(r, pa);
      if (r.small(0, 7) == 0)
        std::memcpy(pb, pa, sz);  // max/min ties, lxor/bxor zeros
      else
        el.gen(r, pb);
    }
    const uint8_t* pa = &a[shift];
    const uint8_t* pb = &b[shift];
    void* out = &dst[shift];
    const void* in_a = pa;
    const void* in_b = pb;
    switch (alias) {
      case Alias::kNone:
        break;
      case Alias::kDstIsA:
        std::memcpy(out, pa, count * sz);
        in_a = out;
        break;
      case Alias::kDstIsB:
        std::memcpy(out, pb, count * sz);
        in_b = out;
        break;
      case Alias::kAll:
        std::memcpy(out, pa, count * sz);
        in_a = in_b = out;
        pb = pa;  // the reference sees a op a
        break;
    }
    for (size_t i = 0; i < count; ++i)
      el.ref(op, pa + i * sz, pb + i * sz, &want[i * sz]);

    ucc::dev::reduce(op, dt, out, in_a, in_b, count);

    const uint8_t* got = static_cast<const uint8_t*>(out);
    int errors = 0;
    for (size_t i = 0; i < count && errors < 5; ++i) {
      if (std::memcmp(got + i * sz, &want[i * sz], sz) != 0) {
        ++errors;
        ADD_FAILURE() << ucc::off::dtype_name(dt) << " "
                      << ucc::off::rop_name(op) << " count=" << count
                      << " alias=" << static_cast<int>(alias)
                      << " shift=" << shift << " i=" << i << ": "
                      << el.show(pa + i * sz) << " op " << el.show(pb + i * sz)
                      << " = " << el.show(got + i * sz) << ", want "
                      << el.show(&want[i * sz]);
      }
    }
    for (size_t i = shift + count * sz; i < total; ++i)
      ASSERT_EQ(dst[i], kPoison) << "wrote past count=" << count;
    for (size_t i = 0; i < shift; ++i)
      ASSERT_EQ(dst[i], kPoison) << "wrote before dst";
  }
};

TEST_P(ReduceWidePair, MatchesReference) {
  const auto dt = static_cast<DType>(std::get<0>(GetParam()));
  const auto op = static_cast<ROp>(std::get<1>(GetParam()));
  if (!expect_supported(dt, op)) {
    // Unsupported pairs must do nothing (and not crash).
    std::vector<uint8_t> a(8 * 32, 1), b(8 * 32, 2), dst(8 * 32, kPoison);
    ucc::dev::reduce(op, dt, dst.data(), a.data(), b.data(), 8);
    for (uint8_t v : dst) ASSERT_EQ(v, kPoison);
    return;
  }
  uint64_t seed = 1;
  for (size_t count : kCounts) {
    // Byte shifts 1 and 8: below the 16-byte natural alignment of the
    // 128-bit types, which reduce.h says these types do not need.
    for (size_t shift : {size_t{0}, size_t{1}, size_t{8}}) {
      for (Alias alias :
           {Alias::kNone, Alias::kDstIsA, Alias::kDstIsB, Alias::kAll}) {
        run_case(dt, op, count, alias, shift, seed++);
        if (HasFatalFailure()) return;
      }
    }
  }
}

std::string pair_name(
    const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
  return std::string(ucc::off::dtype_name(
             static_cast<DType>(std::get<0>(info.param)))) +
         "_" + ucc::off::rop_name(static_cast<ROp>(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(
    AllPairs, ReduceWidePair,
    ::testing::Combine(::testing::Range(static_cast<int>(DType::kInt128),
                                        static_cast<int>(DType::kGeneric)),
                       ::testing::Range(0, kNumROps)),
    pair_name);

// ---- Known values -----------------------------------------------------------

W128 reduce1(ROp op, DType dt, W128 x, W128 y) {
  unsigned char a[16], b[16], d[16];
  put_w128(a, x);
  put_w128(b, y);
  ucc::dev::reduce(op, dt, d, a, b, 1);
  return get_w128(d);
}

TEST(ReduceWide, Int128WrapsAtTopOfRange) {
  const W128 kMax{~uint64_t{0}, ~uint64_t{0} >> 1};  // INT128_MAX
  const W128 kMin{0, uint64_t{1} << 63};             // INT128_MIN
  const W128 kOnes{~uint64_t{0}, ~uint64_t{0}};      // -1, UINT128_MAX
  const W128 kOne{1, 0}, kZero{0, 0};
  EXPECT_EQ(reduce1(ROp::kSum, DType::kInt128, kMax, kOne), kMin);
  EXPECT_EQ(reduce1(ROp::kSum, DType::kInt128, kMin, kOnes), kMax);
  EXPECT_EQ(reduce1(ROp::kSum, DType::kUint128, kOnes, kOne), kZero);
  EXPECT_EQ(reduce1(ROp::kProd, DType::kInt128, kMin, kOnes), kMin);
  EXPECT_EQ(reduce1(ROp::kProd, DType::kUint128, kOnes, kOnes), kOne);
  EXPECT_EQ(reduce1(ROp::kProd, DType::kInt128, kMax, kMax), kOne);
  // 2^64 * 2^64 = 2^128 = 0; (2^64 - 1) + 1 carries into the high word.
  EXPECT_EQ(reduce1(ROp::kProd, DType::kUint128, W128{0, 1}, W128{0, 1}),
            kZero);
  EXPECT_EQ(reduce1(ROp::kSum, DType::kUint128, W128{~uint64_t{0}, 0}, kOne),
            (W128{0, 1}));
  // (2^64 - 1)^2 = 2^128 - 2^65 + 1.
  EXPECT_EQ(reduce1(ROp::kProd, DType::kUint128, W128{~uint64_t{0}, 0},
                    W128{~uint64_t{0}, 0}),
            (W128{1, ~uint64_t{0} - 1}));
  // Signed vs unsigned order.
  EXPECT_EQ(reduce1(ROp::kMax, DType::kInt128, kOnes, kOne), kOne);
  EXPECT_EQ(reduce1(ROp::kMax, DType::kUint128, kOnes, kOne), kOnes);
  EXPECT_EQ(reduce1(ROp::kMin, DType::kInt128, kMin, kZero), kMin);
  EXPECT_EQ(reduce1(ROp::kMin, DType::kUint128, kMin, kZero), kZero);
  EXPECT_EQ(reduce1(ROp::kMin, DType::kInt128, kMin, kMax), kMin);
  // Logical ops see the whole value: a high word alone is non-zero.
  EXPECT_EQ(reduce1(ROp::kLand, DType::kInt128, W128{0, 4}, kMin), kOne);
  EXPECT_EQ(reduce1(ROp::kLxor, DType::kUint128, W128{0, 4}, kZero), kOne);
}

template <typename T>
struct Cx {
  T re, im;
};

template <typename T>
Cx<T> prod1(DType dt, Cx<T> x, Cx<T> y) {
  Cx<T> d{};
  ucc::dev::reduce(ROp::kProd, dt, &d, &x, &y, 1);
  return d;
}

TEST(ReduceWide, ComplexProdKnownValues) {
  // (1+2i)(3-1i) = 3 - i + 6i - 2i^2 = 5+5i; i*i = -1.
  auto f = prod1<float>(DType::kFloat32Complex, {1, 2}, {3, -1});
  EXPECT_EQ(f.re, 5.0f);
  EXPECT_EQ(f.im, 5.0f);
  auto g = prod1<double>(DType::kFloat64Complex, {1, 2}, {3, -1});
  EXPECT_EQ(g.re, 5.0);
  EXPECT_EQ(g.im, 5.0);
  g = prod1<double>(DType::kFloat64Complex, {0, 1}, {0, 1});
  EXPECT_EQ(g.re, -1.0);
  EXPECT_EQ(g.im, 0.0);
  // The plain formula, not C99 Annex G: (inf+inf i)(1+0i) has
  // re = inf*1 - inf*0 = NaN, im = inf*0 + inf*1 = NaN, and stays so.
  const double inf = std::numeric_limits<double>::infinity();
  g = prod1<double>(DType::kFloat64Complex, {inf, inf}, {1, 0});
  EXPECT_TRUE(std::isnan(g.re));
  EXPECT_TRUE(std::isnan(g.im));
  const float finf = std::numeric_limits<float>::infinity();
  f = prod1<float>(DType::kFloat32Complex, {finf, finf}, {1, 0});
  EXPECT_TRUE(std::isnan(f.re));
  EXPECT_TRUE(std::isnan(f.im));
  if (!kHaveF128) return;
  unsigned char a[32], b[32], d[32], want[32];
  put_w128(a, ref_f128_bits(1));
  put_w128(a + 16, ref_f128_bits(2));
  put_w128(b, ref_f128_bits(3));
  put_w128(b + 16, ref_f128_bits(-1));
  put_w128(want, ref_f128_bits(5));
  put_w128(want + 16, ref_f128_bits(5));
  ucc::dev::reduce(ROp::kProd, DType::kFloat128Complex, d, a, b, 1);
  EXPECT_EQ(std::memcmp(d, want, 32), 0);
}

// binary128 really is computed in binary128: results a double would round
// away, each rounded once to nearest even in 113 bits.
TEST(ReduceWide, Float128RoundsIn113Bits) {
  if (!kHaveF128) GTEST_SKIP() << "no __float128";
  const W128 one = ref_f128_bits(1);
  const W128 one_ulp{1, one.hi};                  // 1 + 2^-112
  const W128 half_ulp = ref_f128_bits(0x1p-113);  // a tie on 1
  EXPECT_EQ(reduce1(ROp::kProd, DType::kFloat128, one_ulp, one_ulp),
            (W128{2, one.hi}));  // 1 + 2^-111 (+ 2^-224, rounded off)
  EXPECT_EQ(reduce1(ROp::kSum, DType::kFloat128, one, half_ulp), one);
  EXPECT_EQ(reduce1(ROp::kSum, DType::kFloat128, one_ulp, half_ulp),
            (W128{2, one.hi}));  // odd + tie rounds up to even
  // max/min with a NaN return b, as for the narrow floats.
  const W128 nan{0, 0x7FFF800000000000u};
  EXPECT_EQ(reduce1(ROp::kMax, DType::kFloat128, nan, one), one);
  EXPECT_EQ(reduce1(ROp::kMin, DType::kFloat128, one, nan), nan);
}

// ---- scale_div --------------------------------------------------------------

TEST(ScaleDivWide, Complex32And64) {
  for (size_t count : kCounts) {
    // One byte off: the components' own alignment is not needed either.
    std::vector<uint8_t> fb(1 + (count + kTail) * 8, kPoison);
    std::vector<uint8_t> gb(1 + (count + kTail) * 16, kPoison);
    for (size_t i = 0; i < count; ++i) {
      const float f[2] = {static_cast<float>(i) - 100.0f, 3.0f * i - 1.0f};
      const double g[2] = {static_cast<double>(i) * 3 - 1, 7.0 - i};
      std::memcpy(&fb[1 + i * 8], f, 8);
      std::memcpy(&gb[1 + i * 16], g, 16);
    }
    ucc::dev::scale_div(DType::kFloat32Complex, &fb[1], count, 3);
    ucc::dev::scale_div(DType::kFloat64Complex, &gb[1], count, 7);
    for (size_t i = 0; i < count; ++i) {
      float f[2];
      double g[2];
      std::memcpy(f, &fb[1 + i * 8], 8);
      std::memcpy(g, &gb[1 + i * 16], 16);
      ASSERT_EQ(f[0], (static_cast<float>(i) - 100.0f) / 3.0f) << i;
      ASSERT_EQ(f[1], (3.0f * i - 1.0f) / 3.0f) << i;
      ASSERT_EQ(g[0], (static_cast<double>(i) * 3 - 1) / 7.0) << i;
      ASSERT_EQ(g[1], (7.0 - i) / 7.0) << i;
    }
    ASSERT_EQ(fb[0], kPoison);
    ASSERT_EQ(gb[0], kPoison);
    for (size_t i = 1 + count * 8; i < fb.size(); ++i)
      ASSERT_EQ(fb[i], kPoison);
    for (size_t i = 1 + count * 16; i < gb.size(); ++i)
      ASSERT_EQ(gb[i], kPoison);
  }
}

TEST(ScaleDivWide, Float128AndComplex128) {
  if (!kHaveF128) GTEST_SKIP() << "no __float128";
  for (size_t count : kCounts) {
    std::vector<uint8_t> r((count + kTail) * 16, kPoison);
    std::vector<uint8_t> c((count + kTail) * 32, kPoison);
    auto v = [](size_t i) { return static_cast<double>(i % 81) - 40; };
    for (size_t i = 0; i < count; ++i) {
      put_w128(&r[i * 16], ref_f128_bits(v(i)));
      put_w128(&c[i * 32], ref_f128_bits(v(i)));
      put_w128(&c[i * 32 + 16], ref_f128_bits(-v(i + 7) / 2));
    }
    ucc::dev::scale_div(DType::kFloat128, r.data(), count, 4);
    ucc::dev::scale_div(DType::kFloat128Complex, c.data(), count, 8);
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(get_w128(&r[i * 16]), ref_f128_bits(v(i) / 4)) << i;
      ASSERT_EQ(get_w128(&c[i * 32]), ref_f128_bits(v(i) / 8)) << i;
      ASSERT_EQ(get_w128(&c[i * 32 + 16]), ref_f128_bits(-v(i + 7) / 16)) << i;
    }
    for (size_t i = count * 16; i < r.size(); ++i) ASSERT_EQ(r[i], kPoison);
    for (size_t i = count * 32; i < c.size(); ++i) ASSERT_EQ(c[i], kPoison);
  }
  // Inexact: 1/3 correctly rounded in 113 bits, and (3 + 1i) / 3.
  unsigned char x[32];
  put_w128(x, ref_f128_bits(3));
  put_w128(x + 16, ref_f128_bits(1));
  ucc::dev::scale_div(DType::kFloat128Complex, x, 1, 3);
  EXPECT_EQ(get_w128(x), ref_f128_bits(1));
  EXPECT_EQ(get_w128(x + 16), (W128{0x5555555555555555u, 0x3FFD555555555555u}));
}

// ---- float80 (x87 extended, UCC's FLOAT128 on x86-64) ----------------------
//
// The references are doubles where every result is exact in a double (so
// the x87 result is the same number), and known values where x87 keeps
// bits a double would round away. An element is 10 value bytes and 6
// padding bytes, which results must have zero.

constexpr size_t kF80Value = 10;

// v in an x87 slot with the padding filled with `pad`.
void put_f80(unsigned char* p, long double v, unsigned char pad = 0) {
  std::memset(p, pad, 16);
  std::memcpy(p, &v, kF80Value);
}

long double get_f80(const unsigned char* p) {
  long double v = 0;
  std::memcpy(&v, p, kF80Value);
  return v;
}

bool padding_zero(const unsigned char* p) {
  for (size_t i = kF80Value; i < 16; ++i)
    if (p[i] != 0) return false;
  return true;
}

TEST(ReduceWide, Float80EveryOpAndAlias) {
  if (!kHaveF80) GTEST_SKIP() << "long double is not x87 here";
  auto va = [](size_t i) { return static_cast<double>(i % 81) / 2 - 20; };
  auto vb = [](size_t i) { return 13.0 - static_cast<double>(i % 37); };
  for (ROp op : {ROp::kSum, ROp::kProd, ROp::kMax, ROp::kMin, ROp::kAvg}) {
    for (size_t count : kCounts) {
      for (bool in_place : {false, true}) {
        // One byte off: the slot's own alignment is not needed.
        std::vector<unsigned char> a(1 + (count + kTail) * 16, kPoison),
            b(a.size(), kPoison), d(a.size(), kPoison);
        for (size_t i = 0; i < count; ++i) {
          put_f80(&a[1 + i * 16], va(i), 0xEE);  // garbage padding in
          put_f80(&b[1 + i * 16], vb(i), 0x11);
        }
        unsigned char* out = in_place ? &a[1] : &d[1];
        ucc::dev::reduce(op, DType::kFloat80, out, &a[1], &b[1], count);
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(
              get_f80(out + i * 16),
              static_cast<long double>(ucct::unit::ref_float(op, va(i), vb(i))))
              << ucc::off::rop_name(op) << " " << i;
          ASSERT_TRUE(padding_zero(out + i * 16)) << i;
        }
        for (size_t i = 1 + count * 16; i < a.size(); ++i)
          ASSERT_EQ(in_place ? a[i] : d[i], kPoison) << "past the end";
        ASSERT_EQ(in_place ? a[0] : d[0], kPoison) << "before the start";
      }
    }
  }
}

// x87 keeps 64 bits of mantissa: 1 + 2^-63 survives (a double would give
// 1), ties round to even, max/min keep the NaN rule.
TEST(ReduceWide, Float80RoundsIn64Bits) {
  if (!kHaveF80) GTEST_SKIP() << "long double is not x87 here";
  auto one = [](ROp op, long double x, long double y) {
    unsigned char a[16], b[16], d[16];
    put_f80(a, x);
    put_f80(b, y);
    ucc::dev::reduce(op, DType::kFloat80, d, a, b, 1);
    EXPECT_TRUE(padding_zero(d));
    return get_f80(d);
  };
  const long double ulp = 0x1p-63L, half = 0x1p-64L;
  EXPECT_EQ(one(ROp::kSum, 1.0L, ulp), 1.0L + ulp);
  EXPECT_NE(1.0L + ulp, 1.0L);
  EXPECT_EQ(one(ROp::kSum, 1.0L, half), 1.0L);  // a tie, to even
  EXPECT_EQ(one(ROp::kSum, 1.0L + ulp, half), 1.0L + 2 * ulp);
  EXPECT_EQ(one(ROp::kProd, 1.0L + ulp, 1.0L + ulp), 1.0L + 2 * ulp);
  const long double nan = std::numeric_limits<long double>::quiet_NaN();
  EXPECT_EQ(one(ROp::kMax, nan, 1.0L), 1.0L);
  EXPECT_TRUE(std::isnan(one(ROp::kMin, 1.0L, nan)));
  // Beyond a double's range, within x87's.
  EXPECT_EQ(one(ROp::kProd, 0x1p1000L, 0x1p1000L), 0x1p2000L);
}

TEST(ReduceWide, Float80Complex) {
  if (!kHaveF80) GTEST_SKIP() << "long double is not x87 here";
  unsigned char a[32], b[32], d[32];
  put_f80(a, 1, 0x77);
  put_f80(a + 16, 2, 0x77);
  put_f80(b, 3, 0x55);
  put_f80(b + 16, -1, 0x55);
  ucc::dev::reduce(ROp::kProd, DType::kFloat80Complex, d, a, b, 1);
  EXPECT_EQ(get_f80(d), 5.0L);  // (1 + 2i)(3 - i) = 5 + 5i
  EXPECT_EQ(get_f80(d + 16), 5.0L);
  EXPECT_TRUE(padding_zero(d) && padding_zero(d + 16));
  ucc::dev::reduce(ROp::kSum, DType::kFloat80Complex, d, a, b, 1);
  EXPECT_EQ(get_f80(d), 4.0L);
  EXPECT_EQ(get_f80(d + 16), 1.0L);
  ucc::dev::scale_div(DType::kFloat80Complex, d, 1, 3);
  EXPECT_EQ(get_f80(d), 4.0L / 3);  // rounded once in 64 bits
  EXPECT_EQ(get_f80(d + 16), 1.0L / 3);
  EXPECT_TRUE(padding_zero(d) && padding_zero(d + 16));
  put_f80(a, 10, 0x99);
  ucc::dev::scale_div(DType::kFloat80, a, 1, 4);
  EXPECT_EQ(get_f80(a), 2.5L);
  EXPECT_TRUE(padding_zero(a));
}

TEST(ScaleDivWide, IntegersAndZeroDivisorUntouched) {
  unsigned char v[32], w[32];
  for (int i = 0; i < 32; ++i) v[i] = w[i] = static_cast<unsigned char>(i + 1);
  for (DType dt : kWide) {
    ucc::dev::scale_div(dt, v, 1, 0);  // divisor 0: nothing to produce
    if (dt == DType::kInt128 || dt == DType::kUint128)
      ucc::dev::scale_div(dt, v, 2, 2);  // AVG is not defined on integers
    ASSERT_EQ(std::memcmp(v, w, 32), 0) << ucc::off::dtype_name(dt);
    ucc::dev::scale_div(dt, nullptr, 0, 3);
  }
}

}  // namespace

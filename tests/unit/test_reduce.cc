// Unit tests for device/reduce: the support table, every supported
// (dtype, op) pair against an independent scalar reference at sizes that
// hit the vector body, its tail and the 16-bit block boundary, aliasing,
// scale_div, and the names. The float16/bfloat16 conversions themselves
// are tested in test_half.cc; the wide types (int128 and after) in
// test_reduce_wide.cc.
//
// The reference never calls the library: integers are computed in 64-bit
// and truncated, floats in double, and 16-bit floats are built from exact
// values by encoders written here and in reduce_ref.h (inputs are small
// integers and halves, so every expected result is exact in every format).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "device/reduce/half.h"
#include "device/reduce/reduce.h"
#include "offload/types.h"
#include "tests/unit/reduce_ref.h"

namespace {

using ucc::off::DType;
using ucc::off::ROp;
using ucct::unit::ref_float;
using ucct::unit::ref_half_bits;
using ucct::unit::ref_half_value;
using ucct::unit::Rng;

constexpr size_t kCounts[] = {0, 1, 3, 7, 64, 255, 256, 257, 1000, 4099};
constexpr size_t kTail = 16;  // poisoned elements after `count`
constexpr uint8_t kPoison = 0xA5;

// The original twelve types, kInt8 to kFloat64; test_reduce_wide.cc covers
// the rest.
constexpr int kNumDTypes = static_cast<int>(DType::kFloat64) + 1;
constexpr int kNumROps = static_cast<int>(ROp::kNone) + 1;  // incl. kNone

bool is_int(DType dt) { return static_cast<int>(dt) <= 7; }
bool is_float(DType dt) { return !is_int(dt); }

// The rule from reduce.h, restated independently.
bool expect_supported(DType dt, ROp op) {
  switch (op) {
    case ROp::kSum:
    case ROp::kProd:
    case ROp::kMax:
    case ROp::kMin:
      return true;
    case ROp::kLand:
    case ROp::kLor:
    case ROp::kLxor:
    case ROp::kBand:
    case ROp::kBor:
    case ROp::kBxor:
      return is_int(dt);
    case ROp::kAvg:
      return is_float(dt);
    case ROp::kMaxloc:
    case ROp::kMinloc:  // pairs; test_reduce_loc.cc checks the values
      return dt != DType::kFloat16 && dt != DType::kBfloat16;
    default:
      return false;
  }
}

// ---- Exact 16-bit encoders/decoders for the reference -------------------
// (binary16: ref_half_value and ref_half_bits in reduce_ref.h)

// bfloat16 by construction of the float bit pattern, for exact values only.
uint16_t ref_bf16_bits_exact(double v) {
  const float f = static_cast<float>(v);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  EXPECT_EQ(u & 0xFFFFu, 0u) << "test value " << v << " not exact in bf16";
  return static_cast<uint16_t>(u >> 16);
}

double ref_bf16_value(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// ---- The reference reduction ----------------------------------------------

template <typename T>
T ref_int(ROp op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  const uint64_t ua = static_cast<U>(a), ub = static_cast<U>(b);
  switch (op) {
    case ROp::kSum:
      return static_cast<T>(static_cast<U>(ua + ub));
    case ROp::kProd:
      return static_cast<T>(static_cast<U>(ua * ub));
    case ROp::kMax:
      return std::max(a, b);
    case ROp::kMin:
      return std::min(a, b);
    case ROp::kLand:
      return (a && b) ? 1 : 0;
    case ROp::kLor:
      return (a || b) ? 1 : 0;
    case ROp::kLxor:
      return (!a != !b) ? 1 : 0;
    case ROp::kBand:
      return static_cast<T>(ua & ub);
    case ROp::kBor:
      return static_cast<T>(ua | ub);
    case ROp::kBxor:
      return static_cast<T>(ua ^ ub);
    default:
      ADD_FAILURE() << "bad op";
      return 0;
  }
}

// One element's worth of generation and reference, per dtype. Values are
// stored as raw bytes so that one harness drives every type.
struct Element {
  DType dt;
  size_t size;

  // Random operand. Integers: full range, with zeros and ones common (for
  // the logical ops) and small negatives. Floats: k/2, |k| <= kMaxK.
  void gen(Rng& r, void* out) const {
    const int pick = r.small(0, 7);
    if (is_int(dt)) {
      uint64_t v = r.next();
      if (pick == 0) v = 0;
      if (pick == 1) v = 1;
      if (pick == 2) v = static_cast<uint64_t>(-r.small(1, 5));
      std::memcpy(out, &v, size);  // little-endian: the low bytes
      return;
    }
    const int max_k =
        (dt == DType::kFloat16 || dt == DType::kBfloat16) ? 16 : 40;
    store_float(static_cast<double>(r.small(-max_k, max_k)) / 2, out);
  }

  void store_float(double v, void* out) const {
    switch (dt) {
      case DType::kFloat16: {
        uint16_t h = ref_half_bits(v);
        std::memcpy(out, &h, 2);
        break;
      }
      case DType::kBfloat16: {
        uint16_t h = ref_bf16_bits_exact(v);
        std::memcpy(out, &h, 2);
        break;
      }
      case DType::kFloat32: {
        float f = static_cast<float>(v);
        std::memcpy(out, &f, 4);
        break;
      }
      default:
        std::memcpy(out, &v, 8);
        break;
    }
  }

  double load_float(const void* in) const {
    uint16_t h;
    switch (dt) {
      case DType::kFloat16:
        std::memcpy(&h, in, 2);
        return ref_half_value(h);
      case DType::kBfloat16:
        std::memcpy(&h, in, 2);
        return ref_bf16_value(h);
      case DType::kFloat32: {
        float f;
        std::memcpy(&f, in, 4);
        return f;
      }
      default: {
        double d;
        std::memcpy(&d, in, 8);
        return d;
      }
    }
  }

  template <typename T>
  void ref_typed(ROp op, const void* a, const void* b, void* out) const {
    T x, y;
    std::memcpy(&x, a, sizeof(T));
    std::memcpy(&y, b, sizeof(T));
    const T z = ref_int<T>(op, x, y);
    std::memcpy(out, &z, sizeof(T));
  }

  void ref(ROp op, const void* a, const void* b, void* out) const {
    switch (dt) {
      case DType::kInt8:
        return ref_typed<int8_t>(op, a, b, out);
      case DType::kInt16:
        return ref_typed<int16_t>(op, a, b, out);
      case DType::kInt32:
        return ref_typed<int32_t>(op, a, b, out);
      case DType::kInt64:
        return ref_typed<int64_t>(op, a, b, out);
      case DType::kUint8:
        return ref_typed<uint8_t>(op, a, b, out);
      case DType::kUint16:
        return ref_typed<uint16_t>(op, a, b, out);
      case DType::kUint32:
        return ref_typed<uint32_t>(op, a, b, out);
      case DType::kUint64:
        return ref_typed<uint64_t>(op, a, b, out);
      default:
        store_float(ref_float(op, load_float(a), load_float(b)), out);
    }
  }

  std::string show(const void* p) const {
    uint64_t raw = 0;
    std::memcpy(&raw, p, size);
    std::string s = "0x" + [&] {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%llx",
                    static_cast<unsigned long long>(raw));
      return std::string(buf);
    }();
    if (is_float(dt)) s += " (" + std::to_string(load_float(p)) + ")";
    return s;
  }
};

// ---- Support table ----------------------------------------------------------

TEST(ReduceSupported, MatchesRule) {
  for (int d = 0; d < kNumDTypes; ++d) {
    for (int o = 0; o < kNumROps; ++o) {
      const auto dt = static_cast<DType>(d);
      const auto op = static_cast<ROp>(o);
      EXPECT_EQ(ucc::dev::reduce_supported(dt, op), expect_supported(dt, op))
          << ucc::off::dtype_name(dt) << " " << ucc::off::rop_name(op);
    }
  }
  // Out-of-range values are never supported.
  EXPECT_FALSE(ucc::dev::reduce_supported(DType::kCount, ROp::kSum));
  EXPECT_FALSE(
      ucc::dev::reduce_supported(DType::kFloat32, static_cast<ROp>(200)));
}

// ---- Every pair, every count
// --------------------------------------------------

enum class Alias { kNone, kDstIsA, kDstIsB, kAll };

class ReducePair : public ::testing::TestWithParam<std::tuple<int, int>> {
 protected:
  // Runs one (count, aliasing, element offset) case and checks every
  // element plus the poisoned tail.
  void run_case(DType dt, ROp op, size_t count, Alias alias, size_t offset,
                uint64_t seed) {
    const Element el{dt, ucc::off::dtype_size(dt)};
    const size_t sz = el.size;
    const size_t total = (offset + count + kTail) * sz;
    std::vector<uint8_t> a(total), b(total), dst(total, kPoison), want(total);
    Rng r{seed};
    for (size_t i = 0; i < count; ++i) {
      uint8_t* pa = &a[(offset + i) * sz];
      uint8_t* pb = &b[(offset + i) * sz];
      el.gen(r, pa);
      // Equal operands now and then: max/min ties, lxor/bxor zeros.
      if (r.small(0, 7) == 0)
        std::memcpy(pb, pa, sz);
      else
        el.gen(r, pb);
    }
    const uint8_t* pa = &a[offset * sz];
    const uint8_t* pb = &b[offset * sz];
    void* out = &dst[offset * sz];
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
                      << " offset=" << offset << " i=" << i << ": "
                      << el.show(pa + i * sz) << " op " << el.show(pb + i * sz)
                      << " = " << el.show(got + i * sz) << ", want "
                      << el.show(&want[i * sz]);
      }
    }
    for (size_t i = (offset + count) * sz; i < total; ++i) {
      ASSERT_EQ(dst[i], kPoison) << "wrote past count=" << count << " at byte "
                                 << i - (offset + count) * sz;
    }
    for (size_t i = 0; i < offset * sz; ++i) {
      ASSERT_EQ(dst[i], kPoison) << "wrote before dst";
    }
  }
};

TEST_P(ReducePair, MatchesReference) {
  const auto dt = static_cast<DType>(std::get<0>(GetParam()));
  const auto op = static_cast<ROp>(std::get<1>(GetParam()));
  if (!expect_supported(dt, op)) {
    // Unsupported pairs must do nothing (and not crash).
    std::vector<uint8_t> a(64, 1), b(64, 2), dst(64, kPoison);
    ucc::dev::reduce(op, dt, dst.data(), a.data(), b.data(), 64 / 8);
    for (uint8_t v : dst) ASSERT_EQ(v, kPoison);
    return;
  }
  uint64_t seed = 1;
  for (size_t count : kCounts) {
    // Offset 1 element: a start off the vector alignment, so the loop's
    // peeling/versioning paths run too.
    for (size_t offset : {size_t{0}, size_t{1}}) {
      for (Alias alias :
           {Alias::kNone, Alias::kDstIsA, Alias::kDstIsB, Alias::kAll}) {
        run_case(dt, op, count, alias, offset, seed++);
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

// Every op but the pair ops (maxloc, minloc: test_reduce_loc.cc).
constexpr int kScalarOps[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13};
static_assert(static_cast<int>(ROp::kAvg) == 10 &&
              static_cast<int>(ROp::kNone) == 13);

INSTANTIATE_TEST_SUITE_P(AllPairs, ReducePair,
                         ::testing::Combine(::testing::Range(0, kNumDTypes),
                                            ::testing::ValuesIn(kScalarOps)),
                         pair_name);

TEST(Reduce, ZeroCountTouchesNothing) {
  ucc::dev::reduce(ROp::kSum, DType::kFloat32, nullptr, nullptr, nullptr, 0);
  ucc::dev::scale_div(DType::kFloat32, nullptr, 0, 3);
}

TEST(Reduce, WrapsSignedArithmetic) {
  int32_t a[2] = {std::numeric_limits<int32_t>::max(),
                  std::numeric_limits<int32_t>::min()};
  int32_t b[2] = {1, -1};
  int32_t d[2];
  ucc::dev::reduce(ROp::kSum, DType::kInt32, d, a, b, 2);
  EXPECT_EQ(d[0], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(d[1], std::numeric_limits<int32_t>::max());
  int16_t x[1] = {-32768}, y[1] = {-1}, z[1];
  ucc::dev::reduce(ROp::kProd, DType::kInt16, z, x, y, 1);
  EXPECT_EQ(z[0], -32768);
  uint16_t u[1] = {65535}, v[1] = {65535}, w[1];
  ucc::dev::reduce(ROp::kProd, DType::kUint16, w, u, v, 1);
  EXPECT_EQ(w[0], 1);  // 65535^2 mod 2^16
}

TEST(Reduce, SignedVsUnsignedMaxMin) {
  int8_t a[1] = {-1}, b[1] = {1}, d[1];
  ucc::dev::reduce(ROp::kMax, DType::kInt8, d, a, b, 1);
  EXPECT_EQ(d[0], 1);
  uint8_t ua[1] = {0xFF}, ub[1] = {1}, ud[1];
  ucc::dev::reduce(ROp::kMax, DType::kUint8, ud, ua, ub, 1);
  EXPECT_EQ(ud[0], 0xFF);
  int64_t la[1] = {std::numeric_limits<int64_t>::min()}, lb[1] = {0}, ld[1];
  ucc::dev::reduce(ROp::kMin, DType::kInt64, ld, la, lb, 1);
  EXPECT_EQ(ld[0], std::numeric_limits<int64_t>::min());
}

// The documented NaN behaviour: a comparison with NaN is false, so `b`
// comes back.
TEST(Reduce, FloatMaxMinNaNReturnsSecond) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float a[2] = {nan, 1.0f}, b[2] = {1.0f, nan}, d[2];
  ucc::dev::reduce(ROp::kMax, DType::kFloat32, d, a, b, 2);
  EXPECT_EQ(d[0], 1.0f);
  EXPECT_TRUE(std::isnan(d[1]));
  ucc::dev::reduce(ROp::kMin, DType::kFloat32, d, a, b, 2);
  EXPECT_EQ(d[0], 1.0f);
  EXPECT_TRUE(std::isnan(d[1]));
}

// 16-bit sums round once, to nearest even: 2048 + 1 is a tie in float16.
TEST(Reduce, HalfSumRoundsToEven) {
  uint16_t a[2] = {ref_half_bits(2048), ref_half_bits(2050)};
  uint16_t b[2] = {ref_half_bits(1), ref_half_bits(1)};
  uint16_t d[2];
  ucc::dev::reduce(ROp::kSum, DType::kFloat16, d, a, b, 2);
  EXPECT_EQ(d[0], ref_half_bits(2048));
  EXPECT_EQ(d[1], ref_half_bits(2052));
  // bfloat16 has 8 significant bits: 256 + 1 ties to 256, 258 + 1 to 260.
  uint16_t c[2] = {ref_bf16_bits_exact(256), ref_bf16_bits_exact(258)};
  uint16_t e[2] = {ref_bf16_bits_exact(1), ref_bf16_bits_exact(1)};
  ucc::dev::reduce(ROp::kSum, DType::kBfloat16, d, c, e, 2);
  EXPECT_EQ(d[0], ref_bf16_bits_exact(256));
  EXPECT_EQ(d[1], ref_bf16_bits_exact(260));
}

// Every 16-bit pattern through reduce's own conversion path (the pair loop,
// or F16C blocks where the build has it): max(a, a) must give a back,
// NaNs quieted but keeping sign.
TEST(Reduce, SixteenBitEveryPatternSurvives) {
  for (DType dt : {DType::kFloat16, DType::kBfloat16}) {
    std::vector<uint16_t> a(0x10000), d(0x10000);
    for (uint32_t i = 0; i < 0x10000; ++i) a[i] = static_cast<uint16_t>(i);
    ucc::dev::reduce(ROp::kMax, dt, d.data(), a.data(), a.data(), a.size());
    const bool f16 = dt == DType::kFloat16;
    for (uint32_t i = 0; i < 0x10000; ++i) {
      const double v = f16 ? ref_half_value(static_cast<uint16_t>(i))
                           : ref_bf16_value(static_cast<uint16_t>(i));
      if (std::isnan(v)) {
        const double got = f16 ? ref_half_value(d[i]) : ref_bf16_value(d[i]);
        ASSERT_TRUE(std::isnan(got)) << ucc::off::dtype_name(dt) << " " << i;
        ASSERT_EQ(d[i] & 0x8000, i & 0x8000) << i;
      } else {
        ASSERT_EQ(d[i], i) << ucc::off::dtype_name(dt) << " " << i;
      }
    }
  }
}

// x + ulp(x)/2 is a tie for every float16 x whose half-ulp is itself a
// float16 (x >= 2^-13): the sum must round to the even neighbour, through
// whichever conversion path the build uses.
TEST(Reduce, HalfSumTiesEveryBinade) {
  std::vector<uint16_t> a, b, d, want;
  for (uint32_t h = 0x0800; h < 0x7C00; ++h) {
    const int e = static_cast<int>(h >> 10) - 15;  // unbiased exponent
    a.push_back(static_cast<uint16_t>(h));
    b.push_back(ref_half_bits(std::ldexp(1.0, e - 11)));
    want.push_back(static_cast<uint16_t>((h & 1) ? h + 1 : h));
  }
  d.resize(a.size());
  ucc::dev::reduce(ROp::kSum, DType::kFloat16, d.data(), a.data(), b.data(),
                   a.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(d[i], want[i]) << std::hex << a[i];
  // 65504 + 16 = 65520 ties to the even neighbour, which is infinity.
  uint16_t x = 0x7BFF, y = ref_half_bits(16), z = 0;
  ucc::dev::reduce(ROp::kSum, DType::kFloat16, &z, &x, &y, 1);
  EXPECT_EQ(z, 0x7C00);
  // Subnormal + subnormal stays exact.
  uint16_t s1 = 0x0001, s2 = 0x0003, s3 = 0;
  ucc::dev::reduce(ROp::kSum, DType::kFloat16, &s3, &s1, &s2, 1);
  EXPECT_EQ(s3, 0x0004);
}

// ---- scale_div --------------------------------------------------------------

TEST(ScaleDiv, Float32And64) {
  for (size_t count : kCounts) {
    std::vector<float> f(count + kTail, -7.0f);
    std::vector<double> g(count + kTail, -7.0);
    for (size_t i = 0; i < count; ++i) {
      f[i] = static_cast<float>(i) - 100.0f;
      g[i] = static_cast<double>(i) * 3.0 - 1.0;
    }
    ucc::dev::scale_div(DType::kFloat32, f.data(), count, 3);
    ucc::dev::scale_div(DType::kFloat64, g.data(), count, 8);
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(f[i], (static_cast<float>(i) - 100.0f) / 3.0f) << i;
      ASSERT_EQ(g[i], (static_cast<double>(i) * 3.0 - 1.0) / 8.0) << i;
    }
    for (size_t i = count; i < count + kTail; ++i) {
      ASSERT_EQ(f[i], -7.0f);
      ASSERT_EQ(g[i], -7.0);
    }
  }
}

TEST(ScaleDiv, SixteenBit) {
  for (size_t count : kCounts) {
    std::vector<uint16_t> h(count + kTail, 0xBEEF), b(count + kTail, 0xBEEF);
    for (size_t i = 0; i < count; ++i) {
      const double v = static_cast<double>(static_cast<int>(i % 64) - 32);
      h[i] = ref_half_bits(v);
      b[i] = ref_bf16_bits_exact(v);
    }
    ucc::dev::scale_div(DType::kFloat16, h.data(), count, 4);
    ucc::dev::scale_div(DType::kBfloat16, b.data(), count, 4);
    for (size_t i = 0; i < count; ++i) {
      const double v = static_cast<double>(static_cast<int>(i % 64) - 32) / 4;
      ASSERT_EQ(h[i], ref_half_bits(v)) << i;
      ASSERT_EQ(b[i], ref_bf16_bits_exact(v)) << i;
    }
    for (size_t i = count; i < count + kTail; ++i) {
      ASSERT_EQ(h[i], 0xBEEF);
      ASSERT_EQ(b[i], 0xBEEF);
    }
  }
  // Inexact quotients round to nearest: 1/3.
  uint16_t h = 0x3C00, bf = 0x3F80;
  ucc::dev::scale_div(DType::kFloat16, &h, 1, 3);
  ucc::dev::scale_div(DType::kBfloat16, &bf, 1, 3);
  EXPECT_EQ(h, 0x3555);
  EXPECT_EQ(bf, 0x3EAB);
}

TEST(ScaleDiv, IntegersAndZeroDivisorUntouched) {
  int32_t v[4] = {8, -8, 3, 0};
  ucc::dev::scale_div(DType::kInt32, v, 4, 2);
  EXPECT_EQ(v[0], 8);
  EXPECT_EQ(v[1], -8);
  float f[2] = {1.0f, 2.0f};
  ucc::dev::scale_div(DType::kFloat32, f, 2, 0);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], 2.0f);
}

// ---- names
// -------------------------------------------------------------------

TEST(Names, ShortLowercase) {
  EXPECT_STREQ(ucc::off::coll_type_name(ucc::off::CollType::kAllreduce),
               "allreduce");
  EXPECT_STREQ(ucc::off::coll_type_name(ucc::off::CollType::kReduceScatter),
               "reduce_scatter");
  EXPECT_STREQ(ucc::off::coll_type_name(ucc::off::CollType::kCount), "unknown");
  EXPECT_STREQ(ucc::off::dtype_name(DType::kFloat32), "float32");
  EXPECT_STREQ(ucc::off::dtype_name(DType::kBfloat16), "bfloat16");
  EXPECT_STREQ(ucc::off::dtype_name(DType::kInt8), "int8");
  EXPECT_STREQ(ucc::off::dtype_name(DType::kCount), "unknown");
  EXPECT_STREQ(ucc::off::rop_name(ROp::kSum), "sum");
  EXPECT_STREQ(ucc::off::rop_name(ROp::kAvg), "avg");
  EXPECT_STREQ(ucc::off::rop_name(ROp::kNone), "none");
  EXPECT_STREQ(ucc::off::rop_name(ROp::kMaxloc), "maxloc");
  EXPECT_STREQ(ucc::off::rop_name(ROp::kMinloc), "minloc");
  EXPECT_STREQ(ucc::off::dtype_name(DType::kGeneric), "generic");
  EXPECT_STREQ(ucc::off::rop_name(static_cast<ROp>(99)), "unknown");
  for (int i = 0; i < static_cast<int>(DType::kCount); ++i) {
    EXPECT_STRNE(ucc::off::dtype_name(static_cast<DType>(i)), "unknown");
  }
}

}  // namespace

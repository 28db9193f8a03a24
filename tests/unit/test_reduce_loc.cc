// Unit tests for MAXLOC / MINLOC (device/reduce/reduce_loc.h): every
// supported type against a scalar reference at sizes around the vector
// body and tail, with many ties in value (and in index) so that the
// smaller-index rule decides often, NaN and infinities in the float types,
// every aliasing the contract allows, poisoned tails; the support table;
// and that the result does not depend on the order of combination (what
// lets a collective combine ranks in any tree).
//
// The reference ranks two pairs by (NaN first, then value, then index) in
// plain scalar code of its own; inputs never hold -0.0 or two NaN payloads,
// so pairs that tie on value and index are equal bit for bit and either
// answer is the same bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "device/reduce/reduce.h"
#include "offload/descriptor.h"
#include "offload/types.h"
#include "tests/unit/reduce_ref.h"

namespace {

using ucc::off::DType;
using ucc::off::ROp;
using ucct::unit::Rng;

constexpr size_t kCounts[] = {0, 1, 3, 7, 64, 257, 1000};
constexpr size_t kTail = 8;  // poisoned pairs after `count`
constexpr uint8_t kPoison = 0xA5;

// A value of T from a small set (ties are frequent), now and then an
// extreme; floats also take NaN and infinities. Never -0.0.
template <typename T>
T gen_value(Rng& r) {
  const int k = r.small(0, 31);
  if constexpr (std::is_floating_point_v<T>) {
    if (k == 0) return std::numeric_limits<T>::quiet_NaN();
    if (k == 1) return std::numeric_limits<T>::infinity();
    if (k == 2) return -std::numeric_limits<T>::infinity();
    if (k == 3) return std::numeric_limits<T>::max();
    return static_cast<T>(r.small(-3, 3)) / 2;
  } else {
    if (k == 0) return std::numeric_limits<T>::max();
    if (k == 1) return std::numeric_limits<T>::min();
    if constexpr (std::is_signed_v<T>) return static_cast<T>(r.small(-3, 3));
    return static_cast<T>(r.small(0, 5));
  }
}

template <typename T>
T gen_index(Rng& r) {
  return static_cast<T>(r.small(0, 9));
}

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}

// True when pair (av, ai) comes before (bv, bi) in the reference order.
template <typename T>
bool ref_first(bool max, T av, T ai, T bv, T bi) {
  if (is_nan(av) || is_nan(bv)) {
    if (!is_nan(bv)) return true;
    if (!is_nan(av)) return false;
  } else if (av != bv) {
    return max ? av > bv : av < bv;
  }
  return ai <= bi;
}

template <typename T>
std::string show(const T* p) {
  char b[96];
  if constexpr (std::is_floating_point_v<T>)
    std::snprintf(b, sizeof b, "{%g, %g}", static_cast<double>(p[0]),
                  static_cast<double>(p[1]));
  else if constexpr (std::is_signed_v<T>)
    std::snprintf(b, sizeof b, "{%lld, %lld}", static_cast<long long>(p[0]),
                  static_cast<long long>(p[1]));
  else
    std::snprintf(b, sizeof b, "{%llu, %llu}",
                  static_cast<unsigned long long>(p[0]),
                  static_cast<unsigned long long>(p[1]));
  return b;
}

enum class Alias { kNone, kDstIsA, kDstIsB, kAll };

template <typename T>
void run_case(DType dt, ROp op, size_t count, Alias alias, uint64_t seed) {
  const bool max = op == ROp::kMaxloc;
  const size_t vals = 2 * count, total = 2 * (count + kTail);
  std::vector<T> a(total), b(total), want(vals);
  std::vector<uint8_t> dst(total * sizeof(T), kPoison);
  Rng r{seed};
  for (size_t i = 0; i < count; ++i) {
    a[2 * i] = gen_value<T>(r);
    a[2 * i + 1] = gen_index<T>(r);
    if (r.small(0, 3) == 0) {  // same value, other index
      b[2 * i] = a[2 * i];
      b[2 * i + 1] = gen_index<T>(r);
    } else {
      b[2 * i] = gen_value<T>(r);
      b[2 * i + 1] = gen_index<T>(r);
    }
  }
  T* out = reinterpret_cast<T*>(dst.data());
  const T* in_a = a.data();
  const T* in_b = b.data();
  const T* ref_b = b.data();
  switch (alias) {
    case Alias::kNone:
      break;
    case Alias::kDstIsA:
      std::memcpy(out, a.data(), vals * sizeof(T));
      in_a = out;
      break;
    case Alias::kDstIsB:
      std::memcpy(out, b.data(), vals * sizeof(T));
      in_b = out;
      break;
    case Alias::kAll:
      std::memcpy(out, a.data(), vals * sizeof(T));
      in_a = in_b = out;
      ref_b = a.data();
      break;
  }
  for (size_t i = 0; i < count; ++i) {
    const T* pa = &a[2 * i];
    const T* pb = &ref_b[2 * i];
    const T* w = ref_first(max, pa[0], pa[1], pb[0], pb[1]) ? pa : pb;
    want[2 * i] = w[0];
    want[2 * i + 1] = w[1];
  }

  ucc::dev::reduce(op, dt, out, in_a, in_b, count);

  int errors = 0;
  for (size_t i = 0; i < count && errors < 5; ++i) {
    if (std::memcmp(out + 2 * i, &want[2 * i], 2 * sizeof(T)) != 0) {
      ++errors;
      ADD_FAILURE() << ucc::off::dtype_name(dt) << " " << ucc::off::rop_name(op)
                    << " count=" << count
                    << " alias=" << static_cast<int>(alias) << " i=" << i
                    << ": " << show(&a[2 * i]) << " op " << show(&ref_b[2 * i])
                    << " = " << show(out + 2 * i) << ", want "
                    << show(&want[2 * i]);
    }
  }
  for (size_t i = vals * sizeof(T); i < dst.size(); ++i)
    ASSERT_EQ(dst[i], kPoison) << "wrote past count=" << count;
}

template <typename T>
void run_type(DType dt) {
  uint64_t seed = 7 + static_cast<uint64_t>(dt);
  for (ROp op : {ROp::kMaxloc, ROp::kMinloc}) {
    for (size_t count : kCounts) {
      for (Alias alias :
           {Alias::kNone, Alias::kDstIsA, Alias::kDstIsB, Alias::kAll}) {
        run_case<T>(dt, op, count, alias, seed++);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(ReduceLoc, Int8) { run_type<int8_t>(DType::kInt8); }
TEST(ReduceLoc, Int16) { run_type<int16_t>(DType::kInt16); }
TEST(ReduceLoc, Int32) { run_type<int32_t>(DType::kInt32); }
TEST(ReduceLoc, Int64) { run_type<int64_t>(DType::kInt64); }
TEST(ReduceLoc, Uint8) { run_type<uint8_t>(DType::kUint8); }
TEST(ReduceLoc, Uint16) { run_type<uint16_t>(DType::kUint16); }
TEST(ReduceLoc, Uint32) { run_type<uint32_t>(DType::kUint32); }
TEST(ReduceLoc, Uint64) { run_type<uint64_t>(DType::kUint64); }
TEST(ReduceLoc, Float32) { run_type<float>(DType::kFloat32); }
TEST(ReduceLoc, Float64) { run_type<double>(DType::kFloat64); }

// Exactly the ten narrow integer and float32/64 types; never kNone-like
// values or generic types.
TEST(ReduceLoc, Supported) {
  const DType yes[] = {DType::kInt8,   DType::kInt16,  DType::kInt32,
                       DType::kInt64,  DType::kUint8,  DType::kUint16,
                       DType::kUint32, DType::kUint64, DType::kFloat32,
                       DType::kFloat64};
  for (int d = 0; d <= static_cast<int>(DType::kCount); ++d) {
    const auto dt = static_cast<DType>(d);
    bool want = false;
    for (DType y : yes) want |= y == dt;
    for (ROp op : {ROp::kMaxloc, ROp::kMinloc})
      EXPECT_EQ(ucc::dev::reduce_supported(dt, op), want)
          << ucc::off::dtype_name(dt) << " " << ucc::off::rop_name(op);
  }
  EXPECT_EQ(static_cast<int>(ROp::kMaxloc), 11);
  EXPECT_EQ(static_cast<int>(ROp::kMinloc), 12);
  EXPECT_EQ(static_cast<int>(ROp::kNone), 13);
  EXPECT_TRUE(ucc::off::rop_is_loc(ROp::kMinloc));
  EXPECT_FALSE(ucc::off::rop_is_loc(ROp::kMax));
}

// The element size the engine and the host use: pairs for the loc ops, the
// descriptor's own for generic types.
TEST(ReduceLoc, ElemSize) {
  ucc::off::CollDesc d{};
  d.dtype = DType::kInt32;
  d.op = ROp::kMaxloc;
  EXPECT_EQ(ucc::off::elem_size(d), 8u);
  d.op = ROp::kMax;
  EXPECT_EQ(ucc::off::elem_size(d), 4u);
  d.op = ROp::kNone;
  EXPECT_EQ(ucc::off::elem_size(d), 4u);
  d.dtype = DType::kFloat64;
  d.op = ROp::kMinloc;
  EXPECT_EQ(ucc::off::elem_size(d), 16u);
  d.dtype = DType::kGeneric;
  d.user_esize = 12;
  EXPECT_EQ(ucc::off::elem_size(d), 12u);
  d.dtype = DType::kCount;
  EXPECT_EQ(ucc::off::elem_size(d), 0u);
}

// NaN wins for both ops; equal values go to the smaller index; infinities
// are ordinary values.
TEST(ReduceLoc, NaNAndTies) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  double a[8] = {1.0, 5.0, nan, 3.0, nan, 9.0, inf, 2.0};
  double b[8] = {1.0, 4.0, 7.0, 1.0, nan, 2.0, 7.0, 1.0};
  double d[8];
  ucc::dev::reduce(ROp::kMaxloc, DType::kFloat64, d, a, b, 4);
  EXPECT_EQ(d[0], 1.0);
  EXPECT_EQ(d[1], 4.0);  // tie: smaller index
  EXPECT_TRUE(std::isnan(d[2]));
  EXPECT_EQ(d[3], 3.0);  // NaN wins
  EXPECT_TRUE(std::isnan(d[4]));
  EXPECT_EQ(d[5], 2.0);  // two NaNs tie: smaller index
  EXPECT_EQ(d[6], inf);
  EXPECT_EQ(d[7], 2.0);
  ucc::dev::reduce(ROp::kMinloc, DType::kFloat64, d, a, b, 4);
  EXPECT_EQ(d[1], 4.0);
  EXPECT_TRUE(std::isnan(d[2]));  // NaN wins for MINLOC too
  EXPECT_EQ(d[3], 3.0);
  EXPECT_EQ(d[5], 2.0);
  EXPECT_EQ(d[6], 7.0);
  EXPECT_EQ(d[7], 1.0);
  // Signed and unsigned comparisons differ on the same bits.
  int8_t sa[2] = {-1, 3}, sb[2] = {1, 0}, sd[2];
  ucc::dev::reduce(ROp::kMaxloc, DType::kInt8, sd, sa, sb, 1);
  EXPECT_EQ(sd[0], 1);
  EXPECT_EQ(sd[1], 0);
  uint8_t ua[2] = {0xFF, 3}, ub[2] = {1, 0}, ud[2];
  ucc::dev::reduce(ROp::kMaxloc, DType::kUint8, ud, ua, ub, 1);
  EXPECT_EQ(ud[0], 0xFF);
  EXPECT_EQ(ud[1], 3);
}

// Folding 9 ranks' pairs in random trees gives the bits of a left fold:
// the op is commutative and associative, NaNs and ties included.
template <typename T>
void order_free(DType dt, ROp op) {
  Rng r{99};
  constexpr int kRanks = 9;
  constexpr size_t kN = 200;
  std::vector<std::vector<T>> in(kRanks, std::vector<T>(2 * kN));
  for (auto& v : in)
    for (size_t i = 0; i < kN; ++i) {
      v[2 * i] = gen_value<T>(r);
      v[2 * i + 1] = gen_index<T>(r);
    }
  std::vector<T> left = in[0];
  for (int k = 1; k < kRanks; ++k)
    ucc::dev::reduce(op, dt, left.data(), left.data(), in[k].data(), kN);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<std::vector<T>> pool = in;
    while (pool.size() > 1) {
      size_t i =
          static_cast<size_t>(r.small(0, static_cast<int>(pool.size()) - 1));
      size_t j =
          static_cast<size_t>(r.small(0, static_cast<int>(pool.size()) - 2));
      if (j >= i) ++j;
      ucc::dev::reduce(op, dt, pool[i].data(), pool[i].data(), pool[j].data(),
                       kN);
      pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(j));
    }
    ASSERT_EQ(std::memcmp(pool[0].data(), left.data(), left.size() * sizeof(T)),
              0)
        << ucc::off::dtype_name(dt) << " " << ucc::off::rop_name(op)
        << " trial " << trial;
  }
}

TEST(ReduceLoc, OrderOfCombinationDoesNotMatter) {
  for (ROp op : {ROp::kMaxloc, ROp::kMinloc}) {
    order_free<float>(DType::kFloat32, op);
    order_free<double>(DType::kFloat64, op);
    order_free<int16_t>(DType::kInt16, op);
    order_free<uint64_t>(DType::kUint64, op);
  }
}

}  // namespace

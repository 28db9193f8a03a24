// The wide datatypes through whole collectives: INT128, UINT128, FLOAT128
// and the three complex types, with the ops ucc.h defines for them,
// checked exactly against values computed here (inputs are small integers
// and halves, so every result is exact in every type). FLOAT128 is C long
// double, as in UCC: x87 extended on x86-64 (10 value bytes in a 16-byte
// slot, the rest zero in inputs and results), binary128 on AArch64.
#include <gtest/gtest.h>

#include <cfloat>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/common/harness.h"

namespace {

using i128 = __int128;
using u128 = unsigned __int128;

// Element e of rank r's input, as a small integer.
int64_t base(int r, size_t e) {
  return static_cast<int64_t>(r * 3 + e % 5) - 4;
}

struct Wide {
  ucc_datatype_t dt;
  size_t size;
  const char* name;
};

const Wide kTypes[] = {
    {UCC_DT_INT128, 16, "int128"},
    {UCC_DT_UINT128, 16, "uint128"},
    {UCC_DT_FLOAT128, 16, "float128"},
    {UCC_DT_FLOAT128_COMPLEX, 32, "float128_complex"},
    {UCC_DT_FLOAT32_COMPLEX, 8, "float32_complex"},
    {UCC_DT_FLOAT64_COMPLEX, 16, "float64_complex"},
};

bool is_complex(ucc_datatype_t dt) {
  return dt == UCC_DT_FLOAT32_COMPLEX || dt == UCC_DT_FLOAT64_COMPLEX ||
         dt == UCC_DT_FLOAT128_COMPLEX;
}

// UCC's FLOAT128 reduces as C long double where that is x87 or binary128.
bool float128_reduces() {
  return LDBL_MANT_DIG == 113 ||
         (LDBL_MANT_DIG == 64 && sizeof(long double) == 16);
}

// A long double in a 16-byte slot: its value bytes, the rest zero.
void put_ld(void* p, long double v) {
  const size_t n = LDBL_MANT_DIG == 64 ? 10 : sizeof(long double);
  std::memset(p, 0, 16);
  std::memcpy(p, &v, n < 16 ? n : 16);
}

// A value as the type's bytes: integers take v (unsigned wraps), floats
// take v / 2, complex numbers (v / 2, 1 - v).
void store(ucc_datatype_t dt, void* p, int64_t v) {
  switch (dt) {
    case UCC_DT_INT128: {
      i128 x = v;
      std::memcpy(p, &x, 16);
      break;
    }
    case UCC_DT_UINT128: {
      u128 x = static_cast<u128>(static_cast<i128>(v));
      std::memcpy(p, &x, 16);
      break;
    }
    case UCC_DT_FLOAT128:
      put_ld(p, static_cast<long double>(v) / 2);
      break;
    case UCC_DT_FLOAT128_COMPLEX:
      put_ld(p, static_cast<long double>(v) / 2);
      put_ld(static_cast<char*>(p) + 16, static_cast<long double>(1 - v));
      break;
    case UCC_DT_FLOAT32_COMPLEX: {
      float x[2] = {static_cast<float>(v) / 2, static_cast<float>(1 - v)};
      std::memcpy(p, x, 8);
      break;
    }
    case UCC_DT_FLOAT64_COMPLEX: {
      double x[2] = {static_cast<double>(v) / 2, static_cast<double>(1 - v)};
      std::memcpy(p, x, 16);
      break;
    }
    default:
      break;
  }
}

// The expected reduction of all ranks' element e, as the type's bytes.
void expect(ucc_datatype_t dt, ucc_reduction_op_t op, int n, size_t e,
            void* out) {
  if (dt == UCC_DT_INT128 || dt == UCC_DT_UINT128) {
    u128 acc = static_cast<u128>(static_cast<i128>(base(0, e)));
    for (int r = 1; r < n; ++r) {
      u128 x = static_cast<u128>(static_cast<i128>(base(r, e)));
      switch (op) {
        case UCC_OP_SUM:
          acc += x;
          break;
        case UCC_OP_PROD:
          acc *= x;
          break;
        case UCC_OP_MAX:
          if (dt == UCC_DT_INT128
                  ? static_cast<i128>(x) > static_cast<i128>(acc)
                  : x > acc)
            acc = x;
          break;
        case UCC_OP_MIN:
          if (dt == UCC_DT_INT128
                  ? static_cast<i128>(x) < static_cast<i128>(acc)
                  : x < acc)
            acc = x;
          break;
        case UCC_OP_BXOR:
          acc ^= x;
          break;
        case UCC_OP_BOR:
          acc |= x;
          break;
        default:
          break;
      }
    }
    std::memcpy(out, &acc, 16);
    return;
  }
  // Floating and complex: sum (and avg) of v/2 and of (1 - v) are exact.
  double re = 0, im = 0;
  for (int r = 0; r < n; ++r) {
    re += static_cast<double>(base(r, e)) / 2;
    im += static_cast<double>(1 - base(r, e));
  }
  if (op == UCC_OP_AVG) {
    re /= n;
    im /= n;
  }
  switch (dt) {
    case UCC_DT_FLOAT128: {
      // Every op, in long double (exact for these inputs).
      long double x = static_cast<long double>(base(0, e)) / 2;
      for (int r = 1; r < n; ++r) {
        const long double y = static_cast<long double>(base(r, e)) / 2;
        if (op == UCC_OP_PROD)
          x *= y;
        else if (op == UCC_OP_MAX)
          x = y > x ? y : x;
        else if (op == UCC_OP_MIN)
          x = y < x ? y : x;
        else
          x += y;
      }
      if (op == UCC_OP_AVG) x /= n;
      put_ld(out, x);
      break;
    }
    case UCC_DT_FLOAT128_COMPLEX: {
      long double x[2] = {static_cast<long double>(base(0, e)) / 2,
                          static_cast<long double>(1 - base(0, e))};
      for (int r = 1; r < n; ++r) {
        const long double yr = static_cast<long double>(base(r, e)) / 2,
                          yi = static_cast<long double>(1 - base(r, e));
        if (op == UCC_OP_PROD) {
          const long double re2 = x[0] * yr - x[1] * yi;
          x[1] = x[0] * yi + x[1] * yr;
          x[0] = re2;
        } else {
          x[0] += yr;
          x[1] += yi;
        }
      }
      if (op == UCC_OP_AVG) {
        x[0] /= n;
        x[1] /= n;
      }
      put_ld(out, x[0]);
      put_ld(static_cast<char*>(out) + 16, x[1]);
      break;
    }
    case UCC_DT_FLOAT32_COMPLEX: {
      float x[2] = {0, 0};
      for (int r = 0; r < n; ++r) {
        x[0] += static_cast<float>(base(r, e)) / 2;
        x[1] += static_cast<float>(1 - base(r, e));
      }
      if (op == UCC_OP_AVG) {
        x[0] /= n;
        x[1] /= n;
      }
      std::memcpy(out, x, 8);
      break;
    }
    case UCC_DT_FLOAT64_COMPLEX: {
      double x[2] = {re, im};
      std::memcpy(out, x, 16);
      break;
    }
    default:
      break;
  }
}

std::vector<ucc_reduction_op_t> ops_of(ucc_datatype_t dt) {
  if ((dt == UCC_DT_FLOAT128 || dt == UCC_DT_FLOAT128_COMPLEX) &&
      !float128_reduces())
    return {};
  if (dt == UCC_DT_FLOAT128)
    return {UCC_OP_SUM, UCC_OP_PROD, UCC_OP_MAX, UCC_OP_MIN, UCC_OP_AVG};
  if (dt == UCC_DT_FLOAT128_COMPLEX)
    return {UCC_OP_SUM, UCC_OP_PROD, UCC_OP_AVG};
  if (dt == UCC_DT_INT128 || dt == UCC_DT_UINT128)
    return {UCC_OP_SUM, UCC_OP_PROD, UCC_OP_MAX,
            UCC_OP_MIN, UCC_OP_BXOR, UCC_OP_BOR};
  return {UCC_OP_SUM, UCC_OP_AVG};
}

class WideTypes : public ::testing::TestWithParam<int> {};

TEST_P(WideTypes, AllreduceReduceScatterAndMovement) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_SHM_SEG_SIZE", "256"}, {"UCC_SHM_NSEGS", "2"}};
    if (w.init(r) != UCC_OK) return 1;
    const int n = r.size;
    int bad = 0;
    for (const Wide& t : kTypes) {
      for (size_t count : {size_t{1}, size_t{7}, size_t{100}}) {
        std::vector<unsigned char> src(count * t.size * n), dst(src.size()),
            want(t.size);
        for (size_t e = 0; e < count * n; ++e)
          store(t.dt, &src[e * t.size], base(r.rank, e));
        for (ucc_reduction_op_t op : ops_of(t.dt)) {
          // allreduce of `count` elements
          std::memset(dst.data(), 0xa5, dst.size());
          ucc_coll_args_t a{};
          a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
          a.op = op;
          a.src.info = {src.data(), count, t.dt, UCC_MEMORY_TYPE_HOST};
          a.dst.info = {dst.data(), count, t.dt, UCC_MEMORY_TYPE_HOST};
          ucc_status_t st = w.run(a);
          for (size_t e = 0; st == UCC_OK && e < count; ++e) {
            expect(t.dt, op, n, e, want.data());
            if (std::memcmp(&dst[e * t.size], want.data(), t.size) != 0) {
              std::fprintf(stderr,
                           "rank %d: allreduce %s op %d count %zu: "
                           "element %zu differs\n",
                           r.rank, t.name, op, count, e);
              ++bad;
              break;
            }
          }
          // reduce_scatter: blocks of `count`, ours is block r.rank
          std::memset(dst.data(), 0xa5, dst.size());
          a = {};
          a.coll_type = UCC_COLL_TYPE_REDUCE_SCATTER;
          a.op = op;
          a.src.info = {src.data(), count * n, t.dt, UCC_MEMORY_TYPE_HOST};
          a.dst.info = {dst.data(), count, t.dt, UCC_MEMORY_TYPE_HOST};
          if (st == UCC_OK) st = w.run(a);
          for (size_t e = 0; st == UCC_OK && e < count; ++e) {
            expect(t.dt, op, n, r.rank * count + e, want.data());
            if (std::memcmp(&dst[e * t.size], want.data(), t.size) != 0) {
              std::fprintf(stderr,
                           "rank %d: reduce_scatter %s op %d count "
                           "%zu: element %zu differs\n",
                           r.rank, t.name, op, count, e);
              ++bad;
              break;
            }
          }
          if (st != UCC_OK) {
            std::fprintf(stderr, "rank %d: %s op %d: %s\n", r.rank, t.name, op,
                         ucct::status_name(st));
            return 2;
          }
        }
        // alltoall moves the bytes untouched
        std::memset(dst.data(), 0xa5, dst.size());
        ucc_coll_args_t a{};
        a.coll_type = UCC_COLL_TYPE_ALLTOALL;
        a.src.info = {src.data(), count * n, t.dt, UCC_MEMORY_TYPE_HOST};
        a.dst.info = {dst.data(), count * n, t.dt, UCC_MEMORY_TYPE_HOST};
        if (w.run(a) != UCC_OK) return 3;
        for (int p = 0; p < n; ++p) {
          for (size_t e = 0; e < count; ++e) {
            store(t.dt, want.data(), base(p, r.rank * count + e));
            if (std::memcmp(&dst[(p * count + e) * t.size], want.data(),
                            t.size) != 0) {
              std::fprintf(stderr, "rank %d: alltoall %s: from %d elem %zu\n",
                           r.rank, t.name, p, e);
              ++bad;
              break;
            }
          }
        }
      }
    }
    return bad == 0 ? 0 : 4;
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, WideTypes, ::testing::Values(1, 2, 3, 5),
                         [](const auto& i) {
                           return "n" + std::to_string(i.param);
                         });

// Ops that are not defined for a wide type are refused at init.
TEST(WideTypes, UndefinedOpsAreNotSupported) {
  EXPECT_TRUE(ucct::run_ranks(1, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    std::vector<unsigned char> b(64);
    auto init = [&](ucc_datatype_t dt, ucc_reduction_op_t op) {
      ucc_coll_args_t a{};
      a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
      a.op = op;
      a.src.info = {b.data(), 1, dt, UCC_MEMORY_TYPE_HOST};
      a.dst.info = {b.data() + 32, 1, dt, UCC_MEMORY_TYPE_HOST};
      ucc_coll_req_h req = nullptr;
      ucc_status_t st = ucc_collective_init(&a, &req, w.team);
      if (st == UCC_OK) ucc_collective_finalize(req);
      return st;
    };
    int bad = 0;
    bad += init(UCC_DT_FLOAT64_COMPLEX, UCC_OP_MAX) != UCC_ERR_NOT_SUPPORTED;
    bad += init(UCC_DT_FLOAT32_COMPLEX, UCC_OP_BAND) != UCC_ERR_NOT_SUPPORTED;
    bad += init(UCC_DT_INT128, UCC_OP_AVG) != UCC_ERR_NOT_SUPPORTED;
    bad += init(UCC_DT_INT128, UCC_OP_MAXLOC) != UCC_ERR_NOT_SUPPORTED;
    bad += init(UCC_DT_UINT128, UCC_OP_LAND) != UCC_OK;
    bad += init(UCC_DT_FLOAT128_COMPLEX, UCC_OP_MAX) != UCC_ERR_NOT_SUPPORTED;
    bad += init(UCC_DT_FLOAT128, UCC_OP_BAND) != UCC_ERR_NOT_SUPPORTED;
    bad += init(UCC_DT_FLOAT128, UCC_OP_SUM) !=
           (float128_reduces() ? UCC_OK : UCC_ERR_NOT_SUPPORTED);
    return bad;
  }));
}

}  // namespace

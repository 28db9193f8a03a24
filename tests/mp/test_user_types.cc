// MAXLOC / MINLOC pairs and generic (user-defined) datatypes through whole
// collectives, on forked ranks and through the public API only.
//
// Pairs: with MAXLOC or MINLOC and a predefined type T, an element is
// {T value; T index} and `count` counts pairs (docs/api.md). Every rank
// checks every pair of its result against a serial fold over the ranks'
// inputs, which come from a handful of values and indices so that equal
// values (the smaller-index rule) are the common case; the float types
// also get NaNs, which win for both ops. Collectives: allreduce (also in
// place), reduce from every root, reduce_scatter and reduce_scatterv, for
// the 10 types, at counts 0, 1, 7 and 1000, plus 70000 pairs for int8,
// int64 and float64 (a 64 KiB message slot holds 4096 pairs of 8-byte
// values, so those are segmented).
//
// Generic types: a 12-byte struct {int32 a, b, c} ("tri", reduced by a
// callback as a: sum, b: max, c: xor) and an 8-byte Gaussian integer
// {int32 re, im} ("gauss", reduced by multiplication mod 2^32). Both
// callbacks define associative, commutative ops with exact results, so the
// reference does not depend on the algorithms' combining order. Tri
// travels through all ten data-moving collectives (every root for bcast);
// both are reduced by allreduce, reduce (every root), reduce_scatter and
// reduce_scatterv. The callbacks count their calls and check the
// parameters ucc.h documents (n_vectors 1, stride 0, dt, cb_ctx).
//
// Each case runs under the default configuration and under 256-byte
// slots (not a multiple of 12: reductions must cut messages at element
// boundaries) with the ring allreduce. The negative tests check the
// status of every refused use (docs/api.md lists them).
#include <gtest/gtest.h>
#include <strings.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tests/mp/user_types_util.h"

namespace {

using ucct::mp::Buf;
using ucct::mp::Report;
using ucct::mp::rnd;
using namespace ucct::mp::ut;

// ===========================================================================
// MAXLOC / MINLOC

enum class Kind { kSigned, kUnsigned, kFloat };

struct LocType {
  ucc_datatype_t dt;
  const char* name;
  size_t size;  // of one value; a pair is twice that
  Kind kind;
  bool big;  // also at 70000 pairs
};

const LocType kLocTypes[] = {
    {UCC_DT_INT8, "int8", 1, Kind::kSigned, true},
    {UCC_DT_INT16, "int16", 2, Kind::kSigned, false},
    {UCC_DT_INT32, "int32", 4, Kind::kSigned, false},
    {UCC_DT_INT64, "int64", 8, Kind::kSigned, true},
    {UCC_DT_UINT8, "uint8", 1, Kind::kUnsigned, false},
    {UCC_DT_UINT16, "uint16", 2, Kind::kUnsigned, false},
    {UCC_DT_UINT32, "uint32", 4, Kind::kUnsigned, false},
    {UCC_DT_UINT64, "uint64", 8, Kind::kUnsigned, false},
    {UCC_DT_FLOAT32, "float32", 4, Kind::kFloat, false},
    {UCC_DT_FLOAT64, "float64", 8, Kind::kFloat, true},
};

// A pair before encoding: a small value (or NaN) and a small index.
struct Pair {
  double v;
  bool nan;
  int idx;
};

// Seven values and ten indices: with two or more ranks, equal values are
// frequent and so are equal (value, index) pairs, which encode to the same
// bytes whichever rank they come from.
Pair loc_input(const LocType& t, uint64_t seed, int r, size_t i) {
  const uint64_t x = rnd(seed, static_cast<uint64_t>(r), i);
  Pair p;
  const int k = static_cast<int>((x >> 8) % 7);
  p.nan = t.kind == Kind::kFloat && (x & 31) == 0;
  p.v = t.kind == Kind::kUnsigned ? k
        : t.kind == Kind::kSigned ? k - 3
                                  : (k - 3) / 2.0;
  p.idx = static_cast<int>((x >> 20) % 10);
  return p;
}

// Whether pair a beats pair b: NaN first, then the value, then the
// smaller index.
bool beats(bool max, const Pair& a, const Pair& b) {
  if (a.nan != b.nan) return a.nan;
  if (!a.nan && a.v != b.v) return max ? a.v > b.v : a.v < b.v;
  return a.idx < b.idx;
}

void put_value(const LocType& t, double v, bool nan, uint8_t* out) {
  if (t.kind == Kind::kFloat) {
    if (t.size == 4) {
      const float f =
          nan ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(v);
      std::memcpy(out, &f, 4);
    } else {
      const double d = nan ? std::numeric_limits<double>::quiet_NaN() : v;
      std::memcpy(out, &d, 8);
    }
    return;
  }
  // Two's complement, little end first: the low `size` bytes of an int64.
  const auto x = static_cast<uint64_t>(static_cast<int64_t>(v));
  for (size_t k = 0; k < t.size; ++k)
    out[k] = static_cast<uint8_t>(x >> (8 * k));
}

void put_pair(const LocType& t, const Pair& p, void* out) {
  auto* o = static_cast<uint8_t*>(out);
  put_value(t, p.v, p.nan, o);
  put_value(t, p.idx, false, o + t.size);
}

ReduceSpec loc_spec(const LocType& t, ucc_reduction_op_t op, int n) {
  const bool max = op == UCC_OP_MAXLOC;
  ReduceSpec s{t.dt, op, 2 * t.size, t.name, nullptr, nullptr};
  s.input = [t](uint64_t seed, int r, size_t i, void* out) {
    put_pair(t, loc_input(t, seed, r, i), out);
  };
  s.expect = [t, max, n](uint64_t seed, size_t i, void* out) {
    Pair best = loc_input(t, seed, 0, i);
    for (int r = 1; r < n; ++r) {
      const Pair p = loc_input(t, seed, r, i);
      if (beats(max, p, best)) best = p;
    }
    put_pair(t, best, out);
  };
  return s;
}

class LocOps : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(LocOps, ReducingCollectives) {
  const int n = std::get<0>(GetParam());
  const Config& cfg = kConfigs[std::get<1>(GetParam())];
  EXPECT_TRUE(ucct::run_ranks(n, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = cfg.env;
    if (w.init(r) != UCC_OK) return 1;
    Report rep(r.rank);
    Seq run{w, rep, cfg, n, r.rank};
    for (const LocType& t : kLocTypes) {
      for (ucc_reduction_op_t op : {UCC_OP_MAXLOC, UCC_OP_MINLOC}) {
        reductions(run, loc_spec(t, op, n), t.big ? kBig : 0);
        if (run.fatal) return 2;
      }
    }
    return rep.failures() == 0 ? 0 : 3;
  }));
}

std::string param_name(
    const ::testing::TestParamInfo<std::tuple<int, int>>& i) {
  return std::string(kConfigs[std::get<1>(i.param)].name) + "_n" +
         std::to_string(std::get<0>(i.param));
}

INSTANTIATE_TEST_SUITE_P(Ranks, LocOps,
                         ::testing::Combine(::testing::Values(1, 2, 3, 5, 8),
                                            ::testing::Values(0, 1)),
                         param_name);

// ===========================================================================
// Generic datatypes (the types, their inputs and the data-moving cases are
// in user_types_util.h)

// What a reduction callback saw; cb_ctx points here.
struct CbCtx {
  uintptr_t record = 0;  // what params->dt must be: the handle, untagged
  long calls = 0;
  long bad = 0;  // calls whose parameters were not as documented
};

template <typename T, T (*kOp)(const T&, const T&)>
ucc_status_t reduce_cb(const ucc_reduce_cb_params_t* p) {
  auto* c = static_cast<CbCtx*>(p->cb_ctx);
  ++c->calls;
  if (p->n_vectors != 1 || p->stride != 0 ||
      reinterpret_cast<uintptr_t>(p->dt) != c->record)
    ++c->bad;
  const auto* x = static_cast<const uint8_t*>(p->src1);
  const auto* y = static_cast<const uint8_t*>(p->src2);
  auto* d = static_cast<uint8_t*>(p->dst);
  // dst may be src1 or src2: each element is read before it is written.
  for (size_t i = 0; i < p->count; ++i) {
    T a, b;
    std::memcpy(&a, x + i * sizeof(T), sizeof(T));
    std::memcpy(&b, y + i * sizeof(T), sizeof(T));
    const T r = kOp(a, b);
    std::memcpy(d + i * sizeof(T), &r, sizeof(T));
  }
  return UCC_OK;
}

ucc_status_t failing_cb(const ucc_reduce_cb_params_t*) {
  return UCC_ERR_NO_MESSAGE;
}

// A contiguous type of `size` bytes; with `cb`, FLAG_REDUCE too.
ucc_status_t make_type(size_t size,
                       ucc_status_t (*cb)(const ucc_reduce_cb_params_t*),
                       CbCtx* ctx, ucc_datatype_t* dt,
                       uint64_t flags = UCC_GENERIC_DT_OPS_FLAG_CONTIG) {
  ucc_generic_dt_ops_t ops{};
  ops.mask = UCC_GENERIC_DT_OPS_FIELD_FLAGS;
  ops.flags = flags | (cb != nullptr ? UCC_GENERIC_DT_OPS_FLAG_REDUCE : 0);
  ops.contig_size = size;
  ops.reduce.cb = cb;
  ops.reduce.cb_ctx = ctx;
  const ucc_status_t st = ucc_dt_create_generic(&ops, nullptr, dt);
  if (st == UCC_OK && ctx != nullptr)
    ctx->record =
        static_cast<uintptr_t>(*dt & ~uint64_t{UCC_DATATYPE_CLASS_MASK});
  return st;
}

template <typename T, T (*kIn)(uint64_t, int, uint64_t),
          T (*kOp)(const T&, const T&)>
ReduceSpec generic_spec(ucc_datatype_t dt, const char* name, int n) {
  ReduceSpec s{dt, UCC_OP_SUM, sizeof(T), name, nullptr, nullptr};
  s.input = [](uint64_t seed, int r, size_t i, void* out) {
    const T v = kIn(seed, r, i);
    std::memcpy(out, &v, sizeof(T));
  };
  s.expect = [n](uint64_t seed, size_t i, void* out) {
    T acc = kIn(seed, 0, i);
    for (int r = 1; r < n; ++r) acc = kOp(acc, kIn(seed, r, i));
    std::memcpy(out, &acc, sizeof(T));
  };
  return s;
}

class GenericTypes : public ::testing::TestWithParam<std::tuple<int, int>> {};

// UCC_OFFLOAD=emu: the daemon's engine cannot run a callback of this
// process, so generic reductions are refused at init (MoveAndReduce checks
// that); tests built on such reductions do not apply.
bool emu_mode() {
  const char* where = getenv("UCC_OFFLOAD");
  return where != nullptr && strcasecmp(where, "emu") == 0;
}

TEST_P(GenericTypes, MoveAndReduce) {
  const int n = std::get<0>(GetParam());
  const Config& cfg = kConfigs[std::get<1>(GetParam())];
  EXPECT_TRUE(ucct::run_ranks(n, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = cfg.env;
    if (w.init(r) != UCC_OK) return 1;
    Report rep(r.rank);
    Seq run{w, rep, cfg, n, r.rank};
    CbCtx tri_ctx, gauss_ctx;
    ucc_datatype_t tri = 0, gauss = 0;
    if (make_type(sizeof(Tri), reduce_cb<Tri, tri_op>, &tri_ctx, &tri) !=
            UCC_OK ||
        make_type(sizeof(Gauss), reduce_cb<Gauss, gauss_op>, &gauss_ctx,
                  &gauss) != UCC_OK)
      return 2;
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}}) {
      movement(run, tri, count);
      if (run.fatal) return 3;
    }
    if (cfg.big) movement(run, tri, 7000);  // 84 KB blocks: segmented
    if (emu_mode()) {
      // The daemon's engine cannot call back into this process: generic
      // reductions are refused at init there.
      std::vector<Tri> s(4), d(4);
      ucc_coll_args_t a{};
      a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
      a.src.info = {s.data(), 4, tri, UCC_MEMORY_TYPE_HOST};
      a.dst.info = {d.data(), 4, tri, UCC_MEMORY_TYPE_HOST};
      a.op = UCC_OP_SUM;
      ucc_coll_req_h req = nullptr;
      if (ucc_collective_init(&a, &req, w.team) != UCC_ERR_NOT_SUPPORTED)
        rep.fail("emu: a generic reduction was not refused at init");
      ucc_dt_destroy(tri);
      ucc_dt_destroy(gauss);
      return rep.failures() == 0 ? 0 : 5;
    }
    const ReduceSpec ts = generic_spec<Tri, tri_in, tri_op>(tri, "tri", n);
    const ReduceSpec gs =
        generic_spec<Gauss, gauss_in, gauss_op>(gauss, "gauss", n);
    reductions(run, ts, kBig);
    reductions(run, gs, 0);
    // Any op but AVG is accepted: the callback is the reduction.
    ReduceSpec as_max = ts;
    as_max.op = UCC_OP_MAXLOC;
    allreduce(run, as_max, 7, false);
    if (run.fatal) return 4;
    if (n > 1 && (tri_ctx.calls == 0 || gauss_ctx.calls == 0))
      rep.fail("the reduction callbacks were not called");
    if (tri_ctx.bad + gauss_ctx.bad != 0)
      rep.fail("%ld callbacks with unexpected parameters",
               tri_ctx.bad + gauss_ctx.bad);
    ucc_dt_destroy(tri);
    ucc_dt_destroy(gauss);
    return rep.failures() == 0 ? 0 : 5;
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, GenericTypes,
                         ::testing::Combine(::testing::Values(1, 2, 3, 5, 8),
                                            ::testing::Values(0, 1)),
                         param_name);

// ---- refused uses
// ------------------------------------------------------------

// A line and a count for each status that differs from the expected one.
#define EXPECT_STATUS(call, want)                                          \
  do {                                                                     \
    const ucc_status_t got_ = (call);                                      \
    if (got_ != (want)) {                                                  \
      std::fprintf(stderr, "rank %d: line %d: %s = %s, want %s\n", r.rank, \
                   __LINE__, #call, ucct::status_name(got_),               \
                   ucct::status_name(want));                               \
      ++bad;                                                               \
    }                                                                      \
  } while (0)

// Init of one collective on `dt` (4 elements, src and dst of `sdt`/`ddt`).
ucc_status_t try_init(ucct::World& w, ucc_coll_type_t c, ucc_datatype_t sdt,
                      ucc_datatype_t ddt, ucc_reduction_op_t op,
                      std::vector<uint8_t>& buf) {
  const int n = w.size;
  ucc_coll_args_t a{};
  a.coll_type = c;
  a.op = op;
  const size_t k = 4;
  const size_t nk = c == UCC_COLL_TYPE_ALLTOALL ? k * n : k;
  buf.assign(64 * k * n + 64, 0);
  a.src.info = info(buf.data(), nk, sdt);
  a.dst.info = info(buf.data() + 32 * k * n, nk, ddt);
  ucc_coll_req_h req = nullptr;
  const ucc_status_t st = ucc_collective_init(&a, &req, w.team);
  if (st == UCC_OK) ucc_collective_finalize(req);
  return st;
}

TEST(GenericTypes, RefusedUses) {
  if (emu_mode()) GTEST_SKIP() << "generic reductions need UCC_OFFLOAD=inline";
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    int bad = 0;
    std::vector<uint8_t> buf;
    ucc_datatype_t dt = 0;
    ucc_generic_dt_ops_t ops{};
    // Creation.
    EXPECT_STATUS(ucc_dt_create_generic(nullptr, nullptr, &dt),
                  UCC_ERR_INVALID_PARAM);
    EXPECT_STATUS(ucc_dt_create_generic(&ops, nullptr, nullptr),
                  UCC_ERR_INVALID_PARAM);
    EXPECT_STATUS(make_type(0, nullptr, nullptr, &dt), UCC_ERR_INVALID_PARAM);
    EXPECT_STATUS(make_type(8, nullptr, nullptr, &dt,
                            UCC_GENERIC_DT_OPS_FLAG_CONTIG | UCC_BIT(7)),
                  UCC_ERR_INVALID_PARAM);
    ops.mask = UCC_GENERIC_DT_OPS_FIELD_FLAGS;
    ops.flags = UCC_GENERIC_DT_OPS_FLAG_CONTIG | UCC_GENERIC_DT_OPS_FLAG_REDUCE;
    ops.contig_size = 8;  // FLAG_REDUCE without a callback
    EXPECT_STATUS(ucc_dt_create_generic(&ops, nullptr, &dt),
                  UCC_ERR_INVALID_PARAM);

    // Non-contiguous (pack/unpack) types: created, but no collective.
    ucc_datatype_t packed = 0;
    ops = ucc_generic_dt_ops_t{};
    EXPECT_STATUS(ucc_dt_create_generic(&ops, nullptr, &packed), UCC_OK);
    EXPECT_STATUS(
        try_init(w, UCC_COLL_TYPE_BCAST, packed, packed, UCC_OP_SUM, buf),
        UCC_ERR_NOT_SUPPORTED);
    EXPECT_STATUS(
        try_init(w, UCC_COLL_TYPE_ALLREDUCE, packed, packed, UCC_OP_SUM, buf),
        UCC_ERR_NOT_SUPPORTED);

    // Contiguous without FLAG_REDUCE: moves, does not reduce.
    ucc_datatype_t plain = 0;
    EXPECT_STATUS(make_type(8, nullptr, nullptr, &plain), UCC_OK);
    EXPECT_STATUS(
        try_init(w, UCC_COLL_TYPE_ALLTOALL, plain, plain, UCC_OP_SUM, buf),
        UCC_OK);
    EXPECT_STATUS(
        try_init(w, UCC_COLL_TYPE_ALLREDUCE, plain, plain, UCC_OP_SUM, buf),
        UCC_ERR_NOT_SUPPORTED);
    EXPECT_STATUS(
        try_init(w, UCC_COLL_TYPE_REDUCE, plain, plain, UCC_OP_MAX, buf),
        UCC_ERR_NOT_SUPPORTED);

    // With a callback: every op but AVG; an invalid op stays invalid.
    CbCtx ctx;
    ucc_datatype_t tri = 0;
    EXPECT_STATUS(make_type(sizeof(Tri), reduce_cb<Tri, tri_op>, &ctx, &tri),
                  UCC_OK);
    EXPECT_STATUS(
        try_init(w, UCC_COLL_TYPE_ALLREDUCE, tri, tri, UCC_OP_BXOR, buf),
        UCC_OK);
    EXPECT_STATUS(
        try_init(w, UCC_COLL_TYPE_ALLREDUCE, tri, tri, UCC_OP_AVG, buf),
        UCC_ERR_NOT_SUPPORTED);
    EXPECT_STATUS(
        try_init(w, UCC_COLL_TYPE_REDUCE_SCATTER, tri, tri, UCC_OP_AVG, buf),
        UCC_ERR_NOT_SUPPORTED);
    EXPECT_STATUS(
        try_init(w, UCC_COLL_TYPE_ALLREDUCE, tri, tri, UCC_OP_LAST, buf),
        UCC_ERR_INVALID_PARAM);
    // src and dst must name the same type.
    EXPECT_STATUS(try_init(w, UCC_COLL_TYPE_ALLREDUCE, tri, UCC_DT_INT32,
                           UCC_OP_SUM, buf),
                  UCC_ERR_INVALID_PARAM);
    EXPECT_STATUS(
        try_init(w, UCC_COLL_TYPE_ALLTOALL, tri, plain, UCC_OP_SUM, buf),
        UCC_ERR_INVALID_PARAM);

    // Elements larger than a message slot (64 KiB) move but do not reduce.
    CbCtx big_ctx;
    ucc_datatype_t huge = 0;
    EXPECT_STATUS(make_type(100000, reduce_cb<Tri, tri_op>, &big_ctx, &huge),
                  UCC_OK);
    EXPECT_STATUS(
        try_init(w, UCC_COLL_TYPE_ALLREDUCE, huge, huge, UCC_OP_SUM, buf),
        UCC_ERR_NOT_SUPPORTED);
    {
      std::vector<uint8_t> one(100000);
      for (size_t i = 0; i < one.size(); ++i)
        one[i] = r.rank == 1 ? static_cast<uint8_t>(i * 7) : 0;
      ucc_coll_args_t a{};
      a.coll_type = UCC_COLL_TYPE_BCAST;
      a.root = 1;
      a.src.info = info(one.data(), 1, huge);
      EXPECT_STATUS(w.run(a), UCC_OK);
      for (size_t i = 0; i < one.size(); ++i)
        if (one[i] != static_cast<uint8_t>(i * 7)) {
          std::fprintf(stderr,
                       "rank %d: bcast of a 100000-byte element: "
                       "byte %zu differs\n",
                       r.rank, i);
          ++bad;
          break;
        }
    }

    // Destroyed types are refused at init; destroying twice only logs.
    ucc_dt_destroy(plain);
    EXPECT_STATUS(
        try_init(w, UCC_COLL_TYPE_ALLTOALL, plain, plain, UCC_OP_SUM, buf),
        UCC_ERR_INVALID_PARAM);
    ucc_dt_destroy(plain);
    ucc_dt_destroy(UCC_DT_INT32);  // predefined: nothing to do
    // A forged handle (generic tag, no such record) is invalid.
    EXPECT_STATUS(
        try_init(w, UCC_COLL_TYPE_ALLTOALL, 0x1001, 0x1001, UCC_OP_SUM, buf),
        UCC_ERR_INVALID_PARAM);
    ucc_dt_destroy(packed);
    ucc_dt_destroy(tri);
    ucc_dt_destroy(huge);
    return bad;
  }));
}

// The table holds 256 types at once; a freed entry can be taken again.
TEST(GenericTypes, TableCapacity) {
  EXPECT_TRUE(ucct::run_ranks(1, [](ucct::Rank& r) {
    int bad = 0;
    std::vector<ucc_datatype_t> all;
    ucc_datatype_t dt = 0;
    while (all.size() < 1000 && make_type(4, nullptr, nullptr, &dt) == UCC_OK)
      all.push_back(dt);
    if (all.size() != 256) {
      std::fprintf(stderr, "rank %d: %zu types created, want 256\n", r.rank,
                   all.size());
      ++bad;
    }
    EXPECT_STATUS(make_type(4, nullptr, nullptr, &dt), UCC_ERR_NO_RESOURCE);
    ucc_dt_destroy(all[17]);
    EXPECT_STATUS(make_type(4, nullptr, nullptr, &dt), UCC_OK);
    for (size_t i = 0; i < all.size(); ++i)
      if (i != 17) ucc_dt_destroy(all[i]);
    ucc_dt_destroy(dt);
    EXPECT_STATUS(make_type(4, nullptr, nullptr, &dt), UCC_OK);
    return bad;
  }));
}

// Misuse the engine meets: the type destroyed between init and post of a
// persistent allreduce, and a callback that fails. Each ends the
// collective with an error on both ranks (both reduce), never a crash or
// a hang. After such an error the team is not used again.
TEST(GenericTypes, ErrorsDuringTheCollective) {
  if (emu_mode()) GTEST_SKIP() << "generic reductions need UCC_OFFLOAD=inline";
  for (int destroy = 0; destroy < 2; ++destroy) {
    EXPECT_TRUE(ucct::run_ranks(2, [destroy](ucct::Rank& r) {
      ucct::World w;
      if (w.init(r) != UCC_OK) return 1;
      CbCtx ctx;
      ucc_datatype_t dt = 0;
      if (make_type(sizeof(Tri), destroy ? reduce_cb<Tri, tri_op> : failing_cb,
                    &ctx, &dt) != UCC_OK)
        return 2;
      std::vector<Tri> src(16, Tri{1, 2, 3}), dst(16);
      ucc_coll_args_t a{};
      a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
      a.flags = UCC_COLL_ARGS_FLAG_PERSISTENT;
      a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
      a.op = UCC_OP_SUM;
      a.src.info = info(src.data(), src.size(), dt);
      a.dst.info = info(dst.data(), dst.size(), dt);
      ucc_coll_req_h req = nullptr;
      if (ucc_collective_init(&a, &req, w.team) != UCC_OK) return 3;
      if (destroy) ucc_dt_destroy(dt);
      if (ucc_collective_post(req) != UCC_OK) return 4;
      const ucc_status_t st = w.wait(req, 30);
      ucc_collective_finalize(req);
      if (st == UCC_OK || st == UCC_ERR_TIMED_OUT) {
        std::fprintf(stderr, "rank %d: %s: status %s, want an error\n", r.rank,
                     destroy ? "destroyed type" : "failing callback",
                     ucct::status_name(st));
        return 5;
      }
      return 0;
    }));
  }
}

}  // namespace

// Invalid use of the API: every bad argument gets its exact status back, no
// crash and no hang, and the team stays usable afterwards (each case ends
// with a valid allreduce on the same team).
//
// Every rank makes the same calls in the same order, so the ranks stay in
// step: negative calls fail locally, before anything collective starts.
// A rank prints one line per wrong status ("rank 1: line 120:
// ucc_collective_init(...) = UCC_OK, want UCC_ERR_INVALID_PARAM") and exits
// nonzero.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/mp_util.h"

namespace {

using ucct::mp::Report;

// Checks one status; the call's text names it in the failure line.
#define EXPECT_ST(rep, call, want) \
  expect_st((rep), __LINE__, #call, (call), (want))

void expect_st(Report& rep, int line, const char* what, ucc_status_t got,
               ucc_status_t want) {
  if (got != want)
    rep.fail("line %d: %s = %s, want %s", line, what, ucct::status_name(got),
             ucct::status_name(want));
}

ucc_coll_buffer_info_t info(void* p, uint64_t count, ucc_datatype_t dt) {
  ucc_coll_buffer_info_t b{};
  b.buffer = p;
  b.count = count;
  b.datatype = dt;
  b.mem_type = UCC_MEMORY_TYPE_HOST;
  return b;
}

// Buffers big enough for any valid-looking case below (64 elements of up to
// 8 bytes per rank, 8 ranks).
struct Bufs {
  std::vector<uint64_t> src = std::vector<uint64_t>(512);
  std::vector<uint64_t> dst = std::vector<uint64_t>(512);
};

ucc_coll_args_t allreduce_args(Bufs& b, uint64_t count, ucc_datatype_t dt,
                               ucc_reduction_op_t op) {
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
  a.src.info = info(b.src.data(), count, dt);
  a.dst.info = info(b.dst.data(), count, dt);
  a.op = op;
  return a;
}

// A valid int32 sum allreduce on team; records a failure when the status or
// the result is wrong.
void valid_allreduce(ucct::World& w, ucc_team_h team, Report& rep,
                     const char* when) {
  std::vector<int32_t> s(5), d(5, -1);
  for (int i = 0; i < 5; ++i) s[i] = (w.rank + 1) * (i + 1);
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
  a.src.info = info(s.data(), 5, UCC_DT_INT32);
  a.dst.info = info(d.data(), 5, UCC_DT_INT32);
  a.op = UCC_OP_SUM;
  ucc_coll_req_h req = nullptr;
  ucc_status_t st = ucc_collective_init(&a, &req, team);
  if (st == UCC_OK) st = ucc_collective_post(req);
  if (st == UCC_OK) st = w.wait(req);
  if (st == UCC_OK) st = ucc_collective_finalize(req);
  if (st != UCC_OK) {
    rep.fail("valid allreduce %s: %s", when, ucct::status_name(st));
    return;
  }
  const int n = w.size;
  for (int i = 0; i < 5; ++i) {
    const int32_t want = n * (n + 1) / 2 * (i + 1);
    if (d[i] != want) {
      rep.fail("valid allreduce %s: elem %d got %d want %d", when, i, d[i],
               want);
      return;
    }
  }
}

ucc_team_params_t team_params(const ucct::World& w) {
  ucc_team_params_t p{};
  p.mask = UCC_TEAM_PARAM_FIELD_EP | UCC_TEAM_PARAM_FIELD_EP_RANGE |
           UCC_TEAM_PARAM_FIELD_OOB;
  p.ep = static_cast<uint64_t>(w.rank);
  p.ep_range = UCC_COLLECTIVE_EP_RANGE_CONTIG;
  p.oob = w.oob;
  return p;
}

// Drives team creation to its end.
ucc_status_t finish_team(ucct::World& w, ucc_team_h t) {
  const double deadline = ucct::now_s() + 30;
  ucc_status_t st;
  while ((st = ucc_team_create_test(t)) == UCC_INPROGRESS) {
    ucc_context_progress(w.ctx);
    if (ucct::now_s() > deadline) return UCC_ERR_TIMED_OUT;
  }
  return st;
}

ucc_status_t destroy_team(ucct::World& w, ucc_team_h t) {
  const double deadline = ucct::now_s() + 30;
  ucc_status_t st;
  while ((st = ucc_team_destroy(t)) == UCC_INPROGRESS) {
    ucc_context_progress(w.ctx);
    if (ucct::now_s() > deadline) return UCC_ERR_TIMED_OUT;
  }
  return st;
}

// Runs body(world, report) on n ranks; a rank fails when body reports.
template <typename Body>
bool on_ranks(int n, Body body,
              std::vector<std::pair<std::string, std::string>> env = {}) {
  return ucct::run_ranks(
      n,
      [&](ucct::Rank& r) {
        ucct::World w;
        w.env = env;
        if (w.init(r) != UCC_OK) return 1;
        Report rep(r.rank);
        body(w, rep);
        valid_allreduce(w, w.team, rep, "at the end");
        return rep.failures() == 0 ? 0 : 2;
      },
      60);
}

// --- NULL handles and pointers ----------------------------------------------

TEST(Negative, NullArguments) {
  EXPECT_TRUE(on_ranks(2, [](ucct::World& w, Report& rep) {
    Bufs b;
    ucc_coll_args_t a = allreduce_args(b, 4, UCC_DT_INT32, UCC_OP_SUM);
    ucc_coll_req_h req = nullptr;
    EXPECT_ST(rep, ucc_collective_init(nullptr, &req, w.team),
              UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_collective_init(&a, nullptr, w.team),
              UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_collective_init(&a, &req, nullptr),
              UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_collective_init_and_post(nullptr, &req, w.team),
              UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_collective_init_and_post(&a, &req, nullptr),
              UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_collective_post(nullptr), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_collective_finalize(nullptr), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_context_progress(nullptr), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_context_destroy(nullptr), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_finalize(nullptr), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_team_create_test(nullptr), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_team_destroy(nullptr), UCC_ERR_INVALID_PARAM);
    uint32_t size = 0;
    EXPECT_ST(rep, ucc_team_get_size(nullptr, &size), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_team_get_size(w.team, nullptr), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_team_get_attr(w.team, nullptr), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_context_get_attr(nullptr, nullptr),
              UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_lib_get_attr(w.lib, nullptr), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_lib_config_read(nullptr, nullptr, nullptr),
              UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_context_config_read(nullptr, nullptr, nullptr),
              UCC_ERR_INVALID_PARAM);
    ucc_lib_h lib = nullptr;
    EXPECT_ST(rep, ucc_init(nullptr, nullptr, &lib), UCC_ERR_INVALID_PARAM);
    ucc_lib_params_t lp{};
    EXPECT_ST(rep, ucc_init(&lp, nullptr, nullptr), UCC_ERR_INVALID_PARAM);
    lp.mask = UCC_LIB_PARAM_FIELD_THREAD_MODE;
    lp.thread_mode = static_cast<ucc_thread_mode_t>(7);
    EXPECT_ST(rep, ucc_init(&lp, nullptr, &lib), UCC_ERR_INVALID_PARAM);
    ucc_context_h ctx = nullptr;
    ucc_context_params_t cp{};
    EXPECT_ST(rep, ucc_context_create(nullptr, &cp, nullptr, &ctx),
              UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_context_create(w.lib, nullptr, nullptr, &ctx),
              UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_context_create(w.lib, &cp, nullptr, nullptr),
              UCC_ERR_INVALID_PARAM);
    ucc_team_params_t tp = team_params(w);
    ucc_team_h t = nullptr;
    EXPECT_ST(rep, ucc_team_create_post(nullptr, 1, &tp, &t),
              UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_team_create_post(&w.ctx, 1, nullptr, &t),
              UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_team_create_post(&w.ctx, 1, &tp, nullptr),
              UCC_ERR_INVALID_PARAM);
    ucc_context_h null_ctx = nullptr;
    EXPECT_ST(rep, ucc_team_create_post(&null_ctx, 1, &tp, &t),
              UCC_ERR_INVALID_PARAM);
  }));
}

// --- collective arguments ---------------------------------------------------

void bad_coll_args(ucct::World& w, Report& rep) {
  const int n = w.size;
  Bufs b;
  ucc_coll_req_h req = nullptr;
  // A request that should not have been made is given back at once.
  auto init = [&](ucc_coll_args_t a) {
    req = nullptr;
    const ucc_status_t st = ucc_collective_init(&a, &req, w.team);
    if (st == UCC_OK) ucc_collective_finalize(req);
    return st;
  };
  const ucc_coll_args_t ok = allreduce_args(b, 4, UCC_DT_INT32, UCC_OP_SUM);

  // Collective types: unknown values, and real ones not provided yet.
  for (uint64_t t : {uint64_t{0}, uint64_t{3}, uint64_t{1} << 20,
                     uint64_t{UCC_COLL_TYPE_LAST}}) {
    ucc_coll_args_t a = ok;
    a.coll_type = static_cast<ucc_coll_type_t>(t);
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
  }
  for (ucc_coll_type_t t :
       {UCC_COLL_TYPE_GATHER, UCC_COLL_TYPE_GATHERV, UCC_COLL_TYPE_SCATTER,
        UCC_COLL_TYPE_SCATTERV, UCC_COLL_TYPE_ALLGATHERV,
        UCC_COLL_TYPE_ALLTOALLV, UCC_COLL_TYPE_REDUCE_SCATTERV,
        UCC_COLL_TYPE_FANIN, UCC_COLL_TYPE_FANOUT}) {
    ucc_coll_args_t a = ok;
    a.coll_type = t;
    EXPECT_ST(rep, init(a), UCC_ERR_NOT_SUPPORTED);
  }

  // Datatypes: unknown ids and class bits; valid but unsupported ones.
  for (ucc_datatype_t dt :
       {UCC_PREDEFINED_DT(40), UCC_PREDEFINED_DT(UCC_DT_PREDEFINED_LAST),
        UCC_DT_INT32 | 2, UCC_DT_INT32 | 4}) {
    ucc_coll_args_t a = allreduce_args(b, 4, dt, UCC_OP_SUM);
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
    ucc_coll_args_t g{};
    g.coll_type = UCC_COLL_TYPE_ALLGATHER;
    g.src.info = info(b.src.data(), 2, dt);
    g.dst.info = info(b.dst.data(), 2 * n, dt);
    EXPECT_ST(rep, init(g), UCC_ERR_INVALID_PARAM);
  }
  for (ucc_datatype_t dt :
       {UCC_DT_INT128, UCC_DT_UINT128, UCC_DT_FLOAT128, UCC_DT_FLOAT32_COMPLEX,
        UCC_DT_FLOAT64_COMPLEX, UCC_DT_FLOAT128_COMPLEX}) {
    EXPECT_ST(rep, init(allreduce_args(b, 4, dt, UCC_OP_SUM)),
              UCC_ERR_NOT_SUPPORTED);
    ucc_coll_args_t c{};
    c.coll_type = UCC_COLL_TYPE_BCAST;
    c.src.info = info(b.src.data(), 4, dt);
    EXPECT_ST(rep, init(c), UCC_ERR_NOT_SUPPORTED);
  }
  {  // src and dst of different types
    ucc_coll_args_t a = ok;
    a.src.info.datatype = UCC_DT_FLOAT32;
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
    a = ok;
    a.dst.info.datatype = UCC_DT_UINT32;
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
  }

  // Ops: undefined for the type, not provided, unknown.
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_FLOAT32, UCC_OP_BAND)),
            UCC_ERR_NOT_SUPPORTED);
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_FLOAT64, UCC_OP_LAND)),
            UCC_ERR_NOT_SUPPORTED);
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_BFLOAT16, UCC_OP_BXOR)),
            UCC_ERR_NOT_SUPPORTED);
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_INT32, UCC_OP_AVG)),
            UCC_ERR_NOT_SUPPORTED);
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_UINT8, UCC_OP_AVG)),
            UCC_ERR_NOT_SUPPORTED);
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_INT32, UCC_OP_MAXLOC)),
            UCC_ERR_NOT_SUPPORTED);
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_FLOAT32, UCC_OP_MINLOC)),
            UCC_ERR_NOT_SUPPORTED);
  EXPECT_ST(rep,
            init(allreduce_args(b, 4, UCC_DT_INT32,
                                static_cast<ucc_reduction_op_t>(99))),
            UCC_ERR_INVALID_PARAM);
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_INT32, UCC_OP_LAST)),
            UCC_ERR_INVALID_PARAM);
  {
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_REDUCE_SCATTER;
    a.src.info = info(b.src.data(), 2 * n, UCC_DT_FLOAT32);
    a.dst.info = info(b.dst.data(), 2, UCC_DT_FLOAT32);
    a.op = UCC_OP_BOR;
    EXPECT_ST(rep, init(a), UCC_ERR_NOT_SUPPORTED);
    a.op = static_cast<ucc_reduction_op_t>(-1);
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
  }

  // Roots.
  for (uint64_t root :
       {static_cast<uint64_t>(n), static_cast<uint64_t>(n) + 7, UINT64_MAX}) {
    ucc_coll_args_t c{};
    c.coll_type = UCC_COLL_TYPE_BCAST;
    c.src.info = info(b.src.data(), 4, UCC_DT_INT32);
    c.root = root;
    EXPECT_ST(rep, init(c), UCC_ERR_INVALID_PARAM);
    ucc_coll_args_t r{};
    r.coll_type = UCC_COLL_TYPE_REDUCE;
    r.src.info = info(b.src.data(), 4, UCC_DT_INT32);
    r.dst.info = info(b.dst.data(), 4, UCC_DT_INT32);
    r.op = UCC_OP_SUM;
    r.root = root;
    EXPECT_ST(rep, init(r), UCC_ERR_INVALID_PARAM);
  }

  // NULL buffers with a nonzero count.
  {
    ucc_coll_args_t a = ok;
    a.src.info.buffer = nullptr;
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
    a = ok;
    a.dst.info.buffer = nullptr;
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
    ucc_coll_args_t c{};
    c.coll_type = UCC_COLL_TYPE_BCAST;
    c.src.info = info(nullptr, 1, UCC_DT_INT8);
    EXPECT_ST(rep, init(c), UCC_ERR_INVALID_PARAM);
    // IN_PLACE in flags without UCC_COLL_ARGS_FIELD_FLAGS is not read: src
    // is then needed.
    a = ok;
    a.src.info.buffer = nullptr;
    a.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
  }

  // Counts that overflow, or that disagree between src and dst.
  {
    ucc_coll_args_t a =
        allreduce_args(b, UINT64_MAX / 2, UCC_DT_INT32, UCC_OP_SUM);
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
    a = allreduce_args(b, UINT64_MAX, UCC_DT_INT8, UCC_OP_SUM);
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
    ucc_coll_args_t c{};
    c.coll_type = UCC_COLL_TYPE_BCAST;
    c.src.info = info(b.src.data(), UINT64_MAX / 2, UCC_DT_FLOAT64);
    EXPECT_ST(rep, init(c), UCC_ERR_INVALID_PARAM);
    a = ok;
    a.src.info.count = 5;
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);

    ucc_coll_args_t g{};
    g.coll_type = UCC_COLL_TYPE_ALLGATHER;
    g.src.info = info(b.src.data(), 3, UCC_DT_INT16);
    g.dst.info = info(b.dst.data(), 3 * n + 1, UCC_DT_INT16);
    EXPECT_ST(rep, init(g), UCC_ERR_INVALID_PARAM);  // src * n != dst
    if (n > 1) {
      g.dst.info.count = 3 * n + 1;  // not a multiple of n, in place
      g.mask = UCC_COLL_ARGS_FIELD_FLAGS;
      g.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
      EXPECT_ST(rep, init(g), UCC_ERR_INVALID_PARAM);
    }
    g = ucc_coll_args_t{};
    g.coll_type = UCC_COLL_TYPE_ALLGATHER;
    g.src.info = info(b.src.data(), UINT64_MAX / 4, UCC_DT_INT32);
    g.dst.info = info(b.dst.data(), (UINT64_MAX / 4) * n, UCC_DT_INT32);
    EXPECT_ST(rep, init(g), UCC_ERR_INVALID_PARAM);

    ucc_coll_args_t t{};
    t.coll_type = UCC_COLL_TYPE_ALLTOALL;
    t.src.info = info(b.src.data(), 2 * n, UCC_DT_INT32);
    t.dst.info = info(b.dst.data(), 2 * n + 2, UCC_DT_INT32);
    EXPECT_ST(rep, init(t), UCC_ERR_INVALID_PARAM);  // src != dst
    if (n > 1) {
      t.src.info.count = t.dst.info.count = 2 * n + 1;  // not a multiple of n
      EXPECT_ST(rep, init(t), UCC_ERR_INVALID_PARAM);
    }

    ucc_coll_args_t rs{};
    rs.coll_type = UCC_COLL_TYPE_REDUCE_SCATTER;
    rs.src.info = info(b.src.data(), 2 * n + 1, UCC_DT_FLOAT32);
    rs.dst.info = info(b.dst.data(), 2, UCC_DT_FLOAT32);
    rs.op = UCC_OP_SUM;
    EXPECT_ST(rep, init(rs), UCC_ERR_INVALID_PARAM);  // src != dst * n
    if (n > 1) {
      rs.src.info.count = 2;
      EXPECT_ST(rep, init(rs), UCC_ERR_INVALID_PARAM);
    }
    rs.dst.info.count = UINT64_MAX / 2;
    rs.src.info.count = (UINT64_MAX / 2) * n;
    EXPECT_ST(rep, init(rs), UCC_ERR_INVALID_PARAM);
    if (n > 1) {
      rs = ucc_coll_args_t{};
      rs.coll_type = UCC_COLL_TYPE_REDUCE_SCATTER;
      rs.mask = UCC_COLL_ARGS_FIELD_FLAGS;
      rs.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
      rs.dst.info = info(b.dst.data(), 2 * n + 1, UCC_DT_FLOAT32);  // total
      rs.op = UCC_OP_SUM;
      EXPECT_ST(rep, init(rs), UCC_ERR_INVALID_PARAM);
    }

    ucc_coll_args_t r{};
    r.coll_type = UCC_COLL_TYPE_REDUCE;
    r.src.info = info(b.src.data(), 4, UCC_DT_INT32);
    r.dst.info = info(b.dst.data(), 4, UCC_DT_INT32);
    r.op = UCC_OP_SUM;
    r.root = 0;
    if (w.rank == 0) {
      r.dst.info.count = 3;  // the root's dst must hold the vector
      EXPECT_ST(rep, init(r), UCC_ERR_INVALID_PARAM);
    }
  }

  // Memory types: CUDA and friends are valid but not provided; garbage is
  // invalid.
  for (ucc_memory_type_t mt :
       {UCC_MEMORY_TYPE_CUDA, UCC_MEMORY_TYPE_CUDA_MANAGED,
        UCC_MEMORY_TYPE_ROCM, UCC_MEMORY_TYPE_ROCM_MANAGED}) {
    ucc_coll_args_t a = ok;
    a.src.info.mem_type = mt;
    EXPECT_ST(rep, init(a), UCC_ERR_NOT_SUPPORTED);
    a = ok;
    a.dst.info.mem_type = mt;
    EXPECT_ST(rep, init(a), UCC_ERR_NOT_SUPPORTED);
  }
  {
    ucc_coll_args_t a = ok;
    a.dst.info.mem_type = static_cast<ucc_memory_type_t>(77);
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
  }
  EXPECT_ST(rep, init(ok), UCC_OK);
}

class NegativeArgs : public ::testing::TestWithParam<int> {};

TEST_P(NegativeArgs, CollArgs) {
  EXPECT_TRUE(on_ranks(GetParam(), bad_coll_args));
}

INSTANTIATE_TEST_SUITE_P(Ranks, NegativeArgs, ::testing::Values(1, 2, 3),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "n" + std::to_string(i.param);
                         });

// --- request life cycle --------------------------------------------------

TEST(Negative, RequestLifecycle) {
  EXPECT_TRUE(on_ranks(2, [](ucct::World& w, Report& rep) {
    Bufs b;
    ucc_coll_args_t a = allreduce_args(b, 8, UCC_DT_INT32, UCC_OP_SUM);
    ucc_coll_req_h req = nullptr;

    // Non-persistent: a second post is refused, before and after completion.
    EXPECT_ST(rep, ucc_collective_init(&a, &req, w.team), UCC_OK);
    EXPECT_ST(rep, ucc_collective_test(req), UCC_OPERATION_INITIALIZED);
    EXPECT_ST(rep, ucc_collective_post(req), UCC_OK);
    if (ucc_collective_test(req) == UCC_INPROGRESS) {
      // Nothing progressed the context since the post: still in flight.
      EXPECT_ST(rep, ucc_collective_post(req), UCC_ERR_INVALID_PARAM);
      EXPECT_ST(rep, ucc_collective_finalize(req), UCC_ERR_INVALID_PARAM);
    }
    EXPECT_ST(rep, w.wait(req), UCC_OK);
    EXPECT_ST(rep, ucc_collective_post(req), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_collective_finalize(req), UCC_OK);
    // Finalized: everything on it is refused.
    EXPECT_ST(rep, ucc_collective_post(req), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_collective_finalize(req), UCC_ERR_INVALID_PARAM);

    // Never posted: finalize is fine.
    EXPECT_ST(rep, ucc_collective_init(&a, &req, w.team), UCC_OK);
    EXPECT_ST(rep, ucc_collective_finalize(req), UCC_OK);

    // Persistent: reposting after completion is fine, while in flight not.
    a.mask |= UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags |= UCC_COLL_ARGS_FLAG_PERSISTENT;
    EXPECT_ST(rep, ucc_collective_init(&a, &req, w.team), UCC_OK);
    for (int i = 0; i < 3; ++i) {
      EXPECT_ST(rep, ucc_collective_post(req), UCC_OK);
      if (ucc_collective_test(req) == UCC_INPROGRESS) {
        EXPECT_ST(rep, ucc_collective_post(req), UCC_ERR_INVALID_PARAM);
        EXPECT_ST(rep, ucc_collective_finalize(req), UCC_ERR_INVALID_PARAM);
      }
      EXPECT_ST(rep, w.wait(req), UCC_OK);
    }
    EXPECT_ST(rep, ucc_collective_finalize(req), UCC_OK);
    EXPECT_ST(rep, ucc_collective_post(req), UCC_ERR_INVALID_PARAM);

    // init_and_post with bad arguments: error, and no request left behind.
    ucc_coll_args_t bad = a;
    bad.op = static_cast<ucc_reduction_op_t>(99);
    EXPECT_ST(rep, ucc_collective_init_and_post(&bad, &req, w.team),
              UCC_ERR_INVALID_PARAM);
  }));
}

// A team holds UCC_TEAM_MAX_COLLS requests; one more is NO_RESOURCE until a
// request is finalized.
TEST(Negative, RequestPoolExhausted) {
  EXPECT_TRUE(on_ranks(
      2,
      [](ucct::World& w, Report& rep) {
        Bufs b;
        ucc_coll_args_t a = allreduce_args(b, 8, UCC_DT_INT32, UCC_OP_SUM);
        std::vector<ucc_coll_req_h> reqs(4, nullptr);
        for (auto& r : reqs)
          EXPECT_ST(rep, ucc_collective_init(&a, &r, w.team), UCC_OK);
        ucc_coll_req_h extra = nullptr;
        EXPECT_ST(rep, ucc_collective_init(&a, &extra, w.team),
                  UCC_ERR_NO_RESOURCE);
        EXPECT_ST(rep, ucc_collective_finalize(reqs[3]), UCC_OK);
        EXPECT_ST(rep, ucc_collective_init(&a, &reqs[3], w.team), UCC_OK);
        for (auto& r : reqs) EXPECT_ST(rep, ucc_collective_finalize(r), UCC_OK);
      },
      {{"UCC_TEAM_MAX_COLLS", "4"}}));
}

// --- team life cycle
// ----------------------------------------------------------

TEST(Negative, TeamLifecycle) {
  EXPECT_TRUE(on_ranks(2, [](ucct::World& w, Report& rep) {
    Bufs b;
    ucc_coll_args_t a = allreduce_args(b, 8, UCC_DT_INT32, UCC_OP_SUM);
    ucc_coll_req_h req = nullptr;
    ucc_team_params_t tp = team_params(w);
    ucc_team_h t2 = nullptr;
    EXPECT_ST(rep, ucc_team_create_post(&w.ctx, 1, &tp, &t2), UCC_OK);
    if (t2 == nullptr) return;
    // Not created yet: collectives are refused.
    EXPECT_ST(rep, ucc_collective_init(&a, &req, t2), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, finish_team(w, t2), UCC_OK);
    valid_allreduce(w, t2, rep, "on a second team");
    valid_allreduce(w, w.team, rep, "on the first team beside a second");

    // Live teams keep the context.
    EXPECT_ST(rep, ucc_context_destroy(w.ctx), UCC_ERR_INVALID_PARAM);
    valid_allreduce(w, t2, rep, "after a refused context destroy");

    EXPECT_ST(rep, destroy_team(w, t2), UCC_OK);
    // A destroyed handle: the context keeps destroyed team objects until
    // it is destroyed itself, so the handle is recognised (also under ASan).
    EXPECT_ST(rep, ucc_collective_init(&a, &req, t2), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_team_create_test(t2), UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_team_destroy(t2), UCC_ERR_INVALID_PARAM);
    uint32_t size = 0;
    EXPECT_ST(rep, ucc_team_get_size(t2, &size), UCC_ERR_INVALID_PARAM);
  }));
}

// Bad team parameters fail at post, before any OOB exchange starts (else
// the ranks' exchanges would fall out of step and the final allreduce hang).
TEST(Negative, TeamCreateParams) {
  EXPECT_TRUE(on_ranks(2, [](ucct::World& w, Report& rep) {
    ucc_team_h t = nullptr;
    ucc_team_params_t p = team_params(w);
    EXPECT_ST(rep, ucc_team_create_post(&w.ctx, 0, &p, &t),
              UCC_ERR_INVALID_PARAM);

    p = team_params(w);
    p.mask |= UCC_TEAM_PARAM_FIELD_TEAM_SIZE;
    p.team_size = 0;
    EXPECT_ST(rep, ucc_team_create_post(&w.ctx, 1, &p, &t),
              UCC_ERR_INVALID_PARAM);
    p.team_size = w.size + 1;  // disagrees with the OOB
    EXPECT_ST(rep, ucc_team_create_post(&w.ctx, 1, &p, &t),
              UCC_ERR_INVALID_PARAM);

    p = team_params(w);
    p.oob.oob_ep = p.oob.n_oob_eps;
    p.ep = p.oob.oob_ep;
    EXPECT_ST(rep, ucc_team_create_post(&w.ctx, 1, &p, &t),
              UCC_ERR_INVALID_PARAM);
    p = team_params(w);
    p.oob.oob_ep = 1000;
    p.mask &= ~static_cast<uint64_t>(UCC_TEAM_PARAM_FIELD_EP);
    EXPECT_ST(rep, ucc_team_create_post(&w.ctx, 1, &p, &t),
              UCC_ERR_INVALID_PARAM);

    p = team_params(w);
    p.ep = (w.rank + 1) % w.size;  // disagrees with oob_ep
    EXPECT_ST(rep, ucc_team_create_post(&w.ctx, 1, &p, &t),
              UCC_ERR_INVALID_PARAM);

    p = team_params(w);
    p.oob.n_oob_eps = 0;
    EXPECT_ST(rep, ucc_team_create_post(&w.ctx, 1, &p, &t),
              UCC_ERR_INVALID_PARAM);

    p = team_params(w);
    p.oob.allgather = nullptr;
    EXPECT_ST(rep, ucc_team_create_post(&w.ctx, 1, &p, &t),
              UCC_ERR_INVALID_PARAM);
  }));
}

// --- configuration --------------------------------------------------------

// A context made from a modified configuration obeys it: with
// TEAM_MAX_COLLS = 2, a team of one holds two requests and no more.
void modified_config_applies(ucct::World& w, Report& rep) {
  ucc_context_config_h cc = nullptr;
  if (ucc_context_config_read(w.lib, nullptr, &cc) != UCC_OK) {
    rep.fail("ucc_context_config_read failed");
    return;
  }
  EXPECT_ST(rep, ucc_context_config_modify(cc, nullptr, "TEAM_MAX_COLLS", "2"),
            UCC_OK);
  ucc_context_params_t cp{};
  ucc_context_h ctx = nullptr;
  const ucc_status_t cst = ucc_context_create(w.lib, &cp, cc, &ctx);
  ucc_context_config_release(cc);
  if (cst != UCC_OK) {
    rep.fail("ucc_context_create (no OOB) = %s", ucct::status_name(cst));
    return;
  }
  ucc_team_params_t tp{};
  tp.mask = UCC_TEAM_PARAM_FIELD_EP | UCC_TEAM_PARAM_FIELD_EP_RANGE |
            UCC_TEAM_PARAM_FIELD_TEAM_SIZE;
  tp.ep = 0;
  tp.ep_range = UCC_COLLECTIVE_EP_RANGE_CONTIG;
  tp.team_size = 1;
  ucc_team_h t = nullptr;
  ucc_status_t st = ucc_team_create_post(&ctx, 1, &tp, &t);
  while (st == UCC_OK && (st = ucc_team_create_test(t)) == UCC_INPROGRESS)
    ucc_context_progress(ctx);
  if (st != UCC_OK) {
    rep.fail("team of one on a fresh context: %s", ucct::status_name(st));
  } else {
    Bufs b;
    ucc_coll_args_t a = allreduce_args(b, 4, UCC_DT_INT32, UCC_OP_SUM);
    ucc_coll_req_h r[3] = {};
    EXPECT_ST(rep, ucc_collective_init(&a, &r[0], t), UCC_OK);
    EXPECT_ST(rep, ucc_collective_init(&a, &r[1], t), UCC_OK);
    EXPECT_ST(rep, ucc_collective_init(&a, &r[2], t), UCC_ERR_NO_RESOURCE);
    for (ucc_coll_req_h q : r) {
      if (q != nullptr) ucc_collective_finalize(q);
    }
    while ((st = ucc_team_destroy(t)) == UCC_INPROGRESS)
      ucc_context_progress(ctx);
    EXPECT_ST(rep, st, UCC_OK);
  }
  EXPECT_ST(rep, ucc_context_destroy(ctx), UCC_OK);
}

TEST(Negative, Config) {
  EXPECT_TRUE(on_ranks(1, [](ucct::World& w, Report& rep) {
    ucc_lib_config_h lc = nullptr;
    EXPECT_ST(rep, ucc_lib_config_read(nullptr, nullptr, &lc), UCC_OK);
    if (lc != nullptr) {
      EXPECT_ST(rep, ucc_lib_config_modify(lc, "LOG_LEVEL", "loud"),
                UCC_ERR_INVALID_PARAM);
      EXPECT_ST(rep, ucc_lib_config_modify(lc, "NO_SUCH_KNOB", "1"),
                UCC_ERR_INVALID_PARAM);
      EXPECT_ST(rep, ucc_lib_config_modify(lc, nullptr, "1"),
                UCC_ERR_INVALID_PARAM);
      EXPECT_ST(rep, ucc_lib_config_modify(lc, "LOG_LEVEL", nullptr),
                UCC_ERR_INVALID_PARAM);
      EXPECT_ST(rep, ucc_lib_config_modify(lc, "LOG_LEVEL", "error"), UCC_OK);
      ucc_lib_config_release(lc);
    }
    EXPECT_ST(rep, ucc_lib_config_modify(nullptr, "LOG_LEVEL", "warn"),
              UCC_ERR_INVALID_PARAM);
    EXPECT_ST(rep, ucc_lib_config_read(nullptr, "/nonexistent/ucc.conf", &lc),
              UCC_ERR_INVALID_PARAM);

    ucc_context_config_h cc = nullptr;
    EXPECT_ST(rep, ucc_context_config_read(w.lib, nullptr, &cc), UCC_OK);
    if (cc != nullptr) {
      struct {
        const char* name;
        const char* value;
      } const bad[] = {
          {"SHM_SEG_SIZE", "100"},  // not a multiple of 64
          {"SHM_SEG_SIZE", "0"},    // too small
          {"SHM_SEG_SIZE", "64x"},  // garbage suffix
          {"SHM_NSEGS", "3"},       // not a power of two
          {"SHM_NSEGS", "1"},       // fewer than 2
          {"TEAM_MAX_COLLS", "0"},    {"TEAM_MAX_COLLS", "-1"},
          {"ALLREDUCE_ALG", "bogus"}, {"ALLREDUCE_RING_MIN", "lots"},
          {"NO_SUCH_KNOB", "1"},  // unknown knob
      };
      for (const auto& kv : bad) {
        const ucc_status_t st =
            ucc_context_config_modify(cc, nullptr, kv.name, kv.value);
        if (st != UCC_ERR_INVALID_PARAM)
          rep.fail(
              "ucc_context_config_modify(%s, %s) = %s, want "
              "UCC_ERR_INVALID_PARAM",
              kv.name, kv.value, ucct::status_name(st));
      }
      EXPECT_ST(rep,
                ucc_context_config_modify(nullptr, nullptr, "SHM_NSEGS", "4"),
                UCC_ERR_INVALID_PARAM);
      EXPECT_ST(rep,
                ucc_context_config_modify(cc, nullptr, "UCC_SHM_NSEGS", "4"),
                UCC_OK);
      EXPECT_ST(rep,
                ucc_context_config_modify(cc, nullptr, "ALLREDUCE_ALG", "ring"),
                UCC_OK);
      ucc_context_config_release(cc);
    }

    // Bad values in the environment fail where they are read.
    for (const char* var : {"UCC_SHM_NSEGS=3", "UCC_ALLREDUCE_ALG=bogus",
                            "UCC_SHM_SEG_SIZE=65"}) {
      std::string kv = var;
      const size_t eq = kv.find('=');
      const std::string name = kv.substr(0, eq);
      setenv(name.c_str(), kv.c_str() + eq + 1, 1);
      cc = nullptr;
      const ucc_status_t st = ucc_context_config_read(w.lib, nullptr, &cc);
      if (st != UCC_ERR_INVALID_PARAM)
        rep.fail(
            "ucc_context_config_read with %s = %s, want UCC_ERR_INVALID_PARAM",
            var, ucct::status_name(st));
      if (st == UCC_OK) ucc_context_config_release(cc);
      unsetenv(name.c_str());
    }
    setenv("MYAPP_UCC_LOG_LEVEL", "chatty", 1);  // <prefix>_UCC_<knob>
    lc = nullptr;
    EXPECT_ST(rep, ucc_lib_config_read("MYAPP", nullptr, &lc),
              UCC_ERR_INVALID_PARAM);
    unsetenv("MYAPP_UCC_LOG_LEVEL");
    setenv("UCC_LOG_LEVEL", "chatty", 1);
    lc = nullptr;
    EXPECT_ST(rep, ucc_lib_config_read(nullptr, nullptr, &lc),
              UCC_ERR_INVALID_PARAM);
    unsetenv("UCC_LOG_LEVEL");

    modified_config_applies(w, rep);
  }));
}

}  // namespace

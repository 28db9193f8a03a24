// Invalid use of API objects: NULL handles and pointers, the request and
// team life cycles, team creation parameters and configuration. Every bad
// call gets its exact status back, no crash and no hang, and the team stays
// usable afterwards (each case ends with a valid allreduce on the same team).
//
// Every rank makes the same calls in the same order, so the ranks stay in
// step: negative calls fail locally, before anything collective starts.
// A rank prints one line per wrong status ("rank 1: line 120:
// ucc_collective_init(...) = UCC_OK, want UCC_ERR_INVALID_PARAM") and exits
// nonzero. Collective arguments: test_negative_args.cc.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/negative_util.h"

namespace {

using ucct::mp::Report;
using ucct::mp::neg::allreduce_args;
using ucct::mp::neg::Bufs;
using ucct::mp::neg::on_ranks;
using ucct::mp::neg::valid_allreduce;

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

    EXPECT_ST(rep, destroy_team(w, t2), UCC_OK);
    // A destroyed handle: destroyed team objects are kept for reuse, never
    // freed, so the handle is recognised (also under ASan).
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

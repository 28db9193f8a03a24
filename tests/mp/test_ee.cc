// Execution engines (UCC_EE_CPU_THREAD) and triggered collectives
// (host/exec/ee.cc): the POST event right after ucc_collective_triggered_post
// (what PyTorch checks), stream order, completion events, results
// against serial references, the event pools and their overflow, user
// events, and every misuse.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/rank_check.h"

namespace {

ucc_ee_h make_ee(ucct::World& w) {
  ucc_ee_params_t p{};
  p.ee_type = UCC_EE_CPU_THREAD;
  ucc_ee_h ee = nullptr;
  return ucc_ee_create(w.team, &p, &ee) == UCC_OK ? ee : nullptr;
}

// An allreduce of int64 sum whose result names its index k.
struct Sum {
  std::vector<int64_t> in, out;
  ucc_coll_args_t args{};
  Sum(int rank, int k, size_t n) : in(n), out(n, -7) {
    for (size_t i = 0; i < n; ++i) in[i] = rank * 1000 + k * 10 + int64_t(i);
    args.coll_type = UCC_COLL_TYPE_ALLREDUCE;
    args.op = UCC_OP_SUM;
    args.src.info = {in.data(), n, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
    args.dst.info = {out.data(), n, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
  }
  bool right(int size, int k) const {
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t want = 0;
      for (int r = 0; r < size; ++r) want += r * 1000 + k * 10 + int64_t(i);
      if (out[i] != want) return false;
    }
    return true;
  }
};

// Takes the next event, which must be of `type` for `req`, and acks it.
int take(ucct::World& w, ucc_ee_h ee, ucc_event_type_t type,
         ucc_coll_req_h req) {
  ucc_ev_t* ev = nullptr;
  CK(ucc_ee_get_event(ee, &ev));
  EXPECT(ev->ev_type == type && ev->req == req,
         "event type %d for %p, expected %d for %p", int(ev->ev_type),
         static_cast<void*>(ev->req), int(type), static_cast<void*>(req));
  CK(ucc_ee_ack_event(ee, ev));
  return 0;
}

ucc_ev_t compute_done(ucc_coll_req_h req) {
  return ucc_ev_t{UCC_EVENT_COMPUTE_COMPLETE, nullptr, 0, req};
}

class Ee : public ::testing::TestWithParam<int> {};

// Three allreduces triggered on one engine: a POST event for each at
// once, then their COMPLETE events in triggered order, right results,
// callbacks run, requests reusable.
TEST_P(Ee, TriggeredCollectivesRunInStreamOrder) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    ucc_ee_h ee = make_ee(w);
    EXPECT(ee != nullptr, "ucc_ee_create failed");
    for (int round = 0; round < 3; ++round) {
      const size_t sizes[3] = {3, 20000, 1};
      std::vector<Sum> c;
      for (int k = 0; k < 3; ++k) c.emplace_back(r.rank, round * 3 + k, sizes[k]);
      int called[3] = {0, 0, 0};
      ucc_coll_req_h req[3];
      for (int k = 0; k < 3; ++k) {
        c[k].args.mask = UCC_COLL_ARGS_FIELD_CB;
        c[k].args.cb.cb = [](void* d, ucc_status_t st) {
          *static_cast<int*>(d) = st == UCC_OK ? 1 : -1;
        };
        c[k].args.cb.data = &called[k];
        CK(ucc_collective_init(&c[k].args, &req[k], w.team));
        ucc_ev_t e = compute_done(req[k]);
        CK(ucc_collective_triggered_post(ee, &e));
        // What PyTorch checks right after the call.
        if (take(w, ee, UCC_EVENT_COLLECTIVE_POST, req[k]) != 0) return 1;
        EXPECT(ucc_collective_test(req[k]) == UCC_INPROGRESS,
               "a triggered collective is in progress");
      }
      for (int k = 0; k < 3; ++k) {
        CK(ucc_ee_wait(ee, nullptr));
        if (take(w, ee, UCC_EVENT_COLLECTIVE_COMPLETE, req[k]) != 0) return 1;
        EXPECT(ucc_collective_test(req[k]) == UCC_OK, "completed: OK");
      }
      ucc_context_progress(w.ctx);  // callbacks run after the lock
      for (int k = 0; k < 3; ++k) {
        EXPECT(called[k] == 1, "callback %d ran: %d", k, called[k]);
        EXPECT(c[k].right(r.size, round * 3 + k), "allreduce %d result", k);
        CK(ucc_collective_finalize(req[k]));
      }
      ucc_ev_t* none = nullptr;
      EXPECT(ucc_ee_get_event(ee, &none) == UCC_ERR_NOT_FOUND, "no more events");
    }
    // Nothing queued or running: waiting would be forever.
    EXPECT(ucc_ee_wait(ee, nullptr) == UCC_ERR_NOT_FOUND, "idle wait");
    CK(ucc_ee_destroy(ee));
    return 0;
  }));
}

// A persistent request triggered again and again; a progress thread's
// way of waiting (request status only) works as well.
TEST_P(Ee, PersistentRequestTriggeredRepeatedly) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    ucc_ee_h ee = make_ee(w);
    EXPECT(ee != nullptr, "ucc_ee_create failed");
    Sum s(r.rank, 4, 100);
    s.args.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    s.args.flags = UCC_COLL_ARGS_FLAG_PERSISTENT;
    ucc_coll_req_h req = nullptr;
    CK(ucc_collective_init(&s.args, &req, w.team));
    for (int i = 0; i < 50; ++i) {
      std::fill(s.out.begin(), s.out.end(), -7);
      ucc_ev_t e = compute_done(req);
      CK(ucc_collective_triggered_post(ee, &e));
      CK(w.wait(req));
      EXPECT(s.right(r.size, 4), "iteration %d result", i);
      if (take(w, ee, UCC_EVENT_COLLECTIVE_POST, req) != 0 ||
          take(w, ee, UCC_EVENT_COLLECTIVE_COMPLETE, req) != 0)
        return 1;
    }
    CK(ucc_collective_finalize(req));
    CK(ucc_ee_destroy(ee));
    return 0;
  }));
}

// A task list triggered on an engine: one POST and one COMPLETE event for
// the list, every member's result right.
TEST_P(Ee, TaskListTriggered) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    ucc_ee_h ee = make_ee(w);
    EXPECT(ee != nullptr, "ucc_ee_create failed");
    std::vector<Sum> c;
    for (int k = 0; k < 4; ++k) c.emplace_back(r.rank, 20 + k, 500 * k + 1);
    ucc_coll_args_t args[4];
    for (int k = 0; k < 4; ++k) args[k] = c[k].args;
    ucc_coll_req_h req = nullptr;
    CK(ucc_collective_list_init(args, 4, nullptr, &req, w.team));
    ucc_ev_t e = compute_done(req);
    CK(ucc_collective_triggered_post(ee, &e));
    if (take(w, ee, UCC_EVENT_COLLECTIVE_POST, req) != 0) return 1;
    CK(ucc_ee_wait(ee, nullptr));
    if (take(w, ee, UCC_EVENT_COLLECTIVE_COMPLETE, req) != 0) return 1;
    CK(ucc_collective_test(req));
    for (int k = 0; k < 4; ++k) EXPECT(c[k].right(r.size, 20 + k), "member %d", k);
    CK(ucc_collective_finalize(req));
    CK(ucc_ee_destroy(ee));
    return 0;
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, Ee, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "n" + std::to_string(i.param);
                         });

// Events nobody takes: the pool (two per request of the team) fills, the
// events after that are lost and one OVERFLOW event says so, after the
// ones kept, in order. User events are held (64) and consumed one per
// triggered collective.
TEST(EeEvents, PoolOverflowAndUserEvents) {
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    ucc_team_params_t p{};
    p.mask = UCC_TEAM_PARAM_FIELD_OOB | UCC_TEAM_PARAM_FIELD_OUTSTANDING_COLLS;
    p.oob = w.oob;
    p.outstanding_colls = 2;  // a pool of 4 events
    ucc_team_h t = nullptr;
    CK(ucc_team_create_post(&w.ctx, 1, &p, &t));
    ucc_status_t st;
    while ((st = ucc_team_create_test(t)) == UCC_INPROGRESS)
      ucc_context_progress(w.ctx);
    CK(st);
    ucc_ee_params_t ep{};
    ep.ee_type = UCC_EE_CPU_THREAD;
    ucc_ee_h ee = nullptr;
    CK(ucc_ee_create(t, &ep, &ee));
    ucc_ev_t user{UCC_EVENT_COMPUTE_COMPLETE, nullptr, 0, nullptr};
    for (int i = 0; i < 64; ++i) CK(ucc_ee_set_event(ee, &user));
    EXPECT(ucc_ee_set_event(ee, &user) == UCC_ERR_NO_RESOURCE,
           "the 65th user event is refused");
    std::vector<ucc_coll_req_h> seen;
    for (int i = 0; i < 3; ++i) {  // 6 events for a pool of 4
      Sum s(r.rank, i, 5);
      ucc_coll_req_h req = nullptr;
      CK(ucc_collective_init(&s.args, &req, t));
      ucc_ev_t e = compute_done(req);
      CK(ucc_collective_triggered_post(ee, &e));
      while ((st = ucc_collective_test(req)) == UCC_INPROGRESS)
        ucc_context_progress(w.ctx);
      CK(st);
      EXPECT(s.right(r.size, i), "allreduce %d", i);
      seen.push_back(req);
      CK(ucc_collective_finalize(req));
    }
    // A user event was consumed by each of the three: room for three more.
    for (int i = 0; i < 3; ++i) CK(ucc_ee_set_event(ee, &user));
    EXPECT(ucc_ee_set_event(ee, &user) == UCC_ERR_NO_RESOURCE, "full again");
    const ucc_event_type_t kinds[4] = {
        UCC_EVENT_COLLECTIVE_POST, UCC_EVENT_COLLECTIVE_COMPLETE,
        UCC_EVENT_COLLECTIVE_POST, UCC_EVENT_COLLECTIVE_COMPLETE};
    ucc_ev_t* got[5] = {};
    for (int i = 0; i < 4; ++i) {
      CK(ucc_ee_get_event(ee, &got[i]));
      EXPECT(got[i]->ev_type == kinds[i] && got[i]->req == seen[i / 2],
             "event %d: type %d", i, int(got[i]->ev_type));
    }
    CK(ucc_ee_get_event(ee, &got[4]));
    EXPECT(got[4]->ev_type == UCC_EVENT_OVERFLOW, "then OVERFLOW");
    ucc_ev_t* none = nullptr;
    EXPECT(ucc_ee_get_event(ee, &none) == UCC_ERR_NOT_FOUND, "then nothing");
    for (int i = 0; i < 5; ++i) CK(ucc_ee_ack_event(ee, got[i]));
    EXPECT(ucc_ee_ack_event(ee, got[0]) == UCC_ERR_INVALID_PARAM,
           "an event acked twice");
    ucc_ev_t stray{};
    EXPECT(ucc_ee_ack_event(ee, &stray) == UCC_ERR_INVALID_PARAM,
           "an event the engine never handed out");
    CK(ucc_ee_destroy(ee));
    while ((st = ucc_team_destroy(t)) == UCC_INPROGRESS)
      ucc_context_progress(w.ctx);
    CK(st);
    return 0;
  }));
}

// Every misuse is an error with a log line, never a crash or a hang.
TEST(EeEvents, Misuse) {
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    ucc_ee_params_t p{};
    ucc_ee_h ee = nullptr;
    p.ee_type = UCC_EE_CUDA_STREAM;
    EXPECT(ucc_ee_create(w.team, &p, &ee) == UCC_ERR_NOT_SUPPORTED,
           "CUDA stream engine without GPU support");
    p.ee_type = static_cast<ucc_ee_type_t>(77);
    EXPECT(ucc_ee_create(w.team, &p, &ee) == UCC_ERR_INVALID_PARAM,
           "unknown engine type");
    EXPECT(ucc_ee_create(nullptr, &p, &ee) == UCC_ERR_INVALID_PARAM, "no team");
    p.ee_type = UCC_EE_CPU_THREAD;
    CK(ucc_ee_create(w.team, &p, &ee));
    EXPECT(ucc_collective_triggered_post(ee, nullptr) == UCC_ERR_INVALID_PARAM,
           "NULL event");
    Sum s(r.rank, 1, 4);
    ucc_coll_req_h req = nullptr;
    CK(ucc_collective_init(&s.args, &req, w.team));
    ucc_ev_t post{UCC_EVENT_COLLECTIVE_POST, nullptr, 0, req};
    EXPECT(ucc_collective_triggered_post(ee, &post) == UCC_ERR_NOT_SUPPORTED,
           "triggered by a POST event");
    ucc_ev_t bad = compute_done(nullptr);
    EXPECT(ucc_collective_triggered_post(ee, &bad) == UCC_ERR_INVALID_PARAM,
           "no request");
    // A request of another team.
    ucc_team_h t2 = nullptr;
    CK(w.new_team(&t2));
    ucc_status_t st;
    Sum s2(r.rank, 2, 4);
    ucc_coll_req_h other = nullptr;
    CK(ucc_collective_init(&s2.args, &other, t2));
    ucc_ev_t o = compute_done(other);
    EXPECT(ucc_collective_triggered_post(ee, &o) == UCC_ERR_INVALID_PARAM,
           "request of another team");
    CK(ucc_collective_finalize(other));
    // Triggered twice: the second is refused while the first runs.
    ucc_ev_t e = compute_done(req);
    CK(ucc_collective_triggered_post(ee, &e));
    EXPECT(ucc_collective_triggered_post(ee, &e) == UCC_ERR_INVALID_PARAM,
           "triggered while in progress");
    EXPECT(ucc_collective_post(req) == UCC_ERR_INVALID_PARAM,
           "posted while triggered");
    EXPECT(ucc_ee_destroy(ee) == UCC_ERR_INVALID_PARAM,
           "destroy with a collective in its stream");
    CK(w.wait(req));
    EXPECT(s.right(r.size, 1), "result");
    CK(ucc_collective_finalize(req));
    ucc_ev_t* ev = nullptr;
    while (ucc_ee_get_event(ee, &ev) == UCC_OK) CK(ucc_ee_ack_event(ee, ev));
    // A second engine outliving its team (PyTorch destroys the team, then
    // the engine).
    ucc_ee_h ee2 = nullptr;
    CK(ucc_ee_create(t2, &p, &ee2));
    while ((st = ucc_team_destroy(t2)) == UCC_INPROGRESS)
      ucc_context_progress(w.ctx);
    CK(st);
    Sum s3(r.rank, 3, 4);
    ucc_coll_req_h req3 = nullptr;
    CK(ucc_collective_init(&s3.args, &req3, w.team));
    ucc_ev_t e3 = compute_done(req3);
    EXPECT(ucc_collective_triggered_post(ee2, &e3) == UCC_ERR_INVALID_PARAM,
           "engine whose team is gone");
    CK(ucc_collective_finalize(req3));
    CK(ucc_ee_destroy(ee2));
    CK(ucc_ee_destroy(ee));
    return 0;
  }));
}

}  // namespace

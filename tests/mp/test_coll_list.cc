// Task lists (ucc_collective_list_init, ucc_ext.h): several collectives
// posted as one unit with one request and one completion. Results against
// serial references on poisoned outputs, the one callback, persistence,
// the first member error as the list's status, the pool given back, and
// every misuse.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/rank_check.h"

namespace {

constexpr uint8_t kPoison = 0xA5;

// Five collectives of different kinds and sizes, their buffers, and the
// check of every output against what the ranks' inputs make.
struct Five {
  int rank, size, seed;
  std::vector<int32_t> ar_in, ar_out;       // allreduce sum
  std::vector<double> bc;                   // bcast from the last rank
  std::vector<uint8_t> av_in, av_out;       // alltoallv bytes
  std::vector<uint32_t> sc, sd, rc, rd;
  std::vector<int64_t> ag_in, ag_out;       // allgather
  ucc_coll_args_t a[5];

  Five(int r, int n, int s) : rank(r), size(n), seed(s) {
    ar_in.resize(1000);
    ar_out.resize(1000);
    bc.resize(70000);  // more than one message slot
    ag_in.resize(3);
    ag_out.resize(3 * size_t(n));
    uint32_t st = 0, rt = 0;
    for (int p = 0; p < n; ++p) {
      sc.push_back(uint32_t((r + p + s) % 4) * 100 + 1);
      sd.push_back(st);
      st += sc.back();
      rc.push_back(uint32_t((p + r + s) % 4) * 100 + 1);
      rd.push_back(rt + 7);
      rt += rc.back() + 7;
    }
    av_in.resize(st);
    av_out.resize(rt);
    memset(a, 0, sizeof(a));
    a[0].coll_type = UCC_COLL_TYPE_ALLREDUCE;
    a[0].op = UCC_OP_SUM;
    a[0].src.info = {ar_in.data(), ar_in.size(), UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    a[0].dst.info = {ar_out.data(), ar_out.size(), UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    a[1].coll_type = UCC_COLL_TYPE_BCAST;
    a[1].root = uint64_t(n - 1);
    a[1].src.info = {bc.data(), bc.size(), UCC_DT_FLOAT64, UCC_MEMORY_TYPE_HOST};
    a[2].coll_type = UCC_COLL_TYPE_ALLTOALLV;
    a[2].src.info_v = {av_in.data(), reinterpret_cast<ucc_count_t*>(sc.data()),
                       reinterpret_cast<ucc_aint_t*>(sd.data()), UCC_DT_UINT8,
                       UCC_MEMORY_TYPE_HOST};
    a[2].dst.info_v = {av_out.data(), reinterpret_cast<ucc_count_t*>(rc.data()),
                       reinterpret_cast<ucc_aint_t*>(rd.data()), UCC_DT_UINT8,
                       UCC_MEMORY_TYPE_HOST};
    a[3].coll_type = UCC_COLL_TYPE_BARRIER;
    a[4].coll_type = UCC_COLL_TYPE_ALLGATHER;
    a[4].src.info = {ag_in.data(), ag_in.size(), UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
    a[4].dst.info = {ag_out.data(), ag_out.size(), UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
    fill();
  }
  static uint8_t byte(int from, int to, size_t i, int s) {
    return uint8_t(from * 31 + to * 7 + i + s);
  }
  void fill() {
    for (size_t i = 0; i < ar_in.size(); ++i) ar_in[i] = int32_t(rank * 3 + i + seed);
    for (size_t i = 0; i < bc.size(); ++i)
      bc[i] = rank == size - 1 ? double(i) * 0.5 + seed : -1.0;
    for (int p = 0; p < size; ++p)
      for (uint32_t i = 0; i < sc[p]; ++i) av_in[sd[p] + i] = byte(rank, p, i, seed);
    for (size_t i = 0; i < ag_in.size(); ++i) ag_in[i] = rank * 100 + int64_t(i) + seed;
    memset(ar_out.data(), kPoison, ar_out.size() * sizeof(int32_t));
    memset(av_out.data(), kPoison, av_out.size());
    memset(ag_out.data(), kPoison, ag_out.size() * sizeof(int64_t));
  }
  // 0 when every output is right, else which one is wrong.
  int check() const {
    for (size_t i = 0; i < ar_out.size(); ++i) {
      int64_t want = 0;
      for (int p = 0; p < size; ++p) want += p * 3 + int64_t(i) + seed;
      if (ar_out[i] != int32_t(want)) return 1;
    }
    for (size_t i = 0; i < bc.size(); ++i)
      if (bc[i] != double(i) * 0.5 + seed) return 2;
    for (int p = 0; p < size; ++p)
      for (uint32_t i = 0; i < rc[p]; ++i)
        if (av_out[rd[p] + i] != byte(p, rank, i, seed)) return 3;
    for (int p = 0; p < size; ++p)
      for (size_t i = 0; i < 3; ++i)
        if (ag_out[p * 3 + i] != p * 100 + int64_t(i) + seed) return 5;
    return 0;
  }
};

ucc_status_t wait_list(ucct::World& w, ucc_coll_req_h req) {
  const double deadline = ucct::now_s() + 60;
  ucc_status_t st;
  while ((st = ucc_collective_test(req)) == UCC_INPROGRESS) {
    ucc_context_progress(w.ctx);
    if (ucct::now_s() > deadline) return UCC_ERR_TIMED_OUT;
  }
  return st;
}

class TaskList : public ::testing::TestWithParam<int> {};

// One list of five: one completion, one callback, right results; then
// the same as a persistent list posted again and again with new data.
TEST_P(TaskList, OneCompletionForAll) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    int calls = 0;
    ucc_status_t cb_st = UCC_INPROGRESS;
    struct CbData {
      int* calls;
      ucc_status_t* st;
    } data{&calls, &cb_st};
    ucc_coll_callback_t cb{[](void* d, ucc_status_t st) {
                             auto* c = static_cast<CbData*>(d);
                             ++*c->calls;
                             *c->st = st;
                           },
                           &data};
    {
      Five f(r.rank, r.size, 0);
      ucc_coll_req_h req = nullptr;
      CK(ucc_collective_list_init(f.a, 5, &cb, &req, w.team));
      CK(ucc_collective_post(req));
      CK(wait_list(w, req));
      ucc_context_progress(w.ctx);
      EXPECT(calls == 1 && cb_st == UCC_OK, "callback ran %d times, %s", calls,
             ucct::status_name(cb_st));
      EXPECT(f.check() == 0, "output %d wrong", f.check());
      EXPECT(ucc_collective_post(req) == UCC_ERR_INVALID_PARAM,
             "not persistent: posted once");
      CK(ucc_collective_finalize(req));
    }
    Five p(r.rank, r.size, 0);
    for (ucc_coll_args_t& a : p.a) {
      a.mask |= UCC_COLL_ARGS_FIELD_FLAGS;
      a.flags |= UCC_COLL_ARGS_FLAG_PERSISTENT;
    }
    ucc_coll_req_h req = nullptr;
    CK(ucc_collective_list_init(p.a, 5, nullptr, &req, w.team));
    for (int it = 0; it < 30; ++it) {
      p.seed = it;
      p.fill();
      CK(ucc_collective_post(req));
      CK(wait_list(w, req));
      EXPECT(p.check() == 0, "iteration %d: output %d wrong", it, p.check());
    }
    CK(ucc_collective_finalize(req));
    // Every member went back to the pool: a full pool's worth of
    // requests can be taken again.
    ucc_team_attr_t attr{};
    attr.mask = UCC_TEAM_ATTR_FIELD_OUTSTANDING_CALLS;
    CK(ucc_team_get_attr(w.team, &attr));
    std::vector<ucc_coll_req_h> all(attr.outstanding_colls);
    ucc_coll_args_t b{};
    b.coll_type = UCC_COLL_TYPE_BARRIER;
    for (auto& h : all) CK(ucc_collective_init(&b, &h, w.team));
    for (auto& h : all) CK(ucc_collective_finalize(h));
    return 0;
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, TaskList, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "n" + std::to_string(i.param);
                         });

// A member that fails makes the list's status (the others still run and
// complete): rank 0's list has an allreduce and a receive from rank 1
// with a 0.2 s timeout that rank 1 never sends.
TEST(TaskListErrors, FirstMemberErrorIsTheListStatus) {
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    Five f(r.rank, r.size, 3);
    ucc_coll_args_t a[2];
    a[0] = f.a[0];
    double buf[4] = {0, 0, 0, 0};
    memset(&a[1], 0, sizeof(a[1]));
    a[1].mask = UCC_COLL_ARGS_FIELD_ACTIVE_SET | UCC_COLL_ARGS_FIELD_TAG |
                UCC_COLL_ARGS_FIELD_FLAGS;
    a[1].flags = UCC_COLL_ARGS_FLAG_TIMEOUT;
    a[1].timeout = 0.2;
    a[1].tag = 5;
    a[1].coll_type = UCC_COLL_TYPE_BCAST;
    a[1].root = 1;
    a[1].active_set.start = 1;
    a[1].active_set.stride = -1;
    a[1].active_set.size = 2;
    a[1].src.info = {buf, 4, UCC_DT_FLOAT64, UCC_MEMORY_TYPE_HOST};
    ucc_coll_req_h req = nullptr;
    CK(ucc_collective_list_init(a, r.rank == 0 ? 2 : 1, nullptr, &req, w.team));
    CK(ucc_collective_post(req));
    const ucc_status_t st = wait_list(w, req);
    EXPECT(st == (r.rank == 0 ? UCC_ERR_TIMED_OUT : UCC_OK),
           "list status %s", ucct::status_name(st));
    // The allreduce ran and is right on both ranks all the same.
    for (size_t i = 0; i < f.ar_out.size(); ++i) {
      const int64_t want = (0 * 3 + int64_t(i) + 3) + (1 * 3 + int64_t(i) + 3);
      EXPECT(f.ar_out[i] == want, "allreduce [%zu] = %d", i, f.ar_out[i]);
    }
    CK(ucc_collective_finalize(req));
    CK(w.barrier());
    return 0;
  }));
}

// Misuse: errors with a log line, and the pool unchanged.
TEST(TaskListErrors, Misuse) {
  EXPECT_TRUE(ucct::run_ranks(1, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    Five f(r.rank, r.size, 0);
    ucc_coll_req_h req = nullptr;
    EXPECT(ucc_collective_list_init(f.a, 0, nullptr, &req, w.team) ==
               UCC_ERR_INVALID_PARAM, "n = 0");
    EXPECT(ucc_collective_list_init(nullptr, 2, nullptr, &req, w.team) ==
               UCC_ERR_INVALID_PARAM, "NULL args");
    EXPECT(ucc_collective_list_init(f.a, 2, nullptr, nullptr, w.team) ==
               UCC_ERR_INVALID_PARAM, "NULL request");
    EXPECT(ucc_collective_list_init(f.a, 2, nullptr, &req, nullptr) ==
               UCC_ERR_INVALID_PARAM, "NULL team");
    ucc_coll_args_t with_cb[2] = {f.a[0], f.a[3]};
    with_cb[1].mask = UCC_COLL_ARGS_FIELD_CB;
    with_cb[1].cb = {[](void*, ucc_status_t) {}, nullptr};
    EXPECT(ucc_collective_list_init(with_cb, 2, nullptr, &req, w.team) ==
               UCC_ERR_INVALID_PARAM, "member callback");
    ucc_coll_args_t bad[3] = {f.a[0], f.a[4], f.a[3]};
    bad[1].dst.info.count = 5;  // not size * 3
    EXPECT(ucc_collective_list_init(bad, 3, nullptr, &req, w.team) ==
               UCC_ERR_INVALID_PARAM, "a member with bad arguments");
    // The failed inits kept no request: a team with a pool of 3 takes a
    // list of 3, not 4.
    ucc_team_params_t p{};
    p.mask = UCC_TEAM_PARAM_FIELD_OUTSTANDING_COLLS;
    p.outstanding_colls = 3;
    ucc_team_h t = nullptr;
    CK(w.new_team(&t, p));
    ucc_status_t st;
    ucc_coll_args_t four[4] = {f.a[3], f.a[3], f.a[3], f.a[3]};
    EXPECT(ucc_collective_list_init(four, 4, nullptr, &req, t) ==
               UCC_ERR_NO_RESOURCE, "more members than requests");
    CK(ucc_collective_list_init(four, 3, nullptr, &req, t));
    CK(ucc_collective_post(req));
    EXPECT(ucc_collective_finalize(req) == UCC_ERR_INVALID_PARAM ||
               ucc_collective_test(req) == UCC_OK,
           "finalize while in progress is refused");
    CK(wait_list(w, req));
    CK(ucc_collective_finalize(req));
    CK(ucc_collective_list_init(four, 3, nullptr, &req, t));
    CK(ucc_collective_finalize(req));
    while ((st = ucc_team_destroy(t)) == UCC_INPROGRESS) ucc_context_progress(w.ctx);
    CK(st);
    return 0;
  }));
}

}  // namespace

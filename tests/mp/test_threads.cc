// UCC_THREAD_MULTIPLE: several threads of each rank post collectives at the
// same time on one shared context, each on teams of its own (collectives of
// one team must be posted in the same order everywhere, so a team belongs
// to one thread), and every result is checked exactly.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/harness.h"

namespace {

constexpr int kThreads = 4;
constexpr int kTeamsPerThread = 2;
constexpr int kIters = 1000;

ucc_status_t wait_req(ucc_context_h ctx, ucc_coll_req_h req) {
  double deadline = ucct::now_s() + 60;
  ucc_status_t st;
  while ((st = ucc_collective_test(req)) == UCC_INPROGRESS) {
    ucc_context_progress(ctx);
    if (ucct::now_s() > deadline) return UCC_ERR_TIMED_OUT;
  }
  return st;
}

// Inputs every rank can compute for every rank.
int64_t value(int rank, int thread, int iter, int k) {
  return rank * 1000003LL + thread * 10007LL + iter * 31LL + k;
}

// One thread's work: kIters collectives alternating over its teams.
int thread_body(ucc_context_h ctx, ucc_team_h* teams, int rank, int n,
                int thread) {
  std::vector<int64_t> src(8), dst(8 * n);
  for (int it = 0; it < kIters; ++it) {
    ucc_team_h team = teams[it % kTeamsPerThread];
    int kind = (it / kTeamsPerThread) % 4;
    int root = it % n;
    for (int k = 0; k < 8; ++k) src[k] = value(rank, thread, it, k);
    std::fill(dst.begin(), dst.end(), -1);
    ucc_coll_args_t a{};
    switch (kind) {
      case 0:
        a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
        a.op = UCC_OP_SUM;
        a.src.info = {src.data(), 8, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
        a.dst.info = {dst.data(), 8, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
        break;
      case 1:
        a.coll_type = UCC_COLL_TYPE_BCAST;
        a.root = root;
        a.src.info = {src.data(), 8, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
        break;
      case 2:
        a.coll_type = UCC_COLL_TYPE_ALLGATHER;
        a.src.info = {src.data(), 8, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
        a.dst.info = {dst.data(), static_cast<uint64_t>(8 * n), UCC_DT_INT64,
                      UCC_MEMORY_TYPE_HOST};
        break;
      default:
        a.coll_type = UCC_COLL_TYPE_BARRIER;
        break;
    }
    ucc_coll_req_h req = nullptr;
    ucc_status_t st = ucc_collective_init(&a, &req, team);
    if (st == UCC_OK) st = ucc_collective_post(req);
    if (st == UCC_OK) st = wait_req(ctx, req);
    if (req != nullptr) ucc_collective_finalize(req);
    if (st != UCC_OK) {
      std::fprintf(stderr, "rank %d thread %d iter %d: %s\n", rank, thread, it,
                   ucct::status_name(st));
      return 1;
    }
    for (int k = 0; k < 8; ++k) {
      int64_t want = 0, got = 0;
      switch (kind) {
        case 0:
          for (int p = 0; p < n; ++p) want += value(p, thread, it, k);
          got = dst[k];
          break;
        case 1:
          want = value(root, thread, it, k);
          got = src[k];
          break;
        case 2:
          for (int p = 0; p < n && got == want; ++p) {
            want = value(p, thread, it, k);
            got = dst[8 * p + k];
          }
          break;
        default:
          break;
      }
      if (got != want) {
        std::fprintf(stderr,
                     "rank %d thread %d iter %d kind %d: elem %d got %lld "
                     "want %lld\n",
                     rank, thread, it, kind, k, static_cast<long long>(got),
                     static_cast<long long>(want));
        return 2;
      }
    }
  }
  return 0;
}

class ThreadMultiple : public ::testing::TestWithParam<int> {};

TEST_P(ThreadMultiple, ThreadsPostConcurrentlyOnOneContext) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    ucct::World w;
    w.thread_mode = UCC_THREAD_MULTIPLE;
    if (w.init(r) != UCC_OK) return 1;
    // Teams are created by the main thread, in the same order everywhere.
    std::vector<ucc_team_h> teams(kThreads * kTeamsPerThread);
    for (auto& t : teams) {
      if (ucc_team_create_from_parent(r.rank, 1, w.team, &t) != UCC_OK)
        return 2;
      ucc_status_t st;
      while ((st = ucc_team_create_test(t)) == UCC_INPROGRESS)
        ucc_context_progress(w.ctx);
      if (st != UCC_OK) return 3;
    }
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        if (thread_body(w.ctx, &teams[i * kTeamsPerThread], r.rank, r.size,
                        i) != 0)
          ++failures;
      });
    }
    for (auto& t : threads) t.join();
    for (auto& t : teams) {
      while (ucc_team_destroy(t) == UCC_INPROGRESS) ucc_context_progress(w.ctx);
    }
    return failures.load() == 0 ? 0 : 4;
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, ThreadMultiple, ::testing::Values(1, 2, 3),
                         [](const auto& i) {
                           return "n" + std::to_string(i.param);
                         });

}  // namespace

// Misuse a careless runtime commits, answered with errors, never freed
// memory read, silent wrong data or hangs (issue "Hardening", library
// findings):
//   stale     progress and destroy on a destroyed context, a second
//             ucc_finalize: refused without touching freed memory (also
//             under ASan: the objects are kept, graveyard.h);
//   timeout   UCC_COLL_TIMEOUT ends a collective its peer never posts
//             with UCC_ERR_TIMED_OUT, without the caller asking;
//   fork      a child forked after the context was made cannot use it
//             (it shares the parent's segments and would write into the
//             parent's collectives); the parent's results stay right.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "tests/common/harness.h"

namespace {

#define CK(call)                                                          \
  do {                                                                    \
    ucc_status_t s_ = (call);                                             \
    if (s_ != UCC_OK) {                                                   \
      std::fprintf(stderr, "rank %d: %s:%d: %s = %s\n", r.rank, __FILE__, \
                   __LINE__, #call, ucct::status_name(s_));               \
      return 1;                                                           \
    }                                                                     \
  } while (0)

#define WANT(call, want)                                                   \
  do {                                                                     \
    ucc_status_t s_ = (call);                                              \
    if (s_ != (want)) {                                                    \
      std::fprintf(stderr, "rank %d: %s:%d: %s = %s, want %s\n", r.rank,   \
                   __FILE__, __LINE__, #call, ucct::status_name(s_),       \
                   ucct::status_name(want));                               \
      return 1;                                                            \
    }                                                                      \
  } while (0)

ucc_coll_args_t sum_args(std::vector<int32_t>& in, std::vector<int32_t>& out) {
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
  a.op = UCC_OP_SUM;
  a.src.info = {in.data(), in.size(), UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
  a.dst.info = {out.data(), out.size(), UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
  return a;
}

TEST(Misuse, StaleContextAndLibraryHandles) {
  EXPECT_TRUE(ucct::run_ranks(1, [](ucct::Rank& r) {
    ucc_lib_config_h lc = nullptr;
    CK(ucc_lib_config_read(nullptr, nullptr, &lc));
    ucc_lib_params_t lp{};
    ucc_lib_h lib = nullptr;
    CK(ucc_init(&lp, lc, &lib));
    ucc_lib_config_release(lc);
    ucc_context_params_t cp{};
    ucc_context_h ctx = nullptr;
    CK(ucc_context_create(lib, &cp, nullptr, &ctx));
    CK(ucc_context_destroy(ctx));
    WANT(ucc_context_progress(ctx), UCC_ERR_INVALID_PARAM);
    WANT(ucc_context_destroy(ctx), UCC_ERR_INVALID_PARAM);
    ucc_context_attr_t attr{};
    WANT(ucc_context_get_attr(ctx, &attr), UCC_ERR_INVALID_PARAM);
    CK(ucc_finalize(lib));
    WANT(ucc_finalize(lib), UCC_ERR_INVALID_PARAM);
    ucc_lib_attr_t la{};
    WANT(ucc_lib_get_attr(lib, &la), UCC_ERR_INVALID_PARAM);
    return 0;
  }));
}

// Rank 1 never posts the allreduce rank 0 posts: with UCC_COLL_TIMEOUT
// set, rank 0's ends with UCC_ERR_TIMED_OUT about when it says.
TEST(Misuse, DefaultCollectiveTimeout) {
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_COLL_TIMEOUT", "300ms"}};
    if (w.init(r) != UCC_OK) return 1;
    std::vector<int32_t> in(8, r.rank), out(8, -1);
    if (r.rank == 0) {
      ucc_coll_args_t a = sum_args(in, out);
      const double t0 = ucct::now_s();
      const ucc_status_t st = w.run(a, 30);
      const double took = ucct::now_s() - t0;
      if (st != UCC_ERR_TIMED_OUT || took < 0.25 || took > 10) {
        std::fprintf(stderr, "rank 0: %s after %.2f s\n", ucct::status_name(st),
                     took);
        return 2;
      }
    }
    // Apart again before the teams go.
    return w.barrier() == UCC_OK ? 0 : 3;
  }));
}

// Rank 0 forks a child, which tries every entry point on its parent's
// context and team: all refused. The parent ranks' allreduce is right.
TEST(Misuse, ForkedChildCannotUseTheContext) {
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    std::vector<int32_t> in(100), out(100, -1);
    for (size_t i = 0; i < in.size(); ++i) in[i] = int32_t(r.rank * 1000 + i);
    if (r.rank == 0) {
      const pid_t c = fork();
      if (c == 0) {
        std::vector<int32_t> cin(100, 7777), cout(100);
        ucc_coll_args_t a = sum_args(cin, cout);
        ucc_coll_req_h req = nullptr;
        int bad = 0;
        bad += ucc_collective_init(&a, &req, w.team) != UCC_ERR_INVALID_PARAM;
        bad += ucc_context_progress(w.ctx) != UCC_ERR_INVALID_PARAM;
        ucc_team_params_t tp{};
        tp.mask = UCC_TEAM_PARAM_FIELD_OOB;
        tp.oob = w.oob;
        ucc_team_h t = nullptr;
        bad += ucc_team_create_post(&w.ctx, 1, &tp, &t) != UCC_ERR_INVALID_PARAM;
        _exit(bad);
      }
      int ws = 0;
      waitpid(c, &ws, 0);
      if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
        std::fprintf(stderr, "child: %d entry points not refused\n",
                     WEXITSTATUS(ws));
        return 2;
      }
    }
    ucc_coll_args_t a = sum_args(in, out);
    CK(w.run(a));
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i] != int32_t(1000 + 2 * i)) return 3;
    return 0;
  }));
}

}  // namespace

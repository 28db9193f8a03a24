// Multi-process test harness: forked ranks, a built-in OOB, and a World
// (lib + context + team) per rank.
//
//   bool ok = ucct::run_ranks(4, [](ucct::Rank& r) {
//     ucct::World w;
//     if (w.init(r) != UCC_OK) return 1;
//     ... build ucc_coll_args_t ...
//     return w.run(args) == UCC_OK ? 0 : 2;
//   });
//
// Each rank is a child process, so a crash or a hang in the library cannot
// take the calling process (e.g. the gtest binary) down with it. What a rank
// reports is its return value only: gtest EXPECT_* inside fn is recorded in
// the child and lost, so fn must turn failures into a nonzero return (e.g.
// `return ::testing::Test::HasFailure() ? 1 : 0;`).
//
// Threads: run_ranks() from one thread of the parent; everything else from
// the rank's own (single) thread inside fn.
#pragma once

#include <ucc/api/ucc.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/types.h"

namespace ucct {

struct Rank {
  int rank;  // 0..size-1
  int size;
  // Ready for ucc_context_params_t.oob and ucc_team_params_t.oob
  // (n_oob_eps = size, oob_ep = rank). Non-blocking, as UCC requires:
  // allgather() starts and returns UCC_OK; req_test() gives UCC_INPROGRESS
  // until every rank's contribution is in place, then UCC_OK, or
  // UCC_ERR_NO_MESSAGE when a peer died; req_free() releases the request.
  // Allgathers match across ranks by order: every rank (library and test
  // code together) must start them in the same order with the same size.
  ucc_oob_coll_t oob;
};

// Forks n ranks (n >= 1, always forked) connected by the built-in OOB, runs
// fn(rank) in each and _exit()s the child with fn's return value (0 = pass;
// an exception escaping fn gives 125). Returns true when every child exits 0
// within timeout_s seconds. Otherwise kills the remaining children
// (SIGKILL), reaps them all and prints one line per failed rank to stderr:
//   "rank 2: exit 3", "rank 1: killed by signal 11",
//   "rank 0: timeout after 120 s", "rank 3: killed by the harness (...)".
// Ranks whose bit is set in `may_be_killed` may also end by SIGKILL (fault
// tests that kill a rank on purpose).
// With `bind`, rank r is pinned to the (r mod ncpu)-th CPU it may use, as
// mpirun --bind-to core would: without it the scheduler sometimes leaves two
// ranks on one core of an otherwise idle machine for seconds.
bool run_ranks(int n, const std::function<int(Rank&)>& fn, int timeout_s = 300,
               bool bind = false, uint64_t may_be_killed = 0);

// Blocking OOB helpers on top of Rank::oob (they take part in the same
// allgather order as the library). While waiting they progress ctx when it
// is not null (a peer may need this rank's progress to finish its own
// collective) and yield the CPU. Return UCC_OK, UCC_ERR_NO_MESSAGE (a peer
// died), UCC_ERR_TIMED_OUT, or another error of the OOB.
ucc_status_t oob_allgather(const ucc_oob_coll_t& oob, const void* src,
                           void* dst, size_t len, ucc_context_h ctx = nullptr,
                           double timeout_s = 60);
ucc_status_t oob_barrier(const ucc_oob_coll_t& oob, ucc_context_h ctx = nullptr,
                         double timeout_s = 60);

// Seconds on the monotonic clock.
double now_s();

// CPUs this process may run on (its affinity mask), at least 1.
int usable_cpus();

// ucc_status_string() without needing the library for codes we know.
const char* status_name(ucc_status_t st);

// Team parameters for the team of all `oob`'s endpoints, rank = its
// endpoint (ep, contiguous range, the OOB).
ucc_team_params_t world_team_params(const ucc_oob_coll_t& oob);

// A rank's lib + context (with OOB) + team (with OOB), UCC_THREAD_SINGLE.
class World {
 public:
  World() = default;
  // Team destroy (looping on UCC_INPROGRESS, 30 s at most), context destroy,
  // finalize; skips what init() did not create.
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // Applied with setenv() before ucc_lib_config_read / ucc_context_config_read
  // (e.g. {"UCC_ALLREDUCE_ALG", "ring"}). Set before init().
  std::vector<std::pair<std::string, std::string>> env;
  // The library's thread mode (set before init()).
  ucc_thread_mode_t thread_mode = UCC_THREAD_SINGLE;
  // Where not null, the context's mem_params (UCC_CONTEXT_PARAM_FIELD_
  // MEM_PARAMS: segments attached to the context; set before init()).
  const ucc_mem_map_params_t* ctx_mem = nullptr;

  // Creates lib, context and team; drives team creation with
  // ucc_team_create_test + ucc_context_progress. Returns UCC_OK, the first
  // failing call's status (one line on stderr names it), or
  // UCC_ERR_TIMED_OUT when team creation takes longer than timeout_s.
  ucc_status_t init(Rank& r, double timeout_s = 60);

  // Progresses ctx until req is no longer UCC_INPROGRESS and returns its
  // status; UCC_ERR_TIMED_OUT when timeout_s passes first; an error of
  // ucc_context_progress if it returns one. Yields the CPU every so often so
  // that oversubscribed ranks still move.
  ucc_status_t wait(ucc_coll_req_h req, double timeout_s = 60);

  // ucc_collective_init + post + wait + finalize. Returns the collective's
  // final status, or the first error of those calls.
  ucc_status_t run(ucc_coll_args_t& args, double timeout_s = 60);

  // Another team over this world's OOB, on ctx (`p` gives more fields;
  // its OOB is set here), created to the end with ucc_team_create_test +
  // ucc_context_progress: UCC_OK with *t, or the first error.
  ucc_status_t new_team(ucc_team_h* t, ucc_team_params_t p = {});

  // OOB barrier over this world's ranks (progressing ctx meanwhile).
  ucc_status_t barrier(double timeout_s = 60) {
    return oob_barrier(oob, ctx, timeout_s);
  }

  ucc_lib_h lib = nullptr;
  ucc_context_h ctx = nullptr;
  ucc_team_h team = nullptr;
  int rank = 0, size = 0;
  ucc_oob_coll_t oob{};  // copy of Rank::oob
};

}  // namespace ucct

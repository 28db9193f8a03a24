// The two halves of a small collective's latency at 2 ranks, for
// tests/perf/path_instructions.sh to count with callgrind: the sender's
// whole post (post until its test says done: a bcast's root, a reduce's
// non-root, the barrier's later rank), and the receiver's completion (from
// the first poll that finds the peer's message already in its inbox until
// its test says done). Each runs in a function of its own
// (probe_send, probe_complete) that callgrind's --toggle-collect names.
//
// After 10 uncounted warmup repetitions, per repetition: an OOB barrier; the
// receiver posts, polls once (nothing there yet) and sleeps 4 ms; the sender
// sleeps 1 ms, then posts and waits; the receiver then polls until done. Every
// repetition's result is checked (a bcast's or reduce's 8 bytes of float32), so
// that a broken path cannot pass for a short one. Exit status: 0 when every
// check held.
//
// Usage: ucc_path_probe [reps (default 200)] [bcast|reduce|barrier]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/common/harness.h"

namespace {

inline ucc_status_t until_done(ucc_coll_req_h req, ucc_context_h ctx) {
  ucc_status_t st;
  while ((st = ucc_collective_test(req)) == UCC_INPROGRESS)
    ucc_context_progress(ctx);
  return st;
}

inline ucc_status_t post_until_done(ucc_coll_req_h req, ucc_context_h ctx) {
  const ucc_status_t st = ucc_collective_post(req);
  return st != UCC_OK ? st : until_done(req, ctx);
}

}  // namespace

extern "C" {

__attribute__((noinline)) ucc_status_t probe_send(ucc_coll_req_h req,
                                                  ucc_context_h ctx) {
  return post_until_done(req, ctx);
}

__attribute__((noinline)) ucc_status_t probe_complete(ucc_coll_req_h req,
                                                      ucc_context_h ctx) {
  return until_done(req, ctx);
}

}  // extern "C"

namespace {

enum class Kind { kBcast, kReduce, kBarrier };

int rank_main(ucct::Rank& rk, Kind kind, int reps) {
  ucct::World w;
  if (w.init(rk) != UCC_OK) return 1;
  float src[2], dst[2];
  ucc_coll_args_t a{};
  a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
  a.flags = UCC_COLL_ARGS_FLAG_PERSISTENT;
  a.root = 0;
  switch (kind) {
    case Kind::kBcast:
      a.coll_type = UCC_COLL_TYPE_BCAST;
      a.src.info = {src, 2, UCC_DT_FLOAT32, UCC_MEMORY_TYPE_HOST};
      break;
    case Kind::kReduce:
      a.coll_type = UCC_COLL_TYPE_REDUCE;
      a.op = UCC_OP_SUM;
      a.src.info = {src, 2, UCC_DT_FLOAT32, UCC_MEMORY_TYPE_HOST};
      a.dst.info = {dst, 2, UCC_DT_FLOAT32, UCC_MEMORY_TYPE_HOST};
      break;
    case Kind::kBarrier:
      a.coll_type = UCC_COLL_TYPE_BARRIER;
      break;
  }
  ucc_coll_req_h req = nullptr;
  if (ucc_collective_init(&a, &req, w.team) != UCC_OK) return 2;
  // The bcast's data leaves rank 0, the reduce's rank 1; the barrier's
  // rank 1 posts first and finds rank 0's message later.
  const bool sender = (kind == Kind::kReduce) == (rk.rank == 1);
  int wrong = 0;
  // The warmup calls the helpers directly, outside the functions callgrind
  // counts: what the first repetitions do once (connections set up on
  // first use, lazy symbol binding, a crypto library's first call) is not
  // a per-message cost.
  const int warm = 10;
  for (int i = 0; i < warm + reps && wrong == 0; ++i) {
    if (w.barrier() != UCC_OK) return 3;
    src[0] = static_cast<float>(i + rk.rank);
    src[1] = static_cast<float>(2 * i + 3 * rk.rank);
    dst[0] = dst[1] = -1.0f;  // poisoned
    ucc_status_t st;
    if (sender) {
      usleep(1000);
      st = i < warm ? post_until_done(req, w.ctx) : probe_send(req, w.ctx);
    } else {
      st = ucc_collective_post(req);
      if (st == UCC_OK) ucc_context_progress(w.ctx);
      usleep(4000);
      if (st == UCC_OK)
        st = i < warm ? until_done(req, w.ctx) : probe_complete(req, w.ctx);
    }
    if (st != UCC_OK) return 4;
    // Rank 0's values in a bcast; the sum of both ranks' at a reduce's
    // root (rank 0).
    const float want0 = kind == Kind::kBcast ? static_cast<float>(i)
                                             : static_cast<float>(2 * i + 1);
    const float want1 = kind == Kind::kBcast ? static_cast<float>(2 * i)
                                             : static_cast<float>(4 * i + 3);
    if (kind == Kind::kBcast && rk.rank == 1)
      wrong = src[0] != want0 || src[1] != want1;
    if (kind == Kind::kReduce && rk.rank == 0)
      wrong = dst[0] != want0 || dst[1] != want1;
  }
  if (wrong != 0)
    std::fprintf(stderr, "ucc_path_probe: rank %d: wrong result\n", rk.rank);
  ucc_collective_finalize(req);
  return wrong != 0 ? 5 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 200;
  const char* name = argc > 2 ? argv[2] : "bcast";
  Kind kind;
  if (strcmp(name, "bcast") == 0) {
    kind = Kind::kBcast;
  } else if (strcmp(name, "reduce") == 0) {
    kind = Kind::kReduce;
  } else if (strcmp(name, "barrier") == 0) {
    kind = Kind::kBarrier;
  } else {
    std::fprintf(stderr,
                 "usage: ucc_path_probe [reps] [bcast|reduce|barrier]\n");
    return 2;
  }
  if (reps < 1) return 2;
  return ucct::run_ranks(
             2, [&](ucct::Rank& rk) { return rank_main(rk, kind, reps); }, 120,
             true)
             ? 0
             : 1;
}

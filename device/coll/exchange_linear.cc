// Exchange with every peer at once: allgather and alltoall (linear).
//
// Every rank sends its block for each peer straight to that peer, and
// takes each peer's block from that peer's message, in whatever order
// the peers get to it: a rank waits on no peer that is itself waiting on
// another, where the ring and the pairwise exchange take n - 1 steps in
// lockstep. With more ranks than cores every such step can be a trip
// through the scheduler (docs/perf/small_teams.md).
//
// Blocks longer than a slot go in rounds: round j moves segment j of every
// block, and a rank starts round j + 1 once it has sent and received all
// of round j. So a peer's inbox from us holds at most rounds j and j + 1,
// and a rank takes its current round's messages whatever its own sends
// are waiting for: bounded inboxes cannot deadlock.
//
// In place (alltoall), the block sent to p and the block received from p
// are the same bytes: p's segment j is taken only once ours to p has left.
// The run's block tables say where each block is (allgather: every peer
// gets our own block).
#include <algorithm>

#include "device/coll/algorithms.h"
#include "device/coll/patterns.h"
#include "device/coll/round_sends.h"
#include "device/coll/streams.h"

namespace ucc::dev {
namespace {

struct Exchange {
  uint32_t round = 0;
  uint32_t rounds = 0;
  uint32_t nrx = 0;  // receives of this round still to go
  RoundSends tx;
  uint64_t rx[RoundSends::kWords];  // bit p: this round's message from p
                                    // taken, or none

  static uint64_t dbytes(const CollRun& run, uint32_t p) {
    return run.dst_cnt[run.tab(p)] * run.esize;
  }

  Status start(CollRun& run) {
    if (run.size > RoundSends::kMaxRanks) return Status::kNotSupported;
    const uint32_t me = run.rank;
    const uint64_t own = dbytes(run, me);
    if (RoundSends::bytes(run, me) != own) return Status::kInvalidParam;
    Status st =
        run.copy_uu(Buf::kDst, run.dst_off[run.tab(me)] * run.esize, Buf::kSrc,
                    run.src_off[run.tab(me)] * run.esize, own);
    if (failed(st)) return st;
    rounds = 0;
    for (uint32_t p = 0; p < run.size; ++p) {
      if (p == me) continue;
      rounds =
          std::max({rounds, pat::nmsgs(RoundSends::bytes(run, p), run.slot),
                    pat::nmsgs(dbytes(run, p), run.slot)});
    }
    begin_round(run);
    return progress(run);
  }

  void begin_round(const CollRun& run) {
    tx.begin(run, round);
    nrx = RoundSends::due(run, round, rx, dbytes);
  }

  Status progress(CollRun& run) {
    const uint64_t es = run.esize;
    while (round < rounds) {
      const uint64_t at = uint64_t{round} * run.slot;
      Status st = tx.push(run, round);
      if (failed(st)) return st;
      // From every peer whose message is in, from the previous rank down
      // (the one that sends to us first).
      for (uint32_t i = 1; i < run.size && nrx != 0; ++i) {
        const uint32_t p = pat::mod(int64_t{run.rank} - i, run.size);
        if (RoundSends::has(rx, p) || !tx.done(p)) continue;
        const uint32_t len = msg_len(dbytes(run, p), run.slot, round);
        Status err = Status::kOk;
        const void* in = run.peek(p, len, &err);
        if (in == nullptr) {
          if (failed(err)) return err;
          continue;
        }
        st =
            run.copy_out(Buf::kDst, run.dst_off[run.tab(p)] * es + at, in, len);
        if (failed(st)) return st;
        run.release(p);
        RoundSends::set(rx, p);
        --nrx;
      }
      if (tx.left != 0 || nrx != 0) return Status::kInProgress;
      if (++round < rounds) begin_round(run);
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kAllgatherLinear = make_alg<Exchange>();
const AlgInfo kAlltoallLinear = make_alg<Exchange>();
const AlgInfo kAllgathervLinear = make_alg<Exchange>();
const AlgInfo kAlltoallvLinear = make_alg<Exchange>();

}  // namespace ucc::dev

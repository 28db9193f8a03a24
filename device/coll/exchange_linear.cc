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
// block. A rank's sends and its receives each go round by round, apart:
// its sends start round j + 1 once all of round j has left, as far ahead
// of its receives as the peers' inboxes take them; its receives move to
// round j + 1 once all of round j is in. Receives never wait for the
// rank's own later sends, and each peer's messages come in the order it
// sent them, so bounded inboxes cannot deadlock; a rank that is scheduled
// less (more ranks than cores) finds its peers' next rounds already in
// its inboxes instead of holding them at every round.
//
// In place (alltoall), the block sent to p and the block received from p
// are the same bytes: p's segment j is taken only once ours to p has left
// (so receives never pass sends: a rank's receive round is at most its
// send round).
// The run's block tables say where each block is (allgather: every peer
// gets our own block).
#include <algorithm>

#include "device/coll/algorithms.h"
#include "device/coll/round_sends.h"
#include "device/coll/streams.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

struct Exchange {
  uint32_t rround = 0;  // the round our receives are in (rx, nrx); our
                        // sends' is tx.round
  uint32_t rounds = 0;
  uint32_t nrx = 0;  // receives of round rround still to go
  RoundSends tx;
  uint64_t rx[RoundSends::kWords];  // bit p: round rround's message from p
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
    tx.begin(run, 0);
    nrx = RoundSends::due(run, 0, rx, dbytes);
    return progress(run);
  }

  // Takes what is in of round rround's messages, from the previous rank
  // down (the one that sends to us first).
  Status receive(CollRun& run) {
    const uint64_t at = uint64_t{rround} * run.slot;
    for (uint32_t i = 1; i < run.size && nrx != 0; ++i) {
      const uint32_t p = pat::mod(int64_t{run.rank} - i, run.size);
      if (RoundSends::has(rx, p)) continue;
      if (tx.round == rround && !tx.done(p)) continue;
      const uint32_t len = msg_len(dbytes(run, p), run.slot, rround);
      Status err = Status::kOk;
      const void* in = run.peek(p, len, &err);
      if (in == nullptr) {
        if (failed(err)) return err;
        continue;
      }
      Status st = run.copy_out(
          Buf::kDst, run.dst_off[run.tab(p)] * run.esize + at, in, len);
      if (failed(st)) return st;
      run.release(p);
      RoundSends::set(rx, p);
      --nrx;
    }
    return Status::kOk;
  }

  Status progress(CollRun& run) {
    Status st = tx.run_ahead(run, rounds);
    if (failed(st)) return st;
    while (rround < rounds && rround <= tx.round) {
      st = receive(run);
      if (failed(st)) return st;
      if (nrx != 0) break;
      if (++rround < rounds) nrx = RoundSends::due(run, rround, rx, dbytes);
    }
    return rround == rounds && tx.left == 0 ? Status::kOk
                                            : Status::kInProgress;
  }
};

}  // namespace

const AlgInfo kAllgatherLinear = make_alg<Exchange>();
const AlgInfo kAlltoallLinear = make_alg<Exchange>();
const AlgInfo kAllgathervLinear = make_alg<Exchange>();
const AlgInfo kAlltoallvLinear = make_alg<Exchange>();

}  // namespace ucc::dev

// Reduce-scatter by sending to every peer at once (linear).
//
// Every rank sends block p of its input straight to rank p, and folds the
// n - 1 copies of its own block that the peers send it into its result:
// its own input combined with the message of the previous rank, then with
// each further rank's down the ring, a fixed order whatever order the
// messages come in, so a result is the same from run to run. No rank waits
// for a peer that is itself waiting for another, where the ring takes
// n - 1 lockstep steps; with more ranks than cores every such step can be
// a trip through the scheduler (docs/perf/small_teams.md).
//
// Words: "round" j moves segment j (one slot's worth) of every block. A
// rank's sends and its folds each go round by round, apart: its sends
// start round j + 1 once all of round j has left, as far ahead as the
// peers' inboxes take them; its folds move to round j + 1 once all of
// round j is folded. Folds never wait for the rank's own sends, and each
// peer's messages come in the order it sent them, so bounded inboxes
// cannot deadlock.
//
// In place, the input is dst's whole vector and the result goes to this
// rank's block of it: the bytes that only this rank's folds read.
#include "device/coll/algorithms.h"
#include "device/coll/round_sends.h"
#include "device/coll/streams.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

struct ReduceScatterLinear {
  uint32_t rround = 0;  // the round our folds are in (next); our sends'
                        // is tx.round
  uint32_t rounds = 0;
  // The next peer's segment of round rround to fold: from position
  // rank - next, 1..size - 1; size once all are in (or none is due).
  uint32_t next = 0;
  RoundSends tx;

  Status start(CollRun& run) {
    if (run.size > RoundSends::kMaxRanks) return Status::kNotSupported;
    const uint32_t me = run.tab(run.rank);
    if (run.size == 1) {
      Status st =
          run.copy_uu(Buf::kDst, run.dst_off[me] * run.esize, Buf::kSrc,
                      run.src_off[me] * run.esize, run.src_cnt[me] * run.esize);
      if (failed(st)) return st;
      return run.finish_avg(Buf::kDst, run.dst_off[me] * run.esize,
                            run.src_cnt[me]);
    }
    rounds = 0;
    for (uint32_t p = 0; p < run.size; ++p) {
      const uint32_t m = pat::nmsgs(RoundSends::bytes(run, p), run.slot);
      if (m > rounds) rounds = m;
    }
    tx.begin(run, 0);
    begin_folds(run);
    return progress(run);
  }

  void begin_folds(const CollRun& run) {
    const uint64_t mine = RoundSends::bytes(run, run.rank);
    next = rround < pat::nmsgs(mine, run.slot) ? 1 : run.size;
  }

  // Folds the segment of this round that `in` holds (from the next peer
  // in order) into the result.
  Status fold(CollRun& run, const void* in, uint32_t len) {
    const uint32_t me = run.tab(run.rank);
    const uint64_t at = uint64_t{rround} * run.slot;
    const uint64_t doff = run.dst_off[me] * run.esize + at;
    const uint64_t cnt = len / run.esize;
    // The first fold takes our own input, the others the partial result;
    // the last one applies AVG's scaling.
    Status st = next == 1
                    ? run.reduce_out(Buf::kDst, doff, in, Buf::kSrc,
                                     run.src_off[me] * run.esize + at, cnt)
                    : run.reduce_out(Buf::kDst, doff, in, Buf::kDst, doff, cnt);
    if (failed(st) || next != run.size - 1) return st;
    return run.finish_avg(Buf::kDst, doff, cnt);
  }

  Status progress(CollRun& run) {
    Status st = tx.run_ahead(run, rounds);
    if (failed(st)) return st;
    while (rround < rounds) {
      // Our block from the previous rank down, in that order.
      const uint32_t len =
          msg_len(RoundSends::bytes(run, run.rank), run.slot, rround);
      while (next < run.size) {
        const uint32_t p = pat::mod(int64_t{run.rank} - next, run.size);
        Status err = Status::kOk;
        const void* in = run.peek(p, len, &err);
        if (in == nullptr) {
          if (failed(err)) return err;
          return Status::kInProgress;
        }
        st = fold(run, in, len);
        if (failed(st)) return st;
        run.release(p);
        ++next;
      }
      if (++rround < rounds) begin_folds(run);
    }
    return tx.left == 0 ? Status::kOk : Status::kInProgress;
  }
};

}  // namespace

const AlgInfo kReduceScatterLinear = make_alg<ReduceScatterLinear>();
const AlgInfo kReduceScattervLinear = make_alg<ReduceScatterLinear>();

}  // namespace ucc::dev

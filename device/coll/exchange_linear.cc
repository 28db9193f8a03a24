// Exchange with every peer at once: allgather and alltoall (linear).
//
// Every rank sends its block for each peer straight to that peer, and
// takes each peer's block from that peer's message, in whatever order
// the peers get to it: a rank waits on no peer that is itself waiting on
// another, where the ring and the pairwise exchange take n - 1 steps in
// lockstep. With more ranks than cores every such step can be a trip
// through the scheduler (docs/performance.md).
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
#include <cstring>

#include "device/coll/algorithms.h"
#include "device/coll/patterns.h"
#include "device/coll/streams.h"

namespace ucc::dev {
namespace {

struct Exchange {
  // Set positions this state can track (the rest of kFlatAlgState).
  static constexpr uint32_t kMaxRanks = 1024;
  static constexpr uint32_t kWords = kMaxRanks / 64;

  uint32_t round = 0;
  uint32_t rounds = 0;
  uint32_t ntx = 0;  // sends of this round still to go
  uint32_t nrx = 0;  // receives of this round still to go
  uint64_t tx[kWords];  // bit p: this round's send to p done, or none
  uint64_t rx[kWords];  // bit p: this round's message from p taken, or none

  static bool has(const uint64_t* m, uint32_t p) {
    return ((m[p / 64] >> (p % 64)) & 1) != 0;
  }
  static void set(uint64_t* m, uint32_t p) {
    m[p / 64] |= uint64_t{1} << (p % 64);
  }

  uint64_t sbytes(const CollRun& run, uint32_t p) const {
    return run.src_cnt[run.tab(p)] * run.esize;
  }
  uint64_t dbytes(const CollRun& run, uint32_t p) const {
    return run.dst_cnt[run.tab(p)] * run.esize;
  }

  Status start(CollRun& run) {
    if (run.size > kMaxRanks) return Status::kNotSupported;
    const uint32_t me = run.rank;
    const uint64_t own = dbytes(run, me);
    if (sbytes(run, me) != own) return Status::kInvalidParam;
    Status st = run.copy_uu(Buf::kDst, run.dst_off[run.tab(me)] * run.esize,
                            Buf::kSrc, run.src_off[run.tab(me)] * run.esize,
                            own);
    if (failed(st)) return st;
    rounds = 0;
    for (uint32_t p = 0; p < run.size; ++p) {
      if (p == me) continue;
      rounds = std::max({rounds, pat::nmsgs(sbytes(run, p), run.slot),
                         pat::nmsgs(dbytes(run, p), run.slot)});
    }
    begin_round(run);
    return progress(run);
  }

  void begin_round(const CollRun& run) {
    const uint32_t words = (run.size + 63) / 64;
    memset(tx, 0, sizeof(uint64_t) * words);
    memset(rx, 0, sizeof(uint64_t) * words);
    ntx = nrx = 0;
    for (uint32_t p = 0; p < run.size; ++p) {
      if (p != run.rank && round < pat::nmsgs(sbytes(run, p), run.slot))
        ++ntx;
      else
        set(tx, p);
      if (p != run.rank && round < pat::nmsgs(dbytes(run, p), run.slot))
        ++nrx;
      else
        set(rx, p);
    }
  }

  Status progress(CollRun& run) {
    const uint64_t es = run.esize;
    while (round < rounds) {
      const uint64_t at = uint64_t{round} * run.slot;
      // To every peer with room, from the next rank up (the one that
      // takes from us first); a full inbox is tried again next time.
      for (uint32_t i = 1; i < run.size && ntx != 0; ++i) {
        const uint32_t p = pat::mod(int64_t{run.rank} + i, run.size);
        if (has(tx, p)) continue;
        void* out = run.reserve(p);
        if (out == nullptr) continue;
        const uint32_t len = msg_len(sbytes(run, p), run.slot, round);
        Status st = run.copy_in(out, Buf::kSrc,
                                run.src_off[run.tab(p)] * es + at, len);
        if (failed(st)) return st;
        run.commit(p, len);
        set(tx, p);
        --ntx;
      }
      // From every peer whose message is in, from the previous rank down
      // (the one that sends to us first).
      for (uint32_t i = 1; i < run.size && nrx != 0; ++i) {
        const uint32_t p = pat::mod(int64_t{run.rank} - i, run.size);
        if (has(rx, p) || !has(tx, p)) continue;
        const uint32_t len = msg_len(dbytes(run, p), run.slot, round);
        Status err = Status::kOk;
        const void* in = run.peek(p, len, &err);
        if (in == nullptr) {
          if (failed(err)) return err;
          continue;
        }
        Status st = run.copy_out(Buf::kDst,
                                 run.dst_off[run.tab(p)] * es + at, in, len);
        if (failed(st)) return st;
        run.release(p);
        set(rx, p);
        --nrx;
      }
      if (ntx != 0 || nrx != 0) return Status::kInProgress;
      if (++round < rounds) begin_round(run);
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kAllgatherLinear = make_alg<Exchange>();
const AlgInfo kAlltoallLinear = make_alg<Exchange>();

}  // namespace ucc::dev

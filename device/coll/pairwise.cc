// Pairwise exchange: alltoall, alltoallv and allgatherv.
//
// In step s (0 <= s < n) rank r exchanges with partner (s - r) mod n: it
// sends the block of its src meant for the partner and receives the
// partner's block into its place in dst (the run's block tables say where
// those are; for allgatherv every partner gets the same block, ours). The
// pairing is symmetric, so when the exchange is in place the block we send
// to p and the block we receive from p occupy the same bytes; a received
// message overwrites them only after our own copy of them has left. The
// step whose partner is ourselves is the local copy. Every pair meets in
// the same step on both sides, so bounded inboxes cannot deadlock.
#include "device/coll/algorithms.h"
#include "device/coll/streams.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

struct Pairwise {
  uint32_t step = 0;
  bool started = false;
  SendStream tx;
  RecvStream rx;

  Status start(CollRun& run) { return progress(run); }

  Status progress(CollRun& run) {
    const uint64_t es = run.esize;
    while (step < run.size) {
      const uint32_t p = pat::pair_partner(run.rank, run.size, step);
      const uint32_t t = run.tab(p);
      const uint64_t soff = run.src_off[t] * es, doff = run.dst_off[t] * es;
      const uint64_t sbytes = run.src_cnt[t] * es, dbytes = run.dst_cnt[t] * es;
      if (p == run.rank) {
        if (sbytes != dbytes) return Status::kInvalidParam;
        Status st = run.copy_uu(Buf::kDst, doff, Buf::kSrc, soff, dbytes);
        if (failed(st)) return st;
        ++step;
        continue;
      }
      if (!started) {
        tx.init(run, p, Buf::kSrc, soff, sbytes);
        rx.init(run, p, Buf::kDst, doff, dbytes, false);
        started = true;
      }
      Status st = tx.progress(run);
      if (failed(st)) return st;
      // Receiving into bytes we still have to send (in place): never
      // overtake our own sending.
      bool aliased = run.overlap(Buf::kSrc, soff, sbytes, Buf::kDst, doff,
                                 dbytes);
      st = rx.progress(run, aliased ? tx.done : UINT32_MAX);
      if (failed(st)) return st;
      if (!tx.finished() || !rx.finished()) return Status::kInProgress;
      started = false;
      ++step;
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kAlltoallPairwise = make_alg<Pairwise>();
const AlgInfo kAlltoallvPairwise = make_alg<Pairwise>();
const AlgInfo kAllgathervPairwise = make_alg<Pairwise>();

}  // namespace ucc::dev

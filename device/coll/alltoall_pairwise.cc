// Alltoall by pairwise exchange.
//
// In step s (0 <= s < n) rank r exchanges with partner (s - r) mod n: it
// sends its block for the partner and receives the partner's block for it.
// The pairing is symmetric, so the block we send to p and the block we
// receive from p occupy the same place when the exchange is in place; a
// received message overwrites those bytes only after our own copy of them
// has left. The step whose partner is ourselves is the local copy.
#include "device/coll/algorithms.h"
#include "device/coll/patterns.h"
#include "device/coll/streams.h"

namespace ucc::dev {
namespace {

struct Pairwise {
  uint32_t step = 0;
  uint64_t bytes = 0;  // one block
  bool started = false;
  SendStream tx;
  RecvStream rx;

  Status start(CollRun& run) {
    bytes = run.d->count * run.esize;
    return progress(run);
  }

  Status progress(CollRun& run) {
    while (step < run.size) {
      uint32_t p = pat::pair_partner(run.rank, run.size, step);
      uint64_t off = p * bytes;
      if (p == run.rank) {
        Status st = run.copy_uu(Buf::kDst, off, Buf::kSrc, off, bytes);
        if (failed(st)) return st;
        ++step;
        continue;
      }
      if (!started) {
        tx.init(run, p, Buf::kSrc, off, bytes);
        rx.init(run, p, Buf::kDst, off, bytes, false);
        started = true;
      }
      Status st = tx.progress(run);
      if (failed(st)) return st;
      bool aliased = run.same(Buf::kSrc, off, Buf::kDst, off);
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

const AlgInfo kAlltoallPairwise =
    make_alg<Pairwise>(1, "pairwise", "n steps of symmetric pairwise exchange");

}  // namespace ucc::dev

// Barrier by dissemination, of radix 2 or k.
//
// Radix 2: in round i (0 <= i < ceil(log2 n)) every rank signals rank + 2^i
// and waits for the signal of rank - 2^i. After the last round every rank
// has heard, directly or through others, from every rank. Signals are empty
// messages.
//
// Radix k (4 here, `kdissemination`): ceil(log_k n) rounds; in the round
// of distance d = k^i a rank signals rank + j d for j = 1..k-1 (those with
// j d < n), then waits for rank - j d's (patterns.h's kdissem_*). Half the
// rounds of radix 2 at k = 4, for three signals each way per round: ahead
// where a round's latency costs more than the engine's two more sends and
// takes (wide teams, docs/scale.md).
#include "device/coll/algorithms.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

template <uint32_t K>
struct Dissemination {
  uint32_t round = 0;
  uint32_t rounds = 0;
  uint64_t d = 1;       // this round's distance, K^round
  uint32_t npeers = 0;  // signals each way this round
  uint32_t sent = 0;
  uint32_t heard = 0;

  UCC_HOT Status start(CollRun& run) {
    rounds = pat::kdissem_rounds(run.size, K);
    npeers = rounds != 0 ? pat::kdissem_peers(run.size, K, d) : 0;
    return progress(run);
  }

  UCC_HOT Status progress(CollRun& run) {
    while (round < rounds) {
      for (; sent < npeers; ++sent) {
        const uint32_t to = pat::kdissem_to(run.rank, run.size, d, sent + 1);
        if (run.reserve(to) == nullptr) return Status::kInProgress;
        run.commit(to, 0);
      }
      for (; heard < npeers; ++heard) {
        const uint32_t from =
            pat::kdissem_from(run.rank, run.size, d, heard + 1);
        Status err = Status::kOk;
        if (run.peek(from, 0, &err) == nullptr)
          return failed(err) ? err : Status::kInProgress;
        run.release(from);
      }
      sent = heard = 0;
      d *= K;
      if (++round < rounds) npeers = pat::kdissem_peers(run.size, K, d);
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kBarrierDissemination = make_alg<Dissemination<2>>();
const AlgInfo kBarrierKDissemination = make_alg<Dissemination<4>>();

}  // namespace ucc::dev

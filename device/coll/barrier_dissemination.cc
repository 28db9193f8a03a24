// Barrier by dissemination.
//
// In round k (0 <= k < ceil(log2 n)) every rank signals rank + 2^k and waits
// for the signal of rank - 2^k. After the last round every rank has heard,
// directly or through others, from every rank. Signals are empty messages.
#include "device/coll/algorithms.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

struct Dissemination {
  uint32_t round = 0;
  uint32_t rounds = 0;
  bool sent = false;

  UCC_HOT Status start(CollRun& run) {
    rounds = pat::ceil_log2(run.size);
    return progress(run);
  }

  UCC_HOT Status progress(CollRun& run) {
    while (round < rounds) {
      if (!sent) {
        uint32_t to = pat::dissem_to(run.rank, run.size, round);
        if (run.reserve(to) == nullptr) return Status::kInProgress;
        run.commit(to, 0);
        sent = true;
      }
      uint32_t from = pat::dissem_from(run.rank, run.size, round);
      Status err = Status::kOk;
      if (run.peek(from, 0, &err) == nullptr)
        return failed(err) ? err : Status::kInProgress;
      run.release(from);
      sent = false;
      ++round;
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kBarrierDissemination = make_alg<Dissemination>();

}  // namespace ucc::dev

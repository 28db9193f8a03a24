// Barrier by fan-in to rank 0 and fan-out from it (a flat tree).
//
// Every other rank signals rank 0 and waits for its answer; rank 0 takes
// the n - 1 signals, then answers each. Two message steps whatever n, each
// rank waits once, and rank 0 leaves first and can send at once whatever
// comes next. On a host with more ranks than cores this beats
// dissemination, whose log2(n) rounds each need the peer to be scheduled;
// where every rank has a core, the root's serial 2(n - 1) messages limit
// it to small teams (selection: When::kLinear). Signals are empty messages.
#include "device/coll/algorithms.h"

namespace ucc::dev {
namespace {

struct Linear {
  uint32_t peer = 1;  // the root: next rank to hear from, then to answer
  bool in = false;    // fan-in done (the root) or our signal sent (others)

  Status start(CollRun& run) { return progress(run); }

  Status progress(CollRun& run) {
    Status err = Status::kOk;
    if (run.rank != 0) {
      if (!in) {
        if (run.reserve(0) == nullptr) return Status::kInProgress;
        run.commit(0, 0);
        in = true;
      }
      if (run.peek(0, 0, &err) == nullptr)
        return failed(err) ? err : Status::kInProgress;
      run.release(0);
      return Status::kOk;
    }
    for (; !in && peer < run.size; ++peer) {
      if (run.peek(peer, 0, &err) == nullptr)
        return failed(err) ? err : Status::kInProgress;
      run.release(peer);
    }
    if (!in) {
      in = true;
      peer = 1;
    }
    for (; peer < run.size; ++peer) {
      if (run.reserve(peer) == nullptr) return Status::kInProgress;
      run.commit(peer, 0);
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kBarrierLinear = make_alg<Linear>();

}  // namespace ucc::dev

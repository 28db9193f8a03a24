// Allreduce by recursive doubling: the latency algorithm. With a zero-byte
// vector the same schedule is a barrier.
//
// The result is built in place in `dst` (after copying `src` there). With p
// the largest power of two <= n and rem = n - p, the first 2*rem ranks pair
// up: each even one hands its vector to the odd one above it ("fold") and
// later receives the result from it. The remaining p ranks run log2(p)
// rounds; in round k each exchanges its whole vector with the rank whose
// virtual rank differs in bit k and combines what it receives. Every
// exchange is streamed in slot-sized messages, and a message is combined
// into `dst` only after our own copy of those bytes has left, so the
// exchange works in place.
#include "device/coll/algorithms.h"
#include "device/coll/streams.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

struct RecursiveDoubling {
  enum class Phase : uint8_t { kFold, kRounds, kUnfold, kDone };
  Phase phase = Phase::kFold;
  pat::RdRole role{};
  uint32_t p = 0;
  uint32_t mask = 1;
  uint64_t bytes = 0;
  bool started = false;  // streams of the current step initialised
  SendStream tx;
  RecvStream rx;

  UCC_HOT Status start(CollRun& run) {
    bytes = run.d->count * run.esize;
    Status st = run.copy_uu(Buf::kDst, 0, Buf::kSrc, 0, bytes);
    if (failed(st)) return st;
    role = pat::rd_role(run.rank, run.size);
    p = pat::pow2_floor(run.size);
    return progress(run);
  }

  // Runs the current step's streams; kOk once both are complete.
  Status step(CollRun& run, bool send, bool recv, bool red) {
    if (!started) {
      if (send) tx.init(run, tx.peer, Buf::kDst, 0, bytes);
      if (recv) rx.init(run, rx.peer, Buf::kDst, 0, bytes, red);
      started = true;
    }
    if (send) {
      Status st = tx.progress(run);
      if (failed(st)) return st;
    }
    if (recv) {
      Status st = rx.progress(run, send && red ? tx.done : UINT32_MAX);
      if (failed(st)) return st;
    }
    if ((send && !tx.finished()) || (recv && !rx.finished()))
      return Status::kInProgress;
    started = false;
    return Status::kOk;
  }

  UCC_HOT Status progress(CollRun& run) {
    Status st = Status::kOk;
    switch (phase) {
      case Phase::kFold:
        if (role.partner < run.size) {
          tx.peer = rx.peer = role.partner;
          // Folded ranks send now; their partners combine what arrives.
          st = role.folded ? step(run, true, false, false)
                           : step(run, false, true, true);
          if (st != Status::kOk) return st;
        }
        phase = role.folded ? Phase::kUnfold : Phase::kRounds;
        [[fallthrough]];
      case Phase::kRounds:
        while (!role.folded && mask < p) {
          tx.peer = rx.peer = pat::rd_real(role.vrank ^ mask, run.size);
          st = step(run, true, true, true);
          if (st != Status::kOk) return st;
          mask <<= 1;
        }
        if (!role.folded) {
          st = run.finish_avg(Buf::kDst, 0, run.d->count);
          if (failed(st)) return st;
        }
        phase = Phase::kUnfold;
        [[fallthrough]];
      case Phase::kUnfold:
        if (role.partner < run.size) {
          tx.peer = rx.peer = role.partner;
          st = role.folded ? step(run, false, true, false)
                           : step(run, true, false, false);
          if (st != Status::kOk) return st;
        }
        phase = Phase::kDone;
        [[fallthrough]];
      case Phase::kDone:
        break;
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kAllreduceRecursiveDoubling =
    without_blocks(make_alg<RecursiveDoubling>());
// Barrier descriptors carry count 0, so every exchange is one empty message.
// Unlike dissemination, each round only needs the two ranks of a pair to
// run, which suits ranks oversubscribed on few cores.
const AlgInfo kBarrierRecursiveDoubling = make_alg<RecursiveDoubling>();

}  // namespace ucc::dev

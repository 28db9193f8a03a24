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
//
// Of radix 4 (`knomial`): the same fold, then the virtual ranks' bits two
// at a time. In the round of bits (mask, 2 mask) the four ranks whose
// virtual ranks differ only there form a group; each sends its vector to
// the other three, then combines the four as
//
//   (x_q (op) x_q^1) (op) (x_o (op) x_o+1)      q: our place, o: the other
//   pair's first
//
// its own pair into dst, the other pair into the run's scratch, then the
// scratch into dst. Every rank of the group thus computes the same two
// pair results and combines them, each pair and the last step only in
// swapped order, so with the ops' commutativity all four hold the same
// bits (as the two of a recursive-doubling pair do). Half the rounds, for
// three messages each way per round: ahead where a round's latency costs
// more than two more sends and takes (wide teams, docs/scale.md). A
// power of p = 2^(2k+1) ends with one plain round. Each vector travels in
// one message, so the radix-4 rounds run only where it fits a slot and
// the scratch (wide teams have it); elsewhere every round is a pair's,
// the same on every rank (they see the same vector, slot and scratch).
#include "device/coll/algorithms.h"
#include "device/coll/streams.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

template <uint32_t Radix>
struct RecursiveDoubling {
  static_assert(Radix == 2 || Radix == 4);
  enum class Phase : uint8_t { kFold, kRounds, kUnfold, kDone };
  Phase phase = Phase::kFold;
  pat::RdRole role{};
  uint32_t p = 0;
  uint32_t mask = 1;
  uint64_t bytes = 0;
  bool started = false;  // streams of the current step initialised
  bool quads = false;    // radix-4 rounds where two bits are left
  uint32_t qsent = 0;    // group places sent to in this radix-4 round
  SendStream tx;
  RecvStream rx;

  UCC_HOT Status start(CollRun& run) {
    bytes = run.d->count * run.esize;
    Status st = run.copy_uu(Buf::kDst, 0, Buf::kSrc, 0, bytes);
    if (failed(st)) return st;
    role = pat::rd_role(run.rank, run.size);
    p = pat::pow2_floor(run.size);
    quads = Radix == 4 && bytes <= run.slot && run.scratch != nullptr &&
            bytes <= run.scratch_bytes;
    return progress(run);
  }

  // One radix-4 round over bits (mask, 2 mask): kOk once combined.
  Status quad(CollRun& run) {
    const uint32_t v = role.vrank;
    const uint32_t q = (v / mask) & 3, base = v - q * mask;
    auto peer = [&](uint32_t place) {
      return pat::rd_real(base + place * mask, run.size);
    };
    const uint32_t len = static_cast<uint32_t>(bytes);
    for (; qsent < 4; ++qsent) {
      if (qsent == q) continue;
      void* out = run.reserve(peer(qsent));
      if (out == nullptr) return Status::kInProgress;
      Status st = run.copy_in(out, Buf::kDst, 0, bytes);
      if (failed(st)) return st;
      run.commit(peer(qsent), len);
    }
    const void* in[4] = {};
    for (uint32_t j = 0; j < 4; ++j) {
      if (j == q) continue;
      Status err = Status::kOk;
      in[j] = run.peek(peer(j), len, &err);
      if (in[j] == nullptr) return failed(err) ? err : Status::kInProgress;
    }
    const uint32_t o = (q & 2) ^ 2;
    const uint64_t count = run.d->count;
    Status st = run.combine(run.scratch, in[o], in[o + 1], count);
    if (ok(st))
      st = run.reduce_out(Buf::kDst, 0, in[q ^ 1], Buf::kDst, 0, count);
    if (ok(st))
      st = run.reduce_out(Buf::kDst, 0, run.scratch, Buf::kDst, 0, count);
    if (failed(st)) return st;
    for (uint32_t j = 0; j < 4; ++j)
      if (j != q) run.release(peer(j));
    qsent = 0;
    return Status::kOk;
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
          if (quads && mask * 2 < p) {
            st = quad(run);
            if (st != Status::kOk) return st;
            mask <<= 2;
            continue;
          }
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
    without_blocks(make_alg<RecursiveDoubling<2>>());
const AlgInfo kAllreduceKnomial =
    without_blocks(make_alg<RecursiveDoubling<4>>());
// Barrier descriptors carry count 0, so every exchange is one empty message.
// Unlike dissemination, each round only needs the two ranks of a pair to
// run, which suits ranks oversubscribed on few cores.
const AlgInfo kBarrierRecursiveDoubling = make_alg<RecursiveDoubling<2>>();

}  // namespace ucc::dev

// Allreduce by Rabenseifner's algorithm: a reduce-scatter by recursive
// halving, then an allgather by recursive doubling. Recursive doubling
// moves the whole vector in each of its log2 n rounds; this moves half of
// it, then a quarter, and so on, twice: 2 log2 n rounds that carry
// 2 (p - 1) / p of the vector in all, as the ring does in its 2 (n - 1)
// steps. The bandwidth of the ring at the latency of the doubling, for
// the sizes in between on wide teams.
//
// The result is built in place in `dst` (after copying `src` there). Non
// powers of two fold as recursive doubling does (pat::rd_role): with p
// the largest power of two <= n and rem = n - p, each even rank of the
// first 2 rem hands its vector to the odd one above it and receives the
// result from it at the end; the other p ranks take virtual ranks
// 0..p-1. The vector is cut into p balanced blocks, block v for virtual
// rank v.
//
//   reduce-scatter  masks p/2, p/4, ..., 1. With mask m, virtual rank v
//                   holds the partial sums of the 2m blocks of its
//                   aligned window (v & ~(2m - 1)); it keeps the half of
//                   m blocks that contains v, sends the other half to its
//                   partner v ^ m and combines the partner's copy of its
//                   own half into dst. The two halves are disjoint, so
//                   the exchange needs no ordering between them. After
//                   mask 1, block v is complete (AVG divides it here).
//   allgather       masks 1, 2, ..., p/2: v sends its m complete blocks
//                   (v & ~(m - 1)) and receives the partner's m into the
//                   other half of the 2m window. Plain copies into bytes
//                   nothing else touches: they may go one-sided
//                   (streams.h).
//
// Every round's streams finish before the next round starts, so the two
// meetings of a pair (one per phase) never mix on its link. Each block is
// combined by one rank along one chain and copied from there, so every
// rank ends with the same bytes.
#include "device/coll/algorithms.h"
#include "device/coll/streams.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

struct Rabenseifner {
  enum class Phase : uint8_t { kFold, kScatter, kGather, kUnfold, kDone };
  Phase phase = Phase::kFold;
  pat::RdRole role{};
  uint32_t p = 0;
  uint32_t mask = 0;
  bool started = false;  // streams of the current step initialised
  SendStream tx;
  RecvStream rx;

  // Byte offset and length of the m virtual blocks from block a.
  void blocks(const CollRun& run, uint32_t a, uint32_t m, uint64_t* off,
              uint64_t* len) const {
    const uint64_t count = run.d->count;
    const uint64_t first = pat::block_offset(count, p, a);
    *off = first * run.esize;
    *len = (pat::block_offset(count, p, a + m) - first) * run.esize;
  }

  Status start(CollRun& run) {
    const uint64_t bytes = run.d->count * run.esize;
    Status st = run.copy_uu(Buf::kDst, 0, Buf::kSrc, 0, bytes);
    if (failed(st)) return st;
    role = pat::rd_role(run.rank, run.size);
    p = pat::pow2_floor(run.size);
    mask = p / 2;
    return progress(run);
  }

  // Runs one step: a send of [soff, soff + slen) and a receive into
  // [roff, roff + rlen) of dst, either of them absent (len ~0), the
  // received bytes combined (red) or copied, the copies one-sided where
  // both ends say zcopy. kOk once both are complete.
  Status step(CollRun& run, uint32_t peer, uint64_t soff, uint64_t slen,
              uint64_t roff, uint64_t rlen, bool red, bool zcopy) {
    const bool send = slen != UINT64_MAX, recv = rlen != UINT64_MAX;
    if (!started) {
      if (send) tx.init(run, peer, Buf::kDst, soff, slen, zcopy);
      if (recv) rx.init(run, peer, Buf::kDst, roff, rlen, red, zcopy);
      started = true;
    }
    if (send) {
      Status st = tx.progress(run);
      if (failed(st)) return st;
    }
    if (recv) {
      Status st = rx.progress(run);
      if (failed(st)) return st;
    }
    if ((send && !tx.finished()) || (recv && !rx.finished()))
      return Status::kInProgress;
    started = false;
    return Status::kOk;
  }

  // The whole vector between a folded rank and its partner: in (the
  // folded rank's vector, combined by the partner) or out (the result,
  // a plain copy at both ends).
  Status fold(CollRun& run, bool in) {
    constexpr uint64_t kNone = UINT64_MAX;
    const uint64_t bytes = run.d->count * run.esize;
    return role.folded == in
               ? step(run, role.partner, 0, bytes, 0, kNone, false, !in)
               : step(run, role.partner, 0, kNone, 0, bytes, in, !in);
  }

  UCC_HOT Status progress(CollRun& run) {
    const uint32_t v = role.vrank;
    Status st = Status::kOk;
    uint64_t soff = 0, slen = 0, roff = 0, rlen = 0;
    switch (phase) {
      case Phase::kFold:
        if (role.partner < run.size) {
          st = fold(run, true);
          if (st != Status::kOk) return st;
        }
        if (role.folded) {  // the result comes back at the end
          phase = Phase::kUnfold;
          return progress(run);
        }
        phase = Phase::kScatter;
        [[fallthrough]];
      case Phase::kScatter:
        while (mask != 0) {
          const uint32_t peer = v ^ mask, keep = v & ~(mask - 1);
          blocks(run, peer & ~(mask - 1), mask, &soff, &slen);
          blocks(run, keep, mask, &roff, &rlen);
          st = step(run, pat::rd_real(peer, run.size), soff, slen, roff, rlen,
                    true, false);
          if (st != Status::kOk) return st;
          mask >>= 1;
        }
        blocks(run, v, 1, &roff, &rlen);
        st = run.finish_avg(Buf::kDst, roff, rlen / run.esize);
        if (failed(st)) return st;
        mask = 1;
        phase = Phase::kGather;
        [[fallthrough]];
      case Phase::kGather:
        while (mask < p) {
          const uint32_t peer = v ^ mask;
          blocks(run, v & ~(mask - 1), mask, &soff, &slen);
          blocks(run, peer & ~(mask - 1), mask, &roff, &rlen);
          st = step(run, pat::rd_real(peer, run.size), soff, slen, roff, rlen,
                    false, true);
          if (st != Status::kOk) return st;
          mask <<= 1;
        }
        phase = Phase::kUnfold;
        [[fallthrough]];
      case Phase::kUnfold:
        if (role.partner < run.size) {
          st = fold(run, false);
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

const AlgInfo kAllreduceRabenseifner = without_blocks(make_alg<Rabenseifner>());

}  // namespace ucc::dev

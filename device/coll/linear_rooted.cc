// Gather(v) and scatter(v) by direct exchange with the root.
//
// Gather: every rank streams its block straight into the root's inbox; the
// root takes the blocks rank by rank and copies each into its place in dst
// (its own block by a local copy, skipped in place). Scatter is the mirror:
// the root streams each rank its block, rank by rank. Every inbox has
// several slots, so the ranks the root is not serving yet already have
// their first messages waiting. The block tables (blocks.h) make the
// regular and the v-variants one algorithm. Every stream is a plain copy
// into bytes nothing else touches: large blocks across hosts go
// one-sided where the link allows (streams.h).
#include "device/coll/algorithms.h"
#include "device/coll/streams.h"

namespace ucc::dev {
namespace {

template <bool kGather>
struct Linear {
  uint32_t peer = 0;  // next rank the root serves
  bool started = false;
  SendStream tx;
  RecvStream rx;

  Status start(CollRun& run) {
    const uint64_t es = run.esize;
    const uint32_t r = run.tab(run.rank);
    if (run.rank != run.d->root) {
      if (kGather)
        tx.init(run, run.d->root, Buf::kSrc, run.src_off[r] * es,
                run.src_cnt[r] * es, true);
      else
        rx.init(run, run.d->root, Buf::kDst, run.dst_off[r] * es,
                run.dst_cnt[r] * es, false, true);
      return progress(run);
    }
    // The root's own block: gather copies it into dst, scatter out of src;
    // in place it already is where it belongs.
    if (!(run.d->flags & off::kDescInPlace)) {
      uint64_t bytes = (kGather ? run.dst_cnt[r] : run.src_cnt[r]) * es;
      Status st = run.copy_uu(Buf::kDst, run.dst_off[r] * es, Buf::kSrc,
                              run.src_off[r] * es, bytes);
      if (failed(st)) return st;
    }
    return progress(run);
  }

  Status progress(CollRun& run) {
    const uint64_t es = run.esize;
    if (run.rank != run.d->root) {
      Status st = kGather ? tx.progress(run) : rx.progress(run);
      if (failed(st)) return st;
      return (kGather ? tx.finished() : rx.finished()) ? Status::kOk
                                                       : Status::kInProgress;
    }
    for (; peer < run.size; ++peer) {
      if (peer == run.rank) continue;
      if (!started) {
        const uint32_t t = run.tab(peer);
        if (kGather)
          rx.init(run, peer, Buf::kDst, run.dst_off[t] * es,
                  run.dst_cnt[t] * es, false, true);
        else
          tx.init(run, peer, Buf::kSrc, run.src_off[t] * es,
                  run.src_cnt[t] * es, true);
        started = true;
      }
      Status st = kGather ? rx.progress(run) : tx.progress(run);
      if (failed(st)) return st;
      if (!(kGather ? rx.finished() : tx.finished()))
        return Status::kInProgress;
      started = false;
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kGatherLinear = make_alg<Linear<true>>();
const AlgInfo kGathervLinear = make_alg<Linear<true>>();
const AlgInfo kScatterLinear = make_alg<Linear<false>>();
const AlgInfo kScattervLinear = make_alg<Linear<false>>();

}  // namespace ucc::dev

// Broadcast down a tree, pipelined in slot-sized segments; the tree is
// binomial (depth log2 n) or flat (the root sends to every rank itself).
//
// Words: "segment" is one message's worth of the vector (the fabric's slot
// size). The root sends each segment to its children in order; every other
// rank takes a segment from its parent, forwards it to each child, then
// copies it into its own buffer and releases it. Segments flow down the
// tree while later ones are still leaving the root, so a large broadcast
// costs about one vector time plus depth * segment time.
//
// The broadcast buffer is `src` on every rank (ucc.h's convention).
#include "device/coll/algorithms.h"
#include "device/coll/streams.h"
#include "device/coll/tree_walk.h"

namespace ucc::dev {
namespace {

template <typename Tree>
struct TreeBcast : TreeWalk {
  UCC_HOT Status start(CollRun& run) {
    place<Tree>(run);
    return progress(run);
  }

  // The root of a vector that fits one message, with one child, sends it
  // and is done (SendPlan).
  bool plan_sends(const CollRun& run, SendPlan* p) {
    place<Tree>(run);
    if (!root || nseg != 1 || nchildren != 1) return false;
    p->peer = run.team_rank(child_rank<Tree>(run, 0));
    p->len = msg_len(bytes, run.slot, 0);
    return true;
  }

  UCC_HOT Status progress(CollRun& run) {
    while (seg < nseg) {
      uint32_t len = msg_len(bytes, run.slot, seg);
      uint64_t off = uint64_t{seg} * run.slot;
      const void* in = nullptr;
      if (!root) {
        Status err = Status::kOk;
        in = run.peek(parent, len, &err);
        if (in == nullptr) return failed(err) ? err : Status::kInProgress;
      }
      for (; child < nchildren; ++child) {
        uint32_t c = child_rank<Tree>(run, child);
        void* out = run.reserve(c);
        if (out == nullptr) return Status::kInProgress;
        Status st = root ? run.copy_in(out, Buf::kSrc, off, len)
                         : (memcpy(out, in, len), Status::kOk);
        if (failed(st)) return st;
        run.commit(c, len);
      }
      if (!root) {
        Status st = run.copy_out(Buf::kSrc, off, in, len);
        if (failed(st)) return st;
        run.release(parent);
      }
      child = 0;
      ++seg;
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kBcastBinomial = make_alg_sends<TreeBcast<pat::BinomialTree>>();
const AlgInfo kBcastLinear = make_alg_sends<TreeBcast<pat::FlatTree>>();
// Fanout descriptors carry count 0: one empty message down each tree edge.
const AlgInfo kFanoutBinomial = make_alg<TreeBcast<pat::BinomialTree>>();

}  // namespace ucc::dev

// Reduce up a tree, pipelined in slot-sized segments; the tree is binomial
// (depth log2 n), 4-nomial (depth log4 n) or flat (every rank sends to the
// root, which combines).
//
// For each segment a non-root rank waits for all its children's messages,
// then reserves the message towards its parent and accumulates into it:
// its own input combined with its first child's segment, then each further
// child's segment in turn; then it commits the message. The root accumulates
// into its destination buffer instead and applies AVG's scaling once all
// children are in. Tree edges only point up, so bounded inboxes cannot
// deadlock.
//
// Input is `src` on every rank (the root's `src` is its `dst` when in place);
// only the root's `dst` is written.
#include "device/coll/algorithms.h"
#include "device/coll/streams.h"
#include "device/coll/tree_walk.h"

namespace ucc::dev {
namespace {

template <typename Tree>
struct TreeReduce : TreeWalk {
  UCC_HOT Status start(CollRun& run) {
    place<Tree>(run);
    return progress(run);
  }

  // A leaf with a vector that fits one message sends its input to its
  // parent and is done (SendPlan).
  bool plan_sends(const CollRun& run, SendPlan* p) {
    place<Tree>(run);
    if (root || nchildren != 0 || nseg != 1) return false;
    p->peer = run.team_rank(parent);
    p->len = msg_len(bytes, run.slot, 0);
    return true;
  }

  UCC_HOT Status progress(CollRun& run) {
    while (seg < nseg) {
      uint32_t len = msg_len(bytes, run.slot, seg);
      uint64_t off = uint64_t{seg} * run.slot;
      uint64_t cnt = len / run.esize;
      Status st = root ? root_segment(run, len, off, cnt)
                       : inner_segment(run, len, off, cnt);
      if (st != Status::kOk) return st;
      child = 0;
      ++seg;
    }
    return Status::kOk;
  }

  // The root folds each child's segment into dst as it arrives.
  Status root_segment(CollRun& run, uint32_t len, uint64_t off, uint64_t cnt) {
    if (nchildren == 0) {
      Status st = run.copy_uu(Buf::kDst, off, Buf::kSrc, off, len);
      if (failed(st)) return st;
    }
    for (; child < nchildren; ++child) {
      uint32_t c = child_rank<Tree>(run, child);
      Status err = Status::kOk;
      const void* in = run.peek(c, len, &err);
      if (in == nullptr) return failed(err) ? err : Status::kInProgress;
      Status st = run.reduce_out(Buf::kDst, off, in,
                                 child == 0 ? Buf::kSrc : Buf::kDst, off, cnt);
      if (failed(st)) return st;
      run.release(c);
    }
    return run.finish_avg(Buf::kDst, off, cnt);
  }

  // Others wait until every child's segment is there, then reserve the
  // message to the parent, combine into it and send it in one step: a
  // reservation is never held while waiting, so it cannot hold up other
  // collectives that send to the same parent.
  Status inner_segment(CollRun& run, uint32_t len, uint64_t off, uint64_t cnt) {
    for (uint32_t i = 0; i < nchildren; ++i) {
      Status err = Status::kOk;
      uint32_t c = child_rank<Tree>(run, i);
      if (run.peek(c, len, &err) == nullptr)
        return failed(err) ? err : Status::kInProgress;
    }
    void* acc = run.reserve(parent);
    if (acc == nullptr) return Status::kInProgress;
    Status st = Status::kOk;
    if (nchildren == 0) st = run.copy_in(acc, Buf::kSrc, off, len);
    for (uint32_t i = 0; i < nchildren && ok(st); ++i) {
      Status err = Status::kOk;
      uint32_t c = child_rank<Tree>(run, i);
      const void* in = run.peek(c, len, &err);
      st = i == 0 ? run.reduce_in(acc, in, Buf::kSrc, off, cnt)
                  : run.combine(acc, acc, in, cnt);
    }
    if (failed(st)) return st;
    run.commit(parent, len);
    for (uint32_t i = 0; i < nchildren; ++i)
      run.release(child_rank<Tree>(run, i));
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kReduceBinomial = make_alg_sends<TreeReduce<pat::BinomialTree>>();
const AlgInfo kReduceKnomial =
    make_alg_sends<TreeReduce<pat::KnomialTree<4>>>();
const AlgInfo kReduceLinear = make_alg_sends<TreeReduce<pat::FlatTree>>();
// Fanin descriptors carry count 0: one empty message up each tree edge.
const AlgInfo kFaninBinomial = make_alg<TreeReduce<pat::BinomialTree>>();

}  // namespace ucc::dev

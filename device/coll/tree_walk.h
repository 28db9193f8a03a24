// What the tree algorithms (bcast_tree.cc, reduce_tree.cc) share: this
// rank's place in the collective's tree, rooted at the descriptor's root,
// and how far its walk over the vector's segments (one message's worth
// each) has come. Tree is a shape of patterns.h (BinomialTree,
// KnomialTree, FlatTree).
#pragma once

#include <cstdint>
#include <type_traits>

#include "device/run/coll_run.h"
#include "device/run/patterns.h"

namespace ucc::dev {

struct TreeWalk {
  uint64_t bytes = 0;
  uint32_t nseg = 0;
  uint32_t seg = 0;    // current segment
  uint32_t child = 0;  // children done with the current segment
  uint32_t nchildren = 0;
  uint32_t parent = 0;  // a non-root's
  bool root = false;

  template <typename Tree>
  void place(const CollRun& run) {
    bytes = run.d->count * run.esize;
    nseg = pat::nmsgs(bytes, run.slot);
    root = run.rank == run.d->root;
    nchildren = Tree::nchildren(run.rank, run.d->root, run.size);
    if (!root) parent = Tree::parent(run.rank, run.d->root, run.size);
  }
  // The i-th child's rank.
  template <typename Tree>
  static uint32_t child_rank(const CollRun& run, uint32_t i) {
    return Tree::child(run.rank, run.d->root, run.size, i);
  }
  // Which child to send to k-th (bcast, fanout): on a binomial or
  // k-nomial tree the largest subtree first (the children are numbered
  // nearest, smallest subtree, first), so that each rank's sends, which leave
  // one after the other, start the deepest path at once: about log2 n times
  // (one send + latency) to the last rank, where smallest-first adds the sends
  // before it at every level, about log2(n)^2 / 2 sends in all (simulated,
  // 1,024 ranks at 0.2 us a send: docs/scale.md). A reduce takes its children
  // nearest first, as their data arrives.
  template <typename Tree>
  uint32_t send_index(uint32_t k) const {
    if constexpr (!std::is_same_v<Tree, pat::FlatTree>)
      return nchildren - 1 - k;
    return k;
  }
};

}  // namespace ucc::dev

// Broadcast down a tree, pipelined in slot-sized segments; the tree is
// binomial (depth log2 n), 4-nomial (depth log4 n, up to three children
// per digit place) or flat (the root sends to every rank itself).
//
// Words: "segment" is one message's worth of the vector (the fabric's slot
// size). The root sends each segment to its children in order; every other
// rank takes a segment from its parent, forwards it to each child, then
// copies it into its own buffer and releases it. Segments flow down the
// tree while later ones are still leaving the root, so a large broadcast
// costs about one vector time plus depth * segment time.
//
// One-sided edges. Where the link between a parent and a child agreed on
// one-sided messages (fabric.h's rma_min) and the vector is at least that
// long, that edge carries no slots. The vector goes in "chunks", each
// offered by the parent from its registered buffer and read by the child
// straight into its own (streams.h's offer, get and done, chunk by
// chunk), so no CPU copies a byte and each crosses the wire once:
//
//   chunk      max(4 rma_min, 4 KiB) bytes of that link; the last chunk
//              takes the remainder, so none is shorter than rma_min. A
//              tree of one level (flat, or binomial over two ranks)
//              forwards nothing: there the vector is one chunk, which
//              saves the offers and answers in between (2 hosts of 1
//              rank, TCP, 16 MiB: 1.13x Open MPI's time against 0.88x
//              in 1 MiB chunks; docs/perf/hosts.md)
//   offer      a parent offers chunk k to a child once it has chunk k
//              whole: the root at once, another rank once its own gets of
//              it completed (or its slot messages arrived); at most two
//              offers unanswered per child, so that the child reads chunk
//              k+1 while chunk k's answer travels back, and one until the
//              first is answered
//   forward    a rank reads chunk k+1 from its parent while it offers
//              chunk k to its children: chunks flow down the tree as
//              segments do
//
// A rank registers the whole vector once, as its children's source and its
// gets' destination; every offer points into that registration and the
// rank gives it back when the collective ends here. A rank that cannot
// register (pinned-memory limits) says so on an edge's first chunk (as
// parent: an offer with ok 0; as child: an answer of one byte), and that
// edge carries the whole vector in slots instead. Both ends of an edge
// know whether it is one-sided: the link's rma_min is agreed, the vector
// is the same length at both, and a parent of more than kMaxEdges
// children (a flat tree over a large team) keeps them all in slots.
//
// The broadcast buffer is `src` on every rank (ucc.h's convention).
#include <cstring>
#include <type_traits>

#include "device/coll/algorithms.h"
#include "device/coll/streams.h"
#include "device/coll/tree_walk.h"

namespace ucc::dev {
namespace {

inline constexpr uint32_t kMaxEdges = 16;
inline constexpr uint64_t kChunkFloor = 4096;

// The chunk length of the edge to or from `peer` for a vector of `bytes`,
// where the edge's parent has `fan_parent` children and its child
// `fan_child`, in a tree of one level or more (`one_level`); 0: the edge
// carries slots.
uint64_t edge_chunk(const CollRun& run, uint32_t peer, uint64_t bytes,
                    uint32_t fan_parent, uint32_t fan_child, bool one_level) {
  if (fan_parent > kMaxEdges || fan_child > kMaxEdges) return 0;
  const uint64_t min = run.rma_min(peer);
  if (min == 0 || bytes < min) return 0;
  if (one_level) return bytes;
  return 4 * min > kChunkFloor ? 4 * min : kChunkFloor;
}

// An edge's chunks: `len` bytes each, the last one the remainder too.
struct Chunks {
  uint64_t len;
  uint64_t bytes;
  uint32_t count() const {
    const uint64_t n = bytes / len;
    return n == 0 ? 1 : static_cast<uint32_t>(n);
  }
  uint64_t off(uint32_t k) const { return uint64_t{k} * len; }
  uint64_t end(uint32_t k) const {
    return k + 1 >= count() ? bytes : off(k + 1);
  }
  uint64_t size(uint32_t k) const { return end(k) - off(k); }
};

// How the edge from our parent is carried once one-sided was agreed.
enum class FromParent : uint8_t { kChunks, kRefuse, kSlots };

template <typename Tree>
struct TreeBcast : TreeWalk {
  // Some edge of ours is one-sided: the edge path (progress_edges) runs
  // instead of the segment loop.
  bool edges_path = false;
  bool reg_ok = false;
  FromParent from = FromParent::kSlots;
  bool offer_read = false;  // the next chunk's offer is taken, gets posting
  uint64_t have = 0;        // bytes [0, have) are here (non-root)
  uint64_t pchunk = 0;      // the parent edge's chunk length; 0: slots
  uint32_t posted = 0;      // chunks whose gets are all posted
  uint32_t got = 0;         // chunks complete and answered
  uint32_t msgs = 0;        // slot messages taken from the parent
  uint64_t raddr = 0;
  uint64_t at = 0;  // bytes of the current chunk whose gets are posted
  uint32_t rkey = 0;
  uint64_t ticket[2] = {};  // the last get of chunks posted - 1, posted - 2
  plat::RmaReg reg{};
  // Towards each child: chunk (0: slots), and messages or offers sent,
  // offers answered.
  struct Edge {
    uint64_t chunk;
    uint32_t sent;
    uint32_t acked;
  };
  Edge edge[kMaxEdges];

  UCC_HOT Status start(CollRun& run) {
    place<Tree>(run);
    Status st = plan_edges(run);
    if (st != Status::kOk) return st;
    return progress(run);
  }

  // The root of a vector that fits one message, with one child, sends it
  // and is done (SendPlan). (The engine takes the plan for a peer in
  // shared memory only, never one-sided: no edge to it is.)
  bool plan_sends(const CollRun& run, SendPlan* p) {
    place<Tree>(run);
    if (!root || nseg != 1 || nchildren != 1) return false;
    p->peer = run.team_rank(child_rank<Tree>(run, 0));
    p->len = msg_len(bytes, run.slot, 0);
    return true;
  }

  UCC_HOT Status progress(CollRun& run) {
    if (edges_path) return progress_edges(run);
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
        uint32_t c = child_rank<Tree>(run, send_index<Tree>(child));
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

 private:
  // Which of our edges are one-sided; where some are, the registration.
  Status plan_edges(const CollRun& run) {
    const uint32_t root_rank = run.d->root;
    // Only the root has children.
    const bool one_level = std::is_same_v<Tree, pat::FlatTree> || run.size <= 2;
    uint32_t access = 0;
    if (!root) {
      pchunk = edge_chunk(run, parent, bytes,
                          Tree::nchildren(parent, root_rank, run.size),
                          nchildren, one_level);
      if (pchunk != 0) {
        access |= plat::kRmaLocal;
        from = FromParent::kChunks;
      }
    }
    for (uint32_t i = 0; i < nchildren && nchildren <= kMaxEdges; ++i) {
      const uint32_t c = child_rank<Tree>(run, i);
      const uint64_t chunk =
          edge_chunk(run, c, bytes, nchildren,
                     Tree::nchildren(c, root_rank, run.size), one_level);
      edge[i] = Edge{chunk, 0, 0};
      if (chunk != 0) access |= plat::kRmaRemoteRead;
    }
    // (More than kMaxEdges children: every edge of ours carries slots.)
    if (access == 0) return Status::kOk;
    edges_path = true;
    // A registration the device refuses is no error: the edges say so and
    // carry slots.
    Status st = run.rma_reg(Buf::kSrc, 0, bytes, access, &reg);
    if (st == Status::kInvalidParam) return st;
    reg_ok = ok(st);
    return Status::kOk;
  }

  Status progress_edges(CollRun& run) {
    bool complete = true;
    if (!root) {
      Status st = receive(run);
      if (failed(st)) return st;
      complete = st == Status::kOk;
    }
    for (uint32_t k = 0; k < nchildren; ++k) {
      Status st = feed(run, send_index<Tree>(k));
      if (failed(st)) return st;
      if (st != Status::kOk) complete = false;
    }
    if (!complete) return Status::kInProgress;
    if (reg_ok) run.rma_dereg(reg);
    reg_ok = false;
    return Status::kOk;
  }

  // The bytes every child may be sent.
  uint64_t avail() const { return root ? bytes : have; }

  // --- from the parent ------------------------------------------------------
  Status receive(CollRun& run) {
    switch (from) {
      case FromParent::kSlots:
        return receive_slots(run);
      case FromParent::kRefuse: {
        const uint8_t no = 1;
        if (!run.send_done(parent, &no, 1)) return Status::kInProgress;
        from = FromParent::kSlots;
        return receive_slots(run);
      }
      case FromParent::kChunks:
        break;
    }
    const Chunks ch{pchunk, bytes};
    const uint32_t n = ch.count();
    // Completions in order, each answered; then the next chunks' gets, at
    // most two chunks in flight.
    while (got < posted && run.rma_done(parent) >= ticket[got & 1]) {
      if (!run.send_done(parent, nullptr, 0)) return Status::kInProgress;
      have = ch.end(got);
      ++got;
    }
    while (posted < n && posted - got < 2) {
      if (!offer_read) {
        RmaOffer o;
        Status took = take_offer(run, parent, &o);
        if (took != Status::kOk) return took;
        if (o.bytes != ch.size(posted) || (o.ok == 0 && posted != 0))
          return Status::kNoMessage;
        if (o.ok == 0) {  // the parent's slots follow
          from = FromParent::kSlots;
          return receive_slots(run);
        }
        if (!reg_ok) {  // first chunk (we never registered): refuse
          from = FromParent::kRefuse;
          return receive(run);
        }
        raddr = o.addr;
        rkey = o.rkey;
        at = 0;
        offer_read = true;
      }
      Status st = post_gets(
          run, parent, reg, reinterpret_cast<char*>(reg.addr) + ch.off(posted),
          raddr, rkey, ch.size(posted), &at, &ticket[posted & 1]);
      if (st != Status::kOk) return st;
      offer_read = false;
      ++posted;
    }
    return got == n ? Status::kOk : Status::kInProgress;
  }

  Status receive_slots(CollRun& run) {
    const uint32_t n = pat::nmsgs(bytes, run.slot);
    while (msgs < n) {
      const uint32_t len = msg_len(bytes, run.slot, msgs);
      Status err = Status::kOk;
      const void* in = run.peek(parent, len, &err);
      if (in == nullptr) return failed(err) ? err : Status::kInProgress;
      Status st = run.copy_out(Buf::kSrc, uint64_t{msgs} * run.slot, in, len);
      if (failed(st)) return st;
      run.release(parent);
      have += len;
      ++msgs;
    }
    return Status::kOk;
  }

  // --- to child i -----------------------------------------------------------
  Status feed(CollRun& run, uint32_t i) {
    Edge& e = edge[i];
    const uint32_t c = child_rank<Tree>(run, i);
    if (e.chunk == 0) return feed_slots(run, c, &e);
    const Chunks ch{e.chunk, bytes};
    const uint32_t n = ch.count();
    while (e.acked < e.sent) {
      uint32_t len = 0;
      if (run.peek_done(c, &len) == nullptr) break;
      // Only the first chunk's answer may refuse.
      if (len > 1 || (len == 1 && e.acked != 0)) return Status::kNoMessage;
      run.release_done(c);
      if (len == 1) {  // the child could not register: slots from byte 0
        e = Edge{0, 0, 0};
        return feed_slots(run, c, &e);
      }
      ++e.acked;
    }
    const uint32_t window = e.acked == 0 ? 1 : 2;
    while (e.sent < n && e.sent - e.acked < window &&
           ch.end(e.sent) <= avail()) {
      void* m = run.reserve(c);
      if (m == nullptr) return Status::kInProgress;
      const RmaOffer o{reg_ok ? reg.addr + ch.off(e.sent) : 0, ch.size(e.sent),
                       reg_ok ? reg.rkey : 0, reg_ok ? 1u : 0u};
      memcpy(m, &o, sizeof o);
      run.commit(c, sizeof o);
      if (!reg_ok) {  // we could not register: slots from byte 0
        e = Edge{0, 0, 0};
        return feed_slots(run, c, &e);
      }
      ++e.sent;
    }
    return e.acked == n ? Status::kOk : Status::kInProgress;
  }

  // Slot messages to child c, as far as the bytes here reach.
  Status feed_slots(CollRun& run, uint32_t c, Edge* e) {
    const uint32_t n = pat::nmsgs(bytes, run.slot);
    while (e->sent < n) {
      const uint32_t len = msg_len(bytes, run.slot, e->sent);
      const uint64_t off = uint64_t{e->sent} * run.slot;
      if (off + len > avail()) return Status::kInProgress;
      void* out = run.reserve(c);
      if (out == nullptr) return Status::kInProgress;
      Status st = run.copy_in(out, Buf::kSrc, off, len);
      if (failed(st)) return st;
      run.commit(c, len);
      ++e->sent;
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kBcastBinomial = make_alg_sends<TreeBcast<pat::BinomialTree>>();
const AlgInfo kBcastKnomial = make_alg_sends<TreeBcast<pat::KnomialTree<4>>>();
const AlgInfo kBcastLinear = make_alg_sends<TreeBcast<pat::FlatTree>>();
// Fanout descriptors carry count 0: one empty message down each tree edge.
const AlgInfo kFanoutBinomial = make_alg<TreeBcast<pat::BinomialTree>>();

}  // namespace ucc::dev

// Node-aware algorithms: the flat ones, run in phases over groups of the
// team drawn from its node map (device/run/links.h), so that messages
// between hosts go between one rank per host, and the rest stay in
// shared memory.
//
// Words used here:
//   node    the ranks on one host; its leader is its first rank (local
//           rank 0).
//   phase   one flat algorithm run over a group (a node, or the leaders)
//           with a descriptor of its own: the group's size and our place
//           in it, a root within it, a count, the buffers. Positions map
//           to team ranks through CollRun::set_map.
//
// Phases of one collective share its message key. They cannot take each
// other's messages: a phase receives from a peer only what that peer
// sends in the same phase, phases run in the same order on every rank,
// and a collective's messages from one peer arrive in the order sent.
//
// Scaling for AVG happens once, on each rank's own result, at the end:
// phases combine as sum.
#include "device/coll/algorithms.h"
#include "device/run/links.h"

namespace ucc::dev {
namespace {

struct Phase {
  off::CollDesc d;
  CollRun run;
  const AlgInfo* alg;
  bool started;
  alignas(64) unsigned char state[kFlatAlgState];

  // A phase of `outer` over `size` ranks, team rank of position i being
  // map[(i + rot) % size], where we are position `rank`.
  void init(const CollRun& outer, const AlgInfo* a, off::CollType coll,
            const uint32_t* map, uint32_t rot, uint32_t size, uint32_t rank,
            uint32_t root, const off::BufRef& src, const off::BufRef& dst) {
    d = *outer.d;
    d.coll = coll;
    d.root = root;
    d.src = src;
    d.dst = dst;
    run = outer;
    run.d = &d;
    run.set_map = map;
    run.map_rot = rot;
    run.size = size;
    run.rank = rank;
    run.avg = false;
    alg = a;
    started = false;
  }

  Status step() {
    if (!started) {
      started = true;
      return alg->start(state, run);
    }
    return alg->progress(state, run);
  }
};

// Where this rank sits: its node's ranks and its place among them.
struct Place {
  const NodeMap* nm;
  const uint32_t* node_ranks;  // the node's ranks, in team-rank order
  uint32_t node;
  uint32_t lrank;
  uint32_t nsize;

  void init(const CollRun& run, uint32_t team_rank) {
    nm = &run.port->links().nodes();
    node = nm->node[team_rank];
    lrank = nm->local_rank[team_rank];
    nsize = nm->node_size[node];
    node_ranks = nm->order + nm->node_first[node];
  }
  bool leader() const { return lrank == 0; }

  // Sets *ph up as a phase over our node's ranks, or over the leaders
  // (one per node); root: a position in that group.
  void in_node(const CollRun& run, Phase* ph, const AlgInfo* a, off::CollType c,
               uint32_t root, const off::BufRef& src,
               const off::BufRef& dst) const {
    ph->init(run, a, c, node_ranks, 0, nsize, lrank, root, src, dst);
  }
  void among_leaders(const CollRun& run, Phase* ph, const AlgInfo* a,
                     off::CollType c, uint32_t root, const off::BufRef& src,
                     const off::BufRef& dst) const {
    ph->init(run, a, c, nm->leaders, 0, nm->nnodes, node, root, src, dst);
  }
};

// Runs the phases a Plan lists, one after another. A plan's next() sets
// up the phase after `step` in *ph (returning true) or says there is
// none left for this rank (false); finish() runs once all are done.
template <typename Plan>
struct Phased {
  Plan plan;
  Phase ph;
  uint32_t step = 0;
  bool in_phase = false;

  Status start(CollRun& run) {
    plan.init(run);
    return progress(run);
  }

  Status progress(CollRun& run) {
    for (;;) {
      if (!in_phase) {
        if (!plan.next(run, step, &ph)) return plan.finish(run);
        in_phase = true;
      }
      Status st = ph.step();
      if (st != Status::kOk) return st;
      in_phase = false;
      ++step;
    }
  }
};

// --- barrier: fan-in to the leader, dissemination among leaders, fan-out

struct BarrierPlan {
  Place at;
  uint32_t phase = 0;  // the next of our phases: 0 fan-in, 1 leaders, 2 out

  void init(CollRun& run) { at.init(run, run.rank); }

  bool next(CollRun& run, uint32_t, Phase* ph) {
    const off::BufRef none = run.d->src;
    for (; phase < 3; ++phase) {
      if (phase == 0 && at.nsize > 1) {
        at.in_node(run, ph, &kFaninBinomial, off::CollType::kFanin, 0, none,
                   none);
      } else if (phase == 1 && at.leader() && at.nm->nnodes > 1) {
        at.among_leaders(run, ph, &kBarrierDissemination,
                         off::CollType::kBarrier, 0, none, none);
      } else if (phase == 2 && at.nsize > 1) {
        at.in_node(run, ph, &kFanoutBinomial, off::CollType::kFanout, 0, none,
                   none);
      } else {
        continue;
      }
      ++phase;
      return true;
    }
    return false;
  }
  Status finish(CollRun&) { return Status::kOk; }
};

// --- bcast: within the root's node from the root (when it is not the
// leader), among the leaders from the root's node, within every other
// node (and the root's, when the root leads it) from the leader. In
// place on every rank's buffer (src).

struct BcastPlan {
  Place at;
  uint32_t root_node = 0;
  uint32_t root_lrank = 0;
  uint32_t phase = 0;

  void init(CollRun& run) {
    at.init(run, run.rank);
    root_node = at.nm->node[run.d->root];
    root_lrank = at.nm->local_rank[run.d->root];
  }

  bool next(CollRun& run, uint32_t, Phase* ph) {
    const off::BufRef buf = run.d->src;
    const bool root_here = at.node == root_node;
    for (; phase < 3; ++phase) {
      if (phase == 0 && root_here && root_lrank != 0) {
        at.in_node(run, ph, &kBcastBinomial, off::CollType::kBcast, root_lrank,
                   buf, buf);
      } else if (phase == 1 && at.leader() && at.nm->nnodes > 1) {
        at.among_leaders(run, ph, &kBcastBinomial, off::CollType::kBcast,
                         root_node, buf, buf);
      } else if (phase == 2 && at.nsize > 1 &&
                 !(root_here && root_lrank != 0)) {
        at.in_node(run, ph, &kBcastBinomial, off::CollType::kBcast, 0, buf,
                   buf);
      } else {
        continue;
      }
      ++phase;
      return true;
    }
    return false;
  }
  Status finish(CollRun&) { return Status::kOk; }
};

// --- reduce: the binomial tree over the team's ranks node by node,
// rotated so that the root is position 0. A subtree covers consecutive
// positions, so all but the top levels of the tree stay within a node
// (all of them, with nodes of a power-of-two size and the root leading
// its node). Leaders cannot reduce into a buffer of their own first:
// only the root has a destination.

// A team rank's place in the node order (NodeMap::order).
uint32_t node_pos(const NodeMap& nm, uint32_t rank) {
  return nm.node_first[nm.node[rank]] + nm.local_rank[rank];
}

struct ReducePlan {
  uint32_t pos = 0;  // the root's place in the node order
  uint32_t me = 0;   // ours

  void init(CollRun& run) {
    const NodeMap& nm = run.port->links().nodes();
    pos = node_pos(nm, run.d->root);
    me = node_pos(nm, run.rank);
  }

  bool next(CollRun& run, uint32_t step, Phase* ph) {
    if (step != 0) return false;
    const NodeMap& nm = run.port->links().nodes();
    const uint32_t n = run.size;
    const uint32_t mine = me >= pos ? me - pos : me + n - pos;
    ph->init(run, &kReduceBinomial, off::CollType::kReduce, nm.order, pos, n,
             mine, 0, run.d->src, run.d->dst);
    ph->run.avg = run.avg;  // one phase: it scales at the root itself
    return true;
  }
  Status finish(CollRun&) { return Status::kOk; }
};

// --- allreduce: reduce to the leader (into its dst), an allreduce among
// the leaders in place, bcast of the leader's dst within the node. The
// leaders' allreduce is recursive doubling (hier), or Rabenseifner's
// (hier_rabenseifner, from UCC_ALLREDUCE_RABENSEIFNER_MIN) where there
// are kRabLeaders hosts or more: with fewer its extra steps cost more
// than the halved bytes save (simulated, 8 ranks per host, 8-32 KiB: 2-8%
// behind at 2 hosts, even at 4, 10-15% ahead at 8, 30-35% at 32 from
// 16 KiB; docs/scale.md).

inline constexpr uint32_t kRabLeaders = 4;

// The node-aware allreduce's phases over (src, dst), from *phase on: 0
// reduce to the leader, 1 the leaders' allreduce by `leaders`, 2 bcast
// from the leader. kPhase: the next one this rank runs is set up in *ph
// (*phase is past it); kAlone: phase 0 finds us alone on the node, where
// the caller starts the leaders' phase from its input itself; kDone: no
// phase is left for this rank.
enum class ArNext : uint8_t { kPhase, kAlone, kDone };

ArNext allreduce_next(const Place& at, const CollRun& run, uint32_t* phase,
                      Phase* ph, const AlgInfo* leaders, const off::BufRef& src,
                      const off::BufRef& dst) {
  for (; *phase < 3; ++*phase) {
    if (*phase == 0 && at.nsize == 1) {
      ++*phase;
      return ArNext::kAlone;
    }
    if (*phase == 0) {
      at.in_node(run, ph, &kReduceBinomial, off::CollType::kReduce, 0, src,
                 dst);
    } else if (*phase == 1 && at.leader() && at.nm->nnodes > 1) {
      at.among_leaders(run, ph, leaders, off::CollType::kAllreduce, 0, dst,
                       dst);
    } else if (*phase == 2 && at.nsize > 1) {
      at.in_node(run, ph, &kBcastBinomial, off::CollType::kBcast, 0, dst, dst);
    } else {
      continue;
    }
    ++*phase;
    return ArNext::kPhase;
  }
  return ArNext::kDone;
}

template <bool kRab>
struct AllreducePlan {
  Place at;
  uint32_t phase = 0;

  void init(CollRun& run) { at.init(run, run.rank); }

  bool next(CollRun& run, uint32_t, Phase* ph) {
    const bool rab = kRab && at.nm->nnodes >= kRabLeaders;
    const AlgInfo* leaders =
        rab ? &kAllreduceRabenseifner : &kAllreduceRecursiveDoubling;
    for (;;) {
      const ArNext a =
          allreduce_next(at, run, &phase, ph, leaders, run.d->src, run.d->dst);
      if (a != ArNext::kAlone) return a == ArNext::kPhase;
      // Alone on the node: the leaders' phase starts from our dst.
      failure =
          run.copy_uu(Buf::kDst, 0, Buf::kSrc, 0, run.d->count * run.esize);
      if (failed(failure)) return false;
    }
  }
  Status finish(CollRun& run) {
    if (failed(failure)) return failure;
    return run.finish_avg(Buf::kDst, 0, run.d->count);
  }

  Status failure = Status::kOk;
};

// --- the pipelined ring over the ranks host by host (allreduce at large
// sizes, allgather(v), reduce_scatter(v)): one phase over the whole team
// in node order, so that the ring crosses each host boundary once
// whatever the rank numbering (round-robin placement makes every hop of
// the ring in rank order cross hosts). Blocks stay where the team's
// layout puts them: the ring reads the team's block tables by team rank
// (CollRun::tab).

template <const AlgInfo* kRing>
struct NodeRingPlan {
  void init(CollRun&) {}
  bool next(CollRun& run, uint32_t step, Phase* ph) {
    if (step != 0) return false;
    const NodeMap& nm = run.port->links().nodes();
    ph->init(run, kRing, run.d->coll, nm.order, 0, run.size,
             node_pos(nm, run.rank), 0, run.d->src, run.d->dst);
    ph->run.avg = run.avg;  // one phase over the whole team
    return true;
  }
  Status finish(CollRun&) { return Status::kOk; }
};

// --- reduce_scatter (equal blocks): vectors of up to kRsByAllreduceMax
// bytes by the node-aware allreduce above, of the whole vector in the
// run's scratch (engine memory: CollRun::scratch), each rank then keeping
// its block; larger ones by the ring host by host. The ring's n - 1
// lockstep steps each wait on a neighbour, where the allreduce takes
// three phases (reduce within the host, recursive doubling among the
// hosts' leaders, bcast within the host), and with more ranks than cores
// each wait can be a trip through the scheduler. Across 2 hosts x 2 ranks
// and 4 x 2 on 2 cores it was 1.3-1.9x faster than the ring up to 16 KiB
// vectors, 1.0-1.25x at 32 KiB, behind from 64 KiB (docs/perf/hosts.md,
// "Reduce_scatter of small vectors by the node-aware allreduce"). Every rank
// decides alike: the vector's size and the scratch's are the same everywhere.

inline constexpr uint64_t kRsByAllreduceMax = kSmallScratch;

struct ReduceScatterPlan {
  Place at;
  NodeRingPlan<&kReduceScatterRing> ring;
  bool small = false;
  uint32_t phase = 0;
  uint64_t total = 0;  // the whole vector, elements
  Status failure = Status::kOk;

  void init(CollRun& run) {
    at.init(run, run.rank);
    ring.init(run);
    total = 0;
    for (uint32_t p = 0; p < run.size; ++p) {
      const uint64_t end = run.src_off[p] + run.src_cnt[p];
      if (end > total) total = end;
    }
    const uint64_t bytes = total * run.esize;
    small =
        bytes != 0 && bytes <= kRsByAllreduceMax && bytes <= run.scratch_bytes;
  }

  // Phase ph over the scratch's vector: dst there, and src too (`both`).
  void on_scratch(const CollRun& run, Phase* ph, bool both) const {
    ph->d.count = total;
    ph->run.cache = run.scratch;
    ph->run.cache_bytes = static_cast<uint32_t>(total * run.esize);
    ph->run.cache_src = both;
  }

  bool next(CollRun& run, uint32_t step, Phase* ph) {
    if (!small) return ring.next(run, step, ph);
    // Every phase's dst is the scratch (on_scratch); the reduce reads the
    // user's input, the later phases the scratch alone.
    for (;;) {
      const ArNext a =
          allreduce_next(at, run, &phase, ph, &kAllreduceRecursiveDoubling,
                         run.d->src, run.d->src);
      if (a == ArNext::kPhase) {
        on_scratch(run, ph, phase > 1);
        return true;
      }
      if (a == ArNext::kDone) return false;
      // Alone on the node: the leaders' phase starts from our input.
      failure = run.copy_in(run.scratch, Buf::kSrc, 0, total * run.esize);
      if (failed(failure)) return false;
    }
  }

  Status finish(CollRun& run) {
    if (!small) return ring.finish(run);
    if (failed(failure)) return failure;
    const uint32_t me = run.rank;
    const uint64_t es = run.esize;
    const uint64_t cnt = run.src_cnt[me];
    const auto* mine =
        static_cast<const char*>(run.scratch) + run.src_off[me] * es;
    Status st = run.copy_out(Buf::kDst, run.dst_off[me] * es, mine, cnt * es);
    if (failed(st)) return st;
    return run.finish_avg(Buf::kDst, run.dst_off[me] * es, cnt);
  }
};

template <typename Plan>
constexpr AlgInfo make_hier() {
  return AlgInfo{&alg_start<Phased<Plan>, kMaxAlgState>,
                 &alg_progress<Phased<Plan>>, false, true};
}

}  // namespace

const AlgInfo kBarrierHier = make_hier<BarrierPlan>();
const AlgInfo kBcastHier = make_hier<BcastPlan>();
const AlgInfo kReduceHier = make_hier<ReducePlan>();
const AlgInfo kAllreduceHier = make_hier<AllreducePlan<false>>();
const AlgInfo kAllreduceHierRabenseifner = make_hier<AllreducePlan<true>>();
const AlgInfo kAllreduceHierRing = make_hier<NodeRingPlan<&kAllreduceRing>>();
const AlgInfo kAllgatherHier = make_hier<NodeRingPlan<&kAllgatherRing>>();
const AlgInfo kAllgathervHier = make_hier<NodeRingPlan<&kAllgatherRing>>();
const AlgInfo kReduceScatterHier = make_hier<ReduceScatterPlan>();
const AlgInfo kReduceScattervHier =
    make_hier<NodeRingPlan<&kReduceScattervRing>>();

}  // namespace ucc::dev

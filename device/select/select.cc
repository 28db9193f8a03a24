#include "device/select/select.h"

#include "device/coll/algorithms.h"
#include "offload/coll_traits.h"

namespace ucc::dev {
namespace {

using off::CollType;

// --- what this engine implements, per collective, by catalogue id ---------

constexpr uint8_t kIds = 8;  // ids 1..kIds
using ById = const AlgInfo* const[kIds + 1];

// Indexed by CollType, then by id (entry 0 unused).
constexpr ById kById[] = {
    {nullptr, &kBarrierDissemination, &kBarrierRecursiveDoubling,
     &kBarrierHier, &kBarrierLinear},
    {nullptr, &kBcastBinomial, &kBcastSingleCopy, &kBcastHier, &kBcastLinear},
    {nullptr, &kReduceBinomial, &kReduceHier, &kReduceLinear},
    {nullptr, &kAllreduceRecursiveDoubling, &kAllreduceRing, &kAllreduceHier,
     &kAllreduceHierRing},
    {nullptr, &kAllgatherRing, &kAllgatherSingleCopy, &kAllgatherHier,
     &kAllgatherLinear},
    {nullptr, &kAlltoallPairwise, &kAlltoallSingleCopy, &kAlltoallLinear},
    {nullptr, &kReduceScatterRing, &kReduceScatterHier,
     &kReduceScatterLinear},
    {nullptr, &kGatherLinear},
    {nullptr, &kGathervLinear},
    {nullptr, &kScatterLinear},
    {nullptr, &kScattervLinear},
    {nullptr, &kAllgathervPairwise, &kAllgathervHier, &kAllgathervLinear},
    {nullptr, &kAlltoallvPairwise, &kAlltoallvLinear},
    {nullptr, &kReduceScattervRing, &kReduceScattervHier,
     &kReduceScattervLinear},
    {nullptr, &kFaninBinomial},
    {nullptr, &kFanoutBinomial},
};
static_assert(sizeof(kById) / sizeof(kById[0]) ==
              static_cast<size_t>(CollType::kCount));

// --- the rules ---------------------------------------------------------------
// Per collective, in order (first match wins); a collective without a
// matching rule runs its first implementation (id 1). A rule starts at a
// size the configuration gives.

enum class From : uint8_t {
  kZero,
  kAllreduceRingMin,
  kCmaMin,
  kLinearMax,
  kAlltoallLinearMax
};

struct Rule {
  CollType coll;
  From from;
  off::When when;
  uint8_t alg;
};

// Node-aware algorithms where the team's shape calls for them (several
// hosts, some with several ranks): at every size for the trees and the
// rings; for allreduce the leaders' algorithm below the ring's threshold
// and the ring in node order above it (it moves the data through every
// rank, where the leaders' one moves it all through one rank per host).
// Alltoall(v) has none: its pairwise exchange sends every block straight
// to its destination, over the network exactly once.
//
// Flat trees (linear) for small teams on one host, below
// UCC_LINEAR_MAX bytes: each rank waits for one message from the root or
// the root for one from each rank, so no rank waits on a peer that waits
// in turn; with more ranks than cores every such wait is a trip through
// the scheduler (docs/perf/small_teams.md). Binomial from UCC_LINEAR_MAX on,
// where the root's n - 1 copies would cost more than the tree's depth.
// The barrier's flat tree only where the team is crowded: with a core
// per rank, the root's 2 (n - 1) messages in a row cost more than
// dissemination's log2 n rounds, which all ranks run at once (measured
// with a core per rank, docs/perf/small_teams.md).
// Allgather, alltoall and reduce_scatter likewise below UCC_LINEAR_MAX
// bytes per block: the linear exchange sends to every rank at once
// instead of the ring's and the pairwise exchange's n - 1 lockstep steps.
// Alltoall below UCC_ALLTOALL_LINEAR_MAX instead: the pairwise exchange
// stays behind the linear one to larger blocks than the rings do
// (docs/perf/small_teams.md).
// Allgatherv and reduce_scatterv too, by their largest block (every member
// passes the same count array: off::select_bytes). Alltoallv at every
// size: each rank's arrays are its own, so no rule by size could be
// evaluated alike, and the linear exchange is 2-3x faster than the
// pairwise one up to 32 KiB blocks and about as fast above (at 8 ranks on
// 2 cores, from 4 MiB blocks, 0.92-1.15x its time by spell;
// docs/perf/small_teams.md).
constexpr Rule kRules[] = {
    {CollType::kBarrier, From::kZero, off::When::kNodeAware, 3},
    {CollType::kBarrier, From::kZero, off::When::kCrowded, 4},
    {CollType::kBcast, From::kCmaMin, off::When::kSingleCopy, 2},
    {CollType::kBcast, From::kZero, off::When::kNodeAware, 3},
    {CollType::kBcast, From::kLinearMax, off::When::kAlways, 1},
    {CollType::kBcast, From::kZero, off::When::kLinear, 4},
    {CollType::kReduce, From::kZero, off::When::kNodeAware, 2},
    {CollType::kReduce, From::kLinearMax, off::When::kAlways, 1},
    {CollType::kReduce, From::kZero, off::When::kLinear, 3},
    {CollType::kAllgather, From::kCmaMin, off::When::kSingleCopy, 2},
    {CollType::kAllgather, From::kZero, off::When::kNodeAware, 3},
    {CollType::kAllgather, From::kLinearMax, off::When::kAlways, 1},
    {CollType::kAllgather, From::kZero, off::When::kLinear, 4},
    {CollType::kAlltoall, From::kCmaMin, off::When::kSingleCopy, 2},
    {CollType::kAlltoall, From::kAlltoallLinearMax, off::When::kAlways, 1},
    {CollType::kAlltoall, From::kZero, off::When::kLinear, 3},
    {CollType::kAllreduce, From::kAllreduceRingMin, off::When::kNodeAware, 4},
    {CollType::kAllreduce, From::kAllreduceRingMin, off::When::kAlways, 2},
    {CollType::kAllreduce, From::kZero, off::When::kNodeAware, 3},
    {CollType::kReduceScatter, From::kZero, off::When::kNodeAware, 2},
    {CollType::kReduceScatter, From::kLinearMax, off::When::kAlways, 1},
    {CollType::kReduceScatter, From::kZero, off::When::kLinear, 3},
    {CollType::kAllgatherv, From::kZero, off::When::kNodeAware, 2},
    {CollType::kAllgatherv, From::kLinearMax, off::When::kAlways, 1},
    {CollType::kAllgatherv, From::kZero, off::When::kLinear, 3},
    {CollType::kAlltoallv, From::kZero, off::When::kLinear, 2},
    {CollType::kReduceScatterv, From::kZero, off::When::kNodeAware, 2},
    {CollType::kReduceScatterv, From::kLinearMax, off::When::kAlways, 1},
    {CollType::kReduceScatterv, From::kZero, off::When::kLinear, 3},
};

uint64_t threshold(const off::EngineConfig& cfg, From f) {
  switch (f) {
    case From::kZero:
      return 0;
    case From::kCmaMin:
      return cfg.cma_min;
    case From::kAllreduceRingMin:
      return cfg.allreduce_ring_min;
    case From::kLinearMax:
      return cfg.linear_max;
    case From::kAlltoallLinearMax:
      return cfg.alltoall_linear_max;
  }
  return 0;
}

// Whether single copy can run d: the engine allows it, every rank is on
// this host (it reads their memory), both buffers are host memory, and
// (alltoall) not in place, where the block a peer reads from us is where
// we receive its block.
bool single_copy_ok(const off::EngineCaps& caps, const off::CollDesc& d,
                    bool one_node) {
  return caps.single_copy != 0 && one_node && d.src.mem_type == 0 &&
         d.dst.mem_type == 0 &&
         !(d.coll == CollType::kAlltoall && (d.flags & off::kDescInPlace));
}

}  // namespace

const AlgInfo* find_impl(CollType coll, uint8_t id) {
  const auto c = static_cast<size_t>(coll);
  return c < static_cast<size_t>(CollType::kCount) && id <= kIds ? kById[c][id]
                                                                 : nullptr;
}

void fill_select_caps(const off::EngineConfig& cfg, off::EngineCaps* caps) {
  caps->single_copy = cfg.cma_min != 0 ? 1 : 0;
  caps->linear_ranks = static_cast<uint8_t>(
      cfg.linear_ranks < off::kMaxLinearRanks ? cfg.linear_ranks
                                              : off::kMaxLinearRanks);
  caps->cpus = static_cast<uint16_t>(
      cfg.cpus < off::kMaxHostCpus ? cfg.cpus : off::kMaxHostCpus);
  for (size_t c = 0; c < off::kNumColls; ++c) {
    off::CollCaps& cc = caps->coll[c];
    cc = off::CollCaps{};
    for (uint8_t id = 1; id <= kIds; ++id) {
      const AlgInfo* a = kById[c][id];
      if (a == nullptr) continue;
      cc.algs |= static_cast<uint8_t>(1u << (id - 1));
      if (a->single_copy)
        cc.single_copy |= static_cast<uint8_t>(1u << (id - 1));
      if (a->node_aware)
        cc.node_aware |= static_cast<uint8_t>(1u << (id - 1));
      if (cc.def_alg == 0) cc.def_alg = id;
    }
    cc.forced = cfg.forced[c];
    for (const Rule& r : kRules) {
      if (static_cast<size_t>(r.coll) != c || cc.nrules == off::kMaxRules)
        continue;
      // A single-copy rule where single copy never runs is left out.
      if (r.when == off::When::kSingleCopy && caps->single_copy == 0) continue;
      cc.rules[cc.nrules++] =
          off::SelectRule{threshold(cfg, r.from), r.alg, r.when, {}};
    }
  }
}

const AlgInfo* select_alg(const off::EngineCaps& caps, const off::CollDesc& d,
                          uint64_t bytes, bool one_node, bool hierarchical,
                          uint32_t team_size, uint8_t* id) {
  const auto c = static_cast<size_t>(d.coll);
  if (c >= off::kNumColls) return nullptr;
  const bool whole = d.set_size == 0;
  const off::SelectInput in{
      d.alg,        bytes,
      single_copy_ok(caps, d, one_node), whole,
      whole && hierarchical,
      whole && off::linear_team(caps, team_size, one_node),
      whole && off::crowded_team(caps, team_size, one_node)};
  *id = off::select_alg_id(caps.coll[c], in);
  return find_impl(d.coll, *id);
}

}  // namespace ucc::dev

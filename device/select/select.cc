#include "device/select/select.h"

#include "device/coll/algorithms.h"
#include "offload/coll_traits.h"

namespace ucc::dev {
namespace {

using off::CollType;

// --- the rows
// ------------------------------------------------------------------
// offload/algorithms.def, read for the implementation and the rule.

// A rule starts at a size the configuration gives; BelowLinearMax,
// BelowWideMax: from zero up to, not including, UCC_LINEAR_MAX or
// UCC_WIDE_MAX.
enum class From : uint8_t {
  kZero,
  kAllreduceRingMin,
  kAllreduceRabMin,
  kCmaMin,
  kLinearMax,
  kAlltoallLinearMax,
  kBelowLinearMax,
  kBelowWideMax,
  kRabMinToPerRank,
  kRabMinToFoldPerRank,
  kBelowAlltoallBruckMax,
  kBelowKnomialMax,
  kBelowAlltoallHierMax,
  kBelowAllgatherHierMax,
  kBelowAllgatherHierBruckMax,
  kFitsScratch
};

// off::When, or no rule at all.
enum class Cond : uint8_t {
  kNever,
  kAlways,
  kSingleCopy,
  kNodeAware,
  kLinear,
  kCrowded,
  kWide,
  kWidePow2,
  kWideFlat,
  kNarrowNodeAware,
  kWideNodeAware
};

struct Row {
  CollType coll;
  uint8_t id;
  const AlgInfo* impl;  // nullptr for a further rule (UCC_RULE)
  From from;
  Cond cond;
  bool rule_only;  // UCC_RULE: the algorithm's row is elsewhere
};

// Per collective, in the order its rules are tried (first match wins); a
// collective without a matching rule runs its first implementation (id 1).
//
// Node-aware algorithms where the team's shape calls for them (several
// hosts, some with several ranks): at every size for the trees and the
// rings; for allreduce the leaders' algorithm below the ring's threshold
// and the ring in node order above it (it moves the data through every
// rank, where the leaders' one moves it all through one rank per host).
// Alltoall's below UCC_ALLTOALL_HIER_MAX bytes per block: each host's
// blocks packed into one stream to its rank of our place, which hands
// them on (device/coll/hier_exchange.cc), where the pairwise exchange
// takes a network step per remote rank; from 256 KiB per block the
// hand-on's copy costs more than the messages saved (2 hosts x 2 ranks,
// docs/perf/hosts.md). Alltoallv has none. Allgather's likewise below
// UCC_ALLGATHER_HIER_MAX, before the node-aware ring, on teams narrower
// than UCC_WIDE_RANKS (When::kNarrowNodeAware): two rounds of packed
// streams where the ring takes n - 1 lockstep steps (2 hosts x 2 ranks:
// ahead up to 1 MiB blocks); on wide teams the ring's links all stay
// busy, and it passes the exchange between 512 B and 4 KiB per block
// (256 simulated ranks of 8 per host, docs/scale.md). There, below
// UCC_ALLGATHER_HIER_BRUCK_MAX (When::kWideNodeAware), Bruck's algorithm
// among each place's ranks of the hosts and the exchange within hosts
// (hier_bruck): log2(hosts) rounds where the ring takes n - 1 steps, each
// block over the network once per host where flat Bruck's sends it to
// every rank; ahead of both up to 4 KiB per block, behind the ring from
// 8 KiB (256 simulated ranks of 8 per host, docs/scale.md).
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
//
// The barrier's dissemination of radix 4 on wide teams, before the
// node-aware barrier: half the rounds for three signals each way per
// round; ahead at every wide team simulated, 16 to 4,096 ranks, one or 8
// per host (4,096: 11.2 against 15.2 us flat, 10.6 against 12.3 for the
// node-aware one at 8 per host; docs/scale.md).
//
// 4-nomial trees for bcast and reduce on wide teams (When::kWide), below
// UCC_KNOMIAL_MAX bytes, before the node-aware trees: depth log4 n
// instead of log2 n, for up to three sends per digit place. With the
// engine's sends costing 0.2 us each (simulated on the HDR fat tree,
// docs/scale.md), one rank per host, it is ahead up to 16 KiB at 256 and
// 1,024 ranks (8 B at 1,024: 6.8 against 9.4 us), behind from 32 KiB,
// where the root's three times as many sends of each segment cost more
// than the rounds saved. With 8 ranks per host it is ahead of the
// node-aware trees up to 4 KiB at 64 to 4,096 ranks (4,096: bcast 8 B
// 6.9 against 9.0 us): its lowest digit places fall within a host where
// ranks are numbered host by host, and the leaders' binomial tree among
// the hosts is the deeper one.
//
// Bruck's allgather on wide teams (UCC_WIDE_RANKS ranks or more): at
// scale each of the ring's n - 1 steps (n / ppn - 1 for the node-aware
// one) is a network round trip, where Bruck's ceil(log2 n) rounds carry
// the same bytes. Below UCC_WIDE_MAX bytes per block on every wide team,
// before the node-aware ring; from there up to UCC_LINEAR_MAX on flat
// ones only. With several ranks per host every rank takes all n - 1
// blocks over the host's link, where the node-aware ring takes them over
// it once per host: from a few hundred bytes per block that is the
// larger cost (docs/scale.md: 256 ranks one per host, 32 B per rank, 5.9
// against the ring's 109 us; 8 per host, 4 KiB per rank, Bruck 432
// against the node-aware ring's 66 us).
//
// Bruck's alltoall on wide teams likewise: below UCC_WIDE_MAX bytes per
// block on every wide team, below UCC_ALLTOALL_BRUCK_MAX on flat ones
// (When::kWideFlat: alltoall has no node-aware row to stop at), before
// the pairwise exchange. Its log2 n rounds move about n / 2 blocks each,
// log2 n / 2 times the pairwise exchange's bytes, so it wins while the
// pairwise exchange's n - 1 steps are latency-bound and the network
// carries the bytes: one rank per host up to 4-8 KiB per block on a fat
// tree, 0.25-1 KiB on a dragonfly's global links; 0.5-2 KiB with 8
// ranks per host sharing the host's link (docs/scale.md). Never in place
// (select_alg).
//
// Allreduce on wide teams without the node-aware shape (one rank per
// host, at scale): the radix-4 recursive exchange (`knomial`) below
// UCC_WIDE_MAX, half recursive doubling's rounds for three messages each
// way per round (1,024 simulated ranks, 0.2 us per message: 8 B 9.6
// against 11.2 us; even at 2 KiB, behind at 4 KiB; docs/scale.md); with 8
// ranks per host no better than the node-aware one, which stays there.
// Recursive doubling from there below UCC_ALLREDUCE_RABENSEIFNER_MIN,
// Rabenseifner's algorithm from there up to UCC_ALLREDUCE_RING_PER_RANK
// bytes per rank (a power of two ranks) or UCC_ALLREDUCE_RING_PER_RANK_FOLD
// (other sizes), then the ring. The ring's 2 (n - 1) steps each cost a
// network latency, recursive doubling's log2 n rounds move the whole
// vector each, Rabenseifner's 2 log2 n move the ring's bytes plus, off
// powers of two, two whole vectors to fold ranks in and out: its
// crossover with the ring grows with n (simulated, one rank per host on
// the HDR fat tree: about 1.5 MiB at 64 ranks and past 4 MiB at 256;
// 300 KiB at 96 and 700 KiB at 192; docs/scale.md). The node-aware
// algorithms come first on hierarchical teams: the leaders' Rabenseifner's
// (hier_rabenseifner, with 4 hosts or more; fewer run recursive doubling)
// from UCC_ALLREDUCE_RABENSEIFNER_MIN up to the node-aware ring's
// threshold, the leaders' recursive doubling below.
constexpr Row kRows[] = {
#define UCC_ALG(coll, id, name, desc, impl, from, when) \
  {CollType::k##coll, id, &impl, From::k##from, Cond::k##when, false},
#define UCC_RULE(coll, id, from, when) \
  {CollType::k##coll, id, nullptr, From::k##from, Cond::k##when, true},
#include "offload/algorithms.def"
};

// Ids run 1..kIds per collective (offload's catalogue checks that they
// are dense).
constexpr uint8_t kIds = off::kMaxAlgs;
using ById = const AlgInfo * [kIds + 1];

// The implementations by collective and id (entry 0 unused).
struct ByCollId {
  ById by[static_cast<size_t>(CollType::kCount)];
};

constexpr ByCollId make_by_id() {
  ByCollId t{};
  // (Whether a row is a further rule, not whether its pointer is null:
  // an extern object's address is no constant to compare under every
  // compiler mode.)
  for (const Row& r : kRows)
    if (!r.rule_only) t.by[static_cast<size_t>(r.coll)][r.id] = r.impl;
  return t;
}
constexpr ByCollId kById = make_by_id();

// Every rule of a collective fits its capability record.
constexpr bool rules_fit() {
  for (size_t c = 0; c < static_cast<size_t>(CollType::kCount); ++c) {
    uint32_t n = 0;
    for (const Row& r : kRows)
      n += static_cast<size_t>(r.coll) == c && r.cond != Cond::kNever;
    if (n > off::kMaxRules) return false;
  }
  return true;
}
static_assert(rules_fit(), "algorithms.def: more rules than off::kMaxRules");

constexpr off::When when_of(Cond c) {
  switch (c) {
    case Cond::kSingleCopy:
      return off::When::kSingleCopy;
    case Cond::kNodeAware:
      return off::When::kNodeAware;
    case Cond::kLinear:
      return off::When::kLinear;
    case Cond::kCrowded:
      return off::When::kCrowded;
    case Cond::kWide:
      return off::When::kWide;
    case Cond::kWidePow2:
      return off::When::kWidePow2;
    case Cond::kWideFlat:
      return off::When::kWideFlat;
    case Cond::kNarrowNodeAware:
      return off::When::kNarrowNodeAware;
    case Cond::kWideNodeAware:
      return off::When::kWideNodeAware;
    case Cond::kNever:
    case Cond::kAlways:
      break;
  }
  return off::When::kAlways;
}

uint64_t threshold(const off::EngineConfig& cfg, From f) {
  switch (f) {
    case From::kZero:
      return 0;
    case From::kCmaMin:
      return cfg.cma_min;
    case From::kAllreduceRingMin:
      return cfg.allreduce_ring_min;
    case From::kAllreduceRabMin:
      return cfg.allreduce_rab_min;
    case From::kLinearMax:
      return cfg.linear_max;
    case From::kAlltoallLinearMax:
      return cfg.alltoall_linear_max;
    case From::kRabMinToPerRank:
    case From::kRabMinToFoldPerRank:
      return cfg.allreduce_rab_min;
    case From::kBelowLinearMax:
    case From::kBelowWideMax:
    case From::kBelowAlltoallBruckMax:
    case From::kBelowKnomialMax:
    case From::kBelowAlltoallHierMax:
    case From::kBelowAllgatherHierMax:
    case From::kBelowAllgatherHierBruckMax:
    case From::kFitsScratch:
      return 0;
  }
  return 0;
}

// How a rule's bound goes with the team (SelectRule::per_rank): 1 per
// team rank, 2 for the whole vector (the scratch it must fit).
uint8_t per_rank_of(From f) {
  if (f == From::kRabMinToPerRank || f == From::kRabMinToFoldPerRank) return 1;
  return f == From::kFitsScratch ? 2 : 0;
}

bool bounded(From f) {
  return f == From::kBelowLinearMax || f == From::kBelowWideMax ||
         f == From::kBelowAlltoallBruckMax || f == From::kBelowKnomialMax ||
         f == From::kBelowAlltoallHierMax ||
         f == From::kBelowAllgatherHierMax ||
         f == From::kBelowAllgatherHierBruckMax || per_rank_of(f) != 0;
}

// Where a rule ends (0: it does not); RabMinTo*PerRank: per team rank;
// FitsScratch: the whole vector's bytes (per_rank_of).
uint32_t ceiling(const off::EngineConfig& cfg, From f) {
  if (f == From::kBelowWideMax) return cfg.wide_max;
  if (f == From::kBelowAlltoallBruckMax) return cfg.alltoall_bruck_max;
  if (f == From::kBelowKnomialMax) return cfg.knomial_max;
  if (f == From::kBelowAlltoallHierMax) return cfg.alltoall_hier_max;
  if (f == From::kBelowAllgatherHierMax) return cfg.allgather_hier_max;
  if (f == From::kBelowAllgatherHierBruckMax)
    return cfg.allgather_hier_bruck_max;
  if (f == From::kFitsScratch) return cfg.wide_scratch;
  if (f == From::kRabMinToPerRank) return cfg.allreduce_ring_per_rank;
  if (f == From::kRabMinToFoldPerRank) return cfg.allreduce_ring_per_rank_fold;
  if (f != From::kBelowLinearMax) return 0;
  return cfg.linear_max < UINT32_MAX ? static_cast<uint32_t>(cfg.linear_max)
                                     : UINT32_MAX;
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

// The record as if algorithm `id` were not there: not forced, no rule of
// its own.
off::CollCaps without(const off::CollCaps& c, uint8_t id) {
  off::CollCaps w = c;
  if (w.forced == id) w.forced = 0;
  w.nrules = 0;
  for (uint32_t i = 0; i < c.nrules && i < off::kMaxRules; ++i)
    if (c.rules[i].alg != id) w.rules[w.nrules++] = c.rules[i];
  return w;
}

}  // namespace

const AlgInfo* find_impl(CollType coll, uint8_t id) {
  const auto c = static_cast<size_t>(coll);
  return c < static_cast<size_t>(CollType::kCount) && id <= kIds
             ? kById.by[c][id]
             : nullptr;
}

void fill_select_caps(const off::EngineConfig& cfg, off::EngineCaps* caps) {
  caps->single_copy = cfg.cma_min != 0 ? 1 : 0;
  caps->linear_ranks = static_cast<uint8_t>(
      cfg.linear_ranks < off::kMaxLinearRanks ? cfg.linear_ranks
                                              : off::kMaxLinearRanks);
  caps->cpus = static_cast<uint16_t>(
      cfg.cpus < off::kMaxHostCpus ? cfg.cpus : off::kMaxHostCpus);
  caps->wide_ranks = static_cast<uint16_t>(cfg.wide_ranks < off::kMaxWideRanks
                                               ? cfg.wide_ranks
                                               : off::kMaxWideRanks);
  caps->scratch_kib = static_cast<uint16_t>((cfg.wide_scratch < off::kMaxScratch
                                                 ? cfg.wide_scratch
                                                 : off::kMaxScratch) /
                                            1024);
  for (size_t c = 0; c < off::kNumColls; ++c) {
    off::CollCaps& cc = caps->coll[c];
    cc = off::CollCaps{};
    for (uint8_t id = 1; id <= kIds; ++id) {
      const AlgInfo* a = kById.by[c][id];
      if (a == nullptr) continue;
      cc.algs |= static_cast<uint8_t>(1u << (id - 1));
      if (a->single_copy)
        cc.single_copy |= static_cast<uint8_t>(1u << (id - 1));
      if (a->node_aware)
        cc.node_aware |= static_cast<uint8_t>(1u << (id - 1));
      if (cc.def_alg == 0) cc.def_alg = id;
    }
    cc.forced = cfg.forced[c];
    for (const Row& r : kRows) {
      if (static_cast<size_t>(r.coll) != c || r.cond == Cond::kNever ||
          cc.nrules == off::kMaxRules)
        continue;
      // A single-copy rule where single copy never runs is left out.
      if (r.cond == Cond::kSingleCopy && caps->single_copy == 0) continue;
      const uint32_t below = ceiling(cfg, r.from);
      // A bounded rule that can never hold (UCC_LINEAR_MAX=0) is left out.
      if (bounded(r.from) && below == 0) continue;
      const uint8_t per_rank = per_rank_of(r.from);
      cc.rules[cc.nrules++] = off::SelectRule{
          threshold(cfg, r.from), r.id, when_of(r.cond), per_rank, 0, below};
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
      d.alg,
      bytes,
      single_copy_ok(caps, d, one_node),
      whole,
      whole && hierarchical,
      whole && off::linear_team(caps, team_size, one_node),
      whole && off::crowded_team(caps, team_size, one_node),
      whole && off::wide_team(caps, team_size) ? team_size : 0};
  *id = off::select_alg_id(caps.coll[c], in);
  // An algorithm that cannot run this descriptor (AlgInfo::fits: in
  // place, a vector larger than the scratch), forced or chosen: the
  // choice without it.
  const AlgInfo* a = find_impl(d.coll, *id);
  if (a != nullptr && a->fits != nullptr) {
    const uint64_t scratch =
        off::wide_team(caps, team_size) ? uint64_t{caps.scratch_kib} * 1024 : 0;
    if (!a->fits(d, bytes, team_size, scratch))
      *id = off::select_alg_id(without(caps.coll[c], *id), in);
  }
  // The one-sided convention moves different bytes: its descriptors run
  // its algorithm, and no other descriptor does.
  if (d.coll == off::CollType::kAlltoallv) {
    if (d.flags & off::kDescOneSided)
      *id = off::kAlltoallvOneSided;
    else if (*id == off::kAlltoallvOneSided)
      *id = caps.coll[c].def_alg;
  }
  return find_impl(d.coll, *id);
}

}  // namespace ucc::dev

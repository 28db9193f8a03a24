// The algorithm rows (offload/algorithms.def) seen from both sides: every
// id the selector can return, under any configuration and any team, has
// an implementation in the engine (dev::find_impl), a catalogue entry and
// a name (off::find_alg_id), and its name parses back to it.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "device/select/select.h"
#include "offload/caps.h"
#include "offload/coll_traits.h"

namespace {

namespace off = ucc::off;
namespace dev = ucc::dev;
using off::CollType;

constexpr size_t kColls = static_cast<size_t>(CollType::kCount);

// An id the selector returned for collective c: both sides know it.
void expect_resolves(CollType c, uint8_t id, const char* how) {
  SCOPED_TRACE(testing::Message() << off::coll_type_name(c) << " id " << int{id}
                                  << " (" << how << ")");
  ASSERT_GE(id, 1);
  ASSERT_LE(id, off::alg_count(c));
  EXPECT_NE(dev::find_impl(c, id), nullptr);
  const off::AlgName* a = off::find_alg_id(c, id);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(a->name, nullptr);
  EXPECT_GT(strlen(a->name), 0u);
  EXPECT_EQ(a->coll, c);
  EXPECT_EQ(a->id, id);
}

TEST(Select, EveryCatalogueEntryHasAnImplementationAndAName) {
  for (size_t i = 0; i < kColls; ++i) {
    const auto c = static_cast<CollType>(i);
    const uint8_t n = off::alg_count(c);
    ASSERT_GE(n, 1) << off::coll_type_name(c);
    ASSERT_LE(n, off::kMaxAlgs);
    for (uint8_t id = 1; id <= n; ++id) {
      expect_resolves(c, id, "catalogue");
      const off::AlgName* a = off::find_alg_id(c, id);
      EXPECT_EQ(off::find_alg_name(c, a->name), a) << a->name;
    }
    EXPECT_EQ(off::find_alg_id(c, 0), nullptr);
    EXPECT_EQ(off::find_alg_id(c, n + 1), nullptr);
    EXPECT_EQ(dev::find_impl(c, n + 1), nullptr);
  }
}

// Configurations that change the table: single copy on or off, the
// thresholds at their extremes, a forced id per collective.
off::EngineConfig config(int variant) {
  off::EngineConfig cfg;
  cfg.cma_min = variant & 1 ? 4096 : 0;
  if (variant & 2) {
    cfg.allreduce_ring_min = 0;
    cfg.linear_max = 0;
    cfg.alltoall_linear_max = 0;
  }
  if (variant & 4) {
    cfg.allreduce_ring_min = UINT64_MAX;
    cfg.linear_max = UINT64_MAX;
    cfg.alltoall_linear_max = UINT64_MAX;
  }
  cfg.cpus = variant & 8 ? 2 : 64;
  return cfg;
}

TEST(Select, EveryIdTheSelectorReturnsResolves) {
  const uint64_t sizes[] = {0,         1,       4095,      4096, 64 * 1024 - 1,
                            64 * 1024, 1 << 20, UINT64_MAX};
  for (int v = 0; v < 16; ++v) {
    const off::EngineConfig base = config(v);
    for (size_t i = 0; i < kColls; ++i) {
      const auto c = static_cast<CollType>(i);
      // Forced by name (UCC_<COLL>_ALG): each id, and none.
      for (uint8_t forced = 0; forced <= off::alg_count(c); ++forced) {
        off::EngineConfig cfg = base;
        cfg.forced[i] = forced;
        off::EngineCaps caps{};
        dev::fill_select_caps(cfg, &caps);
        const off::CollCaps& cc = caps.coll[i];
        expect_resolves(c, cc.def_alg, "default");
        for (uint32_t r = 0; r < cc.nrules; ++r)
          expect_resolves(c, cc.rules[r].alg, "rule");
        for (uint8_t id = 1; id <= off::alg_count(c); ++id)
          EXPECT_TRUE(off::caps_has_alg(cc, id)) << int{id};
        for (uint64_t bytes : sizes)
          for (int f = 0; f < 64; ++f) {
            const bool whole = f & 2;
            const bool linear = whole && (f & 8);
            off::SelectInput in{0,
                                bytes,
                                (f & 1) != 0,
                                whole,
                                whole && (f & 4),
                                linear,
                                linear && (f & 16)};
            in.wide = whole && (f & 32);
            expect_resolves(c, off::select_alg_id(cc, in), "selected");
          }
      }
    }
  }
}

// Allgather on wide teams, from the real rows under the defaults: Bruck
// below UCC_WIDE_MAX on every shape, below UCC_LINEAR_MAX on flat ones;
// the node-aware ring above UCC_WIDE_MAX on hierarchical ones; the ring
// from UCC_LINEAR_MAX and on narrow teams (docs/scale.md).
// The name of what a whole-team collective of `bytes` selects on a team
// hierarchical or not, wide (its ranks) or not (0), under `cfg`.
std::string picked(const off::EngineConfig& cfg, CollType coll, uint64_t bytes,
                   bool hier, uint32_t wide) {
  off::EngineCaps caps{};
  dev::fill_select_caps(cfg, &caps);
  off::SelectInput in{0, bytes, false, true, hier, false, false};
  in.wide = wide;
  const off::AlgName* a = off::find_alg_id(
      coll, off::select_alg_id(caps.coll[static_cast<size_t>(coll)], in));
  return a != nullptr ? std::string(a->name) : std::string("none");
}

// picked() for one collective under `cfg` (read at each call).
auto picker(const off::EngineConfig& cfg, CollType coll) {
  return [&cfg, coll](uint64_t bytes, bool hier, uint32_t wide) {
    return picked(cfg, coll, bytes, hier, wide);
  };
}

TEST(Select, AllgatherOnWideTeamsByShapeAndSize) {
  off::EngineConfig cfg;
  auto pick = [&](uint64_t bytes, bool hier, bool wide) {
    return picked(cfg, CollType::kAllgather, bytes, hier, wide ? 64 : 0);
  };
  ASSERT_LT(cfg.wide_max, cfg.allgather_hier_max);
  ASSERT_LT(cfg.wide_max, cfg.allgather_hier_bruck_max);
  EXPECT_EQ(pick(8, false, true), "bruck");
  // Wide hierarchical teams: the node-aware Bruck, then the ring host by
  // host; without it flat Bruck's below UCC_WIDE_MAX.
  EXPECT_EQ(pick(8, true, true), "hier_bruck");
  EXPECT_EQ(pick(cfg.allgather_hier_bruck_max - 1, true, true), "hier_bruck");
  EXPECT_EQ(pick(cfg.allgather_hier_bruck_max, true, true), "hier");
  EXPECT_EQ(pick(cfg.wide_max, false, true), "bruck");
  EXPECT_EQ(pick(cfg.linear_max - 1, false, true), "bruck");
  EXPECT_EQ(pick(cfg.linear_max, false, true), "ring");
  EXPECT_EQ(pick(cfg.linear_max, true, true), "hier");
  EXPECT_EQ(pick(8, false, false), "ring");
  // Narrow hierarchical teams: the packed exchange, then the ring.
  EXPECT_EQ(pick(8, true, false), "hier_exchange");
  EXPECT_EQ(pick(cfg.allgather_hier_max - 1, true, false), "hier_exchange");
  EXPECT_EQ(pick(cfg.allgather_hier_max, true, false), "hier");
  cfg.allgather_hier_max = 0;
  EXPECT_EQ(pick(8, true, false), "hier");
  cfg.allgather_hier_bruck_max = 0;
  EXPECT_EQ(pick(cfg.wide_max - 1, true, true), "bruck");
  EXPECT_EQ(pick(cfg.wide_max, true, true), "hier");
}

// Alltoall algorithm `id`, chosen (8 bytes per block on a team of n
// ranks, hierarchical or not) or forced, gives way to the pairwise
// exchange in place (dev::select_alg asks its AlgInfo::fits).
void in_place_runs_pairwise(uint8_t id, bool hier, uint32_t n) {
  off::EngineConfig def;
  for (uint8_t forced : {uint8_t{0}, id}) {
    SCOPED_TRACE(testing::Message() << "forced " << int{forced});
    def.forced[static_cast<size_t>(CollType::kAlltoall)] = forced;
    off::EngineCaps caps{};
    dev::fill_select_caps(def, &caps);
    off::CollDesc d{};
    d.coll = CollType::kAlltoall;
    uint8_t got = 0;
    ASSERT_NE(dev::select_alg(caps, d, 8, false, hier, n, &got), nullptr);
    EXPECT_EQ(got, id);
    d.flags = off::kDescInPlace;
    ASSERT_NE(dev::select_alg(caps, d, 8, false, hier, n, &got), nullptr);
    EXPECT_EQ(got, 1);
  }
}

// Bcast and reduce on wide teams of either shape: the 4-nomial tree
// below UCC_KNOMIAL_MAX, then the binomial one (flat) or the node-aware
// trees; narrow ones the binomial or node-aware trees; 0 turns it off.
TEST(Select, KnomialTreesOnWideTeamsBelowTheirBound) {
  off::EngineConfig cfg;
  for (CollType c : {CollType::kBcast, CollType::kReduce}) {
    auto pick = picker(cfg, c);
    cfg.knomial_max = 16 * 1024;
    EXPECT_EQ(pick(8, false, 64), "knomial");
    EXPECT_EQ(pick(cfg.knomial_max - 1, false, 64), "knomial");
    EXPECT_EQ(pick(cfg.knomial_max, false, 64), "binomial");
    EXPECT_EQ(pick(8, true, 64), "knomial");
    EXPECT_EQ(pick(cfg.knomial_max, true, 64), "hier");
    EXPECT_EQ(pick(8, false, 0), "binomial");  // narrow
    EXPECT_EQ(pick(8, true, 0), "hier");
    cfg.knomial_max = 0;
    EXPECT_EQ(pick(8, false, 64), "binomial");
    EXPECT_EQ(pick(8, true, 64), "hier");
  }
}

// Small allreduces on wide flat teams: the recursive exchange of radix 4
// below UCC_WIDE_MAX, recursive doubling from there; node-aware teams and
// narrow ones keep theirs.
TEST(Select, AllreduceKnomialOnWideFlatTeams) {
  off::EngineConfig cfg;
  auto pick = picker(cfg, CollType::kAllreduce);
  ASSERT_LT(cfg.wide_max, cfg.allreduce_rab_min);
  EXPECT_EQ(pick(8, false, 64), "knomial");
  EXPECT_EQ(pick(cfg.wide_max - 1, false, 64), "knomial");
  EXPECT_EQ(pick(cfg.wide_max, false, 64), "rd");
  EXPECT_EQ(pick(8, true, 64), "hier");
  EXPECT_EQ(pick(8, false, 0), "rd");
}

// The barrier on wide teams of either shape: dissemination of radix 4;
// narrower ones dissemination or (node-aware) hier.
TEST(Select, KaryDisseminationOnWideTeams) {
  off::EngineConfig cfg;
  auto pick = [&](bool hier, uint32_t wide) {
    return picked(cfg, CollType::kBarrier, 0, hier, wide);
  };
  EXPECT_EQ(pick(false, 64), "kdissemination");
  EXPECT_EQ(pick(true, 64), "kdissemination");
  EXPECT_EQ(pick(false, 0), "dissemination");
  EXPECT_EQ(pick(true, 0), "hier");
}

// Alltoall on wide teams: Bruck below UCC_WIDE_MAX on every shape, below
// UCC_ALLTOALL_BRUCK_MAX on flat ones, then the pairwise exchange; in
// place always the pairwise exchange (dev::select_alg).
TEST(Select, AlltoallBruckOnWideTeamsByShapeAndSize) {
  off::EngineConfig cfg;
  auto pick = [&](uint64_t bytes, bool hier, uint32_t wide) {
    return picked(cfg, CollType::kAlltoall, bytes, hier, wide);
  };
  ASSERT_LT(cfg.wide_max, cfg.alltoall_bruck_max);
  EXPECT_EQ(pick(8, false, 64), "bruck");
  EXPECT_EQ(pick(8, true, 64), "bruck");
  EXPECT_EQ(pick(cfg.wide_max - 1, true, 64), "bruck");
  EXPECT_EQ(pick(cfg.wide_max, true, 64), "hier");
  EXPECT_EQ(pick(cfg.wide_max, false, 64), "bruck");
  EXPECT_EQ(pick(cfg.alltoall_bruck_max - 1, false, 64), "bruck");
  EXPECT_EQ(pick(cfg.alltoall_bruck_max, false, 64), "pairwise");
  EXPECT_EQ(pick(8, false, 0), "pairwise");  // narrow
  cfg.alltoall_bruck_max = 0;
  EXPECT_EQ(pick(cfg.wide_max - 1, false, 64), "bruck");
  EXPECT_EQ(pick(cfg.wide_max, false, 64), "pairwise");

  // In place: the pairwise exchange, also where forced.
  in_place_runs_pairwise(off::kAlltoallBruck, false, 64);
}

// The node-aware alltoall on teams of that shape, wide or not, below
// UCC_ALLTOALL_HIER_MAX (after Bruck's on wide ones); 0 turns it off. In
// place, also where forced, the pairwise exchange (its first phase reads
// src while it writes dst).
TEST(Select, AlltoallHierOnNodeAwareTeamsBelowItsBound) {
  off::EngineConfig cfg;
  auto pick = [&](uint64_t bytes, bool hier, uint32_t wide) {
    return picked(cfg, CollType::kAlltoall, bytes, hier, wide);
  };
  ASSERT_GT(cfg.alltoall_hier_max, cfg.alltoall_bruck_max);
  EXPECT_EQ(pick(8, true, 0), "hier");
  EXPECT_EQ(pick(cfg.alltoall_hier_max - 1, true, 0), "hier");
  EXPECT_EQ(pick(cfg.alltoall_hier_max, true, 0), "pairwise");
  EXPECT_EQ(pick(8, false, 0), "pairwise");
  EXPECT_EQ(pick(8, true, 64), "bruck");
  EXPECT_EQ(pick(cfg.alltoall_hier_max - 1, true, 64), "hier");
  EXPECT_EQ(pick(cfg.alltoall_hier_max - 1, false, 64), "pairwise");
  cfg.alltoall_hier_max = 0;
  EXPECT_EQ(pick(8, true, 0), "pairwise");

  in_place_runs_pairwise(off::kAlltoallHier, true, 4);
}

// Reduce_scatter on wide teams: recursive halving below UCC_WIDE_MAX on
// every shape, and on flat ones while the team's whole vector fits
// UCC_WIDE_SCRATCH; the node-aware ring, else the ring. Where the vector
// does not fit the engine's scratch, forced or not, the choice without
// it (dev::select_alg).
TEST(Select, ReduceScatterHalvingWhereTheVectorFits) {
  off::EngineConfig cfg;
  auto pick = [&](uint64_t bytes, bool hier, uint32_t wide) {
    return picked(cfg, CollType::kReduceScatter, bytes, hier, wide);
  };
  const uint64_t fit = cfg.wide_scratch / 256;  // per block at 256 ranks
  ASSERT_GT(fit, cfg.wide_max);
  EXPECT_EQ(pick(8, false, 256), "halving");
  EXPECT_EQ(pick(fit - 1, false, 256), "halving");
  EXPECT_EQ(pick(fit, false, 256), "ring");
  EXPECT_EQ(pick(cfg.wide_max - 1, true, 256), "halving");
  EXPECT_EQ(pick(cfg.wide_max, true, 256), "hier");
  EXPECT_EQ(pick(8, false, 0), "ring");  // narrow
  // Where the selection changes, as ucc_team_coll_algs gives it.
  off::EngineCaps caps{};
  dev::fill_select_caps(cfg, &caps);
  EXPECT_EQ(uint64_t{caps.scratch_kib} * 1024, cfg.wide_scratch);
  const off::CollCaps& cc =
      caps.coll[static_cast<size_t>(CollType::kReduceScatter)];
  off::SelectRange r[2 * off::kMaxRules + 1];
  ASSERT_EQ(off::select_ranges(cc, false, false, false, false, 256, r, 13), 2u);
  EXPECT_EQ(r[1].from, fit);

  // The engine's verdict on the descriptor: the vector must fit.
  for (uint8_t forced : {uint8_t{0}, off::kReduceScatterHalving}) {
    SCOPED_TRACE(testing::Message() << "forced " << int{forced});
    off::EngineConfig f = cfg;
    f.forced[static_cast<size_t>(CollType::kReduceScatter)] = forced;
    dev::fill_select_caps(f, &caps);
    off::CollDesc d{};
    d.coll = CollType::kReduceScatter;
    uint8_t id = 0;
    ASSERT_NE(dev::select_alg(caps, d, 64, false, true, 256, &id), nullptr);
    EXPECT_EQ(id, off::kReduceScatterHalving);
    // Hierarchical, too large for scratch: the node-aware ring.
    ASSERT_NE(dev::select_alg(caps, d, fit + 1, false, true, 256, &id),
              nullptr);
    EXPECT_STREQ(off::find_alg_id(d.coll, id)->name, "hier");
    // Narrow: no scratch at all; too wide for one byte per rank.
    ASSERT_NE(dev::select_alg(caps, d, 8, false, false, 8, &id), nullptr);
    EXPECT_STREQ(off::find_alg_id(d.coll, id)->name, "ring");
    ASSERT_NE(
        dev::select_alg(caps, d, 1, false, false, cfg.wide_scratch + 1, &id),
        nullptr);
    EXPECT_STREQ(off::find_alg_id(d.coll, id)->name, "ring");
  }
}

// Allreduce on wide flat teams: recursive doubling below
// UCC_ALLREDUCE_RABENSEIFNER_MIN, Rabenseifner's from there up to
// UCC_ALLREDUCE_RING_PER_RANK bytes per rank (a power of two ranks) or
// UCC_ALLREDUCE_RING_PER_RANK_FOLD (other sizes), then the ring: the
// ring's bound grows with the team. Narrow teams switch from recursive doubling
// to the ring at UCC_ALLREDUCE_RING_MIN, hierarchical ones from the
// leaders' recursive doubling to their Rabenseifner's at
// UCC_ALLREDUCE_RABENSEIFNER_MIN and to the node-aware ring at
// UCC_ALLREDUCE_RING_MIN (docs/scale.md).
TEST(Select, AllreduceRingThresholdGrowsWithWideTeams) {
  off::EngineConfig cfg;
  auto pick = [&](uint64_t bytes, bool hier, uint32_t wide) {
    return picked(cfg, CollType::kAllreduce, bytes, hier, wide);
  };
  const uint64_t per = cfg.allreduce_ring_per_rank;
  const uint64_t rab = cfg.allreduce_rab_min;
  ASSERT_LT(rab, 64 * per);
  EXPECT_EQ(pick(8, false, 64), "knomial");  // below UCC_WIDE_MAX
  EXPECT_EQ(pick(cfg.wide_max, false, 64), "rd");
  EXPECT_EQ(pick(rab - 1, false, 64), "rd");
  EXPECT_EQ(pick(rab, false, 64), "rabenseifner");
  EXPECT_EQ(pick(cfg.allreduce_ring_min, false, 64), "rabenseifner");
  EXPECT_EQ(pick(64 * per - 1, false, 64), "rabenseifner");
  EXPECT_EQ(pick(64 * per, false, 64), "ring");
  EXPECT_EQ(pick(256 * per - 1, false, 256), "rabenseifner");
  EXPECT_EQ(pick(256 * per, false, 256), "ring");
  const uint64_t fold = cfg.allreduce_ring_per_rank_fold;
  ASSERT_LT(fold, per);
  ASSERT_LT(rab, 96 * fold);
  EXPECT_EQ(pick(rab - 1, false, 96), "rd");
  EXPECT_EQ(pick(rab, false, 96), "rabenseifner");
  EXPECT_EQ(pick(96 * fold - 1, false, 96), "rabenseifner");
  EXPECT_EQ(pick(96 * fold, false, 96), "ring");
  EXPECT_EQ(pick(rab, false, 0), "rd");  // narrow
  EXPECT_EQ(pick(cfg.allreduce_ring_min, false, 0), "ring");
  EXPECT_EQ(pick(cfg.allreduce_ring_min, true, 256), "hier_ring");
  EXPECT_EQ(pick(rab - 1, true, 256), "hier");
  EXPECT_EQ(pick(rab, true, 256), "hier_rabenseifner");
  EXPECT_EQ(pick(rab, true, 0), "hier_rabenseifner");
  EXPECT_EQ(pick(8, true, 256), "hier");
  // Where the selection changes, as ucc_team_coll_algs gives it.
  off::EngineCaps caps{};
  dev::fill_select_caps(cfg, &caps);
  const off::CollCaps& cc =
      caps.coll[static_cast<size_t>(CollType::kAllreduce)];
  off::SelectRange r[2 * off::kMaxRules + 1];
  ASSERT_EQ(off::select_ranges(cc, false, false, false, false, 256, r, 13), 4u);
  EXPECT_EQ(r[1].from, cfg.wide_max);
  EXPECT_EQ(r[2].from, rab);
  EXPECT_EQ(r[3].from, 256 * per);
  ASSERT_EQ(off::select_ranges(cc, false, false, false, false, 96, r, 13), 4u);
  EXPECT_EQ(r[2].from, rab);
  EXPECT_EQ(r[3].from, 96 * fold);
  ASSERT_EQ(off::select_ranges(cc, false, false, false, false, 0, r, 13), 2u);
  EXPECT_EQ(r[1].from, cfg.allreduce_ring_min);
  // Off: the ring from UCC_ALLREDUCE_RING_MIN on every team.
  cfg.allreduce_ring_per_rank = 0;
  cfg.allreduce_ring_per_rank_fold = 0;
  EXPECT_EQ(pick(rab, false, 256), "rd");
  EXPECT_EQ(pick(cfg.allreduce_ring_min, false, 256), "ring");
  EXPECT_EQ(pick(cfg.allreduce_ring_min, false, 96), "ring");
}

}  // namespace

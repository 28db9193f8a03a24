// The collectives' traits (offload/coll_traits.h) and the capability
// record's selection (offload/caps.h): pure functions, checked against
// references written out per collective here, independently of the table.
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>

#include "offload/caps.h"
#include "offload/coll_traits.h"
#include "offload/engine_config.h"

namespace {

using ucc::off::CollTraits;
using ucc::off::CollType;
using ucc::off::Role;
using ucc::off::Side;
using ucc::off::VecFacts;

constexpr uint64_t kCount = 10;
constexpr uint32_t kN = 4;
constexpr uint64_t kVecEnd = 37;  // furthest block of a side's arrays
constexpr uint64_t kVecMine = 6;  // this rank's entry
constexpr uint64_t kVecTotal = 29;

struct Need {
  uint64_t src, dst;
};

// What each collective touches, in elements, written out by hand from
// descriptor.h's conventions (the engine's validation switch before the
// traits existed): root and in place as given, count kCount, kN ranks,
// every v side's arrays reporting kVecEnd / kVecMine / kVecTotal.
Need reference(CollType c, bool root, bool ip) {
  const uint64_t one = kCount, all = kCount * kN;
  switch (c) {
    case CollType::kBarrier:
    case CollType::kFanin:
    case CollType::kFanout:
      return {0, 0};
    case CollType::kBcast:
      return {one, 0};
    case CollType::kReduce:
      return {one, root ? one : 0};
    case CollType::kAllreduce:
      return {one, one};
    case CollType::kAllgather:
      return {ip ? 0 : one, all};
    case CollType::kAlltoall:
      return {all, all};
    case CollType::kReduceScatter:
      return {all, ip ? all : one};
    case CollType::kGather:
      return {ip && root ? 0 : one, root ? all : 0};
    case CollType::kScatter:
      return {root ? all : 0, ip && root ? 0 : one};
    case CollType::kGatherv:
      return {ip && root ? 0 : one, root ? kVecEnd : 0};
    case CollType::kScatterv:
      return {root ? kVecEnd : 0, ip && root ? 0 : one};
    case CollType::kAllgatherv:
      return {ip ? 0 : one, kVecEnd};
    case CollType::kAlltoallv:
      return {kVecEnd, kVecEnd};
    case CollType::kReduceScatterv:
      // count is the whole vector here
      return {one, ip ? one : kVecMine};
    case CollType::kCount:
      break;
  }
  return {~0ull, ~0ull};
}

TEST(Traits, ExtentsMatchTheConventions) {
  for (int c = 0; c < static_cast<int>(CollType::kCount); ++c) {
    const auto coll = static_cast<CollType>(c);
    const CollTraits* t = ucc::off::coll_traits(coll);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->type, coll);
    for (bool root : {false, true}) {
      for (bool ip : {false, true}) {
        if (ip && t->in_place == ucc::off::InPlaceRule::kRefused) continue;
        const bool r = root && t->rooted;
        Role role{kCount, kN, 1, r, ip};
        VecFacts f[2];
        for (VecFacts& v : f) v = VecFacts{kVecEnd, kVecTotal, kVecMine};
        uint64_t src = 0, dst = 0;
        ASSERT_TRUE(ucc::off::side_extent(*t, Side::kSrc, role, f, &src));
        ASSERT_TRUE(ucc::off::side_extent(*t, Side::kDst, role, f, &dst));
        const Need want = reference(coll, r, ip);
        EXPECT_EQ(src, want.src) << t->name << " root " << r << " ip " << ip;
        EXPECT_EQ(dst, want.dst) << t->name << " root " << r << " ip " << ip;
      }
    }
  }
}

TEST(Traits, InPlaceRulesAndDescribedSides) {
  using ucc::off::coll_traits;
  const CollTraits& ag = *coll_traits(CollType::kAllgather);
  Role r{kCount, kN, 0, false, true};
  EXPECT_TRUE(ucc::off::in_place_applies(ag, true, false));
  // In place, the user describes only the kept side (dst).
  EXPECT_FALSE(ucc::off::side_described(ag, Side::kSrc, r));
  EXPECT_TRUE(ucc::off::side_described(ag, Side::kDst, r));
  EXPECT_FALSE(ucc::off::side_touched(ag, Side::kSrc, r));
  // Rooted: only the root takes in place.
  const CollTraits& ga = *coll_traits(CollType::kGather);
  EXPECT_FALSE(ucc::off::in_place_applies(ga, true, false));
  EXPECT_TRUE(ucc::off::in_place_applies(ga, true, true));
  // Bcast ignores it; alltoallv takes it on every rank, its src arrays
  // then the dst ones (the host aliases them).
  EXPECT_FALSE(
      ucc::off::in_place_applies(*coll_traits(CollType::kBcast), true, true));
  const CollTraits& av = *coll_traits(CollType::kAlltoallv);
  EXPECT_EQ(av.in_place, ucc::off::InPlaceRule::kEveryone);
  const Role ar{kCount, kN, 1, false, true};
  EXPECT_FALSE(ucc::off::side_described(av, Side::kSrc, ar));
  EXPECT_TRUE(ucc::off::side_touched(av, Side::kSrc, ar));
  EXPECT_EQ(coll_traits(CollType::kCount), nullptr);
  EXPECT_EQ(coll_traits(static_cast<CollType>(200)), nullptr);
}

TEST(Traits, KindsOfCollective) {
  using ucc::off::coll_traits;
  int rooted = 0, reduces = 0, vector = 0, data = 0, blocks = 0;
  for (int c = 0; c < static_cast<int>(CollType::kCount); ++c) {
    const CollTraits& t = *coll_traits(static_cast<CollType>(c));
    rooted += t.rooted;
    reduces += t.reduces;
    vector += t.vector();
    data += t.moves_data();
    blocks += t.uses_blocks();
  }
  EXPECT_EQ(rooted, 8);   // bcast reduce gather(v) scatter(v) fanin fanout
  EXPECT_EQ(reduces, 4);  // reduce allreduce reduce_scatter(v)
  EXPECT_EQ(vector, 5);   // the v-collectives
  EXPECT_EQ(data, 13);    // all but barrier, fanin, fanout
  EXPECT_EQ(blocks, 11);  // all but barrier bcast reduce fanin fanout
  EXPECT_STREQ(ucc::off::coll_type_name(CollType::kReduceScatterv),
               "reduce_scatterv");
}

TEST(Traits, CountAgreement) {
  using ucc::off::coll_traits;
  VecFacts f[2];
  f[1] = VecFacts{40, 29, 6};
  // kMine: the root's dst entry must be the count; other ranks have none.
  const CollTraits& gv = *coll_traits(CollType::kGatherv);
  EXPECT_TRUE(ucc::off::count_agrees(gv, Role{6, kN, 0, true, false}, f));
  EXPECT_FALSE(ucc::off::count_agrees(gv, Role{7, kN, 0, true, false}, f));
  EXPECT_TRUE(ucc::off::count_agrees(gv, Role{7, kN, 1, false, false}, f));
  // kTotal: the whole vector.
  const CollTraits& rsv = *coll_traits(CollType::kReduceScatterv);
  EXPECT_TRUE(ucc::off::count_agrees(rsv, Role{29, kN, 0, false, false}, f));
  EXPECT_FALSE(ucc::off::count_agrees(rsv, Role{6, kN, 0, false, false}, f));
  // kNone: nothing but 0.
  const CollTraits& bar = *coll_traits(CollType::kBarrier);
  EXPECT_TRUE(ucc::off::count_agrees(bar, Role{0, kN, 0, false, false}, f));
  EXPECT_FALSE(ucc::off::count_agrees(bar, Role{1, kN, 0, false, false}, f));
}

TEST(Traits, OverflowIsReported) {
  const CollTraits& a2a = *ucc::off::coll_traits(CollType::kAlltoall);
  VecFacts f[2];
  uint64_t e = 0;
  EXPECT_FALSE(ucc::off::side_extent(
      a2a, Side::kSrc, Role{~0ull / 2, kN, 0, false, false}, f, &e));
}

TEST(Traits, AlgorithmCatalogue) {
  using ucc::off::find_alg_id;
  using ucc::off::find_alg_name;
  const ucc::off::AlgName* a = find_alg_name(CollType::kAllreduce, "RING");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->id, 2);
  EXPECT_STREQ(find_alg_id(CollType::kAllreduce, 1)->name, "rd");
  EXPECT_EQ(find_alg_name(CollType::kAllreduce, "auto"), nullptr);
  EXPECT_EQ(find_alg_id(CollType::kAllreduce, 0), nullptr);
  EXPECT_STREQ(find_alg_id(CollType::kAllreduce, 3)->name, "hier");
  EXPECT_STREQ(find_alg_id(CollType::kAllreduce, 4)->name, "hier_ring");
  EXPECT_STREQ(find_alg_id(CollType::kAllreduce, 5)->name, "rabenseifner");
  EXPECT_STREQ(find_alg_id(CollType::kAllreduce, 6)->name, "hier_rabenseifner");
  EXPECT_STREQ(find_alg_id(CollType::kAllreduce, 7)->name, "knomial");
  EXPECT_EQ(find_alg_id(CollType::kAllreduce, 8), nullptr);
  EXPECT_EQ(find_alg_id(CollType::kCount, 1), nullptr);
}

// Selection goes by the largest block of the dst counts exactly where
// every member passes the same array, and by count everywhere else.
TEST(Traits, SelectionBytes) {
  using ucc::off::select_bytes;
  for (size_t c = 0; c < static_cast<size_t>(CollType::kCount); ++c) {
    const auto type = static_cast<CollType>(c);
    const CollTraits& t = *ucc::off::coll_traits(type);
    EXPECT_EQ(t.alike_counts, type == CollType::kAllgatherv ||
                                  type == CollType::kReduceScatterv)
        << t.name;
    ucc::off::CollDesc d{};
    d.coll = type;
    d.dtype = ucc::off::DType::kFloat32;
    d.count = 3;
    EXPECT_EQ(select_bytes(d, t, 100), t.alike_counts ? 400u : 12u) << t.name;
  }
}

// --- selection over a capability record ------------------------------------

ucc::off::CollCaps two_rules() {
  ucc::off::CollCaps c{};
  c.algs = 0x7;
  c.single_copy = 0x4;  // id 3
  c.def_alg = 1;
  c.nrules = 2;
  c.rules[0] = {4096, 3, ucc::off::When::kSingleCopy, {}};
  c.rules[1] = {1024, 2, ucc::off::When::kAlways, {}};
  return c;
}

TEST(Select, FirstMatchingRuleWins) {
  using ucc::off::select_alg_id;
  using ucc::off::SelectInput;
  const ucc::off::CollCaps c = two_rules();
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 0, true}), 1);
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 1023, true}), 1);
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 1024, true}), 2);
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 4096, true}), 3);
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 4096, false}), 2);
  // An explicit or forced id wins, a single-copy one only where it can run.
  EXPECT_EQ(select_alg_id(c, SelectInput{1, 1 << 20, true}), 1);
  EXPECT_EQ(select_alg_id(c, SelectInput{3, 10, false}), 1);
  ucc::off::CollCaps f = c;
  f.forced = 2;
  EXPECT_EQ(select_alg_id(f, SelectInput{0, 0, false}), 2);
  // A record claiming more rules than it has room for is read within it.
  f.forced = 0;
  f.nrules = 200;
  EXPECT_NE(select_alg_id(f, SelectInput{0, 1 << 20, true}), 0);
}

TEST(Select, RangesSayWhereSelectionChanges) {
  const ucc::off::CollCaps c = two_rules();
  ucc::off::SelectRange r[8];
  uint32_t n =
      ucc::off::select_ranges(c, true, false, false, false, false, r, 8);
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(r[0].from, 0u);
  EXPECT_EQ(r[0].alg, 1);
  EXPECT_EQ(r[1].from, 1024u);
  EXPECT_EQ(r[1].alg, 2);
  EXPECT_EQ(r[2].from, 4096u);
  EXPECT_EQ(r[2].alg, 3);
  n = ucc::off::select_ranges(c, false, false, false, false, false, r, 8);
  ASSERT_EQ(n, 2u);  // the single-copy rule never matches: no change at 4K
  EXPECT_EQ(r[1].alg, 2);
  EXPECT_EQ(ucc::off::select_ranges(c, true, false, false, false, false, r, 1),
            1u);
  ucc::off::CollCaps forced = c;
  forced.forced = 2;
  EXPECT_EQ(
      ucc::off::select_ranges(forced, false, false, false, false, false, r, 8),
      1u);
}

// Id 3 node-aware below 1 KiB, id 2 from 1 KiB for everyone, id 1 else.
TEST(Select, NodeAwareRulesNeedTheShapeAndTheWholeTeam) {
  using ucc::off::select_alg_id;
  using ucc::off::SelectInput;
  ucc::off::CollCaps c{};
  c.algs = 0x7;
  c.node_aware = 0x4;  // id 3
  c.def_alg = 1;
  c.nrules = 2;
  c.rules[0] = {1024, 2, ucc::off::When::kAlways, {}};
  c.rules[1] = {0, 3, ucc::off::When::kNodeAware, {}};
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 8, false, true, true}), 3);
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 8, false, true, false}), 1);
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 4096, false, true, true}), 2);
  // Asked for by id: for the whole team, whatever its shape; never for an
  // active set.
  EXPECT_EQ(select_alg_id(c, SelectInput{3, 8, false, true, false}), 3);
  EXPECT_EQ(select_alg_id(c, SelectInput{3, 8, false, false, false}), 1);
  c.forced = 3;
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 4096, false, false, false}), 2);
  c.forced = 0;
  ucc::off::SelectRange r[8];
  ASSERT_EQ(ucc::off::select_ranges(c, false, true, false, false, false, r, 8),
            2u);
  EXPECT_EQ(r[0].alg, 3);
  EXPECT_EQ(r[1].from, 1024u);
  EXPECT_EQ(r[1].alg, 2);
  ASSERT_EQ(ucc::off::select_ranges(c, false, false, false, false, false, r, 8),
            2u);
  EXPECT_EQ(r[0].alg, 1);
}

namespace {

// Algorithms 1 and 4, default 1, and these rules.
ucc::off::CollCaps caps_1_4(std::initializer_list<ucc::off::SelectRule> rules) {
  ucc::off::CollCaps c{};
  c.algs = 0x9;
  c.def_alg = 1;
  for (const ucc::off::SelectRule& r : rules) c.rules[c.nrules++] = r;
  return c;
}

}  // namespace

// Id 4 for linear teams below 1 KiB (the shape of the bcast rules), id 1
// from 1 KiB and for every other team.
TEST(Select, LinearRulesNeedASmallOneHostTeam) {
  using ucc::off::select_alg_id;
  using ucc::off::SelectInput;
  const ucc::off::CollCaps c = caps_1_4({{1024, 1, ucc::off::When::kAlways, {}},
                                         {0, 4, ucc::off::When::kLinear, {}}});
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 8, false, true, false, true}), 4);
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 1023, false, true, false, true}),
            4);
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 1024, false, true, false, true}),
            1);
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 8, false, true, false, false}), 1);
  ucc::off::SelectRange r[8];
  ASSERT_EQ(ucc::off::select_ranges(c, false, false, true, false, false, r, 8),
            2u);
  EXPECT_EQ(r[0].alg, 4);
  EXPECT_EQ(r[1].from, 1024u);
  EXPECT_EQ(r[1].alg, 1);
  ASSERT_EQ(ucc::off::select_ranges(c, false, false, false, false, false, r, 8),
            1u);
  EXPECT_EQ(r[0].alg, 1);

  // Which teams: all on one host, from 4 ranks to the configured most.
  ucc::off::EngineCaps caps{};
  caps.linear_ranks = 8;
  EXPECT_FALSE(ucc::off::linear_team(caps, 2, true));
  EXPECT_FALSE(ucc::off::linear_team(caps, 3, true));
  EXPECT_TRUE(ucc::off::linear_team(caps, 4, true));
  EXPECT_TRUE(ucc::off::linear_team(caps, 8, true));
  EXPECT_FALSE(ucc::off::linear_team(caps, 9, true));
  EXPECT_FALSE(ucc::off::linear_team(caps, 4, false));
  caps.linear_ranks = 0;
  EXPECT_FALSE(ucc::off::linear_team(caps, 4, true));
}

// Id 4 for crowded teams (the barrier's rule), else the default: a linear
// team with more ranks than the engines' CPUs.
TEST(Select, CrowdedRuleNeedsMoreRanksThanCpus) {
  using ucc::off::select_alg_id;
  using ucc::off::SelectInput;
  const ucc::off::CollCaps c = caps_1_4({{0, 4, ucc::off::When::kCrowded, {}}});
  EXPECT_EQ(select_alg_id(c, SelectInput{0, 0, false, true, false, true, true}),
            4);
  EXPECT_EQ(
      select_alg_id(c, SelectInput{0, 0, false, true, false, true, false}), 1);
  ucc::off::SelectRange r[8];
  ASSERT_EQ(ucc::off::select_ranges(c, false, false, true, true, false, r, 8),
            1u);
  EXPECT_EQ(r[0].alg, 4);
  ASSERT_EQ(ucc::off::select_ranges(c, false, false, true, false, false, r, 8),
            1u);
  EXPECT_EQ(r[0].alg, 1);

  ucc::off::EngineCaps caps{};
  caps.linear_ranks = 8;
  caps.cpus = 4;
  EXPECT_FALSE(ucc::off::crowded_team(caps, 4, true));
  EXPECT_TRUE(ucc::off::crowded_team(caps, 5, true));
  EXPECT_TRUE(ucc::off::crowded_team(caps, 8, true));
  EXPECT_FALSE(ucc::off::crowded_team(caps, 9, true));   // not linear
  EXPECT_FALSE(ucc::off::crowded_team(caps, 5, false));  // several hosts
  caps.cpus = 1;
  EXPECT_FALSE(ucc::off::crowded_team(caps, 3, true));  // too small
  EXPECT_TRUE(ucc::off::crowded_team(caps, 4, true));
}

TEST(EngineConfig, Limits) {
  ucc::off::EngineConfig c;
  EXPECT_TRUE(ucc::off::engine_config_ok(c));
  auto bad = [](auto mutate) {
    ucc::off::EngineConfig x;
    mutate(x);
    return !ucc::off::engine_config_ok(x);
  };
  EXPECT_TRUE(bad([](auto& x) { x.max_teams = 0; }));
  EXPECT_TRUE(bad([](auto& x) { x.cpus = 0; }));
  EXPECT_TRUE(bad([](auto& x) { x.cpus = ucc::off::kMaxHostCpus + 1; }));
  EXPECT_FALSE(bad([](auto& x) { x.cpus = ucc::off::kMaxHostCpus; }));
  EXPECT_TRUE(bad([](auto& x) { x.max_teams = ucc::off::kMaxTeamsLimit + 1; }));
  EXPECT_FALSE(bad([](auto& x) {
    x.max_teams = ucc::off::kMaxTeamsLimit;
    x.team_queue = 256;
  }));
  EXPECT_TRUE(bad([](auto& x) { x.team_queue = 3; }));
  EXPECT_TRUE(bad([](auto& x) { x.slot_size = 100; }));
  EXPECT_TRUE(bad([](auto& x) { x.nslots = 128; }));
  EXPECT_TRUE(bad([](auto& x) { x.inflight = 65; }));
  EXPECT_TRUE(bad([](auto& x) { x.unexpected = 5000; }));
  EXPECT_TRUE(
      bad([](auto& x) { x.linear_ranks = ucc::off::kMaxLinearRanks + 1; }));
  EXPECT_FALSE(bad([](auto& x) { x.linear_ranks = 0; }));
  EXPECT_TRUE(bad([](auto& x) {
    x.max_teams = 4096;
    x.team_queue = 65536;
  }));
}

TEST(Caps, VersionAndLookups) {
  ucc::off::EngineCaps c{};
  EXPECT_FALSE(ucc::off::caps_ok(c));
  c.version = ucc::off::kCapsVersion;
  c.bytes = sizeof(c);
  EXPECT_TRUE(ucc::off::caps_ok(c));
  c.reduce_ops[static_cast<int>(ucc::off::DType::kFloat32)] = 1;  // sum
  EXPECT_TRUE(ucc::off::caps_reduces(c, ucc::off::DType::kFloat32,
                                     ucc::off::ROp::kSum));
  EXPECT_FALSE(ucc::off::caps_reduces(c, ucc::off::DType::kFloat32,
                                      ucc::off::ROp::kProd));
  EXPECT_FALSE(
      ucc::off::caps_reduces(c, ucc::off::DType::kCount, ucc::off::ROp::kSum));
  ucc::off::CollCaps cc{};
  cc.algs = 0x2;
  EXPECT_FALSE(ucc::off::caps_has_alg(cc, 1));
  EXPECT_TRUE(ucc::off::caps_has_alg(cc, 2));
  EXPECT_FALSE(ucc::off::caps_has_alg(cc, 0));
  EXPECT_FALSE(ucc::off::caps_has_alg(cc, 9));
}

}  // namespace

// Id 4 for wide teams below 1 KiB (the allgather's Bruck rule: bounded
// above), id 1 from 1 KiB on and for narrower teams.
TEST(Select, WideRuleHoldsBelowItsBoundOnWideTeams) {
  using ucc::off::select_alg_id;
  using ucc::off::SelectInput;
  using ucc::off::When;
  const ucc::off::CollCaps c = caps_1_4({{0, 4, When::kWide, 0, 0, 1024}});
  auto in = [](uint64_t bytes, bool wide) {
    SelectInput s{0, bytes, false, true, false, false, false};
    s.wide = wide ? 64 : 0;
    return s;
  };
  EXPECT_EQ(select_alg_id(c, in(0, true)), 4);
  EXPECT_EQ(select_alg_id(c, in(1023, true)), 4);
  EXPECT_EQ(select_alg_id(c, in(1024, true)), 1);
  EXPECT_EQ(select_alg_id(c, in(8, false)), 1);
  ucc::off::SelectRange r[11];
  ASSERT_EQ(ucc::off::select_ranges(c, false, false, false, false, 64, r, 11),
            2u);
  EXPECT_EQ(r[0].from, 0u);
  EXPECT_EQ(r[0].alg, 4);
  EXPECT_EQ(r[1].from, 1024u);
  EXPECT_EQ(r[1].alg, 1);
  ASSERT_EQ(
      ucc::off::select_ranges(c, false, false, false, false, false, r, 11), 1u);
  EXPECT_EQ(r[0].alg, 1);

  ucc::off::EngineCaps caps{};
  caps.wide_ranks = 16;
  EXPECT_FALSE(ucc::off::wide_team(caps, 15));
  EXPECT_TRUE(ucc::off::wide_team(caps, 16));
  EXPECT_TRUE(ucc::off::wide_team(caps, 4096));
  caps.wide_ranks = 0;
  EXPECT_FALSE(ucc::off::wide_team(caps, 4096));
}

// kWidePow2 holds on wide teams of a power of two ranks only.
TEST(Select, WidePow2RuleHoldsOnPowersOfTwo) {
  using ucc::off::select_alg_id;
  using ucc::off::SelectInput;
  using ucc::off::When;
  const ucc::off::CollCaps c = caps_1_4({{0, 4, When::kWidePow2, 0, 0, 0}});
  auto in = [](uint32_t wide) {
    SelectInput s{0, 8, false, true, false, false, false};
    s.wide = wide;
    return s;
  };
  EXPECT_EQ(select_alg_id(c, in(16)), 4);
  EXPECT_EQ(select_alg_id(c, in(1024)), 4);
  EXPECT_EQ(select_alg_id(c, in(96)), 1);
  EXPECT_EQ(select_alg_id(c, in(17)), 1);
  EXPECT_EQ(select_alg_id(c, in(0)), 1);  // not wide
}

// kWideFlat holds on wide teams without the node-aware shape only.
TEST(Select, WideFlatRuleHoldsOnFlatWideTeams) {
  using ucc::off::select_alg_id;
  using ucc::off::SelectInput;
  using ucc::off::When;
  const ucc::off::CollCaps c = caps_1_4({{0, 4, When::kWideFlat, 0, 0, 0}});
  auto in = [](uint32_t wide, bool node_aware) {
    SelectInput s{0, 8, false, true, node_aware, false, false};
    s.wide = wide;
    return s;
  };
  EXPECT_EQ(select_alg_id(c, in(64, false)), 4);
  EXPECT_EQ(select_alg_id(c, in(64, true)), 1);
  EXPECT_EQ(select_alg_id(c, in(0, false)), 1);  // not wide
}

// kNarrowNodeAware: the node-aware shape on teams below UCC_WIDE_RANKS.
TEST(Select, NarrowNodeAwareRuleHoldsOnNarrowHierarchicalTeams) {
  using ucc::off::select_alg_id;
  using ucc::off::SelectInput;
  using ucc::off::When;
  const ucc::off::CollCaps c =
      caps_1_4({{0, 4, When::kNarrowNodeAware, 0, 0, 0}});
  auto in = [](uint32_t wide, bool node_aware) {
    SelectInput s{0, 8, false, true, node_aware, false, false};
    s.wide = wide;
    return s;
  };
  EXPECT_EQ(select_alg_id(c, in(0, true)), 4);
  EXPECT_EQ(select_alg_id(c, in(64, true)), 1);  // wide
  EXPECT_EQ(select_alg_id(c, in(0, false)), 1);  // flat
}

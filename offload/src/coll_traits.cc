// The collectives, one row each (coll_traits.h has the words). Adding a
// collective: a CollType value (types.h), its row here, its algorithms
// in device/coll and their table in device/select.
#include "offload/coll_traits.h"

#include <strings.h>

namespace ucc::off {
namespace {

constexpr SideTraits side(Who w, Extent e, InPlace ip, Layout l,
                          Arrays a = Arrays::kNone) {
  return SideTraits{w, e, ip, l, a};
}
constexpr SideTraits kNoSide =
    side(Who::kNobody, Extent::kCount, InPlace::kSame, Layout::kNone);

constexpr Who E = Who::kEveryone;
constexpr Who R = Who::kRoot;
constexpr InPlace kSame = InPlace::kSame;
constexpr InPlace kUnused = InPlace::kUnused;
constexpr InPlace kOther = InPlace::kOther;

}  // namespace

// clang-format off
constexpr CollTraits kCollTraits[static_cast<size_t>(CollType::kCount)] = {
  {CollType::kBarrier, "barrier", false, false, InPlaceRule::kIgnored,
   Side::kDst, CountFrom::kNone, {kNoSide, kNoSide},
   4, {{1, "dissemination", "log2(n) rounds of empty messages to rank + 2^k"},
       {2, "rd", "recursive doubling of empty messages, fold for "
                 "non-powers of two"},
       {3, "hier", "node-aware: fan-in to each host's first rank, "
                   "dissemination among them, fan-out"},
       {4, "linear", "flat tree: fan-in to rank 0, fan-out from it"}}},
  {CollType::kBcast, "bcast", true, false, InPlaceRule::kIgnored,
   Side::kSrc, CountFrom::kBuffer,
   {side(E, Extent::kCount, kSame, Layout::kNone), kNoSide},
   4, {{1, "binomial", "binomial tree, pipelined in slot-sized segments"},
       {2, "cma", "every rank reads the root's vector (cross-memory "
                  "attach)"},
       {3, "hier", "node-aware: binomial trees within the root's host, "
                   "among the hosts' first ranks, within each host"},
       {4, "linear", "flat tree: the root sends to every rank, pipelined "
                     "in slot-sized segments"}}},
  {CollType::kReduce, "reduce", true, true, InPlaceRule::kRoot,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kCount, kSame, Layout::kNone),
    side(R, Extent::kCount, kSame, Layout::kNone)},
   3, {{1, "binomial", "binomial tree, pipelined in slot-sized segments"},
       {2, "hier", "node-aware: the binomial tree over the ranks host by "
                   "host, so that whole subtrees sit on one host"},
       {3, "linear", "flat tree: every rank sends to the root, which "
                     "combines, pipelined in slot-sized segments"}}},
  {CollType::kAllreduce, "allreduce", false, true, InPlaceRule::kEveryone,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kCount, kSame, Layout::kSplit),
    side(E, Extent::kCount, kSame, Layout::kSplit)},
   4, {{1, "rd", "recursive doubling with a fold for non-powers of two"},
       {2, "ring", "pipelined ring: reduce-scatter then allgather"},
       {3, "hier", "node-aware: reduce to each host's first rank, "
                   "recursive doubling among them, bcast within hosts"},
       {4, "hier_ring", "node-aware: the pipelined ring over the ranks "
                        "host by host"}}},
  {CollType::kAllgather, "allgather", false, false, InPlaceRule::kEveryone,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kCount, kUnused, Layout::kOwn),
    side(E, Extent::kTeam, kSame, Layout::kTeam)},
   4, {{1, "ring", "pipelined ring"},
       {2, "cma", "every rank reads every other rank's block (cross-memory "
                  "attach)"},
       {3, "hier", "node-aware: the pipelined ring over the ranks host by "
                   "host"},
       {4, "linear", "every rank sends its block to every other rank at "
                     "once, in slot-sized rounds"}}},
  {CollType::kAlltoall, "alltoall", false, false, InPlaceRule::kEveryone,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kTeam, kSame, Layout::kTeam),
    side(E, Extent::kTeam, kSame, Layout::kTeam)},
   3, {{1, "pairwise", "n steps of symmetric pairwise exchange"},
       {2, "cma", "every rank reads its block of every other rank's src "
                  "(cross-memory attach)"},
       {3, "linear", "every rank sends each block to its rank at once, in "
                     "slot-sized rounds"}}},
  {CollType::kReduceScatter, "reduce_scatter", false, true,
   InPlaceRule::kEveryone, Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kTeam, kSame, Layout::kTeam),
    side(E, Extent::kCount, kOther, Layout::kOwn)},
   3, {{1, "ring", "pipelined ring"},
       {2, "hier", "node-aware: the pipelined ring over the ranks host by "
                   "host"},
       {3, "linear", "every rank sends each block to its rank at once, "
                     "which combines them in rank order, in slot-sized "
                     "rounds"}}},
  {CollType::kGather, "gather", true, false, InPlaceRule::kRoot,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kCount, kUnused, Layout::kOwn),
    side(R, Extent::kTeam, kSame, Layout::kTeam)},
   1, {{1, "linear", "every rank streams to the root"}}},
  {CollType::kGatherv, "gatherv", true, false, InPlaceRule::kRoot,
   Side::kDst, CountFrom::kMine,
   {side(E, Extent::kCount, kUnused, Layout::kOwn),
    side(R, Extent::kVec, kSame, Layout::kVec, Arrays::kCountsDispls)},
   1, {{1, "linear", "every rank streams to the root"}}},
  {CollType::kScatter, "scatter", true, false, InPlaceRule::kRoot,
   Side::kSrc, CountFrom::kBuffer,
   {side(R, Extent::kTeam, kSame, Layout::kTeam),
    side(E, Extent::kCount, kUnused, Layout::kOwn)},
   1, {{1, "linear", "the root streams to every rank"}}},
  {CollType::kScatterv, "scatterv", true, false, InPlaceRule::kRoot,
   Side::kSrc, CountFrom::kMine,
   {side(R, Extent::kVec, kSame, Layout::kVec, Arrays::kCountsDispls),
    side(E, Extent::kCount, kUnused, Layout::kOwn)},
   1, {{1, "linear", "the root streams to every rank"}}},
  {CollType::kAllgatherv, "allgatherv", false, false, InPlaceRule::kEveryone,
   Side::kDst, CountFrom::kMine,
   {side(E, Extent::kCount, kUnused, Layout::kOwn),
    side(E, Extent::kVec, kSame, Layout::kVec, Arrays::kCountsDispls)},
   3, {{1, "pairwise", "n steps of symmetric pairwise exchange of our "
                       "block"},
       {2, "hier", "node-aware: the pipelined ring over the ranks host by "
                   "host"},
       {3, "linear", "every rank sends its block to every other rank at "
                     "once, in slot-sized rounds"}},
   true},
  {CollType::kAlltoallv, "alltoallv", false, false, InPlaceRule::kRefused,
   Side::kDst, CountFrom::kNone,
   {side(E, Extent::kVec, kSame, Layout::kVec, Arrays::kCountsDispls),
    side(E, Extent::kVec, kSame, Layout::kVec, Arrays::kCountsDispls)},
   2, {{1, "pairwise", "n steps of symmetric pairwise exchange"},
       {2, "linear", "every rank sends each block to its rank at once, in "
                     "slot-sized rounds"}}},
  {CollType::kReduceScatterv, "reduce_scatterv", false, true,
   InPlaceRule::kEveryone, Side::kDst, CountFrom::kTotal,
   {side(E, Extent::kCount, kSame, Layout::kDstVecPacked),
    side(E, Extent::kVecMine, kOther, Layout::kOwn, Arrays::kCounts)},
   3, {{1, "ring", "pipelined ring over blocks of any size"},
       {2, "hier", "node-aware: the pipelined ring over the ranks host by "
                   "host"},
       {3, "linear", "every rank sends each block to its rank at once, "
                     "which combines them in rank order, in slot-sized "
                     "rounds"}},
   true},
  {CollType::kFanin, "fanin", true, false, InPlaceRule::kIgnored,
   Side::kDst, CountFrom::kNone, {kNoSide, kNoSide},
   1, {{1, "binomial", "empty messages up a binomial tree to the root"}}},
  {CollType::kFanout, "fanout", true, false, InPlaceRule::kIgnored,
   Side::kDst, CountFrom::kNone, {kNoSide, kNoSide},
   1, {{1, "binomial", "empty messages down a binomial tree from the "
                       "root"}}},
};
// clang-format on
static_assert(sizeof(kCollTraits) / sizeof(kCollTraits[0]) ==
              static_cast<size_t>(CollType::kCount));

namespace {

constexpr bool rows_in_order() {
  for (size_t i = 0; i < sizeof(kCollTraits) / sizeof(kCollTraits[0]); ++i) {
    if (static_cast<size_t>(kCollTraits[i].type) != i) return false;
    for (uint8_t a = 0; a < kCollTraits[i].nalgs; ++a)
      if (kCollTraits[i].algs[a].id != a + 1) return false;
  }
  return true;
}
static_assert(rows_in_order(), "rows by CollType, algorithm ids 1..nalgs");

constexpr Holds holds_of(Extent e) {
  switch (e) {
    case Extent::kCount:
      return Holds::kCount;
    case Extent::kTeam:
      return Holds::kTeam;
    case Extent::kVec:
      return Holds::kVec;
    case Extent::kVecMine:
      return Holds::kVecMine;
  }
  return Holds::kNothing;
}

constexpr RolePlan plan_of(const CollTraits& t, bool root, bool flag) {
  RolePlan p{};
  const Role r{0, 1, 0, root, flag};
  p.in_place = in_place_applies(t, flag, root);
  for (int i = 0; i < 2; ++i) {
    const Side s = static_cast<Side>(i);
    p.present[i] = side_present(t, s, root);
    p.from[i] = static_cast<uint8_t>(
        p.in_place && t.of(s).in_place == InPlace::kOther ? 1 - i : i);
    p.holds[i] = side_touched(t, s, r) ? holds_of(t.side[p.from[i]].extent)
                                       : Holds::kNothing;
  }
  return p;
}

constexpr RolePlans make_plans() {
  RolePlans all{};
  for (size_t c = 0; c < static_cast<size_t>(CollType::kCount); ++c)
    for (int root = 0; root < 2; ++root)
      for (int ip = 0; ip < 2; ++ip)
        all.p[c][root][ip] = plan_of(kCollTraits[c], root != 0, ip != 0);
  return all;
}

}  // namespace

constexpr RolePlans kRolePlans = make_plans();

const char* coll_type_name(CollType t) {
  const CollTraits* tr = coll_traits(t);
  return tr != nullptr ? tr->name : "unknown";
}

const AlgName* find_alg_name(CollType c, const char* name) {
  const CollTraits* t = coll_traits(c);
  if (t == nullptr || name == nullptr) return nullptr;
  for (uint8_t i = 0; i < t->nalgs; ++i)
    if (strcasecmp(t->algs[i].name, name) == 0) return &t->algs[i];
  return nullptr;
}

const AlgName* find_alg_id(CollType c, uint8_t id) {
  const CollTraits* t = coll_traits(c);
  if (t == nullptr || id == 0 || id > t->nalgs) return nullptr;
  return &t->algs[id - 1];
}

bool side_arrays(const CollTraits& t, Side s, const CollDesc& d, bool root,
                 uint64_t* counts, uint64_t* displs) {
  *counts = *displs = 0;
  const SideTraits& st = t.of(s);
  if (st.arrays == Arrays::kNone || !side_present(t, s, root)) return false;
  *counts = s == Side::kSrc ? d.src_counts : d.dst_counts;
  if (st.arrays == Arrays::kCountsDispls)
    *displs = s == Side::kSrc ? d.src_displs : d.dst_displs;
  return true;
}

}  // namespace ucc::off

// The collectives, one row each (coll_traits.h has the words), and the
// algorithm catalogue (offload/algorithms.def). Adding a collective: a
// CollType value (types.h), its row here, its algorithms in device/coll
// with their rows in algorithms.def.
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
   Side::kDst, CountFrom::kNone, {kNoSide, kNoSide}},
  {CollType::kBcast, "bcast", true, false, InPlaceRule::kIgnored,
   Side::kSrc, CountFrom::kBuffer,
   {side(E, Extent::kCount, kSame, Layout::kNone), kNoSide}},
  {CollType::kReduce, "reduce", true, true, InPlaceRule::kRoot,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kCount, kSame, Layout::kNone),
    side(R, Extent::kCount, kSame, Layout::kNone)}},
  {CollType::kAllreduce, "allreduce", false, true, InPlaceRule::kEveryone,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kCount, kSame, Layout::kSplit),
    side(E, Extent::kCount, kSame, Layout::kSplit)}},
  {CollType::kAllgather, "allgather", false, false, InPlaceRule::kEveryone,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kCount, kUnused, Layout::kOwn),
    side(E, Extent::kTeam, kSame, Layout::kTeam)}},
  {CollType::kAlltoall, "alltoall", false, false, InPlaceRule::kEveryone,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kTeam, kSame, Layout::kTeam),
    side(E, Extent::kTeam, kSame, Layout::kTeam)}},
  {CollType::kReduceScatter, "reduce_scatter", false, true,
   InPlaceRule::kEveryone, Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kTeam, kSame, Layout::kTeam),
    side(E, Extent::kCount, kOther, Layout::kOwn)}},
  {CollType::kGather, "gather", true, false, InPlaceRule::kRoot,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kCount, kUnused, Layout::kOwn),
    side(R, Extent::kTeam, kSame, Layout::kTeam)}},
  {CollType::kGatherv, "gatherv", true, false, InPlaceRule::kRoot,
   Side::kDst, CountFrom::kMine,
   {side(E, Extent::kCount, kUnused, Layout::kOwn),
    side(R, Extent::kVec, kSame, Layout::kVec, Arrays::kCountsDispls)}},
  {CollType::kScatter, "scatter", true, false, InPlaceRule::kRoot,
   Side::kSrc, CountFrom::kBuffer,
   {side(R, Extent::kTeam, kSame, Layout::kTeam),
    side(E, Extent::kCount, kUnused, Layout::kOwn)}},
  {CollType::kScatterv, "scatterv", true, false, InPlaceRule::kRoot,
   Side::kSrc, CountFrom::kMine,
   {side(R, Extent::kVec, kSame, Layout::kVec, Arrays::kCountsDispls),
    side(E, Extent::kCount, kUnused, Layout::kOwn)}},
  {CollType::kAllgatherv, "allgatherv", false, false, InPlaceRule::kEveryone,
   Side::kDst, CountFrom::kMine,
   {side(E, Extent::kCount, kUnused, Layout::kOwn),
    side(E, Extent::kVec, kSame, Layout::kVec, Arrays::kCountsDispls)},
   true},
  {CollType::kAlltoallv, "alltoallv", false, false, InPlaceRule::kEveryone,
   Side::kDst, CountFrom::kNone,
   {side(E, Extent::kVec, kSame, Layout::kVec, Arrays::kCountsDispls),
    side(E, Extent::kVec, kSame, Layout::kVec, Arrays::kCountsDispls)}},
  {CollType::kReduceScatterv, "reduce_scatterv", false, true,
   InPlaceRule::kEveryone, Side::kDst, CountFrom::kTotal,
   {side(E, Extent::kCount, kSame, Layout::kDstVecPacked),
    side(E, Extent::kVecMine, kOther, Layout::kOwn, Arrays::kCounts)},
   true},
  {CollType::kFanin, "fanin", true, false, InPlaceRule::kIgnored,
   Side::kDst, CountFrom::kNone, {kNoSide, kNoSide}},
  {CollType::kFanout, "fanout", true, false, InPlaceRule::kIgnored,
   Side::kDst, CountFrom::kNone, {kNoSide, kNoSide}},
};
// clang-format on
static_assert(sizeof(kCollTraits) / sizeof(kCollTraits[0]) ==
              static_cast<size_t>(CollType::kCount));

namespace {

constexpr bool rows_in_order() {
  for (size_t i = 0; i < sizeof(kCollTraits) / sizeof(kCollTraits[0]); ++i)
    if (static_cast<size_t>(kCollTraits[i].type) != i) return false;
  return true;
}
static_assert(rows_in_order(), "rows by CollType");

// clang-format off
constexpr AlgName kCatalogue[] = {
#define UCC_ALG(coll, id, name, desc, impl, from, when) \
  {CollType::k##coll, id, #name, desc},
#include "offload/algorithms.def"
};
// clang-format on

constexpr size_t kCatalogueSize = sizeof(kCatalogue) / sizeof(kCatalogue[0]);

// How many entries `c` has, and whether their ids are 1..that, each once.
constexpr uint8_t count_of(CollType c) {
  uint8_t n = 0;
  for (size_t i = 0; i < kCatalogueSize; ++i) n += kCatalogue[i].coll == c;
  return n;
}
constexpr bool ids_dense() {
  for (size_t c = 0; c < static_cast<size_t>(CollType::kCount); ++c) {
    const auto ct = static_cast<CollType>(c);
    const uint8_t n = count_of(ct);
    if (n == 0 || n > kMaxAlgs) return false;
    for (uint8_t id = 1; id <= n; ++id) {
      int seen = 0;
      for (size_t i = 0; i < kCatalogueSize; ++i)
        seen += kCatalogue[i].coll == ct && kCatalogue[i].id == id;
      if (seen != 1) return false;
    }
  }
  return true;
}
static_assert(ids_dense(),
              "algorithms.def: every collective has ids 1..n, each once, "
              "n <= kMaxAlgs");

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
  if (name == nullptr) return nullptr;
  for (const AlgName& a : kCatalogue)
    if (a.coll == c && strcasecmp(a.name, name) == 0) return &a;
  return nullptr;
}

const AlgName* find_alg_id(CollType c, uint8_t id) {
  for (const AlgName& a : kCatalogue)
    if (a.coll == c && a.id == id) return &a;
  return nullptr;
}

uint8_t alg_count(CollType c) { return count_of(c); }

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

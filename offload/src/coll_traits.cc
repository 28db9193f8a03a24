// The collectives, one row each (coll_traits.h has the words). Adding a
// collective: a CollType value (types.h), its row here, its algorithms
// in device/coll and their table in device/select.
#include "offload/coll_traits.h"

#include <strings.h>

#include <initializer_list>

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

// clang-format off
constexpr CollTraits kTraits[] = {
  {CollType::kBarrier, "barrier", false, false, InPlaceRule::kIgnored,
   Side::kDst, CountFrom::kNone, {kNoSide, kNoSide},
   2, {{1, "dissemination", "log2(n) rounds of empty messages to rank + 2^k"},
       {2, "rd", "recursive doubling of empty messages, fold for "
                 "non-powers of two"}}},
  {CollType::kBcast, "bcast", true, false, InPlaceRule::kIgnored,
   Side::kSrc, CountFrom::kBuffer,
   {side(E, Extent::kCount, kSame, Layout::kNone), kNoSide},
   2, {{1, "binomial", "binomial tree, pipelined in slot-sized segments"},
       {2, "cma", "every rank reads the root's vector (cross-memory "
                  "attach)"}}},
  {CollType::kReduce, "reduce", true, true, InPlaceRule::kRoot,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kCount, kSame, Layout::kNone),
    side(R, Extent::kCount, kSame, Layout::kNone)},
   1, {{1, "binomial", "binomial tree, pipelined in slot-sized segments"}}},
  {CollType::kAllreduce, "allreduce", false, true, InPlaceRule::kEveryone,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kCount, kSame, Layout::kSplit),
    side(E, Extent::kCount, kSame, Layout::kSplit)},
   2, {{1, "rd", "recursive doubling with a fold for non-powers of two"},
       {2, "ring", "pipelined ring: reduce-scatter then allgather"}}},
  {CollType::kAllgather, "allgather", false, false, InPlaceRule::kEveryone,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kCount, kUnused, Layout::kOwn),
    side(E, Extent::kTeam, kSame, Layout::kTeam)},
   2, {{1, "ring", "pipelined ring"},
       {2, "cma", "every rank reads every other rank's block (cross-memory "
                  "attach)"}}},
  {CollType::kAlltoall, "alltoall", false, false, InPlaceRule::kEveryone,
   Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kTeam, kSame, Layout::kTeam),
    side(E, Extent::kTeam, kSame, Layout::kTeam)},
   2, {{1, "pairwise", "n steps of symmetric pairwise exchange"},
       {2, "cma", "every rank reads its block of every other rank's src "
                  "(cross-memory attach)"}}},
  {CollType::kReduceScatter, "reduce_scatter", false, true,
   InPlaceRule::kEveryone, Side::kDst, CountFrom::kBuffer,
   {side(E, Extent::kTeam, kSame, Layout::kTeam),
    side(E, Extent::kCount, kOther, Layout::kOwn)},
   1, {{1, "ring", "pipelined ring"}}},
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
   1, {{1, "pairwise", "n steps of symmetric pairwise exchange of our "
                       "block"}}},
  {CollType::kAlltoallv, "alltoallv", false, false, InPlaceRule::kRefused,
   Side::kDst, CountFrom::kNone,
   {side(E, Extent::kVec, kSame, Layout::kVec, Arrays::kCountsDispls),
    side(E, Extent::kVec, kSame, Layout::kVec, Arrays::kCountsDispls)},
   1, {{1, "pairwise", "n steps of symmetric pairwise exchange"}}},
  {CollType::kReduceScatterv, "reduce_scatterv", false, true,
   InPlaceRule::kEveryone, Side::kDst, CountFrom::kTotal,
   {side(E, Extent::kCount, kSame, Layout::kDstVecPacked),
    side(E, Extent::kVecMine, kOther, Layout::kOwn, Arrays::kCounts)},
   1, {{1, "ring", "pipelined ring over blocks of any size"}}},
  {CollType::kFanin, "fanin", true, false, InPlaceRule::kIgnored,
   Side::kDst, CountFrom::kNone, {kNoSide, kNoSide},
   1, {{1, "binomial", "empty messages up a binomial tree to the root"}}},
  {CollType::kFanout, "fanout", true, false, InPlaceRule::kIgnored,
   Side::kDst, CountFrom::kNone, {kNoSide, kNoSide},
   1, {{1, "binomial", "empty messages down a binomial tree from the "
                       "root"}}},
};
// clang-format on
static_assert(sizeof(kTraits) / sizeof(kTraits[0]) ==
              static_cast<size_t>(CollType::kCount));

constexpr bool rows_in_order() {
  for (size_t i = 0; i < sizeof(kTraits) / sizeof(kTraits[0]); ++i) {
    if (static_cast<size_t>(kTraits[i].type) != i) return false;
    for (uint8_t a = 0; a < kTraits[i].nalgs; ++a)
      if (kTraits[i].algs[a].id != a + 1) return false;
  }
  return true;
}
static_assert(rows_in_order(), "rows by CollType, algorithm ids 1..nalgs");

}  // namespace

const CollTraits* coll_traits(CollType c) {
  const auto i = static_cast<size_t>(c);
  return i < static_cast<size_t>(CollType::kCount) ? &kTraits[i] : nullptr;
}

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

bool in_place_applies(const CollTraits& t, bool flag, bool root) {
  if (!flag) return false;
  switch (t.in_place) {
    case InPlaceRule::kEveryone:
      return true;
    case InPlaceRule::kRoot:
      return root;
    case InPlaceRule::kIgnored:
    case InPlaceRule::kRefused:
      break;
  }
  return false;
}

bool side_present(const CollTraits& t, Side s, bool root) {
  const Who w = t.of(s).who;
  return w == Who::kEveryone || (w == Who::kRoot && root);
}

bool side_touched(const CollTraits& t, Side s, const Role& r) {
  if (!side_present(t, s, r.root)) return false;
  return !(in_place_applies(t, r.in_place, r.root) &&
           t.of(s).in_place == InPlace::kUnused);
}

bool side_described(const CollTraits& t, Side s, const Role& r) {
  if (!side_present(t, s, r.root)) return false;
  return !in_place_applies(t, r.in_place, r.root) || s == t.keeps;
}

namespace {

// A side's extent as if not in place.
bool plain_extent(const SideTraits& st, const Role& r, const VecFacts& f,
                  uint64_t* elems) {
  switch (st.extent) {
    case Extent::kCount:
      *elems = r.count;
      return true;
    case Extent::kTeam:
      return !__builtin_mul_overflow(r.count, uint64_t{r.n}, elems);
    case Extent::kVec:
      *elems = f.end;
      return true;
    case Extent::kVecMine:
      *elems = f.mine;
      return true;
  }
  return false;
}

}  // namespace

bool side_extent(const CollTraits& t, Side s, const Role& r,
                 const VecFacts facts[2], uint64_t* elems) {
  *elems = 0;
  if (!side_touched(t, s, r)) return true;
  const SideTraits& st = t.of(s);
  if (in_place_applies(t, r.in_place, r.root) &&
      st.in_place == InPlace::kOther) {
    const Side o = other(s);
    return plain_extent(t.of(o), r, facts[static_cast<int>(o)], elems);
  }
  return plain_extent(st, r, facts[static_cast<int>(s)], elems);
}

bool count_agrees(const CollTraits& t, const Role& r, const VecFacts facts[2]) {
  switch (t.count) {
    case CountFrom::kNone:
      return r.count == 0;
    case CountFrom::kTotal:
      return facts[static_cast<int>(Side::kDst)].total == r.count;
    case CountFrom::kMine:
      for (Side s : {Side::kSrc, Side::kDst}) {
        if (t.of(s).layout == Layout::kVec && side_present(t, s, r.root) &&
            facts[static_cast<int>(s)].mine != r.count)
          return false;
      }
      return true;
    case CountFrom::kBuffer:
      break;
  }
  return true;
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

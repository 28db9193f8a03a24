// What each collective is, reads and writes: one table (coll_traits.cc),
// plain data plus pure functions over it. The host lowers ucc.h's
// arguments with it (host/coll/coll_args.cc), the engine validates descriptors
// and lays out its block tables with it, selection and the capability
// answers read it, and the fuzz target checks what an accepted
// descriptor may touch against it. No other file spells out which
// buffers and arrays a collective names or how long they are.
//
// Words used here:
//   side      one of the descriptor's two buffers, src or dst, with the
//             user arrays that describe it (v-collectives).
//   n         the ranks taking part (the team, or the active set); `me`
//             this rank's place among them.
//   count     the descriptor's count, in its elements (off::elem_size),
//             by the convention each collective's row gives (its
//             CountFrom, and descriptor.h).
//   extent    how many elements of a side this rank's collective may
//             touch, from its start.
//   in place  ucc.h's UCC_COLL_ARGS_FLAG_IN_PLACE: the collective keeps
//             one side's buffer (`keeps`), takes its input from there,
//             and ignores the user's arguments for the other side, which
//             the host aliases to the kept one.
//   block     where rank i's part lies in a side (the engine's block
//             tables, device/engine/blocks.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "offload/descriptor.h"
#include "offload/types.h"
#include "offload/vectors.h"

namespace ucc::off {

enum class Side : uint8_t { kSrc = 0, kDst = 1 };

constexpr Side other(Side s) {
  return s == Side::kSrc ? Side::kDst : Side::kSrc;
}

// Which ranks use a side.
enum class Who : uint8_t {
  kNobody,    // the collective has no such buffer
  kEveryone,  // every rank taking part
  kRoot,      // the root only (rooted collectives)
};

// How many elements a side holds.
enum class Extent : uint8_t {
  kCount,    // count
  kTeam,     // n * count: one block of count per rank
  kVec,      // to the end of the furthest non-empty block its own arrays
             // (counts, displacements) describe
  kVecMine,  // its own count array's entry for this rank
};

// What in place does to a side.
enum class InPlace : uint8_t {
  kSame,    // nothing: it keeps its extent (the other side aliases it)
  kUnused,  // it is not touched: its data is read from, or stays in, the
            // kept side
  kOther,   // it holds what the other side holds (the kept buffer is the
            // whole vector, e.g. reduce_scatter's dst)
};

// Where rank i's block lies in a side, in elements.
enum class Layout : uint8_t {
  kNone,          // no block table: the algorithm walks count itself
  kSplit,         // count split into n balanced blocks (allreduce)
  kTeam,          // count elements at i * count
  kVec,           // the side's own count and displacement arrays
  kDstVecPacked,  // the dst count array, blocks packed in rank order
  kOwn,           // every block is this rank's whole side, at 0; in
                  // place, at this rank's block of the other side
};

// The user arrays that describe a side (v-collectives): element counts
// and displacements, team-size arrays at host addresses in the
// descriptor, 32-bit unless kDescCount64 / kDescDispl64. A missing
// displacement array (0) means blocks packed in rank order.
enum class Arrays : uint8_t { kNone, kCounts, kCountsDispls };

struct SideTraits {
  Who who;
  Extent extent;
  InPlace in_place;
  Layout layout;
  Arrays arrays;
};

// Where the descriptor's count comes from, in ucc.h's arguments.
enum class CountFrom : uint8_t {
  kNone,    // 0: the collective moves no data, or all of it is described
            // by the arrays (alltoallv)
  kBuffer,  // the first plain (not v) side the user describes: its count,
            // divided by n when that side holds a block per rank
  kMine,    // this rank's block: the count of its plain side, or, where
            // the user describes none (in place), this rank's entry of
            // the v side's count array; every v side that holds this
            // rank's block must agree
  kTotal,   // the sum of the dst count array (reduce_scatterv: the whole
            // vector)
};

// Who may ask for in place.
enum class InPlaceRule : uint8_t {
  kIgnored,   // meaningless for the collective: the flag is dropped
  kEveryone,  // any rank
  kRoot,      // the root; other ranks drop the flag
  kRefused,   // not supported
};

// One entry of a collective's algorithm catalogue: what the descriptor's
// `alg` field (1-based id) and UCC_<COLL>_ALG name. Engines implement a
// subset (EngineCaps says which). The rows: offload/algorithms.def.
struct AlgName {
  CollType coll;
  uint8_t id;
  const char* name;
  const char* desc;
};

inline constexpr uint32_t kMaxAlgs = 8;  // per collective

// Alltoallv's onesided row (algorithms.def): it runs the descriptors that
// carry kDescOneSided, and only those (tests/unit/test_select.cc checks
// the id against the row).
inline constexpr uint8_t kAlltoallvOneSided = 3;
// Rows whose algorithm runs only some descriptors (dev::AlgInfo::fits;
// tests/unit/test_select.cc checks the selection around them): alltoall's
// bruck and hier never in place, reduce_scatter's halving only where the
// vector fits the scratch.
inline constexpr uint8_t kAlltoallBruck = 4;
inline constexpr uint8_t kAlltoallHier = 5;
inline constexpr uint8_t kReduceScatterHalving = 4;

struct CollTraits {
  CollType type;
  const char* name;
  bool rooted;
  bool reduces;
  InPlaceRule in_place;
  Side keeps;  // in place: the side whose buffer the user gives
  CountFrom count;
  SideTraits side[2];  // indexed by Side
  // Every member passes the same dst count array (allgatherv,
  // reduce_scatterv): selection goes by its largest block, which every
  // member sees alike (select_bytes).
  bool alike_counts = false;

  constexpr const SideTraits& of(Side s) const {
    return side[static_cast<int>(s)];
  }
  // Whether it carries data (barrier, fanin and fanout do not).
  bool moves_data() const {
    return of(Side::kSrc).who != Who::kNobody ||
           of(Side::kDst).who != Who::kNobody;
  }
  // Whether the engine fills block tables for it.
  bool uses_blocks() const {
    return of(Side::kSrc).layout != Layout::kNone ||
           of(Side::kDst).layout != Layout::kNone;
  }
  bool vector() const {
    return of(Side::kSrc).arrays != Arrays::kNone ||
           of(Side::kDst).arrays != Arrays::kNone;
  }
};

// The rows, indexed by CollType (coll_traits.cc).
extern const CollTraits kCollTraits[static_cast<size_t>(CollType::kCount)];

// The row of `c`; nullptr for a value out of range (untrusted input).
inline const CollTraits* coll_traits(CollType c) {
  const auto i = static_cast<size_t>(c);
  return i < static_cast<size_t>(CollType::kCount) ? &kCollTraits[i] : nullptr;
}

// The catalogue entry of `c` called `name` (case-insensitive), or
// nullptr; by id likewise. Ids of a collective run 1..alg_count(c).
const AlgName* find_alg_name(CollType c, const char* name);
const AlgName* find_alg_id(CollType c, uint8_t id);
uint8_t alg_count(CollType c);

// --- one rank's view of one collective --------------------------------------

// What a rank knows of its collective before looking at any buffer.
struct Role {
  uint64_t count;  // the descriptor's count
  uint32_t n;      // ranks taking part
  uint32_t me;     // this rank's place
  bool root;       // this rank is the root (rooted collectives)
  bool in_place;   // as the descriptor says (kDescInPlace)
};

// Whether in place takes effect on this rank (the rule above; kRefused
// counts as not).
constexpr bool in_place_applies(const CollTraits& t, bool flag, bool root) {
  return flag && (t.in_place == InPlaceRule::kEveryone ||
                  (t.in_place == InPlaceRule::kRoot && root));
}
// Whether this rank has side s at all (its Who), whatever in place does.
constexpr bool side_present(const CollTraits& t, Side s, bool root) {
  const Who w = t.of(s).who;
  return w == Who::kEveryone || (w == Who::kRoot && root);
}
// Whether this rank's collective touches side s.
constexpr bool side_touched(const CollTraits& t, Side s, const Role& r) {
  return side_present(t, s, r.root) &&
         !(in_place_applies(t, r.in_place, r.root) &&
           t.of(s).in_place == InPlace::kUnused);
}
// Whether the user describes side s on this rank: it is present, and not
// the side in place ignores.
constexpr bool side_described(const CollTraits& t, Side s, const Role& r) {
  return side_present(t, s, r.root) &&
         (!in_place_applies(t, r.in_place, r.root) || s == t.keeps);
}

// One rank's role resolved once for every collective (at compile time,
// coll_traits.cc), so that the engine's per-descriptor checks are table
// look-ups: whether in place takes effect, which sides are present, and
// what each side holds once in place is applied: nothing (not touched),
// count, a block per rank, or what the arrays of `from` (the side itself,
// or with InPlace::kOther the other one) describe.
enum class Holds : uint8_t { kNothing, kCount, kTeam, kVec, kVecMine };
struct RolePlan {
  bool in_place;
  bool present[2];
  Holds holds[2];
  uint8_t from[2];
};
struct RolePlans {
  RolePlan p[static_cast<size_t>(CollType::kCount)][2][2];  // [coll][root][ip]
};
extern const RolePlans kRolePlans;

inline const RolePlan& role_plan(const CollTraits& t, const Role& r) {
  return kRolePlans.p[static_cast<size_t>(t.type)][r.root][r.in_place];
}

// The elements side s may touch on this rank (0 when it touches none);
// false when n * count overflows. facts[s]: what side s's arrays say
// (vec_scan with me = r.me), for the sides that have arrays on this rank.
inline bool side_extent(const CollTraits& t, Side s, const Role& r,
                        const VecFacts facts[2], uint64_t* elems) {
  const RolePlan& p = role_plan(t, r);
  const int i = static_cast<int>(s);
  const Holds h = p.holds[i];
  if (h == Holds::kNothing) {
    *elems = 0;
  } else if (h == Holds::kCount) {
    *elems = r.count;
  } else if (h == Holds::kTeam) {
    return !__builtin_mul_overflow(r.count, uint64_t{r.n}, elems);
  } else {
    const VecFacts& f = facts[p.from[i]];
    *elems = h == Holds::kVec ? f.end : f.mine;
  }
  return true;
}

// Whether the descriptor's count agrees with the arrays: kNone wants 0;
// kTotal the dst total; kMine this rank's entry of every v side that
// holds this rank's block.
inline bool count_agrees(const CollTraits& t, const Role& r,
                         const VecFacts facts[2]) {
  if (t.count == CountFrom::kBuffer) return true;
  if (t.count == CountFrom::kNone) return r.count == 0;
  if (t.count == CountFrom::kTotal)
    return facts[static_cast<int>(Side::kDst)].total == r.count;
  const RolePlan& p = role_plan(t, r);  // kMine
  for (int s = 0; s < 2; ++s) {
    if (t.side[s].layout == Layout::kVec && p.present[s] &&
        facts[s].mine != r.count)
      return false;
  }
  return true;
}

// Whether side s has user arrays on this rank; *counts and *displs are
// then the descriptor's addresses of them (displs 0: none, or the side
// takes none).
bool side_arrays(const CollTraits& t, Side s, const CollDesc& d, bool root,
                 uint64_t* counts, uint64_t* displs);

// The message size selection goes by, in bytes: count elements (one
// rank's block, or the whole vector of bcast, reduce and allreduce), or
// for the collectives with alike_counts `largest` elements, the largest
// block of the dst count array (the engine reads it: VecFacts::largest).
// Every member of a collective must select alike, so nothing a member
// passes differently from the others may count here: alltoallv's arrays
// are each rank's own, so no rule of its goes by size.
inline uint64_t select_bytes(const CollDesc& d, const CollTraits& t,
                             uint64_t largest) {
  return (t.alike_counts ? largest : d.count) * elem_size(d);
}

}  // namespace ucc::off

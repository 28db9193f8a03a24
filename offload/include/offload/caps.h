// What an engine can do, as it says itself: the capability record. An
// engine fills one when it starts (dev::Engine::caps); the inline link
// reads it from the engine in this process, the emu link receives it in
// the daemon's answer to kHello (proto.h). The host answers
// ucc_coll_query and checks collective arguments against it, so what the
// library accepts is what the engine that runs the collective can do.
//
// It also carries the engine's selection table, as data: per collective,
// which algorithms it implements (ids of the catalogue in
// coll_traits.h), the configured override, and rules of the form "from
// this many bytes, when this holds, this algorithm", first match wins.
// The engine selects with select_alg_id() on its own record; the host
// evaluates the same function on the copy it got to tell a user which
// algorithm runs (ucc_team_coll_algs in ucc_ext.h).
//
// Fixed layout and versioned: a reader checks `version` and `bytes`
// (caps_ok) before it trusts a field, and treats ids and masks as
// untrusted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "offload/types.h"

namespace ucc::off {

inline constexpr uint16_t kCapsVersion = 11;  // 11: kWideNodeAware
inline constexpr uint32_t kMaxRules = 7;      // per collective

// What a rule needs besides the size.
enum class When : uint8_t {
  kAlways = 0,
  kSingleCopy = 1,       // single copy can run this collective (SelectInput)
  kNodeAware = 2,        // the team spans several hosts, some with several of
                         // its ranks, and the collective covers the whole team
  kLinear = 3,           // the team is on one host, 4 to linear_ranks ranks,
                         // and the collective covers the whole team
  kCrowded = 4,          // kLinear, and the team has more ranks than the host
                         // has CPUs for them (EngineCaps::cpus)
  kWide = 5,             // the team has wide_ranks ranks or more, and the
                         // collective covers the whole team
  kWidePow2 = 6,         // kWide, and the team's size is a power of two
  kWideFlat = 7,         // kWide, and not kNodeAware
  kNarrowNodeAware = 8,  // kNodeAware, and not kWide
  kWideNodeAware = 9,    // kNodeAware, and kWide
};

// A rule holds from min_bytes up to, not including, below_bytes (0: no
// bound), where its condition holds. With per_rank, the rule holds on
// wide teams only (SelectInput::wide) and below_bytes is per rank of the
// team (per_rank 1: a bound that grows with the team, as a latency-bound
// algorithm's steps do) or for the team's whole vector (per_rank 2: the
// bound is below_bytes / n, nothing where that is 0; an algorithm that
// holds the vector in scratch).
struct SelectRule {
  uint64_t min_bytes;
  uint8_t alg;  // catalogue id
  When when;
  uint8_t per_rank;
  uint8_t pad;
  uint32_t below_bytes;
};
static_assert(sizeof(SelectRule) == 16);

struct CollCaps {
  uint8_t algs;         // bit id - 1: implemented
  uint8_t single_copy;  // bit id - 1: a single-copy algorithm
  uint8_t def_alg;      // when no rule matches
  uint8_t forced;       // 0, or the configured override
  uint8_t nrules;
  uint8_t node_aware;  // bit id - 1: a node-aware algorithm (whole team)
  uint8_t pad[2];
  SelectRule rules[kMaxRules];
};
static_assert(sizeof(CollCaps) == 8 + 16 * kMaxRules);

inline constexpr size_t kNumDTypes = static_cast<size_t>(DType::kCount);
inline constexpr size_t kNumColls = static_cast<size_t>(CollType::kCount);

struct EngineCaps {
  uint16_t version;  // kCapsVersion
  uint16_t pad0;
  uint32_t bytes;  // sizeof(EngineCaps) of the writer
  uint32_t max_team_size;
  uint32_t max_reduce_elem;  // bytes of the largest element it reduces
  uint64_t max_bytes;        // largest buffer it takes
  uint8_t user_reduce;       // 1: it reduces generic datatypes (host callback)
  uint8_t single_copy;       // 1: single-copy algorithms may run
  uint8_t linear_ranks;      // When::kLinear's largest team (0: never)
  uint8_t pad1;
  uint16_t cpus;  // When::kCrowded: the CPUs one host's engines run on
  uint16_t wide_ranks;              // When::kWide's smallest team (0: never)
  uint16_t reduce_ops[kNumDTypes];  // per DType: bit ROp, ops it reduces
  // KiB of scratch per running collective of a wide team (EngineConfig::
  // wide_scratch): When::kWide rules bounded by it hold where the
  // collective's vector fits (SelectRule::per_rank 2).
  uint16_t scratch_kib;
  uint8_t pad2[4];
  CollCaps coll[kNumColls];
};
static_assert(std::is_trivially_copyable_v<EngineCaps>);
static_assert(offsetof(EngineCaps, reduce_ops) == 32);
static_assert(offsetof(EngineCaps, coll) == 80);

// Whether a record received from an engine can be read as ours.
inline bool caps_ok(const EngineCaps& c) {
  return c.version == kCapsVersion && c.bytes == sizeof(EngineCaps);
}

inline bool caps_reduces(const EngineCaps& c, DType t, ROp op) {
  const auto i = static_cast<size_t>(t);
  const auto b = static_cast<unsigned>(op);
  return i < kNumDTypes && b < 16 && ((c.reduce_ops[i] >> b) & 1) != 0;
}

inline bool caps_has_alg(const CollCaps& c, uint8_t id) {
  return id >= 1 && id <= 8 && ((c.algs >> (id - 1)) & 1) != 0;
}

// What selection looks at in one collective.
struct SelectInput {
  uint8_t alg;       // the descriptor's explicit id, 0 = auto
  uint64_t bytes;    // select_bytes (coll_traits.h)
  bool single_copy;  // single copy can run it (the engine's verdict)
  bool whole_team;   // it covers the whole team (no active set)
  bool node_aware;   // whole team, several hosts, some with several ranks
  bool linear;       // whole team, one host, 4 to linear_ranks ranks
  bool crowded;      // linear, and more ranks than cpus
  // Whole team of wide_ranks ranks or more: its ranks; 0: not wide.
  uint32_t wide = 0;
};

// SelectInput::linear for a whole-team collective of a team of n ranks.
inline bool linear_team(const EngineCaps& c, uint32_t n, bool one_host) {
  return one_host && n >= 4 && n <= c.linear_ranks;
}

// SelectInput::crowded likewise: a linear team whose ranks outnumber the
// CPUs their engines run on, so that every wait on a peer may be a trip
// through the scheduler.
inline bool crowded_team(const EngineCaps& c, uint32_t n, bool one_host) {
  return linear_team(c, n, one_host) && n > c.cpus;
}

// Whether a team of n ranks is wide (SelectInput::wide: n if so).
inline bool wide_team(const EngineCaps& c, uint32_t n) {
  return c.wide_ranks != 0 && n >= c.wide_ranks;
}

// Where rule r ends for `in` (0: it does not; per rank: on wide teams,
// where per_rank 2 gives 0 for a rule that never holds).
inline uint64_t rule_below(const SelectRule& r, uint32_t wide) {
  if (r.per_rank == 1) return uint64_t{r.below_bytes} * wide;
  if (r.per_rank == 2) return wide != 0 ? r.below_bytes / wide : 0;
  return r.below_bytes;
}

// The algorithm id for `in`: an explicit or forced id (a single-copy one
// only where single copy can run, a node-aware one only for the whole
// team), else the first rule that matches, else the default. 0 only for a
// record without a default.
inline uint8_t select_alg_id(const CollCaps& c, const SelectInput& in) {
  const uint8_t id = in.alg != 0 ? in.alg : c.forced;
  const bool known = id >= 1 && id <= 8;
  const bool sc = known && ((c.single_copy >> (id - 1)) & 1);
  const bool na = known && ((c.node_aware >> (id - 1)) & 1);
  if (id != 0 && (!sc || in.single_copy) && (!na || in.whole_team)) return id;
  const uint32_t n = c.nrules < kMaxRules ? c.nrules : kMaxRules;
  for (uint32_t i = 0; i < n; ++i) {
    const SelectRule& r = c.rules[i];
    const bool holds =
        r.when == When::kAlways ||
        (r.when == When::kSingleCopy && in.single_copy) ||
        (r.when == When::kNodeAware && in.node_aware) ||
        (r.when == When::kLinear && in.linear) ||
        (r.when == When::kCrowded && in.crowded) ||
        (r.when == When::kWide && in.wide) ||
        (r.when == When::kWidePow2 && in.wide != 0 &&
         (in.wide & (in.wide - 1)) == 0) ||
        (r.when == When::kWideFlat && in.wide != 0 && !in.node_aware) ||
        (r.when == When::kNarrowNodeAware && in.node_aware && in.wide == 0) ||
        (r.when == When::kWideNodeAware && in.node_aware && in.wide != 0);
    if (r.per_rank != 0 && in.wide == 0) continue;  // wide teams only
    const uint64_t below = rule_below(r, in.wide);
    if (r.per_rank == 2 && below == 0) continue;  // no size fits
    if (in.bytes >= r.min_bytes && (below == 0 || in.bytes < below) && holds)
      return r.alg;
  }
  return c.def_alg;
}

// The sizes at which selection changes, for a whole-team collective on a
// team that can (or cannot) use single copy, node-aware and linear
// algorithms, crowded or not, wide (its ranks) or not (0): out[i] = {from
// bytes, id} with
// out[0].from = 0, in increasing order, neighbours distinct. Returns how
// many (<= max; at most 2 kMaxRules + 1 exist).
struct SelectRange {
  uint64_t from;
  uint8_t alg;
};
uint32_t select_ranges(const CollCaps& c, bool single_copy, bool node_aware,
                       bool linear, bool crowded, uint32_t wide,
                       SelectRange* out, uint32_t max);

}  // namespace ucc::off

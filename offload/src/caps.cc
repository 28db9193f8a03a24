#include "offload/caps.h"

#include "offload/engine_config.h"

namespace ucc::off {
namespace {

bool pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

bool engine_config_ok(const EngineConfig& c) {
  if (c.max_teams == 0 || c.max_teams > kMaxTeamsLimit) return false;
  if (!pow2(c.team_queue) || c.team_queue > 65536) return false;
  if (uint64_t{c.max_teams} * c.team_queue > kMaxCompletionWords) return false;
  if (c.slot_size < 64 || c.slot_size % 64 != 0 || c.slot_size > (64u << 20))
    return false;
  if (!pow2(c.nslots) || c.nslots < 2 || c.nslots > 64) return false;
  if (c.linear_ranks > kMaxLinearRanks) return false;
  if (c.cpus == 0 || c.cpus > kMaxHostCpus) return false;
  if (c.wide_ranks > kMaxWideRanks) return false;
  if (c.wide_scratch % 1024 != 0 || c.wide_scratch > kMaxScratch) return false;
  return c.inflight != 0 && c.inflight <= 64 && c.unexpected <= 4096;
}

uint32_t select_ranges(const CollCaps& c, bool single_copy, bool node_aware,
                       bool linear, bool crowded, uint32_t wide,
                       SelectRange* out, uint32_t max) {
  // Selection only changes where a rule starts or ends: evaluate there.
  uint64_t at[2 * kMaxRules + 1] = {0};
  uint32_t npts = 1;
  const uint32_t n = c.nrules < kMaxRules ? c.nrules : kMaxRules;
  auto add = [&](uint64_t v) {
    uint32_t j = npts++;
    for (; j > 0 && at[j - 1] > v; --j) at[j] = at[j - 1];
    at[j] = v;
  };
  for (uint32_t i = 0; i < n; ++i) {
    add(c.rules[i].min_bytes);
    const uint64_t below = rule_below(c.rules[i], wide);
    if (below != 0) add(below);
  }
  uint32_t k = 0;
  for (uint32_t i = 0; i < npts; ++i) {
    const uint8_t id =
        select_alg_id(c, SelectInput{0, at[i], single_copy, true, node_aware,
                                     linear, crowded, wide});
    if (k != 0 && out[k - 1].alg == id) continue;
    if (k == max) break;
    out[k++] = SelectRange{at[i], id};
  }
  return k;
}

}  // namespace ucc::off

// Algorithm selection, as data: per collective, the implementations this
// engine has (by catalogue id, coll_traits.h) and rules of the form "from
// this many bytes, when this holds, this algorithm" (select.cc), which
// the engine's configuration resolves into the selection table of its
// capability record (off::CollCaps). Selecting is then one pure function
// over that record (off::select_alg_id), the same one the host runs to
// tell users which algorithm runs.
#pragma once

#include <cstdint>

#include "device/run/alg.h"
#include "offload/caps.h"
#include "offload/descriptor.h"
#include "offload/engine_config.h"

namespace ucc::dev {

// The implementation of catalogue entry `id` of `coll`, or nullptr where
// this engine has none.
const AlgInfo* find_impl(off::CollType coll, uint8_t id);

// Fills the record's selection table and algorithm masks from the
// engine's configuration (cfg.cma_min 0: no single copy).
void fill_select_caps(const off::EngineConfig& cfg, off::EngineCaps* caps);

// The algorithm to run `d` of `bytes` (off::select_bytes) on a team whose
// ranks all share this host (one_node) or not, whose shape calls for
// node-aware algorithms (hierarchical: NodeMap::hierarchical), of
// team_size ranks, by the record's table, and its id in *id; nullptr when
// the chosen id has no implementation here.
const AlgInfo* select_alg(const off::EngineCaps& caps, const off::CollDesc& d,
                          uint64_t bytes, bool one_node, bool hierarchical,
                          uint32_t team_size, uint8_t* id);

}  // namespace ucc::dev

// Algorithm selection: which algorithm of a collective runs a descriptor.
// Selection is data: each collective has a table of algorithms and a size
// rule; a configured name overrides the rule.
#pragma once

#include <cstdint>

#include "device/engine/alg.h"
#include "offload/descriptor.h"

namespace ucc::dev {

struct SelectConfig {
  // Allreduce vectors of at least this many bytes use the ring.
  uint64_t allreduce_ring_min_bytes = 64 * 1024;
  // Bcast vectors and allgather / alltoall blocks of at least this many
  // bytes move by single copy (device/coll/single_copy.cc); 0: never (the
  // engine's memory access is not direct, or the kernel does not allow
  // cross-memory attach between ranks).
  uint64_t cma_min_bytes = 0;
  // Per collective: forced algorithm id, 0 = by rule.
  uint8_t forced[static_cast<int>(off::CollType::kCount)] = {};
};

struct AlgTable {
  const AlgInfo* const* algs;
  uint32_t n;
};

AlgTable algorithms_of(off::CollType coll);
// The algorithm of `coll` called `name`, or nullptr.
const AlgInfo* find_alg(off::CollType coll, const char* name);
// Parses an override ("auto" or an algorithm name) into an id (0 = auto).
// false when the name is unknown.
bool parse_alg(off::CollType coll, const char* name, uint8_t* id);
// The algorithm to run `d` on a team of `size` ranks.
const AlgInfo* select_alg(const SelectConfig& cfg, const off::CollDesc& d,
                          uint32_t size);

}  // namespace ucc::dev

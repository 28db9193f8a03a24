// Block tables: where each rank's part of a collective lies in this rank's
// src and dst buffers, in elements. Collectives whose blocks are regular
// (alltoall, gather, ...) and the v-collectives, whose blocks come from
// user arrays of counts and displacements, are described the same way, so
// one algorithm serves both.
//
// The user arrays are host memory named by address in the descriptor;
// they are copied into engine memory through the memory-access adapter
// (MemAccess::read: bounds, and outside the host process the host's
// registrations, under the implicit key 0), never dereferenced directly.
#pragma once

#include <cstdint>

#include "device/engine/coll_run.h"
#include "offload/descriptor.h"
#include "platform/mem/mem_access.h"

namespace ucc::dev {

// Whether a collective type takes count/displacement arrays.
bool is_vector_coll(off::CollType c);

// The end (in elements) of the furthest block described by a counts array
// and a displacement array (0: blocks packed in rank order), and their sum
// of counts. false when an array cannot be read or a sum overflows.
bool vector_extent(const plat::MemAccess& mem, uint64_t counts, uint64_t displs,
                   bool wide_counts, bool wide_displs, uint32_t n,
                   uint64_t* end, uint64_t* total);
// Entry i of a counts array; false when it cannot be read.
bool vector_count(const plat::MemAccess& mem, uint64_t counts, bool wide,
                  uint32_t n, uint32_t i, uint64_t* out);

// Fills run's block tables from the descriptor, using `scratch` (4 * n
// entries, owned by the team) for them and reading user arrays through
// run->mem. kInvalidParam when an array cannot be read.
Status fill_blocks(const off::CollDesc& d, uint32_t n, uint32_t rank,
                   uint64_t* scratch, CollRun* run);

}  // namespace ucc::dev

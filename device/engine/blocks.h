// Block tables: where each rank's part of a collective lies in this rank's
// src and dst buffers, in elements, laid out as the collective's traits
// say (off::Layout, coll_traits.h). Collectives whose blocks are regular
// (alltoall, gather, ...) and the v-collectives, whose blocks come from
// user arrays of counts and displacements, are described the same way,
// so one algorithm serves both.
//
// The user arrays are host memory named by address in the descriptor;
// they are read into engine memory through the memory-access adapter
// (MemAccess::read: bounds, and outside the host process the host's
// registrations, under the implicit key 0), never dereferenced directly.
#pragma once

#include <cstdint>

#include "device/engine/coll_run.h"
#include "offload/coll_traits.h"
#include "platform/mem/mem_access.h"

namespace ucc::dev {

// What each side's arrays say (facts[s]; zero for a side without arrays
// on this rank), read through `mem`. false when an array a side needs is
// missing or cannot be read, or its sums overflow.
bool side_facts(const plat::MemAccess& mem, const off::CollTraits& t,
                const off::CollDesc& d, const off::Role& r,
                off::VecFacts facts[2]);

// Fills run's block tables for descriptor d, using `scratch` (4 * r.n
// entries, owned by the team) for them and reading user arrays through
// run->mem. kInvalidParam when an array cannot be read.
Status fill_blocks(const off::CollTraits& t, const off::CollDesc& d,
                   const off::Role& r, uint64_t* scratch, CollRun* run);

}  // namespace ucc::dev

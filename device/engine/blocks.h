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

#include "device/run/coll_run.h"
#include "offload/coll_traits.h"
#include "platform/mem/mem_access.h"

namespace ucc::dev {

// This rank's role in d (validated), at the place run (prepared for d)
// gives it.
inline off::Role role_of(const off::CollDesc& d, const CollRun& run) {
  const off::CollTraits& t = *off::coll_traits(d.coll);
  return off::Role{d.count, run.size, run.rank, t.rooted && d.root == run.rank,
                   (d.flags & off::kDescInPlace) != 0};
}

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
// Points run's block tables at `tables` (4 * n entries, laid out as
// fill_blocks lays out its scratch).
void use_tables(uint64_t* tables, uint32_t n, CollRun* run);

// The user arrays d names on this rank, the ones side_facts reads (each
// side's counts, then its displacements where it takes them; r.n entries
// each, widened to 64 bits), copied into `out` in that order (at most
// 4 * r.n entries): everything the arrays decide. false when one cannot
// be read.
bool read_arrays(const plat::MemAccess& mem, const off::CollTraits& t,
                 const off::CollDesc& d, const off::Role& r, uint64_t* out);
// fill_blocks into `scratch` from the arrays read_arrays() copied into
// `kept` rather than from the user's, so that the tables say what the
// copies say (run: prepared for d; left as it is).
Status fill_kept_blocks(const off::CollTraits& t, const off::CollDesc& d,
                        const off::Role& r, const uint64_t* kept,
                        uint64_t* scratch, const CollRun& run);
// Whether the arrays still hold what read_arrays() copied into `seen`
// (false also when one cannot be read).
bool arrays_same(const plat::MemAccess& mem, const off::CollTraits& t,
                 const off::CollDesc& d, const off::Role& r,
                 const uint64_t* seen);

}  // namespace ucc::dev

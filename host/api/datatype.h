// Generic (user-defined) datatypes: the process-wide table behind
// ucc_dt_create_generic / ucc_dt_destroy, and what collective init and the
// engine's reduction hook need from it.
//
// A generic ucc_datatype_t is a tagged pointer, as ucc.h describes it: the
// address of the type's record (struct ucc_dt_generic, an entry of a fixed
// table of kMaxGenericTypes) with UCC_DATATYPE_GENERIC in the low bits.
// Predefined values (UCC_PREDEFINED_DT, tag 0) are untouched. A handle is
// recognised only while its entry is in use; entries are handed out round
// robin, so a stale handle meets a reused entry as late as possible.
//
// The engine never sees the table: descriptors carry the entry's index
// (CollDesc::user_dt) and element size (user_esize), and the engine calls
// back into generic_reduce (installed as EngineConfig::user_reduce).
//
// Threads: every function may be called from any thread; the table is
// guarded by one mutex, never held while a user callback runs.
#pragma once

#include <ucc/api/ucc.h>

#include <cstdint>

#include "offload/types.h"

namespace ucc::host {

// Generic datatypes that may exist at once in a process.
inline constexpr uint32_t kMaxGenericTypes = 256;

// What collective init needs to know about a generic type.
struct GenericInfo {
  uint32_t index;  // in the table: CollDesc::user_dt
  uint64_t size;   // contig_size (0 unless contig)
  bool contig;     // UCC_GENERIC_DT_OPS_FLAG_CONTIG
  bool reduce;     // UCC_GENERIC_DT_OPS_FLAG_REDUCE (a reduce.cb is set)
};

// The live generic type behind `dt`. kOk, or kInvalidParam when dt is not
// a generic handle of a type that exists (never created, or destroyed).
off::Status generic_find(ucc_datatype_t dt, GenericInfo* out);
// The same by table index.
off::Status generic_at(uint32_t index, GenericInfo* out);

// off::UserReduce::fn: runs type `index`'s reduce.cb on count elements,
// dst = a op b, with n_vectors = 1 and stride 0. kOk; kInvalidParam when
// the type no longer exists or has no callback; kError when the callback
// fails (one log line each). ctx is unused (the table is process-wide).
off::Status generic_reduce(void* ctx, uint32_t index, void* dst, const void* a,
                           const void* b, uint64_t count);

}  // namespace ucc::host

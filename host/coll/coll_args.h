// Internal to the argument lowering (coll_lower.cc, coll_args.cc,
// coll_args_match.cc): ucc.h's encodings and the checks every collective
// shares. Each logs one line naming the collective and returns the public
// status on bad input (an error), or on a valid request it refuses (info,
// once per place).
#pragma once

#include <ucc/api/ucc.h>

#include <atomic>

#include "host/api/datatype.h"
#include "offload/caps.h"
#include "offload/descriptor.h"
#include "platform/os/log.h"

#define ARG_ERROR(st, ...)  \
  do {                      \
    UCC_ERROR(__VA_ARGS__); \
    return st;              \
  } while (0)

// A valid request this library refuses (UCC_ERR_NOT_SUPPORTED): not an
// error, and runtimes fall back on every such call (Open MPI's coll/ucc
// for in-place alltoallv, long double reductions). Logged at info the
// first time at each place, at debug after that.
#define ARG_REFUSED(...)                                  \
  do {                                                    \
    static std::atomic<bool> said_{false};                \
    if (!said_.exchange(true, std::memory_order_relaxed)) \
      UCC_INFO(__VA_ARGS__);                              \
    else                                                  \
      UCC_DEBUG(__VA_ARGS__);                             \
    return UCC_ERR_NOT_SUPPORTED;                         \
  } while (0)

namespace ucc::host::args {

using off::CollType;
using off::DType;
using off::ROp;
using off::Status;

// ucc.h's collective type (one bit) -> ours, with its name; false when
// unknown. known_coll: whether `t` is one of ucc.h's values at all.
// Enum-typed arguments and fields of the API are taken as their bits
// (enum_bits, objects.h): a caller may store any integer there.
bool map_coll(int64_t t, CollType* out, const char** name);
bool known_coll(int64_t t);

// kOk, kNotSupported (a ucc.h type we do not handle) or kInvalidParam.
// Generic types: kInvalidParam when the handle names no live type,
// kNotSupported when it is not contiguous (or its elements exceed 4 GiB),
// else kGeneric with *g filled (g may be nullptr).
Status map_dtype(ucc_datatype_t dt, DType* out, GenericInfo* g = nullptr);
Status map_op(int64_t op, ROp* out);

// The collective's datatype, from `which` buffer: d->dtype, and for a
// generic type d->user_dt and d->user_esize; the log line on failure.
ucc_status_t dtype(const char* coll, const char* which, ucc_datatype_t udt,
                   off::CollDesc* d);
// UCC's FLOAT128 (and FLOAT128_COMPLEX) is C long double, and UCC reduces
// it as long double. Its DType is this machine's format: kFloat128 where
// long double is IEEE binary128 (AArch64), kFloat80 where it is x87
// extended in 16 bytes (x86-64). long_double_known() is false elsewhere
// (long double is double, or double-double): the types then map to
// kFloat128 and move, but do not reduce.
bool long_double_known();
DType long_double_dtype(bool complex);
// Whether the engine reduces `t` with `op` (its capability record plus the
// rule above). Predefined types only.
bool reducible(const off::EngineCaps& caps, DType t, ROp op);
// Whether a generic type reduces with `op`: it has a reduction callback
// (FLAG_REDUCE), which defines every op but AVG.
bool generic_reducible(const GenericInfo& g, ROp op);

// The reduction op into d->op, defined for d's datatype (set by dtype())
// and reduced by the engine.
ucc_status_t reduction_op(const off::EngineCaps& caps, const char* coll,
                          int64_t op, off::CollDesc* d);
// Checks a buffer description (the datatype of `d`, memory type, NULL with
// a nonzero count, overflow) and fills `ref` for `count` elements of
// off::elem_size(d) bytes (d->op must be set for MAXLOC/MINLOC pairs).
ucc_status_t buffer(const char* coll, const char* which,
                    const ucc_coll_buffer_info_t& info, const off::CollDesc& d,
                    uint64_t count, off::BufRef* ref);
// How the collective's messages are matched (tag, active set), its
// timeout and error type; *n and *me become the size of the set of ranks
// taking part and this rank's place in it (coll_args_match.cc).
ucc_status_t matching(const char* coll, const ucc_coll_args_t& a,
                      uint64_t flags, const ucc_team& team, off::CollDesc* d,
                      uint32_t* n, uint32_t* me);
// The root's place among the ranks taking part (its team rank, or its
// position in the active set).
ucc_status_t root_position(const char* coll, uint64_t root,
                           const off::CollDesc& d, uint32_t team_size,
                           uint32_t* out);

// Reductions combine whole elements, one message at a time, in the
// engine: the datatype's elements must fit its messages, and a generic
// type's callback must be reachable from it.
ucc_status_t whole_elements(const off::EngineCaps& caps, const char* coll,
                            const off::CollDesc& d);

}  // namespace ucc::host::args

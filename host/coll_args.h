// Internal to the argument lowering (coll_args.cc, coll_args_v.cc): the
// checks every collective shares. Each logs one line naming the collective
// and returns the public status on bad input.
#pragma once

#include <ucc/api/ucc.h>

#include "offload/descriptor.h"
#include "platform/os/log.h"

#define ARG_ERROR(st, ...)  \
  do {                      \
    UCC_ERROR(__VA_ARGS__); \
    return st;              \
  } while (0)

namespace ucc::host::args {

using off::CollType;
using off::DType;
using off::ROp;
using off::Status;

// ucc.h's collective type (one bit) -> ours, with its name; false when
// unknown. known_coll: whether `t` is one of ucc.h's values at all.
bool map_coll(ucc_coll_type_t t, CollType* out, const char** name);
bool known_coll(ucc_coll_type_t t);

// kOk, kNotSupported (a ucc.h type we do not handle) or kInvalidParam.
Status map_dtype(ucc_datatype_t dt, DType* out);
Status map_op(ucc_reduction_op_t op, ROp* out);

// The datatype of `which` buffer, with the log line on failure.
ucc_status_t dtype(const char* coll, const char* which, ucc_datatype_t udt,
                   DType* out);
// UCC's FLOAT128 (and FLOAT128_COMPLEX) is C long double, which the engine
// reduces as IEEE binary128: that agrees only where long double is
// binary128 (AArch64, for one; not x86-64's 80-bit x87 format). Elsewhere
// the types move but do not reduce.
bool long_double_is_binary128();
// Whether the library reduces `t` with `op` (the engine's table plus the
// rule above).
bool reducible(DType t, ROp op);

// The reduction op, defined for `t`.
ucc_status_t reduction_op(const char* coll, ucc_reduction_op_t op, DType t,
                          ROp* out);
// Checks a buffer description (datatype `want`, memory type, NULL with a
// nonzero count, overflow) and fills `ref` for `count` elements.
ucc_status_t buffer(const char* coll, const char* which,
                    const ucc_coll_buffer_info_t& info, DType want,
                    uint64_t count, off::BufRef* ref);
// Splits a total count into team-size blocks.
ucc_status_t per_rank(const char* coll, const char* which, uint64_t total,
                      uint32_t n, uint64_t* out);

// Collectives lowered by lower_extra (coll_args_v.cc).
bool is_extra(CollType c);

// What the per-collective lowering needs to know besides the arguments.
struct Lowering {
  const char* coll;  // name for log lines
  uint32_t n;        // team size
  uint32_t rank;
  bool in_place;
  bool is_root;  // rooted collectives: this rank is the root
  bool count64;  // COUNT_64BIT
  bool displ64;  // DISPLACEMENTS_64BIT
};

// gather(v), scatter(v), allgatherv, alltoallv, reduce_scatterv, fanin,
// fanout: datatype, op, buffers, arrays, count and flags of `d`.
ucc_status_t lower_extra(const ucc_coll_args_t& a, const Lowering& lo,
                         off::CollDesc* d);

}  // namespace ucc::host::args

// ucc.h's encodings of collectives, datatypes and ops, and the checks of
// one datatype, op or buffer that every collective's lowering shares
// (coll_lower.cc).
#include "host/coll/coll_args.h"

#include <cfloat>
#include <cstring>

#include "host/api/objects.h"
#include "host/exec/gpu_stage.h"
#include "offload/coll_traits.h"
#include "platform/os/log.h"

namespace ucc::host::args {

using off::CollType;
using off::DType;
using off::ROp;

bool map_coll(int64_t t, CollType* out, const char** name) {
  switch (t) {
    case UCC_COLL_TYPE_ALLGATHER:
      *out = CollType::kAllgather;
      break;
    case UCC_COLL_TYPE_ALLREDUCE:
      *out = CollType::kAllreduce;
      break;
    case UCC_COLL_TYPE_ALLTOALL:
      *out = CollType::kAlltoall;
      break;
    case UCC_COLL_TYPE_BARRIER:
      *out = CollType::kBarrier;
      break;
    case UCC_COLL_TYPE_BCAST:
      *out = CollType::kBcast;
      break;
    case UCC_COLL_TYPE_REDUCE:
      *out = CollType::kReduce;
      break;
    case UCC_COLL_TYPE_REDUCE_SCATTER:
      *out = CollType::kReduceScatter;
      break;
    case UCC_COLL_TYPE_GATHER:
      *out = CollType::kGather;
      break;
    case UCC_COLL_TYPE_GATHERV:
      *out = CollType::kGatherv;
      break;
    case UCC_COLL_TYPE_SCATTER:
      *out = CollType::kScatter;
      break;
    case UCC_COLL_TYPE_SCATTERV:
      *out = CollType::kScatterv;
      break;
    case UCC_COLL_TYPE_ALLGATHERV:
      *out = CollType::kAllgatherv;
      break;
    case UCC_COLL_TYPE_ALLTOALLV:
      *out = CollType::kAlltoallv;
      break;
    case UCC_COLL_TYPE_REDUCE_SCATTERV:
      *out = CollType::kReduceScatterv;
      break;
    case UCC_COLL_TYPE_FANIN:
      *out = CollType::kFanin;
      break;
    case UCC_COLL_TYPE_FANOUT:
      *out = CollType::kFanout;
      break;
    default:
      return false;
  }
  *name = off::coll_type_name(*out);
  return true;
}

bool known_coll(int64_t t) {
  const uint64_t v = static_cast<uint64_t>(t);
  return v != 0 && (v & (v - 1)) == 0 && v < UCC_COLL_TYPE_LAST;
}

Status map_dtype(ucc_datatype_t dt, DType* out, GenericInfo* g) {
  if ((dt & UCC_DATATYPE_CLASS_MASK) == UCC_DATATYPE_GENERIC) {
    GenericInfo info;
    if (failed(generic_find(dt, &info))) return Status::kInvalidParam;
    if (g != nullptr) *g = info;
    if (!info.contig || info.size > UINT32_MAX) return Status::kNotSupported;
    *out = DType::kGeneric;
    return Status::kOk;
  }
  if ((dt & UCC_DATATYPE_CLASS_MASK) != UCC_DATATYPE_PREDEFINED)
    return Status::kInvalidParam;
  switch (dt) {
    case UCC_DT_INT8:
      *out = DType::kInt8;
      return Status::kOk;
    case UCC_DT_INT16:
      *out = DType::kInt16;
      return Status::kOk;
    case UCC_DT_INT32:
      *out = DType::kInt32;
      return Status::kOk;
    case UCC_DT_INT64:
      *out = DType::kInt64;
      return Status::kOk;
    case UCC_DT_UINT8:
      *out = DType::kUint8;
      return Status::kOk;
    case UCC_DT_UINT16:
      *out = DType::kUint16;
      return Status::kOk;
    case UCC_DT_UINT32:
      *out = DType::kUint32;
      return Status::kOk;
    case UCC_DT_UINT64:
      *out = DType::kUint64;
      return Status::kOk;
    case UCC_DT_FLOAT16:
      *out = DType::kFloat16;
      return Status::kOk;
    case UCC_DT_BFLOAT16:
      *out = DType::kBfloat16;
      return Status::kOk;
    case UCC_DT_FLOAT32:
      *out = DType::kFloat32;
      return Status::kOk;
    case UCC_DT_FLOAT64:
      *out = DType::kFloat64;
      return Status::kOk;
    case UCC_DT_INT128:
      *out = DType::kInt128;
      return Status::kOk;
    case UCC_DT_UINT128:
      *out = DType::kUint128;
      return Status::kOk;
    case UCC_DT_FLOAT128:
      *out = long_double_dtype(false);
      return Status::kOk;
    case UCC_DT_FLOAT32_COMPLEX:
      *out = DType::kFloat32Complex;
      return Status::kOk;
    case UCC_DT_FLOAT64_COMPLEX:
      *out = DType::kFloat64Complex;
      return Status::kOk;
    case UCC_DT_FLOAT128_COMPLEX:
      *out = long_double_dtype(true);
      return Status::kOk;
    default:
      break;
  }
  return (dt >> UCC_DATATYPE_SHIFT) < UCC_DT_PREDEFINED_LAST
             ? Status::kNotSupported
             : Status::kInvalidParam;
}

Status map_op(int64_t op, ROp* out) {
  switch (op) {
    case UCC_OP_SUM:
      *out = ROp::kSum;
      return Status::kOk;
    case UCC_OP_PROD:
      *out = ROp::kProd;
      return Status::kOk;
    case UCC_OP_MAX:
      *out = ROp::kMax;
      return Status::kOk;
    case UCC_OP_MIN:
      *out = ROp::kMin;
      return Status::kOk;
    case UCC_OP_LAND:
      *out = ROp::kLand;
      return Status::kOk;
    case UCC_OP_LOR:
      *out = ROp::kLor;
      return Status::kOk;
    case UCC_OP_LXOR:
      *out = ROp::kLxor;
      return Status::kOk;
    case UCC_OP_BAND:
      *out = ROp::kBand;
      return Status::kOk;
    case UCC_OP_BOR:
      *out = ROp::kBor;
      return Status::kOk;
    case UCC_OP_BXOR:
      *out = ROp::kBxor;
      return Status::kOk;
    case UCC_OP_AVG:
      *out = ROp::kAvg;
      return Status::kOk;
    case UCC_OP_MAXLOC:
      *out = ROp::kMaxloc;
      return Status::kOk;
    case UCC_OP_MINLOC:
      *out = ROp::kMinloc;
      return Status::kOk;
    default:
      return Status::kInvalidParam;
  }
}

// One buffer description: datatype and memory type checked, the reference
// filled for `count` elements.
ucc_status_t buffer(const char* coll, const char* which,
                    const ucc_coll_buffer_info_t& info, const off::CollDesc& d,
                    uint64_t count, off::BufRef* ref) {
  off::CollDesc mine{};
  ucc_status_t us = dtype(coll, which, info.datatype, &mine);
  if (us != UCC_OK) return us;
  if (mine.dtype != d.dtype ||
      (d.dtype == DType::kGeneric && mine.user_dt != d.user_dt))
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: src and dst datatypes differ", coll);
  // CUDA memory is staged through host memory (gpu_stage.h), which
  // reads the kind carried here; ROCm is not supported.
  const int64_t mt = ucc::host::enum_bits(info.mem_type);
  uint8_t kind = kMemHost;
  if (mt == UCC_MEMORY_TYPE_CUDA || mt == UCC_MEMORY_TYPE_CUDA_MANAGED)
    kind = kMemGpu;
  else if (mt == UCC_MEMORY_TYPE_UNKNOWN)
    kind = kMemUnknown;
  else if (mt != UCC_MEMORY_TYPE_HOST && mt >= 0 && mt < UCC_MEMORY_TYPE_LAST)
    ARG_REFUSED("%s: %s memory type %lld not supported", coll, which,
                static_cast<long long>(mt));
  else if (mt != UCC_MEMORY_TYPE_HOST)
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: %s memory type %lld is invalid", coll,
              which, static_cast<long long>(mt));
  uint64_t bytes;
  if (__builtin_mul_overflow(count, uint64_t{off::elem_size(d)}, &bytes) ||
      bytes > (uint64_t{1} << 62))
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: %s count %llu overflows", coll, which,
              static_cast<unsigned long long>(count));
  if (bytes != 0 && info.buffer == nullptr)
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: %s buffer is NULL with count %llu",
              coll, which, static_cast<unsigned long long>(count));
  *ref = off::BufRef{
      reinterpret_cast<uintptr_t>(info.buffer), bytes, 0, kind, {0, 0, 0}};
  return UCC_OK;
}

ucc_status_t dtype(const char* coll, const char* which, ucc_datatype_t udt,
                   off::CollDesc* d) {
  GenericInfo g{};
  const bool generic = (udt & UCC_DATATYPE_CLASS_MASK) == UCC_DATATYPE_GENERIC;
  const auto v = static_cast<unsigned long long>(udt);
  Status st = map_dtype(udt, &d->dtype, &g);
  if (st == Status::kNotSupported && generic && !g.contig)
    ARG_REFUSED(
        "%s: %s generic datatype %#llx is not contiguous (pack/unpack "
        "types are not supported)",
        coll, which, v);
  if (st == Status::kNotSupported)
    ARG_REFUSED("%s: %s datatype %#llx not supported", coll, which, v);
  if (failed(st) && generic)
    ARG_ERROR(UCC_ERR_INVALID_PARAM,
              "%s: %s datatype %#llx is not a live generic datatype "
              "(destroyed?)",
              coll, which, v);
  if (failed(st))
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: invalid %s datatype %#llx", coll,
              which, v);
  d->user_dt = generic ? g.index : 0;
  d->user_esize = generic ? static_cast<uint32_t>(g.size) : 0;
  return UCC_OK;
}

bool generic_reducible(const GenericInfo& g, ROp op) {
  return g.reduce && op != ROp::kAvg && op != ROp::kNone;
}

ucc_status_t reduction_op(const off::EngineCaps& caps, const char* coll,
                          int64_t op, off::CollDesc* d) {
  ROp* out = &d->op;
  const DType t = d->dtype;
  Status st = map_op(op, out);
  if (st == Status::kNotSupported)
    ARG_REFUSED("%s: op %d not supported", coll, static_cast<int>(op));
  if (failed(st))
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: invalid op %d", coll,
              static_cast<int>(op));
  if (t == DType::kGeneric) {
    GenericInfo g{};
    if (failed(generic_at(d->user_dt, &g)))
      ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: generic datatype was destroyed",
                coll);
    if (!g.reduce)
      ARG_REFUSED(
          "%s: generic datatype has no reduction "
          "(UCC_GENERIC_DT_OPS_FLAG_REDUCE)",
          coll);
    if (!generic_reducible(g, *out))
      ARG_REFUSED("%s: op %s is not defined for generic datatypes", coll,
                  off::rop_name(*out));
    return UCC_OK;
  }
  if (!long_double_known() &&
      (t == DType::kFloat128 || t == DType::kFloat128Complex))
    ARG_REFUSED(
        "%s: %s is C long double in UCC, which is neither IEEE binary128 "
        "nor x87 extended on this machine: reductions on it are not "
        "supported (moving it is)",
        coll, off::dtype_name(t));
  if ((t == DType::kFloat80 || t == DType::kFloat80Complex) &&
      !off::caps_reduces(caps, t, ROp::kSum))
    ARG_REFUSED(
        "%s: %s is this machine's long double, which the engine cannot "
        "reduce (it has no x87 arithmetic: another architecture)",
        coll, off::dtype_name(t));
  if (!reducible(caps, t, *out))
    ARG_REFUSED("%s: op %s is not defined for %s", coll, off::rop_name(*out),
                off::dtype_name(t));
  return UCC_OK;
}

bool long_double_known() {
  return LDBL_MANT_DIG == 113 ||
         (LDBL_MANT_DIG == 64 && sizeof(long double) == 16);
}

DType long_double_dtype(bool complex) {
  if (LDBL_MANT_DIG == 64 && sizeof(long double) == 16)
    return complex ? DType::kFloat80Complex : DType::kFloat80;
  return complex ? DType::kFloat128Complex : DType::kFloat128;
}

bool reducible(const off::EngineCaps& caps, DType t, ROp op) {
  if ((t == DType::kFloat128 || t == DType::kFloat128Complex) &&
      !long_double_known())
    return false;
  return off::caps_reduces(caps, t, op);
}

ucc_status_t whole_elements(const off::EngineCaps& caps, const char* coll,
                            const off::CollDesc& d) {
  if (!off::coll_traits(d.coll)->reduces) return UCC_OK;
  if (d.dtype == DType::kGeneric && caps.user_reduce == 0)
    ARG_REFUSED(
        "%s: a generic datatype's reduction callback lives in this "
        "process; the engine of UCC_OFFLOAD=emu cannot call it",
        coll);
  if (off::elem_size(d) > caps.max_reduce_elem)
    ARG_REFUSED(
        "%s: elements of %u bytes exceed the %u-byte message slot "
        "(UCC_SHM_SEG_SIZE)",
        coll, off::elem_size(d), caps.max_reduce_elem);
  return UCC_OK;
}

}  // namespace ucc::host::args

// Lowering of the collectives beyond the first seven: gather(v),
// scatter(v), allgatherv, alltoallv, reduce_scatterv, fanin and fanout.
// Conventions follow ucc.h (see descriptor.h for what the engine gets):
// v-arrays hold element counts and displacements, 32-bit unless
// COUNT_64BIT / DISPLACEMENTS_64BIT; a NULL displacement array means the
// blocks are packed in rank order.
#include "host/coll_args.h"
#include "offload/vectors.h"

namespace ucc::host::args {
namespace {

using ull = unsigned long long;

// One side described by count/displacement arrays: arrays present, buffer
// covering the furthest block. `total` gets the sum of the counts.
ucc_status_t vside(const Lowering& lo, const char* which,
                   const ucc_coll_buffer_info_v_t& info, off::CollDesc* d,
                   bool src, uint64_t* total) {
  if (info.counts == nullptr)
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: %s counts array is NULL", lo.coll,
              which);
  uint64_t end = 0;
  if (!off::vec_extent(info.counts, info.displacements, lo.count64, lo.displ64,
                       lo.n, &end, total))
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: %s counts/displacements overflow",
              lo.coll, which);
  ucc_coll_buffer_info_t flat{info.buffer, end, info.datatype, info.mem_type};
  ucc_status_t s =
      buffer(lo.coll, which, flat, *d, end, src ? &d->src : &d->dst);
  if (s != UCC_OK) return s;
  uint64_t counts = reinterpret_cast<uintptr_t>(info.counts);
  uint64_t displs = reinterpret_cast<uintptr_t>(info.displacements);
  (src ? d->src_counts : d->dst_counts) = counts;
  (src ? d->src_displs : d->dst_displs) = displs;
  return UCC_OK;
}

uint64_t my_count(const Lowering& lo, const ucc_coll_buffer_info_v_t& info) {
  return off::vec_entry(info.counts, lo.count64, lo.rank);
}

ucc_status_t expect_count(const Lowering& lo, const char* which, uint64_t got,
                          uint64_t want) {
  if (got != want)
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: %s count %llu, expected %llu",
              lo.coll, which, static_cast<ull>(got), static_cast<ull>(want));
  return UCC_OK;
}

#define TRY(call)                \
  do {                           \
    ucc_status_t s_ = (call);    \
    if (s_ != UCC_OK) return s_; \
  } while (0)

// The side a rank describes with a plain buffer (its own block): the
// collective's datatype comes from it, and the count is the block's.
ucc_status_t own_block(const Lowering& lo, const char* which,
                       const ucc_coll_buffer_info_t& info, off::CollDesc* d,
                       off::BufRef* ref) {
  TRY(dtype(lo.coll, which, info.datatype, d));
  d->count = info.count;
  return buffer(lo.coll, which, info, *d, info.count, ref);
}

ucc_status_t gather(const ucc_coll_args_t& a, const Lowering& lo,
                    off::CollDesc* d, bool* in_place) {
  const auto& si = a.src.info;
  const auto& di = a.dst.info;
  if (lo.is_root && *in_place) {
    TRY(dtype(lo.coll, "dst", di.datatype, d));
    TRY(per_rank(lo.coll, "dst", di.count, lo.n, &d->count));
    TRY(buffer(lo.coll, "dst", di, *d, di.count, &d->dst));
    d->src = d->dst;
    return UCC_OK;
  }
  *in_place = false;
  TRY(own_block(lo, "src", si, d, &d->src));
  if (!lo.is_root) return UCC_OK;
  uint64_t all;
  if (__builtin_mul_overflow(si.count, uint64_t{lo.n}, &all))
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: count %llu overflows", lo.coll,
              static_cast<ull>(si.count));
  TRY(expect_count(lo, "dst", di.count, all));
  return buffer(lo.coll, "dst", di, *d, all, &d->dst);
}

ucc_status_t scatter(const ucc_coll_args_t& a, const Lowering& lo,
                     off::CollDesc* d, bool* in_place) {
  const auto& si = a.src.info;
  const auto& di = a.dst.info;
  if (!lo.is_root) {
    *in_place = false;
    return own_block(lo, "dst", di, d, &d->dst);
  }
  TRY(dtype(lo.coll, "src", si.datatype, d));
  TRY(per_rank(lo.coll, "src", si.count, lo.n, &d->count));
  TRY(buffer(lo.coll, "src", si, *d, si.count, &d->src));
  if (*in_place) return UCC_OK;
  TRY(expect_count(lo, "dst", di.count, d->count));
  return buffer(lo.coll, "dst", di, *d, d->count, &d->dst);
}

ucc_status_t gatherv(const ucc_coll_args_t& a, const Lowering& lo,
                     off::CollDesc* d, bool* in_place) {
  const auto& si = a.src.info;
  const auto& dv = a.dst.info_v;
  uint64_t total = 0;
  if (lo.is_root && *in_place) {
    TRY(dtype(lo.coll, "dst", dv.datatype, d));
    TRY(vside(lo, "dst", dv, d, false, &total));
    d->count = my_count(lo, dv);
    d->src = d->dst;
    return UCC_OK;
  }
  *in_place = false;
  TRY(own_block(lo, "src", si, d, &d->src));
  if (!lo.is_root) return UCC_OK;
  TRY(vside(lo, "dst", dv, d, false, &total));
  return expect_count(lo, "src", si.count, my_count(lo, dv));
}

ucc_status_t scatterv(const ucc_coll_args_t& a, const Lowering& lo,
                      off::CollDesc* d, bool* in_place) {
  const auto& sv = a.src.info_v;
  const auto& di = a.dst.info;
  uint64_t total = 0;
  if (!lo.is_root) {
    *in_place = false;
    return own_block(lo, "dst", di, d, &d->dst);
  }
  TRY(dtype(lo.coll, "src", sv.datatype, d));
  TRY(vside(lo, "src", sv, d, true, &total));
  d->count = my_count(lo, sv);
  if (*in_place) return UCC_OK;
  TRY(expect_count(lo, "dst", di.count, d->count));
  return buffer(lo.coll, "dst", di, *d, d->count, &d->dst);
}

ucc_status_t allgatherv(const ucc_coll_args_t& a, const Lowering& lo,
                        off::CollDesc* d, bool in_place) {
  const auto& si = a.src.info;
  const auto& dv = a.dst.info_v;
  uint64_t total = 0;
  TRY(dtype(lo.coll, in_place ? "dst" : "src",
            in_place ? dv.datatype : si.datatype, d));
  TRY(vside(lo, "dst", dv, d, false, &total));
  if (in_place) {
    d->count = my_count(lo, dv);
    d->src = d->dst;
    return UCC_OK;
  }
  d->count = si.count;
  TRY(expect_count(lo, "src", si.count, my_count(lo, dv)));
  return buffer(lo.coll, "src", si, *d, si.count, &d->src);
}

ucc_status_t alltoallv(const ucc_coll_args_t& a, const Lowering& lo,
                       off::CollDesc* d, bool in_place) {
  if (in_place)
    ARG_ERROR(UCC_ERR_NOT_SUPPORTED, "%s: in-place is not supported", lo.coll);
  uint64_t total = 0;
  TRY(dtype(lo.coll, "src", a.src.info_v.datatype, d));
  TRY(vside(lo, "src", a.src.info_v, d, true, &total));
  return vside(lo, "dst", a.dst.info_v, d, false, &total);
}

ucc_status_t reduce_scatterv(const ucc_coll_args_t& a, const Lowering& lo,
                             off::CollDesc* d, bool in_place) {
  const auto& si = a.src.info;
  const auto& dv = a.dst.info_v;
  TRY(dtype(lo.coll, in_place ? "dst" : "src",
            in_place ? dv.datatype : si.datatype, d));
  TRY(reduction_op(lo.coll, a.op, d));
  if (dv.counts == nullptr)
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: dst counts array is NULL", lo.coll);
  uint64_t end = 0, total = 0;
  if (!off::vec_extent(dv.counts, nullptr, lo.count64, false, lo.n, &end,
                       &total))
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: dst counts overflow", lo.coll);
  d->count = total;
  d->dst_counts = reinterpret_cast<uintptr_t>(dv.counts);
  ucc_coll_buffer_info_t dst{dv.buffer, 0, dv.datatype, dv.mem_type};
  if (in_place) {
    TRY(buffer(lo.coll, "dst", dst, *d, total, &d->dst));
    d->src = d->dst;
    return UCC_OK;
  }
  TRY(expect_count(lo, "src", si.count, total));
  TRY(buffer(lo.coll, "src", si, *d, total, &d->src));
  return buffer(lo.coll, "dst", dst, *d, my_count(lo, dv), &d->dst);
}

}  // namespace

ucc_status_t lower_extra(const ucc_coll_args_t& a, const Lowering& lo,
                         off::CollDesc* d) {
  bool in_place = lo.in_place;
  ucc_status_t s = UCC_OK;
  switch (d->coll) {
    case CollType::kFanin:
    case CollType::kFanout:
      in_place = false;
      break;
    case CollType::kGather:
      s = gather(a, lo, d, &in_place);
      break;
    case CollType::kScatter:
      s = scatter(a, lo, d, &in_place);
      break;
    case CollType::kGatherv:
      s = gatherv(a, lo, d, &in_place);
      break;
    case CollType::kScatterv:
      s = scatterv(a, lo, d, &in_place);
      break;
    case CollType::kAllgatherv:
      s = allgatherv(a, lo, d, in_place);
      break;
    case CollType::kAlltoallv:
      s = alltoallv(a, lo, d, in_place);
      break;
    case CollType::kReduceScatterv:
      s = reduce_scatterv(a, lo, d, in_place);
      break;
    default:
      return UCC_ERR_INVALID_PARAM;
  }
  if (s != UCC_OK) return s;
  uint64_t bytes;
  if (__builtin_mul_overflow(d->count, uint64_t{off::elem_size(*d)}, &bytes))
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: count %llu overflows", lo.coll,
              static_cast<ull>(d->count));
  if (in_place) d->flags |= off::kDescInPlace;
  if (lo.count64) d->flags |= off::kDescCount64;
  if (lo.displ64) d->flags |= off::kDescDispl64;
  return UCC_OK;
}

}  // namespace ucc::host::args

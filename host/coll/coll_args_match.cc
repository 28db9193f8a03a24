// Matching, membership, time and error agreement of one collective: the
// part of the lowering that ucc.h's collective arguments share across
// collective types (tag, active set, timeout, error_type), and the root's
// place in an active set.
#include <cstring>

#include "host/api/objects.h"
#include "host/coll/coll_args.h"
#include "host/config/config.h"

namespace ucc::host::args {
namespace {

// Orderings under which every member posts in the same order.
bool posts_in_order(ucc_post_ordering_t o) {
  return o == UCC_COLLECTIVE_POST_ORDERED ||
         o == UCC_COLLECTIVE_INIT_AND_POST_ORDERED;
}

}  // namespace

ucc_status_t matching(const char* coll, const ucc_coll_args_t& a,
                      uint64_t flags, const ucc_team& team, off::CollDesc* d,
                      uint32_t* n, uint32_t* me) {
  if (flags & UCC_COLL_ARGS_FLAG_TIMEOUT) {
    // Finite and positive; longer than about 146 years means "never".
    if (!(a.timeout > 0.0) || a.timeout != a.timeout)
      ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: timeout %g s is not positive", coll,
                a.timeout);
    d->timeout_ns = a.timeout >= 4.6e9 ? UINT64_MAX / 4
                                       : static_cast<uint64_t>(a.timeout * 1e9);
    if (d->timeout_ns == 0) d->timeout_ns = 1;
  } else {
    d->timeout_ns = team.ctx->settings.coll_timeout_ns;  // UCC_COLL_TIMEOUT
  }
  // error_type has no mask bit in ucc.h, and runtimes leave it as the
  // stack had it (PyTorch's ProcessGroupUCC never sets it), so that two
  // members may pass different values: read only where the configuration
  // says every member sets it (UCC_COLL_ERROR_TYPE; UCC never reads it).
  switch (team.ctx->settings.error_type) {
    case ErrorTypeMode::kIgnore:
      break;
    case ErrorTypeMode::kGlobal:
      d->flags |= off::kDescErrGlobal;
      break;
    case ErrorTypeMode::kArgs: {
      int et;
      static_assert(sizeof(et) == sizeof(a.error_type));
      memcpy(&et, &a.error_type, sizeof(et));
      if (et == UCC_ERR_TYPE_GLOBAL) d->flags |= off::kDescErrGlobal;
      break;
    }
  }
  bool has_tag = (a.mask & UCC_COLL_ARGS_FIELD_TAG) != 0;
  if (has_tag) d->tag = a.tag;
  if (!posts_in_order(team.ordering)) {
    if (!has_tag)
      ARG_ERROR(UCC_ERR_INVALID_PARAM,
                "%s: a team without a common posting order matches "
                "collectives by tag: set UCC_COLL_ARGS_FIELD_TAG",
                coll);
    d->flags |= off::kDescTagged;
  }
  *n = team.size;
  *me = team.rank;
  if ((a.mask & UCC_COLL_ARGS_FIELD_ACTIVE_SET) == 0) return UCC_OK;
  // Members start + i * stride, i < size, must be distinct team ranks.
  const uint64_t size = a.active_set.size, start = a.active_set.start;
  const int64_t stride = a.active_set.stride;
  if (size == 0 || size > team.size || start >= team.size ||
      (size > 1 && (stride == 0 || stride >= int64_t{team.size} ||
                    stride <= -int64_t{team.size})))
    ARG_ERROR(UCC_ERR_INVALID_PARAM,
              "%s: active set (start %llu, stride %lld, size %llu) does not "
              "fit a team of %u",
              coll, static_cast<unsigned long long>(start),
              static_cast<long long>(stride),
              static_cast<unsigned long long>(size), team.size);
  int64_t last = static_cast<int64_t>(start) +
                 (size > 1 ? stride * static_cast<int64_t>(size - 1) : 0);
  if (last < 0 || last >= int64_t{team.size})
    ARG_ERROR(UCC_ERR_INVALID_PARAM,
              "%s: active set (start %llu, stride %lld, size %llu) leaves "
              "the team of %u",
              coll, static_cast<unsigned long long>(start),
              static_cast<long long>(stride),
              static_cast<unsigned long long>(size), team.size);
  int64_t off = int64_t{team.rank} - static_cast<int64_t>(start);
  int64_t pos = size == 1 ? (off == 0 ? 0 : -1) : off / stride;
  if (size > 1 && off % stride != 0) pos = -1;
  if (pos < 0 || pos >= static_cast<int64_t>(size))
    ARG_ERROR(UCC_ERR_INVALID_PARAM,
              "%s: rank %u is not in the active set (start %llu, stride "
              "%lld, size %llu)",
              coll, team.rank, static_cast<unsigned long long>(start),
              static_cast<long long>(stride),
              static_cast<unsigned long long>(size));
  d->set_start = static_cast<uint32_t>(start);
  d->set_stride = size > 1 ? static_cast<int32_t>(stride) : 1;
  d->set_size = static_cast<uint32_t>(size);
  d->flags |= off::kDescTagged;  // non-members do not count it
  *n = d->set_size;
  *me = static_cast<uint32_t>(pos);
  return UCC_OK;
}

ucc_status_t root_position(const char* coll, uint64_t root,
                           const off::CollDesc& d, uint32_t team_size,
                           uint32_t* out) {
  if (root >= team_size)
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: root %llu out of range (team of %u)",
              coll, static_cast<unsigned long long>(root), team_size);
  if (d.set_size == 0) {
    *out = static_cast<uint32_t>(root);
    return UCC_OK;
  }
  int64_t off = static_cast<int64_t>(root) - int64_t{d.set_start};
  int64_t pos = off / d.set_stride;
  if (off % d.set_stride != 0 || pos < 0 || pos >= int64_t{d.set_size})
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: root %llu is not in the active set",
              coll, static_cast<unsigned long long>(root));
  *out = static_cast<uint32_t>(pos);
  return UCC_OK;
}

}  // namespace ucc::host::args

// ucc_coll_query: the capability query of ucc_ext.h. It answers from the
// collective's traits and the engine's own capability record, the same
// ones lowering checks against, so what it says cannot drift from what
// ucc_collective_init accepts, inline or in the daemon.
#include <cstring>

#include "host/api/objects.h"
#include "host/coll/coll_args.h"
#include "offload/coll_traits.h"

using namespace ucc::host::args;

extern "C" ucc_status_t ucc_coll_query(ucc_context_h ctx, ucc_coll_type_t coll,
                                       ucc_datatype_t datatype,
                                       ucc_reduction_op_t op,
                                       ucc_memory_type_t mem_type,
                                       ucc_coll_caps_t* caps) {
  if (ctx == nullptr || ctx->magic != ucc::host::kCtxMagic || caps == nullptr) {
    UCC_ERROR("ucc_coll_query: invalid context or caps");
    return UCC_ERR_INVALID_PARAM;
  }
  memset(caps, 0, sizeof(*caps));
  CollType c;
  const char* name = nullptr;
  // The enum arguments as their bits: a caller may pass any integer.
  const int64_t ct = ucc::host::enum_bits(coll);
  const int64_t mt = ucc::host::enum_bits(mem_type);
  const int64_t opb = ucc::host::enum_bits(op);
  if (!map_coll(ct, &c, &name)) {
    UCC_ERROR("ucc_coll_query: unknown collective type %#llx",
              static_cast<unsigned long long>(ct));
    return UCC_ERR_INVALID_PARAM;
  }
  if (mt < 0 || mt > UCC_MEMORY_TYPE_UNKNOWN) {
    UCC_ERROR("ucc_coll_query: invalid memory type %lld",
              static_cast<long long>(mt));
    return UCC_ERR_INVALID_PARAM;
  }
  const ucc::off::CollTraits& t = *ucc::off::coll_traits(c);
  const ucc::off::EngineCaps& ec = ctx->engine->caps();
  bool reduces = t.reduces;
  bool data = t.moves_data();
  DType dt = DType::kUint8;
  ucc::host::GenericInfo g{};
  if (data) {
    Status st = map_dtype(datatype, &dt, &g);
    if (st == Status::kInvalidParam) {
      UCC_ERROR("ucc_coll_query: invalid datatype %#llx",
                static_cast<unsigned long long>(datatype));
      return UCC_ERR_INVALID_PARAM;
    }
    if (st != Status::kOk) return UCC_OK;  // valid, not supported
  }
  // Bytes per element: a generic type's own, a pair for MAXLOC/MINLOC.
  uint64_t esize = dt == DType::kGeneric ? g.size : ucc::off::dtype_size(dt);
  if (reduces) {
    ROp rop;
    Status st = map_op(opb, &rop);
    if (st == Status::kInvalidParam) {
      UCC_ERROR("ucc_coll_query: invalid op %lld", static_cast<long long>(opb));
      return UCC_ERR_INVALID_PARAM;
    }
    if (st != Status::kOk) return UCC_OK;
    if (dt == DType::kGeneric) {
      // Reductions move whole elements per message slot (coll_args.cc).
      if (!generic_reducible(g, rop) || ec.user_reduce == 0 ||
          g.size > ec.max_reduce_elem)
        return UCC_OK;
    } else {
      if (!reducible(ec, dt, rop)) return UCC_OK;
      if (ucc::off::rop_is_loc(rop)) esize *= 2;
    }
  }
  // CUDA memory is staged through host memory (gpu_stage.h) wherever the
  // driver is usable; ROCm is not supported.
  const bool cuda =
      mt == UCC_MEMORY_TYPE_CUDA || mt == UCC_MEMORY_TYPE_CUDA_MANAGED;
  if (cuda ? ucc::plat::cuda::driver() == nullptr
           : mt != UCC_MEMORY_TYPE_HOST && mt != UCC_MEMORY_TYPE_UNKNOWN)
    return UCC_OK;
  const ucc::off::CollCaps& cc = ec.coll[static_cast<int>(c)];
  const uint8_t nalgs = ucc::off::alg_count(c);
  for (uint8_t id = 1; id <= nalgs && caps->n_algs < UCC_COLL_CAPS_MAX_ALGS;
       ++id) {
    if (ucc::off::caps_has_alg(cc, id))
      caps->alg_names[caps->n_algs++] = ucc::off::find_alg_id(c, id)->name;
  }
  caps->supported = caps->n_algs > 0;
  // The limits ucc_collective_init and team creation enforce.
  caps->max_count = data ? ec.max_bytes / esize : 0;
  caps->max_team_size = ec.max_team_size;
  return UCC_OK;
}

extern "C" ucc_status_t ucc_team_coll_algs(ucc_team_h team,
                                           ucc_coll_type_t coll,
                                           ucc_coll_alg_range_t* ranges,
                                           uint32_t* n) {
  if (team == nullptr || team->magic != ucc::host::kTeamMagic ||
      team->state != ucc_team::State::kReady || n == nullptr ||
      (ranges == nullptr && *n != 0)) {
    UCC_ERROR(
        "ucc_team_coll_algs: invalid team (or not created yet), or "
        "NULL output");
    return UCC_ERR_INVALID_PARAM;
  }
  CollType c;
  const char* name = nullptr;
  const int64_t ct = ucc::host::enum_bits(coll);
  if (!map_coll(ct, &c, &name)) {
    UCC_ERROR("ucc_team_coll_algs: unknown collective type %#llx",
              static_cast<unsigned long long>(ct));
    return UCC_ERR_INVALID_PARAM;
  }
  const ucc::off::EngineCaps& ec = team->ctx->engine->caps();
  ucc::off::SelectRange r[2 * ucc::off::kMaxRules + 1];
  const uint32_t k = ucc::off::select_ranges(
      ec.coll[static_cast<int>(c)], ec.single_copy != 0, team->hierarchical,
      ucc::off::linear_team(ec, team->size, team->one_host),
      ucc::off::crowded_team(ec, team->size, team->one_host),
      ucc::off::wide_team(ec, team->size) ? team->size : 0, r,
      2 * ucc::off::kMaxRules + 1);
  for (uint32_t i = 0; i < k && i < *n; ++i) {
    const ucc::off::AlgName* a = ucc::off::find_alg_id(c, r[i].alg);
    ranges[i] =
        ucc_coll_alg_range_t{r[i].from, a != nullptr ? a->name : "none"};
  }
  *n = k;
  return UCC_OK;
}

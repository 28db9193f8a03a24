// ucc_dt_create_generic / ucc_dt_destroy and the generic-type table (see
// datatype.h for the handle encoding and the threading rules).
//
// What works with a generic type: contiguous ones (FLAG_CONTIG with
// contig_size > 0) in every collective, moved as contig_size-byte
// elements; in reductions only with FLAG_REDUCE, through reduce.cb.
// Non-contiguous types (pack/unpack) can be created and destroyed, but
// collectives refuse them at init with UCC_ERR_NOT_SUPPORTED.
#include "host/api/datatype.h"

#include <cstring>
#include <mutex>

#include "platform/os/log.h"

// A generic type's record; params->dt of the reduction callback points at
// it. Like UCC's own: the context given at creation, then the ops.
struct ucc_dt_generic {
  void* context;
  ucc_generic_dt_ops_t ops;
};

namespace ucc::host {
namespace {

using off::Status;

constexpr uint64_t kKnownFlags =
    UCC_GENERIC_DT_OPS_FLAG_CONTIG | UCC_GENERIC_DT_OPS_FLAG_REDUCE;

// Zero-initialised statics: no constructor runs at load time (std::mutex's
// is constexpr).
struct Table {
  ucc_dt_generic types[kMaxGenericTypes];
  bool used[kMaxGenericTypes];
  uint32_t next;  // where the round-robin search for a free entry starts
  uint32_t live;
  std::mutex lock;
};
Table g_table{};

static_assert(alignof(ucc_dt_generic) > UCC_DATATYPE_CLASS_MASK,
              "the tag bits of a handle must be free in a record's address");

uint64_t flags_of(const ucc_generic_dt_ops_t& ops) {
  return (ops.mask & UCC_GENERIC_DT_OPS_FIELD_FLAGS) ? ops.flags : 0;
}

ucc_datatype_t handle_of(uint32_t i) {
  return static_cast<ucc_datatype_t>(
             reinterpret_cast<uintptr_t>(&g_table.types[i])) |
         UCC_DATATYPE_GENERIC;
}

// The table index `dt` names (live or not), or kMaxGenericTypes.
uint32_t index_of(ucc_datatype_t dt) {
  if ((dt & UCC_DATATYPE_CLASS_MASK) != UCC_DATATYPE_GENERIC)
    return kMaxGenericTypes;
  const uint64_t p = dt & ~static_cast<uint64_t>(UCC_DATATYPE_CLASS_MASK);
  const uint64_t base = reinterpret_cast<uintptr_t>(&g_table.types[0]);
  if (p < base) return kMaxGenericTypes;
  const uint64_t off = p - base;
  if (off % sizeof(ucc_dt_generic) != 0 ||
      off / sizeof(ucc_dt_generic) >= kMaxGenericTypes)
    return kMaxGenericTypes;
  return static_cast<uint32_t>(off / sizeof(ucc_dt_generic));
}

// Caller holds the lock; i < kMaxGenericTypes.
Status info_locked(uint32_t i, GenericInfo* out) {
  if (!g_table.used[i]) return Status::kInvalidParam;
  const ucc_generic_dt_ops_t& ops = g_table.types[i].ops;
  const uint64_t flags = flags_of(ops);
  out->index = i;
  out->contig = (flags & UCC_GENERIC_DT_OPS_FLAG_CONTIG) != 0;
  out->size = out->contig ? ops.contig_size : 0;
  out->reduce = (flags & UCC_GENERIC_DT_OPS_FLAG_REDUCE) != 0;
  return Status::kOk;
}

}  // namespace

Status generic_find(ucc_datatype_t dt, GenericInfo* out) {
  const uint32_t i = index_of(dt);
  if (i == kMaxGenericTypes) return Status::kInvalidParam;
  std::lock_guard<std::mutex> g(g_table.lock);
  return info_locked(i, out);
}

Status generic_at(uint32_t index, GenericInfo* out) {
  if (index >= kMaxGenericTypes) return Status::kInvalidParam;
  std::lock_guard<std::mutex> g(g_table.lock);
  return info_locked(index, out);
}

Status generic_reduce(void*, uint32_t index, void* dst, const void* a,
                      const void* b, uint64_t count) {
  ucc_reduce_cb_params_t p{};
  ucc_status_t (*cb)(const ucc_reduce_cb_params_t*) = nullptr;
  if (index < kMaxGenericTypes) {
    std::lock_guard<std::mutex> g(g_table.lock);
    const ucc_generic_dt_ops_t& ops = g_table.types[index].ops;
    if (g_table.used[index] &&
        (flags_of(ops) & UCC_GENERIC_DT_OPS_FLAG_REDUCE)) {
      cb = ops.reduce.cb;
      p.cb_ctx = ops.reduce.cb_ctx;
    }
  }
  if (cb == nullptr) {
    UCC_ERROR("generic datatype #%u was destroyed or cannot reduce", index);
    return Status::kInvalidParam;
  }
  p.src1 = const_cast<void*>(a);
  p.src2 = const_cast<void*>(b);
  p.dst = dst;
  p.n_vectors = 1;
  p.count = count;
  p.stride = 0;
  p.dt = &g_table.types[index];
  const ucc_status_t st = cb(&p);
  if (st != UCC_OK) {
    UCC_ERROR("generic datatype #%u: reduction callback failed (%d)", index,
              static_cast<int>(st));
    return Status::kError;
  }
  return Status::kOk;
}

}  // namespace ucc::host

using ucc::host::g_table;
using ucc::host::kMaxGenericTypes;

extern "C" {

ucc_status_t ucc_dt_create_generic(const ucc_generic_dt_ops_t* ops,
                                   void* context, ucc_datatype_t* datatype_p) {
  if (ops == nullptr || datatype_p == nullptr) {
    UCC_ERROR("ucc_dt_create_generic: ops or datatype_p is NULL");
    return UCC_ERR_INVALID_PARAM;
  }
  const uint64_t flags = ucc::host::flags_of(*ops);
  if ((flags & ~ucc::host::kKnownFlags) != 0) {
    UCC_ERROR("ucc_dt_create_generic: unknown flags %#llx",
              static_cast<unsigned long long>(flags));
    return UCC_ERR_INVALID_PARAM;
  }
  if ((flags & UCC_GENERIC_DT_OPS_FLAG_CONTIG) && ops->contig_size == 0) {
    UCC_ERROR("ucc_dt_create_generic: contiguous type with contig_size 0");
    return UCC_ERR_INVALID_PARAM;
  }
  if ((flags & UCC_GENERIC_DT_OPS_FLAG_REDUCE) && ops->reduce.cb == nullptr) {
    UCC_ERROR("ucc_dt_create_generic: FLAG_REDUCE without reduce.cb");
    return UCC_ERR_INVALID_PARAM;
  }
  std::lock_guard<std::mutex> g(g_table.lock);
  if (g_table.live == kMaxGenericTypes) {
    UCC_ERROR("ucc_dt_create_generic: all %u generic datatypes are in use",
              kMaxGenericTypes);
    return UCC_ERR_NO_RESOURCE;
  }
  uint32_t i = g_table.next;
  while (g_table.used[i]) i = (i + 1) % kMaxGenericTypes;
  g_table.next = (i + 1) % kMaxGenericTypes;
  g_table.used[i] = true;
  ++g_table.live;
  g_table.types[i].context = context;
  g_table.types[i].ops = *ops;
  *datatype_p = ucc::host::handle_of(i);
  return UCC_OK;
}

void ucc_dt_destroy(ucc_datatype_t datatype) {
  if ((datatype & UCC_DATATYPE_CLASS_MASK) == UCC_DATATYPE_PREDEFINED)
    return;  // predefined types need no destruction
  const uint32_t i = ucc::host::index_of(datatype);
  std::lock_guard<std::mutex> g(g_table.lock);
  if (i == kMaxGenericTypes || !g_table.used[i]) {
    UCC_ERROR("ucc_dt_destroy: %#llx is not a live generic datatype",
              static_cast<unsigned long long>(datatype));
    return;
  }
  g_table.used[i] = false;
  --g_table.live;
  memset(&g_table.types[i], 0, sizeof(g_table.types[i]));
}

}  // extern "C"

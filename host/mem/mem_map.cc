// ucc_mem_map / ucc_mem_unmap, the context's pool of handles, and the
// checks of mapped buffers at collective init (see mem_map.h).
#include "host/mem/mem_map.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "host/api/objects.h"
#include "platform/mem/proc_maps.h"
#include "platform/os/log.h"

namespace ucc::host {
namespace {

using ull = unsigned long long;

// The live contexts, for ucc_mem_unmap, which is given no context.
// Zero-initialised: no constructor runs at load time (std::mutex's is
// constexpr).
struct Registry {
  std::mutex lock;
  ucc_context* head;
};
Registry g_reg{};

// Unpins a handle's segments and puts it back in the free FIFO.
void release(ucc_context* ctx, MemHandle* m) {
  for (uint32_t i = 0; i < m->pub.nsegs; ++i) ctx->engine->unpin(m->keys[i]);
  ctx->maps.give(m);
}

const char* mode_name(int64_t mode) {
  switch (mode) {
    case UCC_MEM_MAP_MODE_EXPORT:
      return "EXPORT";
    case UCC_MEM_MAP_MODE_IMPORT:
      return "IMPORT";
    case UCC_MEM_MAP_MODE_EXPORT_OFFLOAD:
      return "EXPORT_OFFLOAD";
    case UCC_MEM_MAP_MODE_IMPORT_OFFLOAD:
      return "IMPORT_OFFLOAD";
    default:
      return "?";
  }
}

// The segments of a map request: each empty, or non-NULL, not wrapping
// and (where /proc can tell) mapped in this process.
ucc_status_t check_segments(const ucc_mem_map_params_t& p) {
  if (p.n_segments == 0 || p.segments == nullptr) {
    UCC_ERROR("ucc_mem_map: no segments (n_segments %llu, segments %p)",
              static_cast<ull>(p.n_segments), static_cast<void*>(p.segments));
    return UCC_ERR_INVALID_PARAM;
  }
  if (p.n_segments > kMemMapSegs) {
    UCC_ERROR(
        "ucc_mem_map: %llu segments; a handle holds at most %u (map the "
        "rest with more calls)",
        static_cast<ull>(p.n_segments), kMemMapSegs);
    return UCC_ERR_NOT_SUPPORTED;
  }
  const pid_t me = getpid();
  for (uint64_t i = 0; i < p.n_segments; ++i) {
    const uint64_t a = reinterpret_cast<uintptr_t>(p.segments[i].address);
    const uint64_t len = p.segments[i].len;
    uint64_t end;
    // An empty segment (any address, NULL included) covers no byte: it is
    // accepted, as UCC accepts it, and maps nothing.
    if (len == 0) continue;
    if (a == 0 || __builtin_add_overflow(a, len, &end)) {
      UCC_ERROR("ucc_mem_map: segment %llu [%#llx, +%llu) is %s",
                static_cast<ull>(i), static_cast<ull>(a), static_cast<ull>(len),
                a == 0 ? "NULL" : "wrapping");
      return UCC_ERR_INVALID_PARAM;
    }
    if (plat::range_mapped(me, a, len) == plat::MapState::kUnmapped) {
      UCC_ERROR(
          "ucc_mem_map: segment %llu [%#llx, +%llu) is not mapped in this "
          "process",
          static_cast<ull>(i), static_cast<ull>(a), static_cast<ull>(len));
      return UCC_ERR_INVALID_PARAM;
    }
  }
  return UCC_OK;
}

// A free handle holding p's checked segments, each pinned (emu), made
// live. UCC_ERR_NO_RESOURCE when the pool is empty; the daemon's refusal.
ucc_status_t map_handle(ucc_context* ctx, const ucc_mem_map_params_t& p,
                        int64_t mode, MemHandle** out) {
  MemHandle* h = ctx->maps.take();
  if (h == nullptr) {
    UCC_ERROR(
        "ucc_mem_map: all memory handles of the context are in use "
        "(UCC_MEM_MAP_HANDLES)");
    return UCC_ERR_NO_RESOURCE;
  }
  MemhExport& pub = h->pub;
  pub.magic = kMemhMagic;
  pub.version = kMemhVersion;
  pub.mode = static_cast<uint32_t>(mode);
  pub.pid = static_cast<int32_t>(ctx->addr[0]);
  pub.hostid = ctx->addr[1];
  for (uint32_t i = 0; i < p.n_segments; ++i) {
    const uint64_t a = reinterpret_cast<uintptr_t>(p.segments[i].address);
    const uint64_t len = p.segments[i].len;
    // Nothing to register for an empty segment: key 0, and memh_holds
    // never finds a buffer in it (resolve_ref skips empty buffers).
    h->keys[i] = 0;
    off::Status ps =
        len == 0 ? off::Status::kOk : ctx->engine->pin(a, len, &h->keys[i]);
    if (off::failed(ps)) {
      UCC_ERROR(
          "ucc_mem_map: the engine's daemon refused segment %u [%#llx, "
          "+%llu)",
          i, static_cast<ull>(a), static_cast<ull>(len));
      release(ctx, h);  // unpins the segments before this one
      return to_ucc(ps);
    }
    pub.segs[i] = MemSeg{a, len};
    pub.nsegs = static_cast<uint16_t>(i + 1);
  }
  ctx->maps.publish(h);
  *out = h;
  return UCC_OK;
}

// One buffer of a collective: inside its own handle when one was given
// (or inside the other one where src and dst are the same buffer), else,
// when required or in emu, looked up among the live handles. In emu a
// buffer found inside a segment carries the segment's key.
ucc_status_t resolve_ref(const ucc_context* ctx, const char* coll,
                         const char* which, off::BufRef* ref,
                         const MemHandle* own, const MemHandle* other,
                         bool required) {
  if (ref->bytes == 0) return UCC_OK;
  uint32_t key = 0;
  if (own != nullptr) {
    if (memh_holds(*own, ref->addr, ref->bytes, &key) ||
        (other != nullptr && memh_holds(*other, ref->addr, ref->bytes, &key))) {
      ref->key = key;
      return UCC_OK;
    }
    UCC_ERROR("%s: %s buffer [%#llx, +%llu) is not inside a segment of %s_memh",
              coll, which, static_cast<ull>(ref->addr),
              static_cast<ull>(ref->bytes), which);
    return UCC_ERR_INVALID_PARAM;
  }
  if (ctx->maps.find(ref->addr, ref->bytes, &key) != nullptr) {
    ref->key = key;
    return UCC_OK;
  }
  if (required) {
    UCC_ERROR(
        "%s: MEM_MAPPED_BUFFERS, but the %s buffer [%#llx, +%llu) is not "
        "inside memory mapped to this context",
        coll, which, static_cast<ull>(ref->addr), static_cast<ull>(ref->bytes));
    return UCC_ERR_INVALID_PARAM;
  }
  return UCC_OK;
}

}  // namespace

bool memh_holds(const MemHandle& m, uint64_t addr, uint64_t bytes,
                uint32_t* key) {
  for (uint32_t i = 0; i < m.pub.nsegs; ++i) {
    const MemSeg& s = m.pub.segs[i];
    if (addr >= s.addr && bytes <= s.len && addr - s.addr <= s.len - bytes) {
      *key = m.keys[i];
      return true;
    }
  }
  return false;
}

off::Status MemMaps::init(uint32_t n) {
  if (n != 0 && !pool_.init(n)) return off::Status::kNoMemory;
  for (uint32_t i = 0; i + 1 < n; ++i) pool_[i].next = &pool_[i + 1];
  free_head_ = n != 0 ? &pool_[0] : nullptr;
  free_tail_ = n != 0 ? &pool_[n - 1] : nullptr;
  live_ = nullptr;
  nlive_ = 0;
  return off::Status::kOk;
}

void MemMaps::fini() {
  pool_.release();
  free_head_ = free_tail_ = nullptr;
  live_ = nullptr;
  nlive_ = 0;
}

MemHandle* MemMaps::take() {
  MemHandle* m = free_head_;
  if (m == nullptr) return nullptr;
  free_head_ = m->next;
  if (free_head_ == nullptr) free_tail_ = nullptr;
  m->next = m->prev = nullptr;
  return m;
}

void MemMaps::publish(MemHandle* m) {
  m->live = true;
  m->prev = nullptr;
  m->next = live_;
  if (live_ != nullptr) live_->prev = m;
  live_ = m;
  ++nlive_;
}

void MemMaps::give(MemHandle* m) {
  if (m->live) {
    if (m->prev != nullptr)
      m->prev->next = m->next;
    else
      live_ = m->next;
    if (m->next != nullptr) m->next->prev = m->prev;
    --nlive_;
  }
  // A stale copy of the exported form no longer reads as a handle.
  memset(m, 0, sizeof(*m));
  if (free_tail_ != nullptr)
    free_tail_->next = m;
  else
    free_head_ = m;
  free_tail_ = m;
}

MemHandle* MemMaps::slot(const void* h) const {
  const uintptr_t p = reinterpret_cast<uintptr_t>(h);
  const uintptr_t base = reinterpret_cast<uintptr_t>(pool_.data());
  if (!pool_ || p < base) return nullptr;
  const uintptr_t off = p - base;
  if (off % sizeof(MemHandle) != 0 || off / sizeof(MemHandle) >= pool_.size())
    return nullptr;
  return &pool_[off / sizeof(MemHandle)];
}

const MemHandle* MemMaps::find(uint64_t addr, uint64_t bytes,
                               uint32_t* key) const {
  for (const MemHandle* m = live_; m != nullptr; m = m->next)
    if (memh_holds(*m, addr, bytes, key)) return m;
  return nullptr;
}

uint32_t context_handles(const ucc_mem_map_params_t* attach) {
  if (attach == nullptr) return 0;
  const uint64_t n = attach->n_segments;
  return n == 0 ? 1
                : static_cast<uint32_t>((n + kMemMapSegs - 1) / kMemMapSegs);
}

ucc_status_t memmaps_init(ucc_context* ctx, uint32_t n,
                          const ucc_mem_map_params_t* attach) {
  if (attach != nullptr) {
    if (attach->n_segments > kContextSegs) {
      UCC_ERROR(
          "ucc_context_create: mem_params has %llu segments; a context "
          "takes at most %u",
          static_cast<ull>(attach->n_segments), kContextSegs);
      return UCC_ERR_NOT_SUPPORTED;
    }
    ucc_status_t st = check_segments(*attach);
    if (st != UCC_OK) return st;
  }
  if (failed(ctx->maps.init(n + context_handles(attach))))
    return UCC_ERR_NO_MEMORY;
  if (attach != nullptr) {
    // Into handles of 16 segments, published as the context's own.
    for (uint64_t first = 0; first < attach->n_segments; first += kMemMapSegs) {
      const uint64_t left = attach->n_segments - first;
      const ucc_mem_map_params_t part{attach->segments + first,
                                      left < kMemMapSegs ? left : kMemMapSegs};
      MemHandle* h = nullptr;
      ucc_status_t st = map_handle(ctx, part, UCC_MEM_MAP_MODE_EXPORT, &h);
      if (st != UCC_OK) {
        while (MemHandle* m = ctx->maps.first_live()) release(ctx, m);
        ctx->maps.fini();
        return st;
      }
      h->context = true;
    }
  }
  std::lock_guard<std::mutex> g(g_reg.lock);
  ctx->maps_next = g_reg.head;
  g_reg.head = ctx;
  return UCC_OK;
}

uint64_t mapped_room(const ucc_context* ctx, uint64_t addr,
                     const MemHandle* only) {
  uint64_t room = 0;
  for (const MemHandle* m = only != nullptr ? only : ctx->maps.first_live();
       m != nullptr; m = only != nullptr ? nullptr : m->next) {
    for (uint32_t i = 0; i < m->pub.nsegs; ++i) {
      const MemSeg& s = m->pub.segs[i];
      if (addr >= s.addr && addr - s.addr < s.len &&
          s.len - (addr - s.addr) > room)
        room = s.len - (addr - s.addr);
    }
  }
  return room;
}

void memmaps_fini(ucc_context* ctx) {
  {
    // Out of the list first: from here on ucc_mem_unmap cannot find the
    // handles (and waits for one that has found one).
    std::lock_guard<std::mutex> g(g_reg.lock);
    for (ucc_context** p = &g_reg.head; *p != nullptr; p = &(*p)->maps_next) {
      if (*p == ctx) {
        *p = ctx->maps_next;
        break;
      }
    }
  }
  uint32_t users = 0;
  for (const MemHandle* m = ctx->maps.first_live(); m != nullptr; m = m->next)
    users += m->context ? 0 : 1;
  if (users != 0)
    UCC_WARN(
        "ucc_context_destroy: %u memory handles still mapped; unmapping "
        "them",
        users);
  while (MemHandle* m = ctx->maps.first_live()) release(ctx, m);
  ctx->maps.fini();
}

ucc_status_t memh_resolve(ucc_context* ctx, const ucc_coll_args_t& a,
                          off::CollDesc* d) {
  const char* coll = off::coll_type_name(d->coll);
  const uint64_t flags = (a.mask & UCC_COLL_ARGS_FIELD_FLAGS) ? a.flags : 0;
  if (flags & (UCC_COLL_ARGS_FLAG_SRC_MEMH_GLOBAL |
               UCC_COLL_ARGS_FLAG_DST_MEMH_GLOBAL)) {
    UCC_ERROR(
        "%s: global memory handles (SRC_MEMH_GLOBAL, DST_MEMH_GLOBAL) are "
        "not supported: ucc_mem_map does not import peers' handles",
        coll);
    return UCC_ERR_NOT_SUPPORTED;
  }
  const bool required = (flags & UCC_COLL_ARGS_FLAG_MEM_MAPPED_BUFFERS) != 0;
  const MemHandle* hs = nullptr;
  const MemHandle* hd = nullptr;
  if (a.mask & UCC_COLL_ARGS_FIELD_MEM_MAP_SRC_MEMH) {
    hs = ctx->maps.live(a.src_memh.local_memh);
    if (hs == nullptr) {
      UCC_ERROR("%s: src_memh %p is not a mapped handle of this team's context",
                coll, a.src_memh.local_memh);
      return UCC_ERR_INVALID_PARAM;
    }
  }
  if (a.mask & UCC_COLL_ARGS_FIELD_MEM_MAP_DST_MEMH) {
    hd = ctx->maps.live(a.dst_memh.local_memh);
    if (hd == nullptr) {
      UCC_ERROR("%s: dst_memh %p is not a mapped handle of this team's context",
                coll, a.dst_memh.local_memh);
      return UCC_ERR_INVALID_PARAM;
    }
  }
  // Inline, nothing to check and no keys to give: the common case costs
  // two tests.
  if (!required && hs == nullptr && hd == nullptr &&
      (!ctx->engine->remote() || ctx->maps.nlive() == 0))
    return UCC_OK;
  const bool alias = d->src.addr == d->dst.addr && d->src.bytes == d->dst.bytes;
  ucc_status_t st = resolve_ref(ctx, coll, "src", &d->src, hs,
                                alias ? hd : nullptr, required);
  if (st != UCC_OK) return st;
  return resolve_ref(ctx, coll, "dst", &d->dst, hd, alias ? hs : nullptr,
                     required);
}

}  // namespace ucc::host

using ucc::host::MemHandle;

extern "C" {

ucc_status_t ucc_mem_map(ucc_context_h ctx, ucc_mem_map_mode_t mode,
                         const ucc_mem_map_params_t* params, size_t* memh_size,
                         ucc_mem_map_mem_h* memh) {
  if (ctx == nullptr || ctx->magic != ucc::host::kCtxMagic) {
    UCC_ERROR("ucc_mem_map: invalid context handle");
    return UCC_ERR_INVALID_PARAM;
  }
  const int64_t m = ucc::host::enum_bits(mode);
  if (m < 0 || m >= UCC_MEM_MAP_MODE_LAST) {
    UCC_ERROR("ucc_mem_map: unknown mode %lld", static_cast<long long>(m));
    return UCC_ERR_INVALID_PARAM;
  }
  if (m == UCC_MEM_MAP_MODE_IMPORT || m == UCC_MEM_MAP_MODE_IMPORT_OFFLOAD) {
    UCC_ERROR(
        "ucc_mem_map: mode %s is not supported: an imported handle would "
        "name another process's memory, which this process's engine may "
        "not reach (docs/api.md, \"Mapped memory\")",
        ucc::host::mode_name(m));
    return UCC_ERR_NOT_SUPPORTED;
  }
  if (params == nullptr || memh_size == nullptr || memh == nullptr) {
    UCC_ERROR("ucc_mem_map: params, memh_size and memh must not be NULL");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc_status_t st = ucc::host::check_segments(*params);
  if (st != UCC_OK) return st;
  ucc::host::Guard g(ctx->lock, ctx->mt);
  MemHandle* h = nullptr;
  st = ucc::host::map_handle(ctx, *params, m, &h);
  if (st != UCC_OK) return st;
  *memh = h;
  *memh_size = sizeof(ucc::host::MemhExport);
  return UCC_OK;
}

ucc_status_t ucc_mem_unmap(ucc_mem_map_mem_h* memh) {
  if (memh == nullptr || *memh == nullptr) {
    UCC_ERROR("ucc_mem_unmap: memh is NULL");
    return UCC_ERR_INVALID_PARAM;
  }
  std::lock_guard<std::mutex> rg(ucc::host::g_reg.lock);
  ucc_context* ctx = nullptr;
  MemHandle* h = nullptr;
  for (ucc_context* c = ucc::host::g_reg.head; c != nullptr && h == nullptr;
       c = c->maps_next) {
    h = c->maps.slot(*memh);
    ctx = c;
  }
  if (h == nullptr) {
    UCC_ERROR(
        "ucc_mem_unmap: %p is not a memory handle of any live context "
        "(never mapped, or its context is destroyed)",
        *memh);
    return UCC_ERR_INVALID_PARAM;
  }
  ucc::host::Guard g(ctx->lock, ctx->mt);
  if (!h->live) {
    UCC_ERROR("ucc_mem_unmap: handle %p is not mapped (unmapped twice?)",
              *memh);
    return UCC_ERR_INVALID_PARAM;
  }
  if (h->context) {
    UCC_ERROR(
        "ucc_mem_unmap: handle %p holds the context's mem_params; it is "
        "released with the context",
        *memh);
    return UCC_ERR_INVALID_PARAM;
  }
  ucc::host::release(ctx, h);
  *memh = nullptr;
  return UCC_OK;
}

}  // extern "C"

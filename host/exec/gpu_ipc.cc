// The direct path's IPC caches, flag pages and tokens (see gpu_direct.h).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "host/api/objects.h"
#include "host/coll/request.h"
#include "host/exec/gpu_direct_impl.h"
#include "offload/coll_traits.h"
#include "offload/vectors.h"
#include "platform/os/log.h"

namespace ucc::host::gd {

// An allocation's base, size and IPC handle, from the export cache.
bool export_of(GpuDirectCtx& g, uint64_t p, Export** out) {
  const cu::Driver& d = drv();
  uint64_t id = 0;
  if (d.pointer_get_attribute(&id, cu::kAttrBufferId, p) != cu::kSuccess ||
      id == 0)
    return false;
  Export* victim = &g.exp[0];
  for (uint32_t i = 0; i < g.cap; ++i) {
    Export& e = g.exp[i];
    if (e.id == id) {
      e.used = ++g.clock;
      *out = &e;
      return true;
    }
    if (e.used < victim->used) victim = &e;
  }
  Export e{};
  e.id = id;
  size_t size = 0;
  if (d.mem_get_address_range(&e.base, &size, p) != cu::kSuccess ||
      d.ipc_get_mem_handle(&e.h, e.base) != cu::kSuccess)
    return false;
  e.size = size;
  e.used = ++g.clock;
  *victim = e;
  *out = victim;
  return true;
}

void close_import(GpuDirectCtx& g, Import& e) {
  drv().ipc_close_mem_handle(e.base);
  e.live = false;
  --g.stats.open_now;
}

// Closes the unused imports from process `pid` (all of them, or those
// overlapping [base, base + size) in its space); false when one of those
// is in use.
bool close_stale(GpuDirectCtx& g, uint32_t pid, bool all, uint64_t base,
                 uint64_t size) {
  bool ok = true;
  for (uint32_t i = 0; i < g.cap; ++i) {
    Import& e = g.imp[i];
    if (!e.live || e.pid != pid) continue;
    if (!all &&
        !(e.peer_base < base + size && base < e.peer_base + e.peer_size))
      continue;
    if (e.refs != 0) {
      ok = false;
      continue;
    }
    close_import(g, e);
  }
  return ok;
}

// A peer's allocation opened here (cached); its entry's index, or kNoRef.
// An import from the same process over the same range under another
// handle is stale (the peer freed that allocation and made this one in
// its place): the driver will not open the new one while the old one is
// open, so it is closed first.
uint32_t import_of(GpuDirectCtx& g, const cu::IpcHandle& h, uint32_t pid,
                   uint64_t peer_base, uint64_t peer_size) {
  const cu::Driver& d = drv();
  uint32_t victim = kNoRef;
  for (uint32_t i = 0; i < g.cap; ++i) {
    Import& e = g.imp[i];
    if (e.live && memcmp(e.h.bytes, h.bytes, sizeof(h.bytes)) == 0) {
      e.used = ++g.clock;
      return i;
    }
  }
  close_stale(g, pid, false, peer_base, peer_size);
  for (uint32_t i = 0; i < g.cap; ++i) {
    const Import& e = g.imp[i];
    if (e.refs == 0 && (victim == kNoRef || !e.live ||
                        (g.imp[victim].live && e.used < g.imp[victim].used)))
      victim = i;
  }
  if (victim == kNoRef) {
    UCC_ERROR(
        "GPU direct: all %u IPC cache entries are in use by collectives in "
        "flight (UCC_GPU_IPC_CACHE)",
        g.cap);
    return kNoRef;
  }
  Import& e = g.imp[victim];
  if (e.live) close_import(g, e);
  cu::CuDevPtr base = 0;
  size_t size = 0;
  cu::CuResult cr = d.ipc_open_mem_handle(&base, h, cu::kIpcLazyPeerAccess);
  if (cr == kAlreadyMapped && close_stale(g, pid, true, 0, 0)) {
    // Something of that peer's still maps what the handle names (a range
    // the token did not tell): close what it has of that peer, once.
    cr = d.ipc_open_mem_handle(&base, h, cu::kIpcLazyPeerAccess);
  }
  if (cr == cu::kSuccess) {
    cr = d.mem_get_address_range(nullptr, &size, base);
    if (cr != cu::kSuccess) d.ipc_close_mem_handle(base);
  }
  if (cr != cu::kSuccess) {
    UCC_ERROR("GPU direct: opening a peer's GPU buffer failed (%s)",
              cu::error_name(d, cr));
    return kNoRef;
  }
  e = Import{true, 0, ++g.clock, h, base, size, pid, peer_base, peer_size};
  ++g.stats.opens;
  ++g.stats.open_now;
  return victim;
}

void release_refs(GpuDirectCtx* g, GpuDirectReq& q) {
  for (uint8_t i = 0; i < q.nrefs; ++i)
    if (g != nullptr && q.refs[i] < g->cap && g->imp[q.refs[i]].refs > 0 &&
        --g->imp[q.refs[i]].refs == 0)
      --g->held;
  q.nrefs = 0;
}

// Maps a peer's flag page (first use), registered for the GPU to write
// where `for_gpu` (the worker's kernels raise the done words).
bool map_peer_page(PeerPage& pp, const Token& t, bool for_gpu) {
  if (pp.map != nullptr && pp.pid == t.pid && pp.fd == t.flag_fd &&
      pp.ino == t.flag_ino && pp.dev == t.flag_dev &&
      pp.bytes == t.flag_bytes && pp.words == t.flag_words)
    return true;
  const cu::Driver& d = drv();
  if (pp.map != nullptr) {
    if (pp.dptr != 0) d.host_unregister(pp.map);
    munmap(pp.map, pp.bytes);
    pp.map = nullptr;
  }
  char path[64];
  snprintf(path, sizeof(path), "/proc/%u/fd/%d", t.pid, t.flag_fd);
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  struct stat sb {};
  if (fd < 0 || fstat(fd, &sb) != 0 || sb.st_ino != t.flag_ino ||
      sb.st_dev != t.flag_dev || t.flag_words > t.flag_bytes ||
      static_cast<uint64_t>(sb.st_size) < t.flag_bytes) {
    UCC_ERROR("GPU direct: cannot open the flag page of process %u (%s)", t.pid,
              fd < 0 ? strerror(errno) : "not the page its token names");
    if (fd >= 0) close(fd);
    return false;
  }
  void* p =
      mmap(nullptr, t.flag_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return false;
  cu::CuResult cr = cu::kSuccess;
  cu::CuDevPtr dp = 0;
  if (for_gpu) {
    // The words only: the GPU writes done words, never the tables.
    cr =
        d.host_register(p, t.flag_words,
                        cu::kHostRegisterPortable | cu::kHostRegisterDeviceMap);
    if (cr == cu::kSuccess) cr = d.host_get_device_pointer(&dp, p, 0);
  }
  if (cr != cu::kSuccess) {
    UCC_ERROR("GPU direct: registering a peer's flag page failed (%s)",
              cu::error_name(d, cr));
    munmap(p, t.flag_bytes);
    return false;
  }
  pp = PeerPage{t.pid,
                t.flag_fd,
                t.flag_ino,
                t.flag_dev,
                static_cast<uint8_t*>(p),
                t.flag_bytes,
                t.flag_words,
                dp};
  return true;
}

Token* token_at(GpuDirectTeam& t, const Request* r, uint32_t i) {
  return reinterpret_cast<Token*>(
      t.tokens + (size_t{r->index} * (r->team->size + 1) + i) * kTokenBytes);
}

// A side of the collective: device address and bytes on this rank.
struct Side {
  uint64_t addr, bytes;
};

Side side_of(const off::CollDesc& d, bool dst) {
  const off::BufRef& b = dst ? d.dst : d.src;
  return Side{b.addr, b.bytes};
}

namespace {

// A v-collective's sides with arrays, block by block, into this rank's
// table for the request slot (the rest of the table is left as it was:
// nblk 0 says a side is not told).
bool fill_vtable(GpuDirectCtx& g, GpuDirectTeam& t, Request* r) {
  const off::CollDesc& u = r->gd.user;
  const off::CollTraits* tr = off::coll_traits(u.coll);
  auto* vt = reinterpret_cast<VTable*>(
      vtable_at(t.page, t.page_bytes, t.words_bytes, r->index));
  const uint32_t n = r->team->size;
  if (vt == nullptr || tr == nullptr || n > gpu::kMaxPeers) return false;
  const uint64_t es = off::elem_size(u);
  const bool wide_c = (u.flags & off::kDescCount64) != 0;
  const bool wide_d = (u.flags & off::kDescDispl64) != 0;
  for (int s = 0; s < 2; ++s) {
    VSide& vs = vt->side[s];
    vs.nalloc = vs.nblk = 0;
    const bool dst = s == 1;
    const uint64_t counts = dst ? u.dst_counts : u.src_counts;
    const uint64_t displs = dst ? u.dst_displs : u.src_displs;
    if (tr->of(dst ? off::Side::kDst : off::Side::kSrc).arrays !=
            off::Arrays::kCountsDispls ||
        counts == 0)
      continue;
    const Side sd = side_of(u, dst);
    uint64_t packed = 0;
    for (uint32_t j = 0; j < n; ++j) {
      const uint64_t c =
          off::vec_entry(reinterpret_cast<const void*>(counts), wide_c, j);
      const uint64_t at =
          displs != 0
              ? off::vec_entry(reinterpret_cast<const void*>(displs), wide_d, j)
              : packed;
      packed += c;
      VBlock& b = vs.blk[j];
      b = VBlock{0, c * es, 0, 0};
      if (b.len == 0) continue;
      // Lowering checked that the blocks lie inside the side.
      const uint64_t addr = sd.addr + at * es;
      uint32_t a = 0;
      while (a < vs.nalloc &&
             !(addr >= vs.alloc[a].base &&
               addr + b.len <= vs.alloc[a].base + vs.alloc[a].size))
        ++a;
      if (a == vs.nalloc) {
        Export* e = nullptr;
        if (!export_of(g, addr, &e) || addr + b.len > e->base + e->size) {
          UCC_ERROR(
              "GPU direct: block %u of a v-collective's %s is not inside one "
              "GPU allocation",
              j, dst ? "dst" : "src");
          return false;
        }
        vs.alloc[vs.nalloc++] = VAlloc{e->h, e->base, e->size};
      }
      b.alloc = a;
      b.off = addr - vs.alloc[a].base;
    }
    vs.nblk = n;
  }
  return true;
}

}  // namespace

// Fills this rank's token for the post.
bool fill_token(GpuDirectCtx& g, GpuDirectTeam& t, Request* r, Token* k) {
  memset(k, 0, sizeof(*k));
  k->magic = kTokenMagic;
  k->pid = static_cast<uint32_t>(getpid());
  k->seq = r->gd.seq;
  k->flag_fd = t.fd;
  k->flag_bytes = t.page_bytes;
  k->flag_words = t.words_bytes;
  k->flag_ino = t.ino;
  k->flag_dev = t.dev;
  k->slot = r->index;
  if (r->gd.user.flags & off::kDescInPlace) k->flags |= kTokInPlace;
  const off::CollTraits* tr = off::coll_traits(r->gd.user.coll);
  k->src_len = r->gd.user.src.bytes;
  k->dst_len = r->gd.user.dst.bytes;
  for (int s = 0; s < 2; ++s) {
    const Side sd = side_of(r->gd.user, s == 1);
    if (sd.bytes == 0) continue;
    // A v side with displacements is told block by block (fill_vtable).
    if (tr != nullptr &&
        tr->of(s == 1 ? off::Side::kDst : off::Side::kSrc).arrays ==
            off::Arrays::kCountsDispls)
      continue;
    Export* e = nullptr;
    if (!export_of(g, sd.addr, &e)) {
      UCC_ERROR("GPU direct: cannot make an IPC handle of a GPU buffer");
      return false;
    }
    if (s == 0) {
      k->src_base = e->base;
      k->src_off = sd.addr - e->base;
      k->src_size = e->size;
    } else {
      k->dst_base = e->base;
      k->dst_off = sd.addr - e->base;
      k->dst_size = e->size;
    }
    (s == 0 ? k->src_h : k->dst_h) = e->h;
  }
  return !is_v(r->gd.user.coll) || fill_vtable(g, t, r);
}

bool is_v(off::CollType c) {
  const off::CollTraits* tr = off::coll_traits(c);
  return tr != nullptr && tr->vector();
}

namespace {

// Holds import `i` for the collective (once however many blocks it has).
bool hold(GpuDirectCtx& g, GpuDirectReq& q, uint32_t i) {
  for (uint8_t k = 0; k < q.nrefs; ++k)
    if (q.refs[k] == i) return true;
  constexpr uint32_t kRefs = sizeof(q.refs) / sizeof(q.refs[0]);
  if (q.nrefs == kRefs) {
    UCC_ERROR("GPU direct: one collective names more than %u peer allocations",
              kRefs);
    return false;
  }
  if (g.imp[i].refs++ == 0) ++g.held;
  q.refs[q.nrefs++] = static_cast<uint16_t>(i);
  return true;
}

}  // namespace

// Resolves [off, off + bytes) of a peer's allocation to an address the
// worker's GPU can use, checking that it lies inside the allocation.
bool resolve_in(GpuDirectCtx& g, GpuDirectReq& q, uint32_t pid, const VAlloc& a,
                uint64_t off, uint64_t bytes, uint64_t* out) {
  if (off > a.size || bytes > a.size - off) {
    UCC_ERROR("GPU direct: a peer's token names a range outside its buffer");
    return false;
  }
  if (pid == static_cast<uint32_t>(getpid())) {  // ranks in one process
    // Used as it stands, so it must be one of this process's allocations
    // as a whole: a token naming this process is no licence to reach
    // anywhere in it.
    uint64_t b = 0;
    size_t sz = 0;
    if (drv().mem_get_address_range(&b, &sz, a.base) != cu::kSuccess ||
        b != a.base || sz != a.size) {
      UCC_ERROR(
          "GPU direct: a token naming this process names memory that is not "
          "one of its GPU allocations");
      return false;
    }
    *out = a.base + off;
    return true;
  }
  const uint32_t i = import_of(g, a.h, pid, a.base, a.size);
  if (i == kNoRef) return false;
  if (off > g.imp[i].size || bytes > g.imp[i].size - off) {
    UCC_ERROR("GPU direct: a peer's token names a range outside its buffer");
    return false;
  }
  if (!hold(g, q, i)) return false;
  *out = g.imp[i].base + off;
  return true;
}

// A token's side (the allocation it names, from the side's offset).
bool resolve(GpuDirectCtx& g, GpuDirectReq& q, const Token& k, bool dst,
             uint64_t bytes, uint64_t* out) {
  const VAlloc a{dst ? k.dst_h : k.src_h, dst ? k.dst_base : k.src_base,
                 dst ? k.dst_size : k.src_size};
  return resolve_in(g, q, k.pid, a, dst ? k.dst_off : k.src_off, bytes, out);
}

}  // namespace ucc::host::gd

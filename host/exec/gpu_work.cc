// The worker's part of a direct collective: kernels and copies on its
// stream (see gpu_direct.h).
#include <cstring>

#include "device/gpu/gpu_kernels.h"
#include "host/api/objects.h"
#include "host/coll/request.h"
#include "host/exec/gpu_direct_impl.h"
#include "offload/vectors.h"
#include "platform/os/log.h"

namespace ucc::host::gd {
namespace {

// Launch geometry: 256 threads a block, at least 4 elements a thread,
// at most 4096 blocks (grid-stride loops do the rest).
unsigned blocks_for(uint64_t elems) {
  const uint64_t b = (elems + 1023) / 1024;
  return static_cast<unsigned>(b == 0 ? 1 : (b > 4096 ? 4096 : b));
}

// The peers' done words for this collective, as the GPU addresses them.
void peer_flags(const Request* r, const Token* tok, uint32_t n,
                gpu::FlagArgs* f) {
  uint32_t k = 0;
  for (uint32_t p = 0; p < n; ++p) {
    if (p == r->team->rank) continue;
    f->flag[k++] =
        r->team->gd->peers[p].dptr + size_t{tok[p].slot} * kSlotBytes + kDoneAt;
  }
  f->n = k;
  f->value = static_cast<uint32_t>(r->gd.seq);
}

// Copies of `b` bytes each: one kernel launch for all of them when they
// are few and small (a copy engine call costs a few microseconds each),
// else one copy engine call each.
constexpr uint64_t kCopyKernelMax = uint64_t{1} << 20;  // bytes in all

class Copies {
 public:
  Copies(const GpuDirectCtx& g, cu::CuStream s, uint64_t b, uint32_t count)
      : g_(g),
        s_(s),
        kernel_(count <= gpu::kMaxCopies && b * count <= kCopyKernelMax) {
    a_.bytes = b;
  }
  void add(uint64_t from, uint64_t to) {
    if (kernel_) {
      a_.src[a_.n] = from;
      a_.dst[a_.n++] = to;
    } else if (cr_ == cu::kSuccess) {
      cr_ = drv().memcpy_dtod_async(to, from, a_.bytes, s_);
    }
  }
  // Launches the kernel (which then raises the peers' flags: *flagged).
  cu::CuResult end(const Request* r, const Token* tok, uint32_t n,
                   bool* flagged) {
    if (!kernel_ || cr_ != cu::kSuccess) return cr_;
    a_.counter = g_.counter;
    peer_flags(r, tok, n, &a_.flags);
    *flagged = true;
    void* params[] = {&a_};
    const uint64_t per = (a_.bytes + 15) / 16;
    return drv().launch_kernel(g_.copy_fn, blocks_for(per * 4), 1, 1, 256, 1, 1,
                               0, s_, params, nullptr);
  }

 private:
  const GpuDirectCtx& g_;
  cu::CuStream s_;
  bool kernel_;
  cu::CuResult cr_ = cu::kSuccess;
  gpu::CopyArgs a_{};
};

// One reduction kernel over `count` elements (ReduceArgs), whose last
// block raises the peers' flags.
// (`raise` false: none, a later kernel on the stream will.)
cu::CuResult reduce(const GpuDirectCtx& g, cu::CuStream s,
                    const off::CollDesc& u, uint32_t n, uint64_t count,
                    gpu::ReduceArgs& a, const Request* r, const Token* tok,
                    bool raise = true) {
  a.nsrc = n;
  a.count = count;
  a.op = static_cast<uint32_t>(u.op);
  a.div = u.op == off::ROp::kAvg ? n : 0;
  a.counter = g.counter;
  peer_flags(r, tok, n, &a.flags);
  if (!raise) a.flags.n = 0;
  void* params[] = {&a};
  const bool pairs = off::rop_is_loc(u.op);
  return drv().launch_kernel(
      (pairs ? g.loc_fn : g.reduce_fn)[static_cast<int>(u.dtype)],
      blocks_for(count), 1, 1, 256, 1, 1, 0, s, params, nullptr);
}

// Rank p's table of its v side `dst` for this collective, copied out of
// its flag page (the worker's own: its own page) and checked, its blocks
// resolved into addr[0, n) and len[0, n). False (logged) when it does not
// fit or a block cannot be reached.
bool v_row(GpuDirectCtx& g, Request* r, const Token* tok, uint32_t p, bool dst,
           uint64_t* addr, uint64_t* len) {
  GpuDirectTeam& t = *r->team->gd;
  const uint32_t n = r->team->size;
  const bool me = p == r->team->rank;
  const PeerPage& pp = t.peers[p];
  const uint8_t* vt =
      me ? vtable_at(t.page, t.page_bytes, t.words_bytes, tok[p].slot)
         : vtable_at(pp.map, pp.bytes, pp.words, tok[p].slot);
  VSide& vs = *t.vside;
  if (vt != nullptr) memcpy(&vs, vt + (dst ? sizeof(VSide) : 0), sizeof(VSide));
  bool ok = vt != nullptr && vs.nblk == n && vs.nalloc <= gpu::kMaxPeers;
  for (uint32_t j = 0; ok && j < n; ++j) {
    const VBlock& b = vs.blk[j];
    len[j] = b.len;
    addr[j] = 0;
    if (b.len == 0) continue;
    if (b.alloc >= vs.nalloc) {
      ok = false;
      break;
    }
    ok = resolve_in(g, r->gd, tok[p].pid, vs.alloc[b.alloc], b.off, b.len,
                    &addr[j]);
  }
  if (!ok)
    UCC_ERROR("GPU direct: rank %u's blocks of its %s do not fit", p,
              dst ? "dst" : "src");
  return ok;
}

bool disagree(uint32_t p, uint32_t q, uint32_t j) {
  UCC_ERROR(
      "GPU direct: ranks %u and %u disagree on the length of block %u (the "
      "counts arrays differ)",
      p, q, j);
  return false;
}

// In-place alltoall(v): block q of rank p and block p of rank q trade
// places (the diagonal stays), up to kMaxSwaps pairs a launch, the last
// launch raising the peers' flags (*flagged). Pairs whose lengths differ
// (alltoallv's counts must be symmetric in place) fail the collective
// before anything is queued.
class Swaps {
 public:
  Swaps(const GpuDirectCtx& g, cu::CuStream s) : g_(g), s_(s) {}
  void add(uint64_t a, uint64_t b, uint64_t len) {
    if (len == 0) return;
    if (a_.n == gpu::kMaxSwaps) launch(false);
    a_.a[a_.n] = a;
    a_.b[a_.n] = b;
    a_.len[a_.n++] = len;
  }
  cu::CuResult end(const Request* r, const Token* tok, uint32_t n,
                   bool* flagged) {
    if (a_.n == 0 || cr_ != cu::kSuccess) return cr_;
    peer_flags(r, tok, n, &a_.flags);
    *flagged = true;
    launch(true);
    return cr_;
  }

 private:
  void launch(bool raise) {
    uint64_t most = 0;
    for (uint32_t k = 0; k < a_.n; ++k)
      most = a_.len[k] > most ? a_.len[k] : most;
    if (!raise) a_.flags.n = 0;
    a_.counter = g_.counter;
    void* params[] = {&a_};
    if (cr_ == cu::kSuccess)
      cr_ = drv().launch_kernel(g_.swap_fn, blocks_for((most + 15) / 16 * 4), 1,
                                1, 256, 1, 1, 0, s_, params, nullptr);
    a_.n = 0;
  }
  const GpuDirectCtx& g_;
  cu::CuStream s_;
  cu::CuResult cr_ = cu::kSuccess;
  gpu::SwapArgs a_{};
};

bool queue_swaps(GpuDirectCtx& g, Request* r, const Token* tok, cu::CuStream s,
                 cu::CuResult* cr, bool* flagged) {
  const off::CollDesc& u = r->gd.user;
  const uint32_t n = r->team->size;
  const size_t nn = size_t{n} * n;
  uint64_t* const da = r->team->gd->vblk;
  uint64_t* const dl = da + nn;
  if (u.coll == off::CollType::kAlltoallv) {
    for (uint32_t p = 0; p < n; ++p)
      if (!v_row(g, r, tok, p, true, da + p * n, dl + p * n)) return false;
  } else {
    const uint64_t b = u.count * off::elem_size(u);
    for (uint32_t p = 0; p < n; ++p) {
      uint64_t base = 0;
      if (tok[p].dst_len != b * n) return disagree(p, r->team->rank, p);
      if (b != 0 && !resolve(g, r->gd, tok[p], true, b * n, &base))
        return false;
      for (uint32_t q = 0; q < n; ++q) {
        da[p * n + q] = base + q * b;
        dl[p * n + q] = b;
      }
    }
  }
  for (uint32_t p = 0; p < n; ++p)
    for (uint32_t q = p + 1; q < n; ++q)
      if (dl[p * n + q] != dl[q * n + p]) return disagree(p, q, q);
  Swaps sw(g, s);
  for (uint32_t p = 0; p < n; ++p)
    for (uint32_t q = p + 1; q < n; ++q)
      sw.add(da[p * n + q], da[q * n + p], dl[p * n + q]);
  *cr = sw.end(r, tok, n, flagged);
  return true;
}

// A v-collective's copies, one copy engine call per block that is not
// empty (the blocks' lengths differ, which the copy kernel's do not).
// Every length is checked before the first copy is queued: ranks whose
// arrays disagree get an error and untouched buffers.
bool queue_v(GpuDirectCtx& g, Request* r, const Token* tok, cu::CuStream s,
             cu::CuResult* cr) {
  const off::CollDesc& u = r->gd.user;
  const uint32_t n = r->team->size, me = r->team->rank;
  const bool in_place = (u.flags & off::kDescInPlace) != 0;
  // Rows of n blocks: every rank's dst, every rank's src (addresses,
  // lengths).
  const size_t nn = size_t{n} * n;
  uint64_t* const da = r->team->gd->vblk;
  uint64_t* const dl = da + nn;
  uint64_t* const sa = dl + nn;
  uint64_t* const sl = sa + nn;
  auto copy = [&](uint64_t from, uint64_t to, uint64_t len) {
    if (len != 0 && *cr == cu::kSuccess)
      *cr = drv().memcpy_dtod_async(to, from, len, s);
  };
  switch (u.coll) {
    case off::CollType::kAllgatherv: {
      // Rank p's block into block p of every rank's dst; in place it is
      // already in block p of its own. sa[p]: where it comes from.
      for (uint32_t q = 0; q < n; ++q)
        if (!v_row(g, r, tok, q, true, da + q * n, dl + q * n)) return false;
      for (uint32_t p = 0; p < n; ++p) {
        const uint64_t len = dl[me * n + p];
        for (uint32_t q = 0; q < n; ++q)
          if (dl[q * n + p] != len) return disagree(me, q, p);
        sa[p] = da[p * n + p];
        if (in_place) continue;
        if (tok[p].src_len != len) return disagree(p, me, p);
        if (len != 0 && !resolve(g, r->gd, tok[p], false, len, &sa[p]))
          return false;
      }
      for (uint32_t p = 0; p < n; ++p)
        for (uint32_t q = 0; q < n; ++q)
          if (!(in_place && p == q)) copy(sa[p], da[q * n + p], dl[me * n + p]);
      return true;
    }
    case off::CollType::kAlltoallv: {
      // Block q of rank p's src into block p of rank q's dst.
      for (uint32_t q = 0; q < n; ++q)
        if (!v_row(g, r, tok, q, true, da + q * n, dl + q * n) ||
            !v_row(g, r, tok, q, false, sa + q * n, sl + q * n))
          return false;
      for (uint32_t p = 0; p < n; ++p)
        for (uint32_t q = 0; q < n; ++q)
          if (sl[p * n + q] != dl[q * n + p]) return disagree(p, q, q);
      for (uint32_t p = 0; p < n; ++p)
        for (uint32_t q = 0; q < n; ++q)
          copy(sa[p * n + q], da[q * n + p], sl[p * n + q]);
      return true;
    }
    case off::CollType::kGatherv:
    case off::CollType::kScatterv: {
      // Rank p's buffer (da[p]) to or from block p of the root's; the
      // root's own block stays where it is in place (its token says so).
      const bool gather = u.coll == off::CollType::kGatherv;
      const uint32_t root = u.root;
      if (root >= n || !v_row(g, r, tok, root, gather, sa, sl)) return false;
      const bool keep = (tok[root].flags & kTokInPlace) != 0;
      for (uint32_t p = 0; p < n; ++p) {
        da[p] = 0;
        if (keep && p == root) continue;
        if ((gather ? tok[p].src_len : tok[p].dst_len) != sl[p])
          return disagree(p, root, p);
        if (sl[p] != 0 && !resolve(g, r->gd, tok[p], !gather, sl[p], &da[p]))
          return false;
      }
      for (uint32_t p = 0; p < n; ++p) {
        if (keep && p == root) continue;
        if (gather)
          copy(da[p], sa[p], sl[p]);
        else
          copy(sa[p], da[p], sl[p]);
      }
      return true;
    }
    default:
      return false;
  }
}

// Reduce_scatterv: block p of every rank's vector (packed in rank order
// by the counts, which every rank gives alike) reduced into rank p's dst
// (in place: into block p of rank p's vector, which is its dst), one
// kernel per block that is not empty, the last raising the peers' flags
// (*flagged).
bool queue_rsv(GpuDirectCtx& g, Request* r, const Token* tok, cu::CuStream s,
               cu::CuResult* cr, bool* flagged) {
  const off::CollDesc& u = r->gd.user;
  const uint32_t n = r->team->size;
  const bool in_place = (u.flags & off::kDescInPlace) != 0;
  const uint64_t es = off::elem_size(u);
  const uint64_t vec = u.count * es;
  const bool wide = (u.flags & off::kDescCount64) != 0;
  const auto* counts = reinterpret_cast<const void*>(u.dst_counts);
  // da[p]: rank p's vector (src, or dst in place); dl[p]: its dst.
  uint64_t* const da = r->team->gd->vblk;
  uint64_t* const dl = da + n;
  uint64_t last = n, at = 0;
  for (uint32_t p = 0; p < n; ++p) {
    const uint64_t c = counts != nullptr ? off::vec_entry(counts, wide, p) : 0;
    const uint64_t want = in_place ? vec : c * es;
    if (tok[p].dst_len != want || (!in_place && tok[p].src_len != vec))
      return disagree(p, r->team->rank, p);
    if ((vec != 0 && !resolve(g, r->gd, tok[p], in_place, vec, &da[p])) ||
        (!in_place && c != 0 && !resolve(g, r->gd, tok[p], true, want, &dl[p])))
      return false;
    if (in_place) dl[p] = da[p] + at * es;
    if (c != 0) last = p;
    at += c;
  }
  if (at != u.count) return disagree(0, r->team->rank, n - 1);
  at = 0;
  for (uint32_t p = 0; p < n && *cr == cu::kSuccess; ++p) {
    const uint64_t c = off::vec_entry(counts, wide, p);
    if (c != 0) {
      gpu::ReduceArgs a{};
      for (uint32_t i = 0; i < n; ++i) a.src[i] = da[i] + at * es;
      a.dst[0] = dl[p];
      a.ndst = 1;
      *cr = reduce(g, s, u, n, c, a, r, tok, p == last);
      *flagged = p == last;
    }
    at += c;
  }
  return true;
}

// The worker queues the collective's data movement on its stream.
}  // namespace

bool queue_work(ucc_context* ctx, GpuDirectCtx& g, Request* r, const Token* tok,
                uint32_t n) {
  const cu::Driver& d = drv();
  GpuDirectReq& q = r->gd;
  const off::CollDesc& u = q.user;
  const cu::CuStream s = ctx->gpu.copy;
  // Bytes per element (MAXLOC/MINLOC elements are {value, index} pairs).
  const uint64_t es = off::elem_size(u);
  const bool in_place = (u.flags & off::kDescInPlace) != 0;
  uint64_t src[gpu::kMaxPeers], dst[gpu::kMaxPeers];
  cu::CuResult cr = cu::kSuccess;
  bool flagged = false;  // the work itself raises the peers' flags
  // In place or not is every rank's alike where the ranks' buffers
  // meet (MPI's rule); rooted collectives go by the root's token.
  const bool rooted =
      u.coll == off::CollType::kReduce || u.coll == off::CollType::kBcast ||
      u.coll == off::CollType::kGather || u.coll == off::CollType::kGatherv ||
      u.coll == off::CollType::kScatter || u.coll == off::CollType::kScatterv;
  for (uint32_t p = 0; p < n && !rooted; ++p)
    if (((tok[p].flags & kTokInPlace) != 0) != in_place) {
      UCC_ERROR(
          "GPU direct: rank %u is %sin place where rank %u is %s (every rank "
          "must say alike)",
          p, in_place ? "not " : "", r->team->rank, in_place ? "" : "not");
      return false;
    }
  switch (u.coll) {
    case off::CollType::kAllgatherv:
    case off::CollType::kAlltoallv:
    case off::CollType::kGatherv:
    case off::CollType::kScatterv:
      if (u.coll == off::CollType::kAlltoallv && in_place) {
        if (!queue_swaps(g, r, tok, s, &cr, &flagged)) return false;
      } else if (!queue_v(g, r, tok, s, &cr)) {
        return false;
      }
      break;
    case off::CollType::kReduceScatterv:
      if (!queue_rsv(g, r, tok, s, &cr, &flagged)) return false;
      break;
    case off::CollType::kAllreduce:
    case off::CollType::kReduceScatter: {
      // Allreduce: every rank's src into every rank's dst. Reduce_scatter:
      // block p of every rank's vector into rank p's dst (in place the
      // vector is dst, and block p stays where it is), in one kernel over
      // the whole vector (ReduceArgs::blk).
      const bool scatter = u.coll == off::CollType::kReduceScatter;
      const uint64_t vec = u.count * es * (scatter ? n : 1);  // a rank's input
      const uint64_t out = scatter && !in_place ? u.count * es : vec;
      gpu::ReduceArgs a{};
      for (uint32_t p = 0; p < n; ++p) {
        if (!resolve(g, q, tok[p], true, out, &a.dst[p]) ||
            (!in_place && !resolve(g, q, tok[p], false, vec, &a.src[p])))
          return false;
        if (in_place) a.src[p] = a.dst[p];
      }
      a.ndst = n;
      if (scatter) {
        a.blk = u.count;
        a.blk_whole = in_place ? 1 : 0;
      }
      cr = reduce(g, s, u, n, scatter ? u.count * n : u.count, a, r, tok);
      flagged = true;
      break;
    }
    case off::CollType::kReduce: {
      // Every rank's src (the root's aliases its dst in place: the host
      // lowers it so), into the root's dst.
      const uint64_t bytes = u.count * es;
      gpu::ReduceArgs a{};
      for (uint32_t p = 0; p < n; ++p)
        if (!resolve(g, q, tok[p], false, bytes, &a.src[p])) return false;
      if (u.root >= n || !resolve(g, q, tok[u.root], true, bytes, &a.dst[0]))
        return false;
      a.ndst = 1;
      cr = reduce(g, s, u, n, u.count, a, r, tok);
      flagged = true;
      break;
    }
    case off::CollType::kAllgather: {
      const uint64_t b = u.count * es;
      for (uint32_t p = 0; p < n; ++p) {
        if (!resolve(g, q, tok[p], true, b * n, &dst[p])) return false;
        if (in_place)
          src[p] = dst[p] + p * b;
        else if (!resolve(g, q, tok[p], false, b, &src[p]))
          return false;
      }
      Copies c(g, s, b, n * n);
      for (uint32_t from = 0; from < n; ++from)
        for (uint32_t to = 0; to < n; ++to)
          if (!(in_place && from == to)) c.add(src[from], dst[to] + from * b);
      cr = c.end(r, tok, n, &flagged);
      break;
    }
    case off::CollType::kAlltoall: {
      if (in_place) {
        if (!queue_swaps(g, r, tok, s, &cr, &flagged)) return false;
        break;
      }
      const uint64_t b = u.count * es;
      for (uint32_t p = 0; p < n; ++p)
        if (!resolve(g, q, tok[p], true, b * n, &dst[p]) ||
            !resolve(g, q, tok[p], false, b * n, &src[p]))
          return false;
      Copies c(g, s, b, n * n);
      for (uint32_t from = 0; from < n; ++from)
        for (uint32_t to = 0; to < n; ++to)
          c.add(src[from] + to * b, dst[to] + from * b);
      cr = c.end(r, tok, n, &flagged);
      break;
    }
    case off::CollType::kGather:
    case off::CollType::kScatter: {
      // Block p of the root's vector from or to rank p's buffer; the
      // root's own block stays where it is in place (its token says so).
      const bool gather = u.coll == off::CollType::kGather;
      const uint64_t b = u.count * es;
      const uint32_t root = u.root;
      if (root >= n) return false;
      const bool keep = (tok[root].flags & kTokInPlace) != 0;
      uint64_t whole = 0;
      if (!resolve(g, q, tok[root], gather, b * n, &whole)) return false;
      for (uint32_t p = 0; p < n; ++p)
        if (!(keep && p == root) &&
            !resolve(g, q, tok[p], !gather, b, gather ? &src[p] : &dst[p]))
          return false;
      Copies c(g, s, b, keep ? n - 1 : n);
      for (uint32_t p = 0; p < n; ++p) {
        if (keep && p == root) continue;
        if (gather)
          c.add(src[p], whole + p * b);
        else
          c.add(whole + p * b, dst[p]);
      }
      cr = c.end(r, tok, n, &flagged);
      break;
    }
    case off::CollType::kBcast: {
      const uint64_t b = u.count * es;
      for (uint32_t p = 0; p < n; ++p)
        if (!resolve(g, q, tok[p], false, b, &src[p])) return false;
      Copies c(g, s, b, n - 1);
      for (uint32_t to = 0; to < n; ++to)
        if (to != u.root) c.add(src[u.root], src[to]);
      cr = c.end(r, tok, n, &flagged);
      break;
    }
    default:
      return false;
  }
  // The peers learn that their part is done; then the worker's own event.
  if (cr == cu::kSuccess && !flagged) {
    gpu::FlagArgs f{};
    peer_flags(r, tok, n, &f);
    void* params[] = {&f};
    cr = d.launch_kernel(g.flag_fn, 1, 1, 1, 32, 1, 1, 0, s, params, nullptr);
  }
  if (cr == cu::kSuccess) cr = d.event_record(q.done_ev, s);
  if (cr != cu::kSuccess) {
    UCC_ERROR("GPU direct: queueing the collective on the GPU failed (%s)",
              cu::error_name(d, cr));
    return false;
  }
  return true;
}

}  // namespace ucc::host::gd

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

bool disagree(uint32_t p, uint32_t q, uint32_t j) {
  UCC_ERROR(
      "GPU direct: ranks %u and %u disagree on the length of block %u (the "
      "counts arrays differ)",
      p, q, j);
  return false;
}

namespace {

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

Queued queue_work(ucc_context* ctx, GpuDirectCtx& g, Request* r,
                  const Token* tok, uint32_t n) {
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
      return Queued::kFailed;
    }
  Queued done = Queued::kDone;
  if (v_path(r)) {
    done = queue_moves(g, r, tok, s, &cr, &flagged);
    if (done == Queued::kFailed) return done;
  } else {
    switch (u.coll) {
      case off::CollType::kReduceScatterv:
        if (!queue_rsv(g, r, tok, s, &cr, &flagged)) return Queued::kFailed;
        break;
      case off::CollType::kAllreduce:
      case off::CollType::kReduceScatter: {
        // Allreduce: every rank's src into every rank's dst. Reduce_scatter:
        // block p of every rank's vector into rank p's dst (in place the
        // vector is dst, and block p stays where it is), in one kernel over
        // the whole vector (ReduceArgs::blk).
        const bool scatter = u.coll == off::CollType::kReduceScatter;
        const uint64_t vec =
            u.count * es * (scatter ? n : 1);  // a rank's input
        const uint64_t out = scatter && !in_place ? u.count * es : vec;
        gpu::ReduceArgs a{};
        for (uint32_t p = 0; p < n; ++p) {
          if (!resolve(g, q, tok[p], true, out, &a.dst[p]) ||
              (!in_place && !resolve(g, q, tok[p], false, vec, &a.src[p])))
            return Queued::kFailed;
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
          if (!resolve(g, q, tok[p], false, bytes, &a.src[p]))
            return Queued::kFailed;
        if (u.root >= n || !resolve(g, q, tok[u.root], true, bytes, &a.dst[0]))
          return Queued::kFailed;
        a.ndst = 1;
        cr = reduce(g, s, u, n, u.count, a, r, tok);
        flagged = true;
        break;
      }
      case off::CollType::kAllgather: {
        const uint64_t b = u.count * es;
        for (uint32_t p = 0; p < n; ++p) {
          if (!resolve(g, q, tok[p], true, b * n, &dst[p]))
            return Queued::kFailed;
          if (in_place)
            src[p] = dst[p] + p * b;
          else if (!resolve(g, q, tok[p], false, b, &src[p]))
            return Queued::kFailed;
        }
        Copies c(g, s, b, n * n);
        for (uint32_t from = 0; from < n; ++from)
          for (uint32_t to = 0; to < n; ++to)
            if (!(in_place && from == to)) c.add(src[from], dst[to] + from * b);
        cr = c.end(r, tok, n, &flagged);
        break;
      }
      case off::CollType::kAlltoall: {
        const uint64_t b = u.count * es;
        for (uint32_t p = 0; p < n; ++p)
          if (!resolve(g, q, tok[p], true, b * n, &dst[p]) ||
              !resolve(g, q, tok[p], false, b * n, &src[p]))
            return Queued::kFailed;
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
        if (root >= n) return Queued::kFailed;
        const bool keep = (tok[root].flags & kTokInPlace) != 0;
        uint64_t whole = 0;
        if (!resolve(g, q, tok[root], gather, b * n, &whole))
          return Queued::kFailed;
        for (uint32_t p = 0; p < n; ++p)
          if (!(keep && p == root) &&
              !resolve(g, q, tok[p], !gather, b, gather ? &src[p] : &dst[p]))
            return Queued::kFailed;
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
          if (!resolve(g, q, tok[p], false, b, &src[p])) return Queued::kFailed;
        Copies c(g, s, b, n - 1);
        for (uint32_t to = 0; to < n; ++to)
          if (to != u.root) c.add(src[u.root], src[to]);
        cr = c.end(r, tok, n, &flagged);
        break;
      }
      default:
        return Queued::kFailed;
    }
  }
  // The peers learn that their part is done (after the last batch); then
  // the worker's own event.
  if (cr == cu::kSuccess && !flagged && done == Queued::kDone) {
    gpu::FlagArgs f{};
    peer_flags(r, tok, n, &f);
    void* params[] = {&f};
    cr = d.launch_kernel(g.flag_fn, 1, 1, 1, 32, 1, 1, 0, s, params, nullptr);
  }
  if (cr == cu::kSuccess) cr = d.event_record(q.done_ev, s);
  if (cr != cu::kSuccess) {
    UCC_ERROR("GPU direct: queueing the collective on the GPU failed (%s)",
              cu::error_name(d, cr));
    return Queued::kFailed;
  }
  return done;
}

}  // namespace ucc::host::gd

// The worker's part of a direct collective: kernels and copies on its
// stream (see gpu_direct.h).
#include <cstring>

#include "device/gpu/gpu_kernels.h"
#include "host/api/objects.h"
#include "host/coll/request.h"
#include "host/exec/gpu_direct_impl.h"
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
cu::CuResult reduce(const GpuDirectCtx& g, cu::CuStream s,
                    const off::CollDesc& u, uint32_t n, uint64_t count,
                    gpu::ReduceArgs& a, const Request* r, const Token* tok) {
  a.nsrc = n;
  a.count = count;
  a.op = static_cast<uint32_t>(u.op);
  a.div = u.op == off::ROp::kAvg ? n : 0;
  a.counter = g.counter;
  peer_flags(r, tok, n, &a.flags);
  void* params[] = {&a};
  const bool pairs = off::rop_is_loc(u.op);
  return drv().launch_kernel(
      (pairs ? g.loc_fn : g.reduce_fn)[static_cast<int>(u.dtype)],
      blocks_for(count), 1, 1, 256, 1, 1, 0, s, params, nullptr);
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
  switch (u.coll) {
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

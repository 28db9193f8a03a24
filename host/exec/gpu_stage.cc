// GPU buffers staged through pinned host memory (see gpu_stage.h).
#include "host/exec/gpu_stage.h"

#include <sched.h>
#include <sys/mman.h>

#include "host/api/objects.h"
#include "host/coll/coll_args.h"
#include "host/coll/request.h"
#include "host/exec/gpu_direct.h"
#include "offload/coll_traits.h"
#include "platform/os/log.h"

namespace ucc::host {
namespace cu = plat::cuda;
namespace {

constexpr size_t kStageAlign = size_t{1} << 20;  // staging grows in MiB

using cu::CtxScope;

// Waits until no copy queued for r reads or writes r's staging buffer:
// a stream engine's copy-out (before a plain post of the same request),
// or anything left when the slot goes (team destruction mid-collective).
void settle(const cu::Driver& d, GpuStage& g) {
  if (g.in_wait) {
    while (d.event_query(g.in_ev) == cu::kNotReady) sched_yield();
    g.in_wait = false;
  }
  if (!g.out_pending) return;
  while (d.event_query(g.out_ev) == cu::kNotReady) sched_yield();
  g.out_pending = false;
}

void release_host(const cu::Driver& d, GpuStage& g) {
  if (g.host == nullptr) return;
  settle(d, g);
  d.host_unregister(g.host);
  munmap(g.host, g.cap);
  g.host = nullptr;
  g.cap = 0;
}

// Grows r's staging buffer to at least `bytes` (pinned, in the buffers'
// CUDA context). False (logged) when the memory cannot be had.
bool reserve(const cu::Driver& d, GpuStage& g, size_t bytes) {
  if (bytes <= g.cap) return true;
  release_host(d, g);
  const size_t want = (bytes + kStageAlign - 1) & ~(kStageAlign - 1);
  void* p = mmap(nullptr, want, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    UCC_ERROR("GPU staging: cannot map %zu bytes of host memory", want);
    return false;
  }
  CtxScope in(d, g.cuctx);
  const cu::CuResult cr =
      in.ok() ? d.host_register(p, want, cu::kHostRegisterPortable) : 1;
  if (cr != cu::kSuccess) {
    UCC_ERROR("GPU staging: cuMemHostRegister of %zu bytes failed (%s)", want,
              cu::error_name(d, cr));
    munmap(p, want);
    return false;
  }
  g.host = static_cast<uint8_t*>(p);
  g.cap = want;
  UCC_DEBUG("GPU staging: request slot now holds %zu pinned bytes", want);
  return true;
}

// The side's memory, from what the caller declared (kMemGpu, kMemUnknown)
// and the driver: true when it is the GPU's, with its CUDA context.
// Declared GPU memory without a driver is refused.
ucc_status_t is_gpu(off::CollType coll, uint8_t declared, const off::BufRef& b,
                    bool* gpu, cu::CuCtx* cuctx) {
  *gpu = false;
  if (declared == kMemHost || b.bytes == 0) return UCC_OK;
  if (declared == kMemUnknown && !cu::driver_in_process()) return UCC_OK;
  const cu::Driver* d = cu::driver();
  if (d == nullptr) {
    if (declared == kMemUnknown) return UCC_OK;
    ARG_REFUSED(
        "%s: GPU memory given, but the CUDA driver (libcuda.so.1) is not "
        "usable here (the line before says why)",
        off::coll_type_name(coll));
  }
  *gpu = cu::classify(*d, reinterpret_cast<const void*>(b.addr), cuctx) !=
         cu::MemKind::kHost;
  return UCC_OK;
}

// The context's copy stream, in `cuctx` (made the first time).
ucc_status_t context_stream(const cu::Driver& d, ucc_context* ctx,
                            cu::CuCtx cuctx) {
  GpuContext& g = ctx->gpu;
  if (g.copy != nullptr) {
    if (g.cuctx == cuctx) return UCC_OK;
    ARG_REFUSED(
        "GPU buffers of a second CUDA context (another GPU?) in one UCC "
        "context are not supported");
  }
  CtxScope in(d, cuctx);
  const cu::CuResult cr =
      in.ok() ? d.stream_create(&g.copy, cu::kStreamNonBlocking) : 1;
  if (cr != cu::kSuccess) {
    UCC_ERROR("GPU staging: cuStreamCreate failed (%s)", cu::error_name(d, cr));
    g.copy = nullptr;
    return UCC_ERR_NO_MESSAGE;
  }
  g.cuctx = cuctx;
  return UCC_OK;
}

bool overlap(const off::BufRef& a, const off::BufRef& b) {
  return a.addr < b.addr + b.bytes && b.addr < a.addr + a.bytes;
}

}  // namespace

ucc_status_t gpu_stage(ucc_context* ctx, Request* r, off::CollDesc* d) {
  GpuStage& g = r->gpu;
  g.n = 0;
  g.on_stream = false;
  off::BufRef* side[2] = {&d->src, &d->dst};
  const uint8_t declared[2] = {d->src.mem_type, d->dst.mem_type};
  d->src.mem_type = d->dst.mem_type = kMemHost;
  if (declared[0] == kMemHost && declared[1] == kMemHost) return UCC_OK;
  bool gpu[2];
  cu::CuCtx cx[2] = {nullptr, nullptr};
  for (int i = 0; i < 2; ++i) {
    const ucc_status_t st =
        is_gpu(d->coll, declared[i], *side[i], &gpu[i], &cx[i]);
    if (st != UCC_OK) return st;
  }
  if (!gpu[0] && !gpu[1]) return UCC_OK;
  const cu::Driver& drv = *cu::driver();
  const cu::CuCtx cuctx = gpu[0] ? cx[0] : cx[1];
  if (gpu[0] && gpu[1] && cx[0] != cx[1]) {
    ARG_REFUSED("GPU src and dst belong to different CUDA contexts");
  }
  ucc_status_t st = context_stream(drv, ctx, cuctx);
  if (st != UCC_OK) return st;
  // What the collective writes: dst, or src where there is no dst (bcast).
  const off::CollTraits* t = off::coll_traits(d->coll);
  const bool src_written =
      t != nullptr && t->of(off::Side::kDst).who == off::Who::kNobody;
  const bool written[2] = {src_written, true};
  // The ranges: one when both sides are the GPU's and overlap (in place).
  uint64_t lo[2], hi[2];
  int range_of[2] = {-1, -1};
  uint8_t n = 0;
  bool out[2] = {false, false};
  for (int i = 0; i < 2; ++i) {
    if (!gpu[i]) continue;
    const uint64_t a = side[i]->addr, e = a + side[i]->bytes;
    if (i == 1 && range_of[0] >= 0 && overlap(*side[0], *side[1])) {
      const int k = range_of[0];
      lo[k] = a < lo[k] ? a : lo[k];
      hi[k] = e > hi[k] ? e : hi[k];
      out[k] = out[k] || written[i];
      range_of[i] = k;
      continue;
    }
    lo[n] = a;
    hi[n] = e;
    out[n] = written[i];
    range_of[i] = n++;
  }
  uint64_t total = 0;
  for (uint8_t k = 0; k < n; ++k) {
    g.r[k] = GpuRange{lo[k], hi[k] - lo[k], total, out[k]};
    total += round64(hi[k] - lo[k]);
  }
  if (g.host != nullptr && g.cuctx != cuctx) release_host(drv, g);
  g.cuctx = cuctx;
  if (!reserve(drv, g, total)) return UCC_ERR_NO_MEMORY;
  for (int i = 0; i < 2; ++i) {
    if (range_of[i] < 0) continue;
    const GpuRange& rg = g.r[range_of[i]];
    side[i]->addr =
        reinterpret_cast<uintptr_t>(g.host) + rg.off + (side[i]->addr - rg.dev);
    side[i]->key = 0;  // any ucc_mem_map registration named the GPU buffer
  }
  g.n = n;
  gpu_direct_say_staged(r);
  return UCC_OK;
}

ucc_status_t gpu_copy_in(ucc_context* ctx, Request* r) {
  GpuStage& g = r->gpu;
  const cu::Driver& d = *cu::driver();
  // A copy-out a stream engine queued for this post waits for the
  // collective itself; one left from an earlier post must be done.
  if (!g.on_stream) settle(d, g);
  // A stream engine's collective starts once its stream has produced the
  // input (an event), and copies on the context's own non-blocking
  // stream. A plain post copies on the legacy default stream, so that it
  // comes after what the caller queued there or on any blocking stream
  // (cudaMemcpy from pageable memory returns before its DMA has landed).
  const cu::CuStream s = g.on_stream ? ctx->gpu.copy : nullptr;
  CtxScope in(d, g.cuctx);
  cu::CuResult cr = in.ok() ? cu::kSuccess : 1;
  for (uint8_t k = 0; k < g.n && cr == cu::kSuccess; ++k)
    cr = d.memcpy_dtoh_async(g.host + g.r[k].off, g.r[k].dev, g.r[k].bytes, s);
  if (cr == cu::kSuccess) cr = record_event(&g.in_ev, s);
  if (cr != cu::kSuccess) {
    UCC_ERROR("GPU staging: copy from the GPU failed (%s)",
              cu::error_name(d, cr));
    return UCC_ERR_NO_MESSAGE;
  }
  g.in_wait = true;
  ucc_status_t st;
  gpu_copy_in_done(r, &st);  // often done already; an error shows later
  return UCC_OK;
}

cu::CuResult record_event(cu::CuEvent* ev, cu::CuStream s) {
  const cu::Driver& d = *cu::driver();
  cu::CuResult cr = cu::kSuccess;
  if (*ev == nullptr) cr = d.event_create(ev, cu::kEventDisableTiming);
  return cr == cu::kSuccess ? d.event_record(*ev, s) : cr;
}

bool event_passed(cu::CuEvent ev, bool* waiting, const char* what,
                  ucc_status_t* st) {
  *st = UCC_OK;
  if (!*waiting) return true;
  const cu::Driver& d = *cu::driver();
  const cu::CuResult cr = d.event_query(ev);
  if (cr == cu::kNotReady) return false;
  *waiting = false;
  if (cr != cu::kSuccess) {
    UCC_ERROR("%s (%s)", what, cu::error_name(d, cr));
    *st = UCC_ERR_NO_MESSAGE;
  }
  return true;
}

bool gpu_copy_in_done(Request* r, ucc_status_t* st) {
  return event_passed(r->gpu.in_ev, &r->gpu.in_wait,
                      "GPU staging: copy from the GPU failed", st);
}

ucc_status_t gpu_copy_out(ucc_context*, Request* r, ucc_status_t st) {
  GpuStage& g = r->gpu;
  if (g.on_stream && st == UCC_OK) return g.stream_err;
  if (g.n == 0 || g.on_stream) return st;
  const cu::Driver& d = *cu::driver();
  if (!g.out_pending) {  // the collective has just ended
    if (st != UCC_OK) return st;
    CtxScope in(d, g.cuctx);
    cu::CuResult cr = in.ok() ? cu::kSuccess : 1;
    for (uint8_t k = 0; k < g.n && cr == cu::kSuccess; ++k)
      if (g.r[k].out)
        cr = d.memcpy_htod_async(g.r[k].dev, g.host + g.r[k].off, g.r[k].bytes,
                                 nullptr);  // legacy stream, as gpu_copy_in
    if (cr == cu::kSuccess) cr = record_event(&g.out_ev, nullptr);
    if (cr != cu::kSuccess) {
      UCC_ERROR("GPU staging: copy to the GPU failed (%s)",
                cu::error_name(d, cr));
      return UCC_ERR_NO_MESSAGE;
    }
    g.out_pending = true;
  }
  const cu::CuResult cr = d.event_query(g.out_ev);
  if (cr == cu::kNotReady) return UCC_INPROGRESS;
  g.out_pending = false;
  if (cr != cu::kSuccess) {
    UCC_ERROR("GPU staging: copy to the GPU failed (%s)",
              cu::error_name(d, cr));
    return UCC_ERR_NO_MESSAGE;
  }
  return UCC_OK;
}

void gpu_copy_out_on(Request* r, cu::CuStream stream) {
  GpuStage& g = r->gpu;
  const cu::Driver& d = *cu::driver();
  settle(d, g);        // the previous post's
  g.on_stream = true;  // until the collective completes (reap)
  g.stream_err = UCC_OK;
  CtxScope in(d, g.cuctx);
  cu::CuResult cr = in.ok() ? cu::kSuccess : 1;
  for (uint8_t k = 0; k < g.n && cr == cu::kSuccess; ++k)
    if (g.r[k].out)
      cr = d.memcpy_htod_async(g.r[k].dev, g.host + g.r[k].off, g.r[k].bytes,
                               stream);
  if (cr == cu::kSuccess) cr = record_event(&g.out_ev, stream);
  if (cr != cu::kSuccess) {
    UCC_ERROR(
        "GPU staging: queueing the copy to the GPU on the stream failed (%s)",
        cu::error_name(d, cr));
    g.stream_err = UCC_ERR_NO_MESSAGE;
    return;
  }
  g.out_pending = true;
}

void gpu_stage_fini(Request* r) {
  GpuStage& g = r->gpu;
  if (g.host == nullptr && g.out_ev == nullptr && g.in_ev == nullptr) return;
  const cu::Driver& d = *cu::driver();
  release_host(d, g);
  if (g.out_ev != nullptr) d.event_destroy(g.out_ev);
  if (g.in_ev != nullptr) d.event_destroy(g.in_ev);
  g.out_ev = g.in_ev = nullptr;
}

void gpu_context_fini(GpuContext* g) {
  if (g->copy == nullptr) return;
  const cu::Driver& d = *cu::driver();
  CtxScope in(d, g->cuctx);
  d.stream_destroy(g->copy);
  g->copy = nullptr;
}

}  // namespace ucc::host

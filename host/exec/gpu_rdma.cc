// GPUDirect RDMA: GPU buffers registered with the device (gpu_rdma.h).
#include "host/exec/gpu_rdma.h"

#include <atomic>

#include "host/api/objects.h"
#include "host/coll/request.h"
#include "host/exec/gpu_stage.h"
#include "platform/os/log.h"

namespace ucc::host {
namespace cu = plat::cuda;
namespace {

using cu::CtxScope;

// The link's callback on a registration cache miss: a dma-buf of exactly
// [base, base + bytes) of device memory, or -1 (said once) where the
// driver gives none; the link then registers the pointer.
int make_dmabuf(void* arg, uint64_t base, uint64_t bytes) {
  static std::atomic<bool> said{false};
  const cu::Driver& d = *cu::driver();
  cu::CuResult cr = 1;
  int fd = -1;
  if (d.mem_get_handle_for_address_range != nullptr) {
    CtxScope in(d, *static_cast<const cu::CuCtx*>(arg));
    if (in.ok())
      cr = d.mem_get_handle_for_address_range(&fd, base, bytes,
                                              cu::kRangeDmaBufFd, 0);
  }
  if (cr == cu::kSuccess && fd >= 0) return fd;
  if (!said.exchange(true))
    UCC_INFO(
        "GPUDirect RDMA: the CUDA driver gives no dma-buf for GPU memory "
        "(%s): registering the pointer instead",
        d.mem_get_handle_for_address_range == nullptr
            ? "no cuMemGetHandleForAddressRange"
            : cu::error_name(d, cr));
  return -1;
}

// A side that may be GPU memory: *gpu when it is, and then the
// registration key naming its allocation, or 0 where this way cannot
// reach it (*cuctx: its CUDA context).
uint32_t side_key(ucc_context* ctx, uint8_t declared, const off::BufRef& b,
                  cu::CuCtx* cuctx, bool* gpu, ucc_status_t* st) {
  *st = UCC_OK;
  *gpu = false;
  if (declared == kMemUnknown && !cu::driver_in_process()) return 0;
  const cu::Driver* d = cu::driver();
  if (d == nullptr) {
    *gpu = declared == kMemGpu;  // refused by staging, which says why
    return 0;
  }
  cu::CuCtx c = nullptr;
  const cu::MemKind kind =
      cu::classify(*d, reinterpret_cast<const void*>(b.addr), &c);
  *gpu = kind != cu::MemKind::kHost;
  // Managed memory has no dma-buf; a second GPU, a mapped handle: staged.
  if (kind != cu::MemKind::kDevice || d->mem_get_address_range == nullptr ||
      b.key != 0 || (*cuctx != nullptr && c != *cuctx))
    return 0;
  *cuctx = c;
  CtxScope in(*d, c);
  cu::CuDevPtr base = 0;
  size_t size = 0;
  unsigned long long id = 0;
  if (!in.ok() || d->mem_get_address_range(&base, &size, b.addr) != 0 ||
      b.addr + b.bytes > base + size ||
      d->pointer_get_attribute(&id, cu::kAttrBufferId, b.addr) != 0)
    return 0;  // not inside one allocation (blocks of several): staged
  uint32_t key = 0;
  const off::Status s =
      ctx->engine->cover_gpu(base, size, id, make_dmabuf, cuctx, &key);
  if (s == off::Status::kNotSupported) return 0;  // said by the port
  if (failed(s)) *st = to_ucc(s);
  return key;
}

}  // namespace

ucc_status_t gpu_rdma_init(ucc_context* ctx, Request* r, off::CollDesc* d) {
  GpuRdma& g = r->gr;
  g.on = false;
  if (!ctx->settings.gpu_rdma || !ctx->remote_engine ||
      !ctx->engine->rdma_mem())
    return UCC_OK;
  off::BufRef* side[2] = {&d->src, &d->dst};
  uint32_t key[2] = {0, 0};
  bool gpu = false;
  cu::CuCtx cuctx = nullptr;
  for (int i = 0; i < 2; ++i) {
    if (side[i]->mem_type == kMemHost || side[i]->bytes == 0) continue;
    ucc_status_t st;
    bool is_gpu;
    key[i] = side_key(ctx, side[i]->mem_type, *side[i], &cuctx, &is_gpu, &st);
    if (st != UCC_OK) return st;
    if (!is_gpu) continue;           // UNKNOWN memory that is the host's
    if (key[i] == 0) return UCC_OK;  // GPU memory out of reach: staged
    gpu = true;
  }
  if (!gpu) return UCC_OK;
  for (int i = 0; i < 2; ++i) {
    side[i]->mem_type = kMemHost;  // what the engine sees: registered memory
    if (key[i] != 0) side[i]->key = key[i];
  }
  g.on = true;
  g.cuctx = cuctx;
  return UCC_OK;
}

ucc_status_t gpu_rdma_post(Request* r) {
  GpuRdma& g = r->gr;
  const cu::Driver& d = *cu::driver();
  CtxScope in(d, g.cuctx);
  // The legacy stream: after what the caller queued there or on any
  // blocking stream, as a staged post's copy would be.
  const cu::CuResult cr = in.ok() ? record_event(&g.in, nullptr) : 1;
  if (cr != cu::kSuccess) {
    UCC_ERROR("GPUDirect RDMA: recording the input event failed (%s)",
              cu::error_name(d, cr));
    return UCC_ERR_NO_MESSAGE;
  }
  g.waiting = true;
  ucc_status_t st;
  gpu_rdma_ready(r, &st);  // often done already
  return UCC_OK;
}

bool gpu_rdma_ready(Request* r, ucc_status_t* st) {
  return event_passed(r->gr.in, &r->gr.waiting,
                      "GPUDirect RDMA: the GPU failed before a collective", st);
}

void gpu_rdma_fini(Request* r) {
  GpuRdma& g = r->gr;
  if (g.in == nullptr) return;
  cu::driver()->event_destroy(g.in);
  g.in = nullptr;
}

}  // namespace ucc::host

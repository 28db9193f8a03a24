// CUDA stream execution engines (see ee_cuda.h).
#include "host/exec/ee_cuda.h"

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

#include "host/api/objects.h"
#include "host/coll/coll_args.h"
#include "host/exec/gpu_stage.h"
#include "platform/os/log.h"

namespace ucc::host {
namespace cu = plat::cuda;
namespace {

using cu::CtxScope;

// A host function on the stream (no stream memory operations): holds the
// stream until the engine's word reaches the collective's number.
void wait_on_host(void* p) {
  const auto* w = static_cast<const CudaEe::Wait*>(p);
  while (static_cast<int32_t>(__atomic_load_n(w->rel, __ATOMIC_ACQUIRE) -
                              w->seq) < 0)
    sched_yield();
}

void free_state(const cu::Driver& d, CudaEe* c, uint32_t nready) {
  for (uint32_t i = 0; i < nready; ++i) d.event_destroy(c->ready[i]);
  if (c->rel != nullptr) {
    d.host_unregister(c->rel);
    munmap(c->rel, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  }
  // The memory is the engine's arena's.
}

}  // namespace

CudaEe* ee_cuda_take(base::Arena& a, uint32_t qcap) {
  CudaEe* c = a.take<CudaEe>(1);
  cu::CuEvent* ready = a.take<cu::CuEvent>(qcap);
  CudaEe::Wait* waits = a.take<CudaEe::Wait>(qcap);
  if (c != nullptr) {
    c->ready = ready;
    c->waits = waits;
  }
  return c;
}

ucc_status_t ee_cuda_create(ucc_ee* ee, CudaEe* c, void* stream) {
  const cu::Driver* d = cu::driver();
  if (d == nullptr) {
    ARG_REFUSED(
        "ucc_ee_create: a CUDA stream engine needs the CUDA driver "
        "(libcuda.so.1), which is not usable here (the line before says "
        "why)");
  }
  c->stream = static_cast<cu::CuStream>(stream);
  cu::CuResult cr = d->stream_get_ctx(c->stream, &c->cuctx);
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  uint32_t made = 0;
  if (p == MAP_FAILED) return UCC_ERR_NO_MEMORY;
  {
    CtxScope in(*d, c->cuctx);
    if (cr == cu::kSuccess && !in.ok()) cr = 1;
    if (cr == cu::kSuccess)
      cr = d->host_register(
          p, page, cu::kHostRegisterPortable | cu::kHostRegisterDeviceMap);
    if (cr == cu::kSuccess) {
      c->rel = static_cast<uint32_t*>(p);
      cr = d->host_get_device_pointer(&c->rel_dev, p, 0);
    } else {
      munmap(p, page);
    }
    while (cr == cu::kSuccess && made < ee->qcap) {
      cr = d->event_create(&c->ready[made], cu::kEventDisableTiming);
      if (cr == cu::kSuccess) ++made;
    }
  }
  if (cr != cu::kSuccess) {
    UCC_ERROR("ucc_ee_create: CUDA stream %p: setup failed (%s)", stream,
              cu::error_name(*d, cr));
    free_state(*d, c, made);
    return UCC_ERR_NO_MESSAGE;
  }
  c->host_wait = d->stream_wait_value32 == nullptr;
  ee->cu = c;
  return UCC_OK;
}

void ee_cuda_destroy(ucc_ee* ee) {
  CudaEe* c = ee->cu;
  if (c == nullptr) return;
  const cu::Driver& d = *cu::driver();
  {
    CtxScope in(d, c->cuctx);
    // The stream may still have to read `rel` for waits already let go.
    if (in.ok()) d.stream_synchronize(c->stream);
  }
  free_state(d, c, ee->qcap);
  ee->cu = nullptr;
}

ucc_status_t ee_cuda_trigger(ucc_ee* ee, Request* r, uint32_t slot) {
  CudaEe* c = ee->cu;
  const cu::Driver& d = *cu::driver();
  const uint32_t seq = c->seq_posted + 1;
  {
    CtxScope in(d, c->cuctx);
    cu::CuResult cr = in.ok() ? d.event_record(c->ready[slot], c->stream) : 1;
    if (cr == cu::kSuccess && !c->host_wait) {
      cr = d.stream_wait_value32(c->stream, c->rel_dev, seq, cu::kWaitValueGeq);
      if (cr != cu::kSuccess) {
        UCC_INFO(
            "CUDA stream engine: cuStreamWaitValue32 refused (%s); host "
            "functions hold the stream instead",
            cu::error_name(d, cr));
        c->host_wait = true;
      }
    }
    if (c->host_wait) {
      c->waits[slot] = CudaEe::Wait{c->rel, seq};
      cr = d.launch_host_func(c->stream, wait_on_host, &c->waits[slot]);
    }
    if (cr != cu::kSuccess) {
      UCC_ERROR("ucc_collective_triggered_post: CUDA stream %p: %s", c->stream,
                cu::error_name(d, cr));
      return UCC_ERR_NO_MESSAGE;
    }
  }
  c->seq_posted = seq;
  if (r->gpu.n != 0) gpu_copy_out_on(r, c->stream);
  // GPUDirect RDMA and the direct path: posted once the stream has
  // produced the input, which they then need not wait for.
  r->gr.stream = r->gr.on;
  r->gd.on_stream = r->gd.on;
  return UCC_OK;
}

bool ee_cuda_ready(ucc_ee* ee, uint32_t slot) {
  const cu::Driver& d = *cu::driver();
  const cu::CuResult cr = d.event_query(ee->cu->ready[slot]);
  if (cr == cu::kNotReady) return false;
  if (cr != cu::kSuccess)
    UCC_ERROR("CUDA stream engine: the stream failed before a collective (%s)",
              cu::error_name(d, cr));
  return true;  // an error is reported by the work after, not a hang here
}

void ee_cuda_release(ucc_ee* ee) {
  CudaEe* c = ee->cu;
  ++c->seq_done;
  __atomic_store_n(c->rel, c->seq_done, __ATOMIC_RELEASE);
}

void ee_cuda_release_all(ucc_ee* ee) {
  CudaEe* c = ee->cu;
  c->seq_done = c->seq_posted;
  __atomic_store_n(c->rel, c->seq_done, __ATOMIC_RELEASE);
}

}  // namespace ucc::host

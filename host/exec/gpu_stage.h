// GPU buffers (UCC_MEMORY_TYPE_CUDA, CUDA_MANAGED, and UNKNOWN that the
// driver says is GPU memory), by staging through pinned host memory: the
// engine, inline or in the daemon, only ever sees host memory.
//
//   init      each side of the descriptor (src, dst) whose memory is the
//             GPU's becomes a range of the request's staging buffer;
//             overlapping sides (in place) share one range. The descriptor
//             then names the staging buffer.
//   post      every staged range's copy in (device to host) is queued,
//             and an event after them; the descriptor waits in the
//             context's gate queue (coll.cc) until the event has
//             completed. No host thread waits for the GPU.
//   complete  ranges the collective writes (dst; src for bcast) are
//             queued for copying out (host to device) once the engine has
//             ended the collective, and the status says UCC_OK once their
//             event has completed; for a collective triggered on a CUDA
//             stream engine the copy is queued on that stream instead
//             (ee_cuda.cc).
//
// The staging buffer belongs to the request slot: allocated (mmap +
// cuMemHostRegister) the first time a GPU collective of that size uses
// the slot, and reused after; so after warm-up no GPU collective
// allocates. UNKNOWN memory costs no driver call in a process that never
// loaded the driver (cuda_driver.h: driver_in_process).
#pragma once

#include <ucc/api/ucc.h>

#include <cstddef>
#include <cstdint>

#include "offload/descriptor.h"
#include "platform/cuda/cuda_driver.h"

struct ucc_context;

namespace ucc::host {

struct Request;

// One staged range: `bytes` of device memory at `dev`, at `off` in the
// request's staging buffer; `out` when the collective may write it.
struct GpuRange {
  uint64_t dev;
  uint64_t bytes;
  uint64_t off;
  bool out;
};

// A request slot's staging state.
struct GpuStage {
  uint8_t n;                // ranges staged by the current collective (0..2)
  bool on_stream;           // copied out by a CUDA stream engine (ee_cuda.cc)
  bool out_pending;         // such a copy may still be reading `host`
  ucc_status_t stream_err;  // queueing that copy failed
  bool in_wait;             // posted; the copy in has not completed
  GpuRange r[2];
  plat::cuda::CuCtx cuctx;  // the buffers' CUDA context
  uint8_t* host;            // pinned staging, kept across collectives
  size_t cap;
  plat::cuda::CuEvent out_ev;  // recorded after a copy out
  plat::cuda::CuEvent in_ev;   // recorded after a post's copy in
};

// The context's GPU state: the CUDA context its GPU buffers belong to and
// the non-blocking stream its copies run on (made with the first GPU
// collective).
struct GpuDirectCtx;
struct GpuContext {
  plat::cuda::CuCtx cuctx;
  plat::cuda::CuStream copy;
  GpuDirectCtx* direct;  // kernels and IPC caches (gpu_direct.h)
};

// Memory-type values the host keeps in a BufRef's mem_type between
// lowering and staging (the engine only ever sees kMemHost).
inline constexpr uint8_t kMemHost = 0;
inline constexpr uint8_t kMemGpu = 1;      // CUDA or CUDA_MANAGED declared
inline constexpr uint8_t kMemUnknown = 2;  // UCC_MEMORY_TYPE_UNKNOWN

// After lowering (and ucc_mem_map handle checks), before the engine
// registers anything: stages d's GPU sides into r's staging buffer and
// points d at it. UCC_ERR_NOT_SUPPORTED (one line) without a usable
// driver, or with buffers of two CUDA contexts; UCC_ERR_NO_MEMORY when
// the staging buffer cannot grow.
ucc_status_t gpu_stage(ucc_context* ctx, Request* r, off::CollDesc* d);
// At post: queues the copies of the staged ranges in, and r's in event
// after them (r->gpu.in_wait). UCC_ERR_NO_MESSAGE on a CUDA error (logged).
ucc_status_t gpu_copy_in(ucc_context* ctx, Request* r);
// Whether a post's copy in has completed (no blocking call); *st:
// UCC_ERR_NO_MESSAGE where the GPU reported an error (logged).
bool gpu_copy_in_done(Request* r, ucc_status_t* st);
// At completion (before the status is published), called until it says
// otherwise: queues the copies of written ranges out and their event
// (unless a stream engine does it), then UCC_INPROGRESS until the event
// has completed. A CUDA error turns UCC_OK into UCC_ERR_NO_MESSAGE.
ucc_status_t gpu_copy_out(ucc_context* ctx, Request* r, ucc_status_t st);
// Queues the copy-out of r's written ranges on `stream` (a stream engine,
// after its wait for the collective) and records r's out event there. A
// CUDA error is logged and becomes the collective's status at completion.
void gpu_copy_out_on(Request* r, plat::cuda::CuStream stream);
// How a GPU post waits for the GPU without blocking (staging here,
// GPUDirect RDMA in gpu_rdma.cc): records *ev (made the first time, kept
// with the request slot) on stream s; and whether the event a post waits
// on (*waiting) has passed, clearing *waiting then; a GPU error is logged
// with `what` and makes *st UCC_ERR_NO_MESSAGE.
plat::cuda::CuResult record_event(plat::cuda::CuEvent* ev,
                                  plat::cuda::CuStream s);
bool event_passed(plat::cuda::CuEvent ev, bool* waiting, const char* what,
                  ucc_status_t* st);
// Releases a request slot's staging buffer (team destruction).
void gpu_stage_fini(Request* r);
// Releases the context's copy stream (context destruction).
void gpu_context_fini(GpuContext* g);

}  // namespace ucc::host

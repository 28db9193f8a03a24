// CUDA stream execution engines (UCC_EE_CUDA_STREAM), the stream side of
// host/exec/ee.cc. ee_context is the CUstream (a cudaStream_t). A collective
// triggered on one runs in the stream's order:
//   - at ucc_collective_triggered_post an event is recorded on the stream
//     (the work queued before it), then the stream is made to wait for a
//     word in pinned host memory to reach the collective's sequence
//     number (cuStreamWaitValue32; where the driver lacks stream memory
//     operations, a host function on the stream waits for it instead),
//     then the copy of its GPU results out of staging is queued;
//   - progress posts the collective once its event has completed (the
//     GPU has produced its input), and on completion stores the sequence
//     number, which lets the stream go on.
// Nothing here allocates after ucc_ee_create.
#pragma once

#include <ucc/api/ucc.h>

#include <cstdint>

#include "platform/base/arena.h"
#include "platform/cuda/cuda_driver.h"

struct ucc_ee;

namespace ucc::host {

struct Request;

struct CudaEe {
  plat::cuda::CuStream stream;
  plat::cuda::CuCtx cuctx;
  plat::cuda::CuEvent* ready;  // per queue slot: the stream reached the post
  uint32_t* rel;               // pinned: sequence number of the last done
  plat::cuda::CuDevPtr rel_dev;
  uint32_t seq_posted, seq_done;
  bool host_wait;  // no stream memory operations: host functions wait
  struct Wait {
    const uint32_t* rel;
    uint32_t seq;
  } * waits;  // per queue slot (host_wait)
};

// The CUDA state of an engine of qcap queue slots, from the engine's
// arena (base/arena.h: nullptr while counting).
CudaEe* ee_cuda_take(base::Arena& a, uint32_t qcap);
// ucc_ee_create for a CUDA stream: sets up `c` (ee_cuda_take, for
// ee->qcap) for `stream`; ee->cu once it is. UCC_ERR_NOT_SUPPORTED without
// a usable driver.
ucc_status_t ee_cuda_create(ucc_ee* ee, CudaEe* c, void* stream);
// ucc_ee_destroy: waits for the stream to pass this engine's work, then
// frees what create made.
void ee_cuda_destroy(ucc_ee* ee);
// ucc_collective_triggered_post of r into queue slot `slot`.
ucc_status_t ee_cuda_trigger(ucc_ee* ee, Request* r, uint32_t slot);
// Whether the stream has reached slot's collective (its input is ready).
bool ee_cuda_ready(ucc_ee* ee, uint32_t slot);
// The head collective ended: the stream may go past it.
void ee_cuda_release(ucc_ee* ee);
// Lets the stream past every collective triggered on the engine (its team
// went away with them).
void ee_cuda_release_all(ucc_ee* ee);

}  // namespace ucc::host

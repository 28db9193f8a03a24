// GPU buffers reached by the engine with GPUDirect RDMA: where the engine
// reaches this process's memory by RDMA (UCC_OFFLOAD_MEM=verbs, and the
// dpu mode: the engine on another computer), GPU memory is registered with
// the device like host memory, and the engine reads and writes it in
// place. No staging copy, no host thread waiting on the GPU.
//
//   init      each GPU side of the descriptor: the driver's allocation
//             holding it (cuMemGetAddressRange, buffer id) is registered
//             with the device once, through the engine link's cache: by
//             its dma-buf (cuMemGetHandleForAddressRange + ibv_reg_dmabuf_
//             mr), else by pointer (ibv_reg_mr, nvidia-peermem), else not
//             (the collective is staged: gpu_stage.h; each fallback said
//             once). The side is then named by that registration's key.
//   post      a plain post records an event on the legacy stream (the
//             caller's work on the buffers); the descriptor goes to the
//             engine once the event has completed, from progress, with
//             every later post of the team held behind it so the team's
//             post order holds. A CUDA stream engine posts a collective
//             only once its stream has reached it: nothing to wait for.
//   complete  the engine has written the results into GPU memory before
//             the completion word (one queue pair, in order): nothing left.
//
// Memory: one event per request slot, made with its first GPUDirect post
// and kept.
#pragma once

#include <ucc/api/ucc.h>

#include <cstdint>

#include "offload/descriptor.h"
#include "platform/cuda/cuda_driver.h"

struct ucc_context;
struct ucc_team;

namespace ucc::host {

struct Request;

// A request slot's GPUDirect RDMA state.
struct GpuRdma {
  bool on;       // the current collective's GPU sides are registered
  bool stream;   // posted by a CUDA stream engine: its input is ready
  bool waiting;  // posted; the caller's work on the buffers is not done
  plat::cuda::CuCtx cuctx;
  plat::cuda::CuEvent in;  // recorded at a plain post
};

// After gpu_direct_init declined, before gpu_stage: registers d's GPU
// sides with the device and names them by their registrations (r->gr.on);
// where this does not apply or the device refuses, leaves d for staging.
ucc_status_t gpu_rdma_init(ucc_context* ctx, Request* r, off::CollDesc* d);

// A plain post of such a collective: records r's input event; r->gr.
// waiting until it has completed. UCC_ERR_NO_MESSAGE (logged) where the
// driver fails.
ucc_status_t gpu_rdma_post(Request* r);

// Whether the input of a waiting post is ready now (no blocking call);
// *st: UCC_ERR_NO_MESSAGE where the GPU reported an error.
bool gpu_rdma_ready(Request* r, ucc_status_t* st);

// Gives back a request slot's event (team teardown).
void gpu_rdma_fini(Request* r);

}  // namespace ucc::host

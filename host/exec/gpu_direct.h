// GPU buffers without staging, for teams whose ranks share one host: the
// ranks trade CUDA IPC handles of their buffers, and one rank, the worker
// (team rank 0), moves and reduces everyone's data on its GPU stream: copy
// engines for data movement (cuMemcpyDtoDAsync), kernels for reductions
// (device/gpu, loaded from the fatbin in libucc.a through the driver API).
// The host thread never waits for the GPU: every step is an event or a
// word that progress polls.
//
// One collective, rank r of n (gpu_direct.cc has the details):
//   post      record `in` on the legacy stream (the caller's work on the
//             buffers so far), write r's token (IPC handles of src and dst,
//             offsets, the flag page, the team's collective number `seq`),
//             and submit an allgather of the tokens to the engine (host
//             memory, so inline and emu engines alike carry it, in post
//             order with the team's other collectives).
//   exchange  the allgather ended: every token is checked (magic, seq,
//             offsets inside the allocations); the worker opens the
//             peers' allocations through the context's IPC cache and maps
//             their flag pages.
//   input     `in` has completed: a peer stores seq in its flag page's
//             ready word; the worker waits until every peer's ready word
//             says seq, then queues the work, then a kernel that writes
//             seq into every peer's done word, then records `done`.
//   finish    a peer: its done word says seq (the worker has read its
//             src and written its dst); the worker: `done` completed.
// A flag page is a memfd of this rank's (one 64-byte slot per request of
// the team) that the worker maps and registers with the driver: peers
// poll their own memory, the worker's host polls the ready words. After
// the words, a block table per request slot: a v-collective's sides with
// displacements, block by block, each block in an allocation of its own
// or not (IPC handle, offset, length), written before the token goes out
// and read by the worker after the exchange (256 bytes of token would not
// hold 32 blocks and their allocations).
//
// Chosen at ucc_collective_init (gpu_direct_init) for allreduce, reduce,
// reduce_scatter(v) (dtypes and ops the kernels take: gpu_kernels.h),
// allgather(v), alltoall(v), bcast, gather(v) and
// scatter(v) when every GPU side is device memory of one CUDA context, the
// team is on one host with 2..32 ranks, the collective is neither tagged
// nor on an active set, and UCC_GPU_DIRECT is not "no"; everything else
// is staged (gpu_stage.h). Every rank of a collective must see the same
// choice: ranks must declare the same memory types (docs/gpu.md); a
// v-collective's rank whose blocks are all empty takes the path too.
#pragma once

#include <ucc/api/ucc.h>

#include <cstdint>

#include "offload/descriptor.h"
#include "platform/cuda/cuda_driver.h"

struct ucc_context;
struct ucc_team;

namespace ucc::host {

struct Request;
struct GpuDirectTeam;  // gpu_direct.cc
struct GpuDirectCtx;   // gpu_direct.cc

// A request slot's state on the direct path.
struct GpuDirectReq {
  bool on;        // this collective runs on the direct path
  uint8_t phase;  // gpu_direct.cc: Phase
  bool worker;
  bool input_ok;  // `in` has completed (a peer: its ready word says so)
  // Triggered on a CUDA stream engine (ee_cuda_trigger), for the post
  // that follows: the engine posts it once the stream has produced the
  // input, so there is no `in` to wait for.
  bool on_stream;
  uint64_t seq;
  uint64_t polls;             // liveness checks of peers are spaced by it
  off::CollDesc user;         // the collective, with its GPU addresses
  plat::cuda::CuEvent in_ev;  // made with the slot's first direct post
  plat::cuda::CuEvent done_ev;
  uint16_t refs[72];  // IPC cache entries this collective holds
  uint8_t nrefs;
  bool more;      // the worker has queued a batch of moves, not the last
  uint32_t next;  // the worker's next move (gpu_work_v.cc)
  uint8_t why;  // gpu_direct.cc: Why the path was not taken (0: taken)
};

// At ucc_collective_init, after lowering and before staging: takes the
// direct path when it applies, leaving in *d the token exchange that the
// engine carries. UCC_OK either way (r->gd.on says which); an error only
// when the path applies and its resources cannot be had.
ucc_status_t gpu_direct_init(ucc_context* ctx, ucc_team* team, Request* r,
                             off::CollDesc* d);
// A collective whose GPU buffers are staged after all (gpu_stage.cc):
// says why the direct path did not take it, at info level, once per
// process and reason.
void gpu_direct_say_staged(const Request* r);
// At post, before the exchange is submitted: records the input event and
// writes this rank's token. Never waits for the GPU.
ucc_status_t gpu_direct_post(ucc_context* ctx, Request* r);
// From reap: `xst` is the exchange's status (UCC_INPROGRESS while it
// runs). Returns UCC_INPROGRESS until the collective has ended here.
ucc_status_t gpu_direct_progress(ucc_context* ctx, Request* r,
                                 ucc_status_t xst);
// Team destruction: waits for the GPU work of its requests still queued,
// gives back their cache entries and events, unmaps the flag pages.
void gpu_direct_team_fini(ucc_team* team);
// Context destruction: closes every cached IPC mapping, unloads kernels.
void gpu_direct_context_fini(ucc_context* ctx);

}  // namespace ucc::host

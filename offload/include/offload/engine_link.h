// The host's end of its engine: how a context reaches the engine that runs
// its collectives. Two implementations, both in host/:
//   inline  the engine in this process, progressed by progress()
//           (host/link/link_inline.cc: the one host file that includes
//           device/);
//   daemon  the engine in this node's firmware_sim, the emulated DPU, over
//           a unix socket and the control protocol of proto.h
//           (host/link/link_daemon.cc).
// The link owns the channel's memory (channel.h): completion words either
// way, and the ring that carries descriptors to a remote engine (an
// inline one takes them straight from submit()). The link answers the
// engine's capability record (caps.h) from the engine itself.
//
// Threads: the context serialises every call (its lock in
// UCC_THREAD_MULTIPLE).
#pragma once

#include <cstdint>

#include "offload/caps.h"
#include "offload/descriptor.h"
#include "offload/team_addr.h"

namespace ucc::off {

class EngineLink {
 public:
  EngineLink() = default;
  EngineLink(const EngineLink&) = delete;
  EngineLink& operator=(const EngineLink&) = delete;
  virtual ~EngineLink() = default;

  // What the engine can do (valid once the link is open).
  const EngineCaps& caps() const { return caps_; }

  // Whether the engine runs outside this process (emu).
  virtual bool remote() const = 0;
  // The process that owns this engine's fabric segments: ours inline,
  // the daemon's otherwise.
  virtual int owner_pid() const = 0;

  // Inline: the engine's progress, returning how much happened (0: idle).
  // Remote: 0 (the daemon progresses); now and then it also looks
  // whether the daemon is still there.
  virtual uint64_t progress() = 0;
  // The engine has gone (its daemon closed the socket): collectives in
  // flight end with an error, and nothing more can be posted.
  virtual bool dead() const = 0;
  // Hands one descriptor to the engine; false when it cannot take it now
  // (the channel's ring is full). Inline: the engine takes it at once
  // (Engine::submit), and a collective with nothing before it starts
  // during the call. Remote: onto the channel's ring.
  virtual bool submit(const CollDesc& d) = 0;
  // Inline: a descriptor submitted before and not changed since (a
  // persistent request posted again), named by its team, completion slot
  // and new generation, which the engine runs from its own validated copy
  // (Engine::submit_known). false where the engine does not know it (or
  // is remote): submit() it then.
  virtual bool submit_known(uint32_t team, uint32_t slot, uint32_t gen) {
    (void)team;
    (void)slot;
    (void)gen;
    return false;
  }
  // After submitting descriptors: wakes a sleeping remote engine.
  virtual void submitted() = 0;

  // Remote: makes sure the engine may reach every host range `d` names
  // (its buffers and v-arrays; n = ranks taking part), registering what
  // is not yet. A buffer whose BufRef has a key is inside a pinned
  // registration already. Inline: nothing to do. kOk; else the engine's
  // refusal (kInvalidParam: memory this process has not mapped;
  // kNoResource: its table is full) or kError.
  virtual Status cover(const CollDesc& d, uint32_t n) = 0;
  // Remote: registers exactly [addr, addr + len) until unpin(*key)
  // (ucc_mem_map); descriptors name it by *key. Inline: *key = 0. kOk,
  // kInvalidParam (len 0, wrap-around, or memory this process has not
  // mapped), kNoResource (the engine's table is full), kError (gone).
  virtual Status pin(uint64_t addr, uint64_t len, uint32_t* key) = 0;
  // Ends a pin() registration (key 0 or a gone engine: nothing to do).
  virtual void unpin(uint32_t key) = 0;

  // GPUDirect RDMA (host/exec/gpu_rdma.h). Whether the engine reaches
  // this process's memory by RDMA (UCC_OFFLOAD_MEM=verbs, dpu), so that
  // GPU memory registered with the device is as reachable as host memory.
  virtual bool rdma_mem() const { return false; }
  // Makes sure the engine may reach [addr, addr + len) of GPU memory, of
  // the driver's allocation `id` (its buffer id: a registration of an
  // allocation since freed is dropped, never reused), and names the
  // registration (*key, for the descriptor's BufRef). Registers the
  // page-rounded range where it is not yet, by the dma-buf fd that
  // make_fd(arg, base, bytes) returns for it (-1: none; closed here after),
  // else by pointer. kOk; kNotSupported where the device takes GPU memory
  // neither way (GPU buffers are staged then); else as cover().
  using DmaBufFn = int (*)(void* arg, uint64_t base, uint64_t bytes);
  virtual Status cover_gpu(uint64_t addr, uint64_t len, uint64_t id,
                           DmaBufFn make_fd, void* arg, uint32_t* key) {
    (void)addr;
    (void)len;
    (void)id;
    (void)make_fd;
    (void)arg;
    *key = 0;
    return Status::kNotSupported;
  }

  // Team control, as the engine's (device/engine/engine.h): a slot and
  // this rank's fabric address; all members' addresses; creation
  // resources released; the slot freed.
  virtual Status team_open(uint32_t size, uint32_t rank, uint32_t* idx,
                           TeamAddr* addr) = 0;
  virtual Status team_connect(uint32_t idx, uint32_t size,
                              const TeamAddr* addrs) = 0;
  virtual void team_seal(uint32_t idx) = 0;
  virtual void team_close(uint32_t idx) = 0;

 protected:
  EngineCaps caps_{};
};

}  // namespace ucc::off

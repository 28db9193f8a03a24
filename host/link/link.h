// Opening a context's engine link (offload/engine_link.h): the engine in
// this process (inline, link_inline.cc), in this node's firmware_sim
// daemon (emu, link_daemon.cc), or in a firmware_sim on another computer
// (dpu, link_dpu.cc).
#pragma once

#include <cstdint>
#include <new>

#include "offload/channel.h"
#include "offload/engine_config.h"
#include "offload/engine_link.h"
#include "platform/fabric/net_config.h"

namespace ucc::host {

using off::Status;

struct LinkConfig {
  off::EngineConfig engine;
  // Inline: generic datatypes reduce through the host's callbacks.
  off::UserReduce user_reduce;
  // Inline: this process's host (platform/os/host_id.h), and how its
  // engine reaches other hosts (UCC_NET, platform/net/net.h): over TCP,
  // or over verbs with TCP for connection setup, each configured so.
  // Emu with rdma_mem: the verbs port of the host's end (net.verbs).
  uint64_t host[2] = {0, 0};
  plat::NetConfig net;
  bool emu = false;
  // Emu: the engine reaches this process's memory by verbs RDMA
  // (UCC_OFFLOAD_MEM=verbs, platform/net/net.h: open_mem_export) instead
  // of cross-memory attach; room for this many ucc_mem_map pins besides
  // the link's own cache.
  bool rdma_mem = false;
  uint32_t mem_map_handles = 0;
  const char* socket_path = nullptr;  // emu; "" = the default path
  const char* daemon_path = nullptr;  // emu autostart: binary, or "none"
  uint32_t timeout_ms = 10000;        // daemon start and each request
  // dpu (implies emu and rdma_mem): the daemon on another computer, at
  // this "host:port" (UCC_DPU_ADDR, resolved: link_dpu.cc).
  bool dpu = false;
  const char* dpu_addr = nullptr;
  // dpu: this process's memory over TCP instead (UCC_DPU_MEM=tcp, the
  // fallback: platform/mem/tcp_mem.h).
  bool dpu_mem_tcp = false;
  // dpu: descriptors pushed into the engine's inbox by RDMA WRITE
  // (UCC_DPU_RING=push), else read by the engine from our ring.
  bool dpu_push = false;
  // emu: allreduce vectors of up to this many bytes travel inline
  // (UCC_OFFLOAD_INLINE; the channel then has result areas); 0: none.
  uint32_t inline_bytes = 0;
};

// Lays out `ch` (sq_capacity descriptors, ncomp completion words) in
// memory the link owns, and starts the engine or connects to (and if
// needed starts) the daemon. *out is the open link, to delete when done.
// kNoMemory, kNoResource (no daemon to reach), kInvalidParam (the engine
// refused the configuration), kError.
Status open_inline_link(const LinkConfig& cfg, uint32_t sq_capacity,
                        uint32_t ncomp, off::Channel* ch,
                        off::EngineLink** out);
Status open_daemon_link(const LinkConfig& cfg, uint32_t sq_capacity,
                        uint32_t ncomp, off::Channel* ch,
                        off::EngineLink** out);

// Both: a new link of type L, opened (L::open takes the arguments above);
// on failure nothing is left.
template <typename L>
Status make_link(const LinkConfig& cfg, uint32_t sq_capacity, uint32_t ncomp,
                 off::Channel* ch, off::EngineLink** out) {
  auto* l = new (std::nothrow) L;
  if (l == nullptr) return Status::kNoMemory;
  const Status st = l->open(cfg, sq_capacity, ncomp, ch);
  if (failed(st)) {
    delete l;
    return st;
  }
  *out = l;
  return Status::kOk;
}

}  // namespace ucc::host

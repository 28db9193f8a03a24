// One client of the daemon as its two source files see it (server.cc: the
// loop and the unix-socket clients; remote_client.cc: clients over TCP,
// dpu mode), and the checks both apply to a hello.
#pragma once

#include <cstdint>

#include "device/engine/engine.h"
#include "firmware_sim/client_io.h"
#include "firmware_sim/remote_channel.h"
#include "firmware_sim/server.h"
#include "offload/channel.h"
#include "offload/control_auth.h"
#include "offload/proto.h"
#include "platform/mem/reg_table.h"
#include "platform/mem/remote_mem.h"
#include "platform/mem/tcp_mem.h"
#include "platform/os/clock.h"
#include "platform/os/proc_id.h"

namespace ucc::fw {

struct Server::Client {
  ClientIo io;  // the control socket, never blocking us
  int pid = -1;
  int64_t uid = -1;  // the peer's, from the socket
  plat::ProcId id;   // its process at hello (proc_id.h)
  uint64_t id_checked_ms = 0;
  void* chmem = nullptr;
  size_t chbytes = 0;
  off::Channel ch;
  dev::Engine engine;
  plat::RegTable regs;  // what the host lets its engine reach
  // Its memory by RDMA (kRdmaConnect), once asked; until then, and where
  // not, cross-memory attach (never over TCP).
  plat::RemoteMemSlot rmem;  // and its transfers there, by step
  bool ready = false;  // kHello done
  uint32_t teams = 0;
  // Over TCP (dpu mode): no credentials, so no pid, uid or /proc; the
  // client is whoever proved the key on this connection.
  bool tcp = false;
  bool authed = false;
  uint8_t nonce[off::proto::kNonceBytes] = {};  // our challenge
  off::proto::Session session;
  uint32_t last_seq = 0;
  uint64_t since_ms = 0;            // accepted at
  RemoteChannel* mirror = nullptr;  // its channel, by RDMA
  void* inbox = nullptr;            // where it pushes descriptors, if it does
  size_t inbox_bytes = 0;
  // Or over TCP (the fallback): its memory channel, once attached also
  // in rmem, and the token its second connection must present.
  plat::TcpMemClient* tcpmem = nullptr;
  uint8_t token[32] = {};
};

inline uint64_t now_ms() { return plat::now_ns() / 1000000; }

// The channel geometry and engine configuration a host asks for, within
// the limits the daemon accepts (the host library's own knob limits).
inline bool hello_ok(const off::proto::Hello& h) {
  const auto pow2 = [](uint64_t v) { return v != 0 && (v & (v - 1)) == 0; };
  if (h.desc_version != off::kDescVersion) return false;
  if (!pow2(h.sq_capacity) || h.sq_capacity > 65536) return false;
  if (h.ncomp == 0 || h.ncomp > (1u << 24)) return false;
  if (h.nres != 0 && h.nres != h.ncomp) return false;
  if (h.channel_bytes !=
      off::Channel::bytes_needed(h.sq_capacity, h.ncomp, h.nres))
    return false;
  return off::engine_config_ok(h.engine);
}

}  // namespace ucc::fw

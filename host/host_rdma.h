// UCC_OFFLOAD_MEM=verbs: the host's side of the verbs channel to its
// firmware_sim engine (platform/verbs/verbs_channel.h). The host opens its
// RDMA port, connects one queue pair to the engine's (kRdmaConnect), and
// registers with the device every range it registers with the daemon
// (ucc_mem_map pins, and the link's cache of collective buffers), passing
// the remote key along; the engine then reads and writes those ranges by
// RDMA instead of cross-memory attach, after the same registration
// checks. Builds without rdma-core's headers too: open() then refuses.
#pragma once

#include <cstdint>

#include "offload/proto.h"
#include "offload/types.h"
#include "platform/verbs/verbs_config.h"

namespace ucc::host {

using off::Status;

class HostRdma {
 public:
  // The port and a queue pair (*mine: for the engine); room for `nregs`
  // registrations at once. kNotSupported without verbs in the build,
  // kNoResource without a port.
  static Status open(const plat::verbs::VerbsConfig& cfg, uint32_t nregs,
                     off::proto::RdmaAddr* mine, HostRdma** out);
  ~HostRdma();

  Status connect(const off::proto::RdmaAddr& engine);
  // Registers [addr, addr + len) with the device: *rkey for the daemon,
  // *slot to name it (bind it to the daemon's key, or drop it).
  Status reg(uint64_t addr, uint64_t len, uint32_t* rkey, uint32_t* slot);
  void bind(uint32_t slot, uint32_t key);
  void drop(uint32_t slot);
  // The registration bound to the daemon's `key` goes (none: nothing).
  void release(uint32_t key);

 private:
  HostRdma() = default;
  struct Impl;
  Impl* impl_ = nullptr;
};

}  // namespace ucc::host

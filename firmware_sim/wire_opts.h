// firmware_sim's wire options: which DPDK ports connect this emulated NIC
// to the others, and the transport's knobs (platform/wire/wire.h).
#pragma once

#include <cstdint>

#include "offload/types.h"
#include "platform/wire/wire.h"

namespace ucc::fw {

struct WireOptions {
  static constexpr uint32_t kMaxPorts = 16;
  // --wire-port as given, or made by --wire-mesh into `made` (dpdk_init
  // copies them).
  const char* vdev[kMaxPorts] = {};
  char made[kMaxPorts][320] = {};
  uint32_t nvdev = 0;
  uint32_t max_frame = 9000;
  uint32_t mem_mb = 256;
  plat::wire::WireConfig cfg;
};

// Takes option `a` (with value v) when it is a wire option: returns 1 when
// it used v, 0 when `a` is not a wire option, -1 for a bad value.
int wire_option(const char* a, const char* v, WireOptions* o);
// The usage lines for the wire options.
const char* wire_usage();
// Starts DPDK and the ports, then the wire over them. Without DPDK in the
// build: kNotSupported, with a message.
off::Status wire_start(WireOptions* o, plat::wire::Wire* w);
void wire_stop();

}  // namespace ucc::fw

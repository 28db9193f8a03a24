// A frame port: one NIC port of a node, as the wire sees it. Two kinds:
// DpdkPort (dpdk_port.h: a DPDK ethdev, e.g. net_memif or net_af_packet)
// and MemPort (mem_port.h: an in-process pair for tests).
//
// Threads: the wire's (one) thread calls everything.
#pragma once

#include <cstdint>

#include "platform/wire/frame.h"

namespace ucc::plat::wire {

// Called for each received frame; the bytes are valid during the call only.
using RxFn = void (*)(void* ctx, uint32_t port, const uint8_t* frame,
                      uint32_t len);

class FramePort {
 public:
  virtual ~FramePort() = default;
  // Copies one frame (Ethernet header included, len <= max_frame()) into
  // the port's transmit queue. False when the port has no room now (the
  // caller tries again later); the frame is then not sent.
  virtual bool tx(const void* frame, uint32_t len) = 0;
  // Hands queued frames to the device.
  virtual void flush() = 0;
  // Delivers up to `max` received frames to fn; returns how many.
  virtual uint32_t rx(RxFn fn, void* ctx, uint32_t port, uint32_t max) = 0;
  virtual Mac mac() const = 0;
  virtual uint32_t max_frame() const = 0;
  // Link state, and a chance to repair it (called every 100 ms or so).
  virtual bool up() = 0;
  virtual void maintain(uint64_t /*now_ns*/) {}
};

}  // namespace ucc::plat::wire

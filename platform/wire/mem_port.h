// MemPort: two frame ports joined back to back in one process, for tests
// of the wire without a NIC. Each direction is a ring of `depth` frames;
// a full ring refuses tx (back-pressure, as memif does).
#pragma once

#include <cstdint>

#include "platform/base/arena.h"
#include "platform/wire/port.h"

namespace ucc::plat::wire {

class MemPort final : public FramePort {
 public:
  MemPort() = default;
  MemPort(const MemPort&) = delete;
  MemPort& operator=(const MemPort&) = delete;
  ~MemPort() override;

  // Joins a and b (each with its own MAC). False when memory runs out.
  static bool join(MemPort* a, MemPort* b, const Mac& mac_a, const Mac& mac_b,
                   uint32_t max_frame, uint32_t depth = 256);

  bool tx(const void* frame, uint32_t len) override;
  void flush() override {}
  uint32_t rx(RxFn fn, void* ctx, uint32_t port, uint32_t max) override;
  Mac mac() const override { return mac_; }
  uint32_t max_frame() const override { return max_frame_; }
  bool up() override { return peer_ != nullptr; }

 private:
  struct Ring;
  base::Arena mem_;     // in_ and its buffers
  Ring* in_ = nullptr;  // ours to read, the peer's to write
  MemPort* peer_ = nullptr;
  Mac mac_{};
  uint32_t max_frame_ = 0;
};

}  // namespace ucc::plat::wire

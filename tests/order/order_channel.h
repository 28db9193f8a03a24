// A channel (offload/channel.h) for the ordering checks: its block laid
// out by the host end and attached by the engine end, as a host and its
// engine have it, one mapping here.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "offload/channel.h"
#include "tests/order/order_check.h"

namespace ucct_order {

struct ChannelPair {
  // A ring of `slots` descriptors and as many completion words.
  explicit ChannelPair(uint32_t slots) {
    const size_t bytes = ucc::off::Channel::bytes_needed(slots, slots);
    mem = std::aligned_alloc(64, (bytes + 63) & ~size_t{63});
    std::memset(mem, 0, bytes);
    host.init(mem, slots, slots);
    if (engine.attach(mem, bytes) != ucc::off::Status::kOk) fail("attach", 0);
  }
  ~ChannelPair() { std::free(mem); }
  ChannelPair(const ChannelPair&) = delete;
  ChannelPair& operator=(const ChannelPair&) = delete;

  void* mem = nullptr;
  ucc::off::Channel host, engine;
};

}  // namespace ucct_order

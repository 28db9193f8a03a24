// The channel (offload/channel.h) between a host and an engine thread:
// the host arms a completion word and submits a descriptor; the engine
// takes it, writes the "user buffer" and publishes the completion word;
// the host sees the word and reads the buffer (pair kCompletion; the
// descriptor travels on the ring, kRingPublish and kRingReuse).
#include <cstdint>
#include <thread>

#include "tests/order/order_channel.h"

int main() {
  using ucc::off::CollDesc;
  constexpr uint32_t kSlots = 4;
  constexpr uint32_t kN = 30000;
  ucct_order::ChannelPair ch(kSlots);
  ucc::off::Channel& host = ch.host;
  ucc::off::Channel& engine = ch.engine;
  static uint64_t user[kSlots][8];  // the collectives' destinations
  std::thread eng([&] {
    ucct_order::Spin spin;
    for (uint32_t i = 0; i < kN; ++i) {
      const CollDesc* d;
      while ((d = engine.next()) == nullptr) spin.pause();
      const uint32_t slot = d->comp_slot % kSlots, gen = d->gen;
      engine.done();
      for (uint32_t k = 0; k < 8; ++k) user[slot][k] = uint64_t{gen} * 8 + k;
      engine.complete(slot, gen, ucc::off::Status::kOk);
    }
  });
  ucct_order::Spin spin;
  for (uint32_t i = 0; i < kN; ++i) {
    const uint32_t slot = i % kSlots, gen = i + 1;
    // The slot's previous collective must have completed (the host only
    // reuses a request it has seen end), so its buffer is ours again.
    if (i >= kSlots) {
      const uint64_t want =
          ucc::off::completion_word(gen - kSlots, ucc::off::Status::kOk);
      while (host.read(slot) != want) spin.pause();
      for (uint32_t k = 0; k < 8; ++k)
        if (user[slot][k] != uint64_t{gen - kSlots} * 8 + k)
          ucct_order::fail("a result seen before it was written", gen);
    }
    host.arm(slot, gen);
    CollDesc d{};
    d.comp_slot = slot;
    d.gen = gen;
    while (!host.submit(d)) spin.pause();
  }
  eng.join();
  return 0;
}

// The doorbell (offload/channel.h, docs/architecture.md "Memory
// ordering"): an engine about to nap sets its idle flag, then looks at
// the ring once more; a host submits a descriptor (the ring's release
// store of its head), then takes the flag. Either the engine sees the
// descriptor or the host sees the flag, never neither: that is
// store-to-load order on both sides, which acquire and release do not
// give and x86 does not either (a load may pass an earlier store still in
// the core's store buffer). ThreadSanitizer does not model that
// reordering, so this check runs natively: many rounds in which both
// threads race through their two steps at once, counting the rounds where
// both missed ("lost").
//
// As the library builds it no round may be lost. Built with one side
// weakened (platform/base/order.h, kDoorbell: the engine's exchange as a
// release store, or the host's as a load first), the hardware shows the
// store buffer's reordering within the rounds: the check prints how many
// were lost, and ctest expects some.
//
//   order_doorbell [SECONDS]   (default 4: rounds run until then, or,
//                               weakened, until one is lost)
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "platform/os/clock.h"
#include "tests/order/order_channel.h"

namespace {

// A few iterations of nothing, so that the two sides' steps meet at
// shifting offsets from round to round.
void delay(uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) asm volatile("" ::: "memory");
}

}  // namespace

int main(int argc, char** argv) {
  using ucc::off::CollDesc;
  const double seconds = argc > 1 ? std::atof(argv[1]) : 4.0;
  if (std::thread::hardware_concurrency() < 2) {
    std::printf(
        "doorbell: skipped, needs two CPUs to run both sides at "
        "once\n");
    return 77;
  }
  ucct_order::ChannelPair ch(4);
  ucc::off::Channel& host = ch.host;
  ucc::off::Channel& engine = ch.engine;

  // Round r starts when the host sets `go` to 2r+1; the engine says what
  // it saw (engine_saw, engine_ready 1), and the host ends the round
  // (2r+2), after which the engine takes the descriptor back and clears
  // its flag (engine_ready 2).
  std::atomic<uint64_t> go{0};
  std::atomic<uint32_t> engine_saw{0}, engine_ready{0};
  std::atomic<bool> stop{false};
  std::thread eng([&] {
    ucct_order::Spin spin;
    uint32_t seed = 12345;
    for (uint64_t r = 0;; ++r) {
      while (go.load(std::memory_order_acquire) != 2 * r + 1) {
        if (stop.load(std::memory_order_acquire)) return;
        spin.pause();
      }
      seed = seed * 1103515245u + 12345u;
      delay((seed >> 16) % 64);
      engine.set_engine_idle(true);
      const bool saw = engine.next() != nullptr;
      engine_saw.store(saw ? 1 : 0, std::memory_order_relaxed);
      engine_ready.store(1, std::memory_order_release);
      // The round's end: the descriptor back, the flag down.
      while (go.load(std::memory_order_acquire) != 2 * r + 2) spin.pause();
      while (engine.next() != nullptr) engine.done();
      engine.set_engine_idle(false);
      engine_ready.store(2, std::memory_order_release);
    }
  });

  ucct_order::Spin spin;
  uint32_t seed = 777;
  uint64_t rounds = 0, lost = 0, rang = 0;
  uint32_t host_delay = 64;
  const uint64_t end =
      ucc::plat::now_ns() + static_cast<uint64_t>(seconds * 1e9);
  CollDesc d{};
  for (uint64_t r = 0; ucc::plat::now_ns() < end; ++r) {
    engine_ready.store(0, std::memory_order_relaxed);
    go.store(2 * r + 1, std::memory_order_release);
    seed = seed * 1103515245u + 12345u;
    delay(host_delay + (seed >> 16) % 32);
    d.gen = static_cast<uint32_t>(r);
    if (!host.submit(d)) ucct_order::fail("ring full", r);
    const bool took = host.take_doorbell();
    while (engine_ready.load(std::memory_order_acquire) != 1) spin.pause();
    const bool saw = engine_saw.load(std::memory_order_relaxed) != 0;
    rang += took ? 1 : 0;
    lost += !took && !saw ? 1 : 0;
    // Steer the two sides' steps onto each other: the host came late
    // when it found the flag (the engine had set it first), early when
    // the engine found the descriptor.
    if (took && host_delay > 0) --host_delay;
    if (saw && !took && host_delay < 4096) ++host_delay;
    go.store(2 * r + 2, std::memory_order_release);
    while (engine_ready.load(std::memory_order_acquire) != 2) spin.pause();
    ++rounds;
    // Weakened, one lost round is what the check is for.
    if (UCC_WEAKEN_PAIR != 0 && lost != 0) break;
  }
  stop.store(true, std::memory_order_release);
  eng.join();
  std::printf("doorbell: %llu rounds, %llu rang, %llu lost\n",
              static_cast<unsigned long long>(rounds),
              static_cast<unsigned long long>(rang),
              static_cast<unsigned long long>(lost));
  return lost == 0 ? 0 : 1;
}

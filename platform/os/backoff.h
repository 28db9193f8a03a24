// Idle back-off for polling loops. Many ranks oversubscribed on few cores
// must not burn their time slices spinning: after `spin_limit` consecutive
// idle polls each further idle poll yields the core (sched_yield).
//
// Threads: any; threads sharing one instance (a context polled by several
// threads) share the count, which is only a hint.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>

namespace ucc::plat {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

class Backoff {
 public:
  explicit Backoff(uint32_t spin_limit = 64) : spin_limit_(spin_limit) {}
  // May run while other threads call idle() (a context's team creation
  // while its other threads progress): relaxed, the limit is a hint too.
  void set_spin_limit(uint32_t n) {
    spin_limit_.store(n, std::memory_order_relaxed);
  }
  // Call after a poll that found work.
  void reset() { idle_.store(0, std::memory_order_relaxed); }
  // Call after a poll that found nothing.
  void idle() {
    // Relaxed load and store, no read-modify-write: a lost update between
    // threads only shifts when the next yield happens.
    uint32_t n = idle_.load(std::memory_order_relaxed) + 1;
    idle_.store(n, std::memory_order_relaxed);
    if (n > spin_limit_.load(std::memory_order_relaxed)) {
      sched_yield();
    } else {
      cpu_relax();
    }
  }

 private:
  std::atomic<uint32_t> spin_limit_;
  std::atomic<uint32_t> idle_{0};
};

}  // namespace ucc::plat

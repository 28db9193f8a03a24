// Idle back-off for polling loops. Many ranks oversubscribed on few cores
// must not burn their time slices spinning: after `spin_limit` consecutive
// idle polls each further idle poll yields the core (sched_yield).
//
// Threads: one instance per polling thread.
#pragma once

#include <sched.h>

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
  void set_spin_limit(uint32_t n) { spin_limit_ = n; }
  // Call after a poll that found work.
  void reset() { idle_ = 0; }
  // Call after a poll that found nothing.
  void idle() {
    if (++idle_ > spin_limit_) {
      sched_yield();
    } else {
      cpu_relax();
    }
  }

 private:
  uint32_t spin_limit_;
  uint32_t idle_ = 0;
};

}  // namespace ucc::plat

// Helpers of the ordering checks (tests/order/): each check runs one
// lock-free protocol between two threads under ThreadSanitizer, many
// times, and checks every value it passes. Built once as the library
// has it, and once per end of each labelled pair weakened to relaxed
// (platform/base/order.h): ThreadSanitizer must then report a race,
// since the data the pair orders is no longer ordered for it.
#pragma once

#include <sched.h>

#include <cstdio>
#include <cstdlib>

namespace ucct_order {

// A bounded spin, then a yield: two busy threads on two cores shared
// with other tests.
struct Spin {
  unsigned n = 0;
  void pause() {
    if (++n % 64 == 0) sched_yield();
  }
};

[[noreturn]] inline void fail(const char* what, unsigned long long i) {
  std::fprintf(stderr, "order check: %s at %llu\n", what, i);
  std::exit(1);
}

}  // namespace ucct_order

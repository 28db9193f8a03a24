// The SPSC ring (offload/spsc_ring.h) between a producer and a consumer
// thread: every entry arrives whole and in order, and entries are reused
// only after the consumer is done with them (pairs kRingPublish and
// kRingReuse).
#include <cstdint>
#include <thread>

#include "offload/spsc_ring.h"
#include "tests/order/order_check.h"

namespace {

struct Entry {
  uint64_t a, b, c, d;
};

}  // namespace

int main() {
  constexpr uint32_t kCap = 8;
  constexpr uint64_t kN = 100000;
  static ucc::off::RingIndices idx;
  static Entry slots[kCap];
  ucc::off::SpscRing<Entry> prod, cons;
  prod.init(&idx, slots, kCap);
  cons.attach(&idx, slots, kCap);
  std::thread producer([&] {
    ucct_order::Spin spin;
    for (uint64_t i = 0; i < kN; ++i) {
      Entry* e;
      while ((e = prod.reserve()) == nullptr) spin.pause();
      e->a = i;
      e->b = ~i;
      e->c = i * 3;
      e->d = i ^ 0x5555;
      prod.commit();
    }
  });
  ucct_order::Spin spin;
  for (uint64_t i = 0; i < kN; ++i) {
    const Entry* e;
    while ((e = cons.peek()) == nullptr) spin.pause();
    if (e->a != i || e->b != ~i || e->c != i * 3 || e->d != (i ^ 0x5555))
      ucct_order::fail("an entry arrived torn or out of order", i);
    cons.release();
  }
  producer.join();
  return 0;
}

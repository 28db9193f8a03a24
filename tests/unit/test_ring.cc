// SPSC ring: ordering, capacity, wrap-around of the free-running indices,
// and a two-thread stress run that checks every value arrives once, in order.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "offload/spsc_ring.h"

namespace {

using ucc::off::RingIndices;
using ucc::off::SpscRing;

struct Entry {
  uint64_t seq;
  uint64_t check;
};

TEST(SpscRing, FillAndDrain) {
  RingIndices idx;
  Entry slots[8];
  SpscRing<Entry> r;
  r.init(&idx, slots, 8);
  EXPECT_EQ(r.capacity(), 8u);
  EXPECT_EQ(r.peek(), nullptr);
  for (uint64_t i = 0; i < 8; ++i) EXPECT_TRUE(r.push({i, ~i}));
  EXPECT_FALSE(r.push({99, 0}));
  EXPECT_EQ(r.size(), 8u);
  for (uint64_t i = 0; i < 8; ++i) {
    Entry e{};
    ASSERT_TRUE(r.pop(&e));
    EXPECT_EQ(e.seq, i);
    EXPECT_EQ(e.check, ~i);
  }
  Entry e{};
  EXPECT_FALSE(r.pop(&e));
}

TEST(SpscRing, IndicesWrapAround) {
  RingIndices idx;
  Entry slots[4];
  SpscRing<Entry> r;
  r.init(&idx, slots, 4);
  // Start both indices just below 2^32 so they wrap during the test (an
  // attach takes the shared indices as they are).
  idx.head.store(0xfffffffeu);
  idx.tail.store(0xfffffffeu);
  r.attach(&idx, slots, 4);
  for (uint64_t i = 0; i < 20; ++i) {
    ASSERT_TRUE(r.push({i, i * 3}));
    ASSERT_TRUE(r.push({i + 100, 0}));
    Entry e{};
    ASSERT_TRUE(r.pop(&e));
    EXPECT_EQ(e.seq, i);
    ASSERT_TRUE(r.pop(&e));
    EXPECT_EQ(e.seq, i + 100);
  }
  EXPECT_EQ(r.size(), 0u);
}

// The producer may be hostile (a host serving a daemon's engine): an
// index that claims more entries than the ring holds marks it corrupt
// and nothing more is taken, however the shared geometry is rewritten:
// the consumer's own tail and the mask are never read back.
TEST(SpscRing, HostileProducerIndicesAreBounded) {
  RingIndices idx;
  Entry slots[8];
  SpscRing<Entry> prod, cons;
  prod.init(&idx, slots, 8);
  cons.attach(&idx, slots, 8);
  ASSERT_TRUE(prod.push({1, 2}));
  Entry e{};
  ASSERT_TRUE(cons.pop(&e));
  EXPECT_EQ(e.seq, 1u);
  idx.mask = 0xffffffffu;  // rewritten geometry: ignored
  ASSERT_TRUE(prod.push({3, 4}));
  ASSERT_TRUE(cons.pop(&e));
  EXPECT_EQ(e.seq, 3u);
  EXPECT_FALSE(cons.corrupt());
  // A flood: head far ahead of what was ever written.
  idx.head.store(idx.head.load() + 0x7fffffffu);
  EXPECT_EQ(cons.peek(), nullptr);
  EXPECT_TRUE(cons.corrupt());
  EXPECT_LE(cons.size(), cons.capacity());
  // Exactly full is fine; one more than the capacity is not.
  SpscRing<Entry> c2;
  idx.head.store(100 + 8);
  idx.tail.store(100);
  c2.attach(&idx, slots, 8);
  EXPECT_NE(c2.peek(), nullptr);
  idx.head.store(100 + 9);
  EXPECT_EQ(c2.peek(), nullptr);
  EXPECT_TRUE(c2.corrupt());
}

TEST(SpscRing, ReserveCommitInPlace) {
  RingIndices idx;
  Entry slots[2];
  SpscRing<Entry> r;
  r.init(&idx, slots, 2);
  Entry* s = r.reserve();
  ASSERT_NE(s, nullptr);
  s->seq = 7;
  EXPECT_EQ(r.peek(), nullptr);  // not visible before commit
  r.commit();
  ASSERT_NE(r.peek(), nullptr);
  EXPECT_EQ(r.peek()->seq, 7u);
}

TEST(SpscRing, TwoThreadStress) {
  constexpr uint64_t kN = 2000000;
  RingIndices idx;
  std::vector<Entry> slots(64);
  SpscRing<Entry> r;
  r.init(&idx, slots.data(), 64);
  std::thread producer([&] {
    for (uint64_t i = 0; i < kN;) {
      if (r.push({i, i ^ 0x5a5a5a5a5a5a5a5aull}))
        ++i;
      else
        std::this_thread::yield();
    }
  });
  uint64_t expect = 0, bad = 0;
  while (expect < kN) {
    Entry e{};
    if (!r.pop(&e)) {
      std::this_thread::yield();
      continue;
    }
    bad += e.seq != expect || e.check != (expect ^ 0x5a5a5a5a5a5a5a5aull);
    ++expect;
  }
  producer.join();
  EXPECT_EQ(bad, 0u);
}

}  // namespace

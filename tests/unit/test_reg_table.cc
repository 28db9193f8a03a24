// The registration table (platform/mem/reg_table.h): keys, bounds at both
// ends, adjacent and overlapping entries, empty ranges, wrap-around, a full
// table, stale keys, and a randomised comparison with a linear model.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "platform/mem/reg_table.h"

namespace {

using ucc::base::Status;
using ucc::plat::RegTable;

TEST(RegTable, InitRejectsBadCapacities) {
  RegTable t;
  EXPECT_EQ(t.init(0), Status::kInvalidParam);
  EXPECT_EQ(t.init(RegTable::kMaxCapacity + 1), Status::kInvalidParam);
  ASSERT_EQ(t.init(16), Status::kOk);
  EXPECT_EQ(t.init(16), Status::kInvalidParam);  // twice
  EXPECT_EQ(t.capacity(), 16u);
  t.fini();
  EXPECT_EQ(t.insert(0x1000, 1), 0u);  // not initialised
  EXPECT_FALSE(t.contains(0, 0x1000, 1));
  EXPECT_EQ(t.init(4), Status::kOk);  // again after fini
}

TEST(RegTable, KeyedLookupChecksBothEnds) {
  RegTable t;
  ASSERT_EQ(t.init(), Status::kOk);
  uint32_t k = t.insert(0x10000, 0x1000);
  ASSERT_NE(k, 0u);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_TRUE(t.contains(k, 0x10000, 0x1000));
  EXPECT_TRUE(t.contains(k, 0x10800, 0x800));
  EXPECT_TRUE(t.contains(k, 0x10fff, 1));
  EXPECT_FALSE(t.contains(k, 0x10800, 0x801));  // one byte past the end
  EXPECT_FALSE(t.contains(k, 0xffff, 2));       // one byte before the base
  EXPECT_FALSE(t.contains(k, 0x11000, 1));
  EXPECT_FALSE(t.contains(k + 1, 0x10000, 1));  // no such key
  EXPECT_FALSE(t.contains(k ^ 0x80000000u, 0x10000, 1));
  // Implicit registration: inside any entry.
  EXPECT_TRUE(t.contains(0, 0x10000, 0x1000));
  EXPECT_FALSE(t.contains(0, 0x10000, 0x1001));
  EXPECT_FALSE(t.contains(0, 0x0, 1));
}

TEST(RegTable, ZeroLengthRangesAndRegistrations) {
  RegTable t;
  ASSERT_EQ(t.init(8), Status::kOk);
  EXPECT_EQ(t.insert(0x1000, 0), 0u);  // nothing to register
  EXPECT_EQ(t.size(), 0u);
  EXPECT_FALSE(t.contains(0, 0x1000, 0));  // empty table
  uint32_t k = t.insert(0x1000, 0x100);
  ASSERT_NE(k, 0u);
  // An empty range must still name the entry: base <= addr <= end.
  EXPECT_TRUE(t.contains(k, 0x1000, 0));
  EXPECT_TRUE(t.contains(k, 0x1100, 0));
  EXPECT_FALSE(t.contains(k, 0x1101, 0));
  EXPECT_FALSE(t.contains(k, 0xfff, 0));
  EXPECT_TRUE(t.contains(0, 0x1100, 0));
  EXPECT_FALSE(t.contains(0, 0x1101, 0));
  EXPECT_FALSE(t.contains(0, 0xfff, 0));
}

TEST(RegTable, WrapAroundIsRejected) {
  RegTable t;
  ASSERT_EQ(t.init(8), Status::kOk);
  EXPECT_EQ(t.insert(UINT64_MAX - 9, 10), 0u);  // would end at 2^64
  EXPECT_EQ(t.insert(UINT64_MAX, 1), 0u);
  EXPECT_EQ(t.insert(1, UINT64_MAX), 0u);
  uint32_t top = t.insert(UINT64_MAX - 10, 10);  // ends at 2^64 - 1
  ASSERT_NE(top, 0u);
  EXPECT_TRUE(t.contains(top, UINT64_MAX - 10, 10));
  EXPECT_FALSE(t.contains(top, UINT64_MAX - 10, 11));
  EXPECT_FALSE(t.contains(top, UINT64_MAX - 1, 2));  // addr + len wraps
  EXPECT_FALSE(t.contains(0, UINT64_MAX - 1, UINT64_MAX));
  uint32_t low = t.insert(0, 0x100);  // address 0 itself may be registered
  ASSERT_NE(low, 0u);
  EXPECT_TRUE(t.contains(0, 0, 0x100));
  EXPECT_FALSE(t.contains(0, 0xff, UINT64_MAX));  // wraps into [0, 0x100)
}

TEST(RegTable, AdjacentEntriesDoNotMerge) {
  RegTable t;
  ASSERT_EQ(t.init(8), Status::kOk);
  uint32_t a = t.insert(0x1000, 0x1000);
  uint32_t b = t.insert(0x2000, 0x1000);
  ASSERT_NE(a, 0u);
  ASSERT_NE(b, 0u);
  EXPECT_NE(a, b);
  EXPECT_TRUE(t.contains(0, 0x1000, 0x1000));
  EXPECT_TRUE(t.contains(0, 0x2000, 0x1000));
  // A range straddling the boundary lies inside neither entry.
  EXPECT_FALSE(t.contains(0, 0x1800, 0x1000));
  EXPECT_FALSE(t.contains(a, 0x1800, 0x1000));
  EXPECT_FALSE(t.contains(a, 0x2000, 1));  // b's first byte is not a's
  EXPECT_TRUE(t.contains(b, 0x2000, 1));
}

TEST(RegTable, OverlappingEntriesAreEachHonoured) {
  RegTable t;
  ASSERT_EQ(t.init(8), Status::kOk);
  uint32_t big = t.insert(0x1000, 0x2000);   // [0x1000, 0x3000)
  uint32_t mid = t.insert(0x2000, 0x800);    // [0x2000, 0x2800) inside big
  uint32_t twin = t.insert(0x1000, 0x2000);  // the same range again
  ASSERT_NE(big, 0u);
  ASSERT_NE(mid, 0u);
  ASSERT_NE(twin, 0u);
  EXPECT_EQ(t.size(), 3u);
  // The last entry starting below 0x2400 is `mid`, which ends too early;
  // `big` (earlier in base order) holds the range.
  EXPECT_TRUE(t.contains(0, 0x2400, 0x800));
  EXPECT_FALSE(t.contains(mid, 0x2400, 0x800));
  EXPECT_TRUE(t.contains(mid, 0x2400, 0x400));
  EXPECT_TRUE(t.remove(big));
  EXPECT_TRUE(t.contains(0, 0x2400, 0x800));  // the twin still covers it
  EXPECT_TRUE(t.remove(twin));
  EXPECT_FALSE(t.contains(0, 0x2400, 0x800));
  EXPECT_TRUE(t.contains(0, 0x2400, 0x400));
  EXPECT_FALSE(t.contains(0, 0x1000, 1));
}

// lookup() answers as contains() does, and with the remote key of an
// entry that holds the whole range (for key 0: not merely the last one
// starting below it).
TEST(RegTable, LookupGivesTheKeyOfAnEntryHoldingTheRange) {
  RegTable t;
  ASSERT_EQ(t.init(8), Status::kOk);
  uint32_t big = t.insert(0x1000, 0x2000, 0xb16);  // [0x1000, 0x3000)
  uint32_t mid = t.insert(0x2000, 0x800, 0x51d);   // [0x2000, 0x2800)
  ASSERT_NE(big, 0u);
  ASSERT_NE(mid, 0u);
  uint32_t rk = 0;
  EXPECT_TRUE(t.lookup(0, 0x2400, 0x800, &rk));  // only `big` holds it
  EXPECT_EQ(rk, 0xb16u);
  EXPECT_TRUE(t.lookup(0, 0x2100, 0x100, &rk));  // both do: either key
  EXPECT_TRUE(rk == 0xb16u || rk == 0x51du);
  EXPECT_TRUE(t.lookup(mid, 0x2100, 0x100, &rk));
  EXPECT_EQ(rk, 0x51du);
  EXPECT_FALSE(t.lookup(mid, 0x2400, 0x800, &rk));
  EXPECT_FALSE(t.lookup(0, 0x2f00, 0x200, &rk));  // past every end
  EXPECT_FALSE(t.lookup(0, 0x800, 0x100, &rk));   // below every base
  EXPECT_FALSE(t.lookup(0, ~uint64_t{0} - 4, 8, &rk));  // wraps
  EXPECT_TRUE(t.remove(big));
  EXPECT_FALSE(t.lookup(0, 0x2400, 0x800, &rk));
  EXPECT_FALSE(t.lookup(big, 0x1000, 1, &rk));
  // A table that has been told no key answers 0.
  uint32_t plain = t.insert(0x9000, 0x1000);
  EXPECT_TRUE(t.lookup(plain, 0x9000, 0x1000, &rk));
  EXPECT_EQ(rk, 0u);
}

TEST(RegTable, RemovedKeysStopMatchingAndSlotsGetNewKeys) {
  RegTable t;
  ASSERT_EQ(t.init(2), Status::kOk);
  uint32_t a = t.insert(0x1000, 0x100);
  ASSERT_NE(a, 0u);
  EXPECT_FALSE(t.remove(0));
  EXPECT_FALSE(t.remove(a + 1));
  EXPECT_TRUE(t.remove(a));
  EXPECT_FALSE(t.remove(a));  // twice
  EXPECT_FALSE(t.contains(a, 0x1000, 1));
  EXPECT_FALSE(t.contains(0, 0x1000, 1));
  uint32_t b = t.insert(0x1000, 0x100);  // reuses a's slot
  ASSERT_NE(b, 0u);
  EXPECT_NE(b, a);
  EXPECT_FALSE(t.contains(a, 0x1000, 1));  // stale key
  EXPECT_TRUE(t.contains(b, 0x1000, 1));
}

TEST(RegTable, FullTableRefusesUntilAnEntryGoes) {
  RegTable t;
  ASSERT_EQ(t.init(3), Status::kOk);
  uint32_t k[3];
  for (uint32_t i = 0; i < 3; ++i) {
    k[i] = t.insert(0x1000 * (i + 1), 0x10);
    ASSERT_NE(k[i], 0u);
  }
  EXPECT_EQ(t.insert(0x9000, 0x10), 0u);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_TRUE(t.remove(k[1]));
  uint32_t again = t.insert(0x9000, 0x10);
  ASSERT_NE(again, 0u);
  EXPECT_TRUE(t.contains(0, 0x9000, 0x10));
  EXPECT_TRUE(t.contains(k[0], 0x1000, 0x10));
  EXPECT_TRUE(t.contains(k[2], 0x3000, 0x10));
  EXPECT_FALSE(t.contains(0, 0x2000, 1));
}

// Generations live above the slot bits; a single-entry table has no slot
// bits at all. Keys are never 0, also when a generation wraps.
TEST(RegTable, KeysStayNonZeroThroughManyReuses) {
  for (uint32_t cap : {1u, 4096u, RegTable::kMaxCapacity}) {
    RegTable t;
    ASSERT_EQ(t.init(cap), Status::kOk);
    uint32_t prev = 0;
    for (int i = 0; i < 5000; ++i) {
      uint32_t k = t.insert(0x4000, 0x40);
      ASSERT_NE(k, 0u) << cap << " " << i;
      ASSERT_NE(k, prev) << cap << " " << i;
      ASSERT_TRUE(t.contains(k, 0x4000, 0x40));
      ASSERT_TRUE(t.remove(k));
      prev = k;
    }
  }
}

// Random inserts, removes and lookups, against a linear scan.
TEST(RegTable, MatchesALinearModel) {
  struct Model {
    uint32_t key;
    uint64_t base, end;
  };
  std::mt19937_64 rng(12345);
  RegTable t;
  ASSERT_EQ(t.init(64), Status::kOk);
  std::vector<Model> live;
  auto inside = [&](uint32_t key, uint64_t addr, uint64_t len) {
    uint64_t end = addr + len;
    if (end < addr) return false;
    for (const Model& m : live)
      if ((key == 0 || m.key == key) && m.base <= addr && end <= m.end)
        return true;
    return false;
  };
  // Addresses from a small range, so that entries overlap and touch.
  auto addr = [&] { return 0x1000 + (rng() % 64) * 0x40; };
  for (int step = 0; step < 20000; ++step) {
    unsigned op = rng() % 8;
    if (op < 2 && live.size() < 64) {
      uint64_t base = addr(), len = (rng() % 16) * 0x40;
      uint32_t k = t.insert(base, len);
      if (len == 0) {
        ASSERT_EQ(k, 0u);
      } else {
        ASSERT_NE(k, 0u);
        for (const Model& m : live) ASSERT_NE(m.key, k);
        live.push_back({k, base, base + len});
      }
    } else if (op < 3 && !live.empty()) {
      size_t i = rng() % live.size();
      ASSERT_TRUE(t.remove(live[i].key));
      live.erase(live.begin() + static_cast<long>(i));
    } else {
      uint32_t key = 0;
      if (!live.empty() && rng() % 2 == 0) key = live[rng() % live.size()].key;
      uint64_t a = addr() + rng() % 0x40, len = rng() % 0x300;
      ASSERT_EQ(t.contains(key, a, len), inside(key, a, len))
          << "step " << step << " key " << key << " addr " << a << " len "
          << len;
    }
    ASSERT_EQ(t.size(), live.size());
  }
}

}  // namespace

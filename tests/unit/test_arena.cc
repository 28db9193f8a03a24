// base::Arena and base::Array (platform/base/arena.h): counted pieces
// come back, committed, aligned, zeroed, disjoint and in one block; a
// mismatched or overflowing owner gets nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "platform/base/arena.h"

namespace {

using ucc::base::Arena;
using ucc::base::Array;

struct alignas(32) Wide {
  char b[48];
};

struct Pieces {
  char* c;
  uint64_t* u;
  Wide* w;
  uint32_t* line;
  char* none;
};

Pieces carve(Arena& a) {
  Pieces p;
  p.c = a.take<char>(3);
  p.u = a.take<uint64_t>(5);
  p.w = a.take<Wide>(2);
  p.line = a.take<uint32_t>(7, 64);
  p.none = a.take<char>(0);
  return p;
}

bool aligned(const void* p, size_t a) {
  return reinterpret_cast<uintptr_t>(p) % a == 0;
}

TEST(Arena, CountsThenHandsOutTheSamePieces) {
  Arena a;
  const Pieces counted = carve(a);
  EXPECT_EQ(counted.c, nullptr);
  EXPECT_EQ(counted.w, nullptr);
  EXPECT_FALSE(a.committed());
  ASSERT_TRUE(a.commit());
  const Pieces p = carve(a);
  ASSERT_NE(p.c, nullptr);
  ASSERT_NE(p.u, nullptr);
  ASSERT_NE(p.w, nullptr);
  ASSERT_NE(p.line, nullptr);
  EXPECT_TRUE(aligned(p.c, Arena::kAlign));  // the block's first piece
  EXPECT_TRUE(aligned(p.u, alignof(uint64_t)));
  EXPECT_TRUE(aligned(p.w, 32));
  EXPECT_TRUE(aligned(p.line, 64));
  // In order, disjoint, inside the block.
  const char* base = p.c;
  EXPECT_GE(reinterpret_cast<char*>(p.u), base + 3);
  EXPECT_GE(reinterpret_cast<char*>(p.w), reinterpret_cast<char*>(p.u + 5));
  EXPECT_GE(reinterpret_cast<char*>(p.line), reinterpret_cast<char*>(p.w + 2));
  EXPECT_LE(reinterpret_cast<char*>(p.line + 7), base + a.bytes());
  EXPECT_EQ(a.bytes() % Arena::kAlign, 0u);
  // Zeroed.
  for (size_t i = 0; i < a.bytes(); ++i) ASSERT_EQ(base[i], 0) << i;
  // One more piece than counted: nothing.
  EXPECT_EQ(a.take<uint64_t>(1), nullptr);
  a.release();
  EXPECT_FALSE(a.committed());
  EXPECT_EQ(a.bytes(), 0u);
}

TEST(Arena, OverflowingCountsNeverCommit) {
  Arena a;
  a.take<char>(16);
  EXPECT_EQ(a.take<uint64_t>(SIZE_MAX / 4), nullptr);
  EXPECT_FALSE(a.commit());
  EXPECT_FALSE(a.committed());
  // Released, it counts afresh.
  a.release();
  a.take<char>(16);
  EXPECT_TRUE(a.commit());
}

TEST(Arena, TheBlockTakesTheLargestAlignment) {
  Arena a;
  for (int pass = 0; pass < 2; ++pass) {
    char* c = a.take<char>(10);
    char* page = a.take<char>(8192, 4096);
    if (pass == 0) {
      EXPECT_EQ(page, nullptr);
      ASSERT_TRUE(a.commit());
    } else {
      ASSERT_NE(c, nullptr);
      ASSERT_NE(page, nullptr);
      EXPECT_TRUE(aligned(page, 4096));
      EXPECT_GE(page, c + 10);
    }
  }
}

TEST(Arena, ALargeBlockIsZeroAndGivenBack) {
  constexpr size_t kBig = 1 << 20;  // calloc's fresh pages
  Arena a;
  for (int pass = 0; pass < 2; ++pass) {
    uint64_t* big = a.take<uint64_t>(kBig / 8, 4096);
    if (pass == 0) {
      ASSERT_TRUE(a.commit());
      continue;
    }
    ASSERT_NE(big, nullptr);
    EXPECT_TRUE(aligned(big, 4096));
    for (size_t i = 0; i < kBig / 8; i += 512) ASSERT_EQ(big[i], 0u) << i;
    big[kBig / 8 - 1] = 1;
  }
  EXPECT_GE(a.bytes(), kBig);
  a.release();
  EXPECT_FALSE(a.committed());
}

TEST(Arena, EmptyArenaCommits) {
  Arena a;
  ASSERT_TRUE(a.commit());
  EXPECT_TRUE(a.committed());
  EXPECT_EQ(a.take<char>(1), nullptr);
}

TEST(Array, OneZeroedArray) {
  Array<uint32_t> x;
  EXPECT_FALSE(x);
  ASSERT_TRUE(x.init(1000, 64));
  ASSERT_TRUE(x);
  EXPECT_EQ(x.size(), 1000u);
  EXPECT_TRUE(aligned(x.data(), 64));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], 0u);
  x[999] = 7;
  ASSERT_TRUE(x.init(10));  // a new one replaces it
  EXPECT_EQ(x.size(), 10u);
  EXPECT_EQ(x[9], 0u);
  x.release();
  EXPECT_FALSE(x);
  EXPECT_FALSE(x.init(SIZE_MAX / 2));
  EXPECT_FALSE(x);
}

}  // namespace

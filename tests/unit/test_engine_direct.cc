// Sends without an instance (Engine::send_known): a small bcast's root
// with one child and a small reduce's leaf send their message at the
// post; a full inbox leaves it to an instance, in posting order. On the
// engine memory fixture (engine_mem_fixture.h), both memory modes.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/unit/engine_mem_fixture.h"

namespace ucct_engine {

// A small bcast's root and a small reduce's leaf send their one message
// at the post without an instance (Engine::send_known), by either tree;
// what needs more than one message, or receives, runs as an instance.
TEST_P(EngineMem, SmallBcastRootAndReduceLeafSendDirect) {
  for (uint8_t alg : {1, 4}) {               // binomial, linear
    for (uint64_t count : {0, 1, 64, 65}) {  // 65 int32: two slots
      std::vector<int32_t> buf[kRanks];
      CollDesc d[kRanks];
      for (uint32_t r = 0; r < kRanks; ++r) {
        buf[r] = r == 0 ? pattern(7, count) : std::vector<int32_t>(count, -1);
        d[r] = desc(CollType::kBcast, DType::kInt32, ROp::kNone, count);
        d[r].alg = alg;
        d[r].src = ref(buf[r], rank[r].reg(buf[r]));
      }
      const uint64_t before[kRanks] = {rank[0].eng.sent_direct(),
                                       rank[1].eng.sent_direct()};
      run_ok(d);
      EXPECT_EQ(buf[1], pattern(7, count)) << int(alg) << " " << count;
      EXPECT_EQ(rank[0].eng.sent_direct() - before[0], count <= 64 ? 1u : 0u)
          << int(alg) << " " << count;
      EXPECT_EQ(rank[1].eng.sent_direct(), before[1]);
    }
  }
  for (uint8_t alg : {1, 3}) {  // binomial, linear
    for (uint64_t count : {1, 64, 65}) {
      std::vector<int32_t> src[kRanks], out(count, -1);
      CollDesc d[kRanks];
      for (uint32_t r = 0; r < kRanks; ++r) {
        src[r] = pattern(r, count);
        d[r] = desc(CollType::kReduce, DType::kInt32, ROp::kSum, count);
        d[r].alg = alg;
        d[r].root = 1;
        d[r].src = ref(src[r], rank[r].reg(src[r]));
        d[r].dst = r == 1 ? ref(out, rank[r].reg(out)) : BufRef{};
      }
      const uint64_t before[kRanks] = {rank[0].eng.sent_direct(),
                                       rank[1].eng.sent_direct()};
      run_ok(d);
      for (uint64_t i = 0; i < count; ++i)
        ASSERT_EQ(out[i], src[0][i] + src[1][i]) << int(alg) << " " << i;
      EXPECT_EQ(rank[0].eng.sent_direct() - before[0], count <= 64 ? 1u : 0u)
          << int(alg) << " " << count;
      EXPECT_EQ(rank[1].eng.sent_direct(), before[1]);
    }
  }
}

// A direct sender whose peer does not keep up: once the peer's inbox is
// full, the next bcasts wait as instances, and the peer receives every
// one in posting order.
TEST_P(EngineMem, DirectSendsWaitForRoomInOrder) {
  constexpr uint32_t kPosts = 7;  // the inbox holds 4
  constexpr uint64_t kCount = 16;
  std::vector<int32_t> buf[kRanks][kPosts];
  Rank& root = rank[0];
  Rank& leaf = rank[1];
  auto post_at = [](Rank& k, CollDesc d, uint32_t slot) {
    d.team = k.idx;
    d.comp_slot = slot;
    d.gen = 1;
    k.ch.arm(slot, 1);
    return k.ch.submit(d);
  };
  auto ended = [](const Rank& k, uint32_t slot) {
    const uint64_t w = k.ch.read(slot);
    return ucc::off::completion_gen(w) == 1 &&
           ucc::off::completion_status(w) != Status::kInProgress;
  };
  for (uint32_t i = 0; i < kPosts; ++i) {
    for (uint32_t r = 0; r < kRanks; ++r) {
      buf[r][i] =
          r == 0 ? pattern(i, kCount) : std::vector<int32_t>(kCount, -1);
    }
    CollDesc d = desc(CollType::kBcast, DType::kInt32, ROp::kNone, kCount);
    d.alg = 4;
    d.src = ref(buf[0][i], root.reg(buf[0][i]));
    ASSERT_TRUE(post_at(root, d, i));
  }
  for (int i = 0; i < 100; ++i) root.eng.progress();
  for (uint32_t i = 0; i < kPosts; ++i) EXPECT_EQ(ended(root, i), i < 4) << i;
  EXPECT_EQ(root.eng.sent_direct(), 4u);
  for (uint32_t i = 0; i < kPosts; ++i) {
    CollDesc d = desc(CollType::kBcast, DType::kInt32, ROp::kNone, kCount);
    d.alg = 4;
    d.src = ref(buf[1][i], leaf.reg(buf[1][i]));
    ASSERT_TRUE(post_at(leaf, d, i));
  }
  bool all = false;
  for (long n = 0; n < 2000000 && !all; ++n) {
    root.eng.progress();
    leaf.eng.progress();
    all = true;
    for (uint32_t i = 0; i < kPosts; ++i)
      all = all && ended(root, i) && ended(leaf, i);
  }
  ASSERT_TRUE(all);
  for (uint32_t i = 0; i < kPosts; ++i) {
    EXPECT_EQ(ucc::off::completion_status(root.ch.read(i)), Status::kOk);
    EXPECT_EQ(ucc::off::completion_status(leaf.ch.read(i)), Status::kOk);
    EXPECT_EQ(buf[1][i], pattern(i, kCount)) << i;
  }
  EXPECT_EQ(leaf.eng.sent_direct(), 0u);
}

}  // namespace ucct_engine

// The inbox protocol (platform/fabric/inbox.h) between one sender and one
// owner over plain memory: order, credits, the head word and stamps, and a
// peer that writes what it likes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "platform/fabric/inbox.h"

namespace {

using ucc::plat::FabricConfig;
using ucc::plat::InboxCtl;
using ucc::plat::InboxPair;
using ucc::plat::InboxView;
using ucc::plat::MsgHdr;
using ucc::plat::MsgKey;

struct Pair {
  explicit Pair(uint32_t nslots, bool stamped) {
    cfg = FabricConfig{2, 0, 64, nslots};
    const size_t bytes = ucc::plat::shadow_bytes(cfg);
    mem = static_cast<char*>(aligned_alloc(64, bytes));
    memset(mem, 0, bytes);
    InboxCtl* ctl = ucc::plat::inbox_init(mem);
    const InboxView v{ctl, mem + sizeof(InboxCtl)};
    tx.bind_tx(v);
    rx.bind_rx(v);
    rx.set_stamped(stamped);
  }
  ~Pair() { free(mem); }
  InboxCtl* ctl() { return reinterpret_cast<InboxCtl*>(mem); }

  // Sends message `v` (its payload and key); false when no slot is free.
  bool send(uint64_t v) {
    void* p = tx.tx_reserve(cfg);
    if (p == nullptr) return false;
    memcpy(p, &v, sizeof(v));
    tx.tx_commit(cfg, sizeof(v), MsgKey{{v, 0, 0}}, 0, 0);
    return true;
  }
  // The payloads pending at the owner, in arrival order.
  std::vector<uint64_t> pending() {
    std::vector<uint64_t> out;
    for (uint32_t i = 0; i < rx.rx_npend(); ++i) {
      const MsgHdr* h = rx.rx_hdr(cfg, i);
      if (h == nullptr) continue;
      uint64_t v;
      memcpy(&v, rx.rx_payload(cfg, i), sizeof(v));
      EXPECT_EQ(h->key.w[0], v);
      out.push_back(v);
    }
    return out;
  }
  void release_all() {
    for (uint32_t i = 0; i < rx.rx_npend(); ++i) rx.rx_release(i);
  }

  FabricConfig cfg;
  char* mem = nullptr;
  InboxPair tx, rx;
};

class Inbox : public ::testing::TestWithParam<bool> {};

TEST_P(Inbox, MessagesArriveInOrderAndSlotsComeBack) {
  Pair p(4, GetParam());
  uint64_t next = 1, seen = 1;
  for (int round = 0; round < 50; ++round) {
    // As many as there is room for (one to four), then read them all.
    uint32_t sent = 0;
    while (sent < 1 + round % 4 && p.send(next)) ++next, ++sent;
    p.rx.rx_poll(p.cfg);
    for (uint64_t v : p.pending()) EXPECT_EQ(v, seen++);
    p.release_all();
  }
  EXPECT_EQ(seen, next);
  EXPECT_GT(next, 100u);
}

TEST_P(Inbox, NoSlotWhileAllAreHeld) {
  Pair p(4, GetParam());
  for (uint64_t v = 1; v <= 4; ++v) ASSERT_TRUE(p.send(v));
  EXPECT_FALSE(p.send(5));
  EXPECT_EQ(p.tx.tx_free(p.cfg), 0u);
  EXPECT_EQ(p.rx.rx_poll(p.cfg), 4u);
  p.rx.rx_release(2);  // out of order: that slot is free at once
  EXPECT_EQ(p.tx.tx_free(p.cfg), 1u);
  EXPECT_TRUE(p.send(5));
  EXPECT_FALSE(p.send(6));
  EXPECT_EQ(p.rx.rx_poll(p.cfg), 4u);  // 1, 2, 4, 5
  EXPECT_EQ(p.pending(), (std::vector<uint64_t>{1, 2, 4, 5}));
}

// The owner may take a message by its stamp before the sender's head
// store is visible. A head word that then lags behind what was taken is
// not new messages (read as such, it took a whole inbox of stale slots).
TEST(InboxStamp, HeadBehindStampsIsNothingNew) {
  Pair p(8, true);
  ASSERT_TRUE(p.send(1));
  ASSERT_EQ(p.rx.rx_poll(p.cfg), 1u);
  p.release_all();
  ASSERT_TRUE(p.send(2));
  // As if message 2's head store were not visible yet.
  const uint64_t w = p.ctl()->head.load();
  p.ctl()->head.store(ucc::plat::head_word(1, 0));
  EXPECT_EQ(p.rx.rx_poll(p.cfg), 1u);  // by its stamp
  EXPECT_EQ(p.pending(), (std::vector<uint64_t>{2}));
  p.release_all();
  EXPECT_EQ(p.rx.rx_poll(p.cfg), 0u);  // head still at 1: nothing new
  p.ctl()->head.store(w);
  EXPECT_EQ(p.rx.rx_poll(p.cfg), 0u);  // head at 2: taken already
  ASSERT_TRUE(p.send(3));
  EXPECT_EQ(p.rx.rx_poll(p.cfg), 1u);
  EXPECT_EQ(p.pending(), (std::vector<uint64_t>{3}));
}

// A stamp in a slot that still holds a pending message belongs to an
// older message, whatever a peer wrote there; a stamp of another number
// is not the next message.
TEST(InboxStamp, StampsOfPendingSlotsAndOtherNumbersAreIgnored) {
  Pair p(4, true);
  for (uint64_t v = 1; v <= 4; ++v) ASSERT_TRUE(p.send(v));  // slots 0..3
  ASSERT_EQ(p.rx.rx_poll(p.cfg), 4u);
  p.rx.rx_release(0);      // message 1, slot 0
  p.rx.rx_release(3);      // message 4, slot 3
  ASSERT_TRUE(p.send(5));  // round robin: slot 0 again
  ASSERT_EQ(p.rx.rx_poll(p.cfg), 3u);
  ASSERT_EQ(p.pending(), (std::vector<uint64_t>{2, 3, 5}));
  // Next would be message 6 in slot 1, which still holds message 2.
  auto stamp = [&](uint32_t slot, uint32_t n) {
    const uint32_t st = ucc::plat::stamp_of(n);
    memcpy(p.mem + sizeof(InboxCtl) + slot * ucc::plat::slot_stride(64) +
               ucc::plat::kStampOff,
           &st, sizeof(st));
  };
  stamp(1, 6);
  EXPECT_EQ(p.rx.rx_poll(p.cfg), 3u);
  stamp(1, 7);
  EXPECT_EQ(p.rx.rx_poll(p.cfg), 3u);
  EXPECT_EQ(p.pending(), (std::vector<uint64_t>{2, 3, 5}));
  // The sender's real message 6 still arrives, by its head.
  p.rx.rx_release(0);
  p.rx.rx_release(1);
  p.rx.rx_release(2);
  ASSERT_TRUE(p.send(6));
  EXPECT_EQ(p.rx.rx_poll(p.cfg), 1u);
  EXPECT_EQ(p.pending(), (std::vector<uint64_t>{6}));
}

INSTANTIATE_TEST_SUITE_P(Stamped, Inbox, ::testing::Bool());

}  // namespace

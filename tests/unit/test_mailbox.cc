// The context mailbox, with three eps in one process (each maps the
// others' segments through /proc/self/fd): requests, their nonces and stages,
// message delivery by (nonce, tag), dropping of messages addressed to
// closed requests, full cells, and rejection of bad addresses.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstring>

#include "host/boot/mailbox.h"

namespace {

using ucc::base::Status;
using ucc::host::kMboxCells;
using ucc::host::kMboxPayload;
using ucc::host::kMboxRequests;
using ucc::host::Mailbox;
using ucc::host::MailboxAddr;
using ucc::host::MboxKey;

constexpr uint32_t kEps = 3;

int open_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

class MailboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uint32_t i = 0; i < kEps; ++i)
      ASSERT_EQ(mb[i].open(kEps, i, &addr[i]), Status::kOk);
    for (uint32_t i = 0; i < kEps; ++i)
      ASSERT_EQ(mb[i].attach(addr), Status::kOk);
    for (uint32_t i = 0; i < kEps; ++i) mb[i].seal();
  }

  Mailbox mb[kEps];
  MailboxAddr addr[kEps];
};

TEST_F(MailboxTest, RequestsAreFoundByKeyUntilClosed) {
  const MboxKey k{7, 42};
  EXPECT_EQ(mb[0].request_find(1, k, 1), 0u);
  uint32_t slot = 99;
  uint64_t nonce = 0;
  ASSERT_EQ(mb[1].request_open(k, &slot, &nonce), Status::kOk);
  EXPECT_NE(nonce, 0u);
  EXPECT_EQ(mb[0].request_find(1, k, 1), nonce);
  EXPECT_EQ(mb[2].request_find(1, k, 1), nonce);
  EXPECT_EQ(mb[0].request_find(1, MboxKey{7, 43}, 1), 0u);
  EXPECT_EQ(mb[0].request_find(2, k, 1), 0u);
  // Past stage 1, only finds that accept stage 2 see it.
  mb[1].request_stage(slot, 2);
  EXPECT_EQ(mb[0].request_find(1, k, 1), 0u);
  EXPECT_EQ(mb[0].request_find(1, k, 2), nonce);
  // The same key twice at once is refused.
  uint32_t s2 = 0;
  uint64_t n2 = 0;
  EXPECT_EQ(mb[1].request_open(k, &s2, &n2), Status::kInvalidParam);
  mb[1].request_close(slot);
  EXPECT_EQ(mb[0].request_find(1, k, 1), 0u);
  // Reopened: a new nonce.
  ASSERT_EQ(mb[1].request_open(k, &s2, &n2), Status::kOk);
  EXPECT_NE(n2, nonce);
  EXPECT_EQ(mb[0].request_find(1, k, 1), n2);
  mb[1].request_close(s2);
}

TEST_F(MailboxTest, RequestTableIsBounded) {
  uint32_t slots[kMboxRequests];
  uint64_t nonce = 0;
  for (uint32_t i = 0; i < kMboxRequests; ++i)
    ASSERT_EQ(mb[0].request_open(MboxKey{i, 0}, &slots[i], &nonce),
              Status::kOk);
  uint32_t extra = 0;
  EXPECT_EQ(mb[0].request_open(MboxKey{100, 0}, &extra, &nonce),
            Status::kNoResource);
  mb[0].request_close(slots[1]);
  EXPECT_EQ(mb[0].request_open(MboxKey{100, 0}, &extra, &nonce), Status::kOk);
  EXPECT_EQ(extra, slots[1]);
}

TEST_F(MailboxTest, MessagesGoByNonceAndTag) {
  const MboxKey k{1, 2};
  uint32_t slot = 0;
  uint64_t nonce = 0;
  ASSERT_EQ(mb[2].request_open(k, &slot, &nonce), Status::kOk);
  const uint64_t n = mb[0].request_find(2, k, 1);
  ASSERT_EQ(n, nonce);
  const char a[] = "phase one from ep 0";
  const char b[] = "phase two from ep 0";
  ASSERT_EQ(mb[0].send(2, n, 1, a, sizeof(a)), Status::kOk);
  ASSERT_EQ(mb[0].send(2, n, 2, b, sizeof(b)), Status::kOk);
  char out[kMboxPayload];
  uint32_t len = 0;
  // Wrong peer, wrong tag: nothing; the messages stay.
  EXPECT_FALSE(mb[2].recv(1, nonce, 1, out, &len));
  EXPECT_FALSE(mb[2].recv(0, nonce, 3, out, &len));
  ASSERT_TRUE(mb[2].recv(0, nonce, 2, out, &len));
  EXPECT_EQ(len, sizeof(b));
  EXPECT_STREQ(out, b);
  ASSERT_TRUE(mb[2].recv(0, nonce, 1, out, &len));
  EXPECT_STREQ(out, a);
  EXPECT_FALSE(mb[2].recv(0, nonce, 1, out, &len));
  EXPECT_EQ(mb[0].send(2, n, 1, a, kMboxPayload + 1), Status::kInvalidParam);
  EXPECT_EQ(mb[0].send(kEps, n, 1, a, 1), Status::kInvalidParam);
  mb[2].request_close(slot);
}

// A message for a request that closed is never delivered to a later
// request with the same key, and its cell is reclaimed.
TEST_F(MailboxTest, StaleMessagesAreDropped) {
  const MboxKey k{5, 5};
  uint32_t slot = 0;
  uint64_t old_nonce = 0;
  ASSERT_EQ(mb[1].request_open(k, &slot, &old_nonce), Status::kOk);
  const uint64_t n = mb[0].request_find(1, k, 1);
  for (uint32_t i = 0; i < kMboxCells; ++i)
    ASSERT_EQ(mb[0].send(1, n, 1, "old", 4), Status::kOk);
  EXPECT_EQ(mb[0].send(1, n, 1, "old", 4), Status::kInProgress);  // full
  mb[1].request_close(slot);
  uint64_t new_nonce = 0;
  ASSERT_EQ(mb[1].request_open(k, &slot, &new_nonce), Status::kOk);
  char out[kMboxPayload];
  uint32_t len = 0;
  EXPECT_FALSE(mb[1].recv(0, new_nonce, 1, out, &len));  // drops all 8
  const uint64_t n2 = mb[0].request_find(1, k, 1);
  ASSERT_EQ(n2, new_nonce);
  ASSERT_EQ(mb[0].send(1, n2, 1, "new", 4), Status::kOk);
  ASSERT_TRUE(mb[1].recv(0, new_nonce, 1, out, &len));
  EXPECT_STREQ(out, "new");
  mb[1].request_close(slot);
}

TEST(Mailbox, AttachRejectsBadAddresses) {
  Mailbox a, b;
  MailboxAddr addr[2];
  ASSERT_EQ(a.open(2, 0, &addr[0]), Status::kOk);
  ASSERT_EQ(b.open(2, 1, &addr[1]), Status::kOk);
  MailboxAddr bad[2] = {addr[0], addr[1]};
  bad[1].magic ^= 1;
  EXPECT_EQ(a.attach(bad), Status::kError);
  a.close();
  ASSERT_EQ(a.open(2, 0, &addr[0]), Status::kOk);
  bad[0] = addr[0];
  bad[1] = addr[1];
  bad[1].bytes *= 2;  // larger than the file
  EXPECT_EQ(a.attach(bad), Status::kError);
  a.close();
  ASSERT_EQ(a.open(2, 0, &addr[0]), Status::kOk);
  bad[0] = addr[0];
  bad[1] = addr[0];  // ep 0's segment claimed as ep 1's
  EXPECT_EQ(a.attach(bad), Status::kError);
  a.close();
  ASSERT_EQ(a.open(2, 0, &addr[0]), Status::kOk);
  bad[0] = addr[0];
  bad[1] = addr[1];
  EXPECT_EQ(a.attach(bad), Status::kOk);
  EXPECT_EQ(a.pid_of(1), addr[1].pid);
  EXPECT_EQ(Mailbox().open(0, 0, &bad[0]), Status::kInvalidParam);
  EXPECT_EQ(Mailbox().open(2, 2, &bad[0]), Status::kInvalidParam);
}

TEST(Mailbox, SealAndCloseReleaseDescriptors) {
  const int before = open_fds();
  for (int round = 0; round < 100; ++round) {
    Mailbox a, b;
    MailboxAddr addr[2];
    ASSERT_EQ(a.open(2, 0, &addr[0]), Status::kOk);
    ASSERT_EQ(b.open(2, 1, &addr[1]), Status::kOk);
    ASSERT_EQ(a.attach(addr), Status::kOk);
    ASSERT_EQ(b.attach(addr), Status::kOk);
    a.seal();
    b.seal();
    EXPECT_EQ(open_fds(), before);
  }
  EXPECT_EQ(open_fds(), before);
}

}  // namespace

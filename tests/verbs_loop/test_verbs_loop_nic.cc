// Tests of the verbs_loop NIC's protocol (verbs_loop_nic.h) from its
// client side: run by run_nic.sh, with a NIC listening at VERBS_LOOP_NIC
// and these tests in a pid namespace of their own. Copies between two
// clients, liveness, and the NIC's refusal to touch a process that is
// not its client (it runs as root: it could read any).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "verbs_loop_nic.h"

namespace {

using namespace verbs_loop;

uint8_t Pattern(size_t i) { return uint8_t(i * 13 + 5); }

class Nic : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nic::Enabled())
      GTEST_SKIP() << "VERBS_LOOP_NIC is not set (run_nic.sh sets it)";
  }
};

// A forked client: connects, tells its fabric pid and a buffer's address
// through a pipe, and waits until the parent closes its end.
struct Child {
  pid_t pid = -1;
  int32_t fabric_pid = 0;
  uint64_t buf = 0;
  int to_child = -1;

  void Start(size_t len) {
    int up[2], down[2];
    ASSERT_EQ(pipe(up), 0);
    ASSERT_EQ(pipe(down), 0);
    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(up[0]);
      close(down[1]);
      std::vector<uint8_t> b(len);
      for (size_t i = 0; i < len; ++i) b[i] = Pattern(i);
      int32_t me = nic::SelfPid();
      uint64_t at = reinterpret_cast<uint64_t>(b.data());
      if (write(up[1], &me, sizeof(me)) != sizeof(me) ||
          write(up[1], &at, sizeof(at)) != sizeof(at))
        _exit(1);
      char c;
      while (read(down[0], &c, 1) > 0) {
      }
      // What the parent wrote: the pattern's complement.
      for (size_t i = 0; i < len; ++i)
        if (b[i] != uint8_t(~Pattern(i))) _exit(2);
      _exit(0);
    }
    close(up[1]);
    close(down[0]);
    to_child = down[1];
    ASSERT_EQ(read(up[0], &fabric_pid, sizeof(fabric_pid)),
              ssize_t(sizeof(fabric_pid)));
    ASSERT_EQ(read(up[0], &buf, sizeof(buf)), ssize_t(sizeof(buf)));
    close(up[0]);
    ASSERT_GT(fabric_pid, 0);
  }
  // Lets it check its buffer and exit; its status.
  int Finish() {
    close(to_child);
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
};

TEST_F(Nic, CopiesBetweenClientsBothWays) {
  const size_t len = 3 << 20;  // several of the NIC's bounce buffers
  Child c;
  ASSERT_NO_FATAL_FAILURE(c.Start(len));
  EXPECT_NE(c.fabric_pid, nic::SelfPid());
  EXPECT_TRUE(nic::Alive(c.fabric_pid));
  EXPECT_TRUE(nic::Alive(nic::SelfPid()));
  // Read the child's buffer in two local pieces.
  std::vector<uint8_t> got(len, 0);
  iovec l[2] = {{got.data(), len / 3}, {got.data() + len / 3, len - len / 3}};
  iovec r = {reinterpret_cast<void*>(c.buf), len};
  ASSERT_EQ(nic::Copy(c.fabric_pid, l, 2, &r, 1, len, false), 0);
  for (size_t i = 0; i < len; ++i) ASSERT_EQ(got[i], Pattern(i)) << i;
  // Write the complement back, in three remote pieces.
  for (size_t i = 0; i < len; ++i) got[i] = uint8_t(~Pattern(i));
  iovec lw = {got.data(), len};
  iovec rw[3] = {
      {reinterpret_cast<void*>(c.buf), 100},
      {reinterpret_cast<void*>(c.buf + 100), len / 2},
      {reinterpret_cast<void*>(c.buf + 100 + len / 2), len - 100 - len / 2}};
  ASSERT_EQ(nic::Copy(c.fabric_pid, &lw, 1, rw, 3, len, true), 0);
  // A range the child has not mapped: EFAULT, not a crash of anyone.
  iovec bad = {reinterpret_cast<void*>(8), 64};
  EXPECT_EQ(nic::Copy(c.fabric_pid, &lw, 1, &bad, 1, 64, false), EFAULT);
  const int32_t gone = c.fabric_pid;
  EXPECT_EQ(c.Finish(), 0);
  // Dead once the NIC has seen its connection close.
  bool dead = false;
  for (int i = 0; i < 400 && !dead; ++i) {
    dead = !nic::Alive(gone);
    if (!dead) usleep(5000);
  }
  EXPECT_TRUE(dead);
  // And no longer a process the NIC will touch.
  EXPECT_EQ(nic::Copy(gone, &lw, 1, &r, 1, 64, false), EPERM);
}

// Init (pid 1 of the NIC's namespace) never connects: the NIC, root,
// could read it, and must not on a client's word.
TEST_F(Nic, RefusesProcessesThatAreNotClients) {
  uint8_t b[64] = {};
  iovec l = {b, sizeof(b)};
  iovec r = {reinterpret_cast<void*>(0x400000), sizeof(b)};
  EXPECT_FALSE(nic::Alive(1));
  EXPECT_EQ(nic::Copy(1, &l, 1, &r, 1, sizeof(b), false), EPERM);
  EXPECT_EQ(nic::Copy(1, &l, 1, &r, 1, sizeof(b), true), EPERM);
  errno = 0;
  EXPECT_EQ(nic::OpenPeerFile(1, 0), -1);
  EXPECT_EQ(errno, EPERM);
  // More pieces than the wire allows: refused before anything is sent.
  iovec many[kNicMaxIov + 1];
  for (auto& v : many) v = l;
  EXPECT_EQ(
      nic::Copy(nic::SelfPid(), many, int(kNicMaxIov + 1), &l, 1, 1, false),
      EINVAL);
}

}  // namespace

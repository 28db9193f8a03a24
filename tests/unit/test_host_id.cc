// Host identities (platform/os/host_id.h): equal for one host, different
// for another hostname on the same kernel (a network namespace, as the
// emulated hosts are) while same_kernel still holds, and named identities
// as their names say.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>

#include "platform/os/host_id.h"

namespace {

using ucc::plat::host_identity;
using ucc::plat::same_kernel;

TEST(HostId, OneHostIsOneIdentity) {
  uint64_t a[2], b[2];
  host_identity(nullptr, a);
  host_identity("", b);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_TRUE(same_kernel(a, b));
}

TEST(HostId, NamedHostsAreTheirNames) {
  uint64_t a[2], b[2], c[2], d[2];
  host_identity("node-a", a);
  host_identity("node-a", b);
  host_identity("node-b", c);
  host_identity(nullptr, d);
  EXPECT_TRUE(a[0] == b[0] && a[1] == b[1]);
  EXPECT_FALSE(a[0] == c[0] && a[1] == c[1]);
  EXPECT_FALSE(same_kernel(a, c));  // declared apart: counted apart
  EXPECT_FALSE(same_kernel(a, d));
}

// A child in a UTS namespace of its own with another hostname: another
// host (the emulated hosts of tests/multihost are such namespaces), the
// same kernel.
TEST(HostId, AnotherHostnameOnThisKernelSharesTheKernel) {
  uint64_t mine[2];
  host_identity(nullptr, mine);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    uint64_t theirs[2] = {0, 0};
    int ok =
        unshare(CLONE_NEWUTS) == 0 && sethostname("ucc-host-id-test", 16) == 0;
    if (ok) host_identity(nullptr, theirs);
    const bool wrote = write(fds[1], &ok, sizeof(ok)) == sizeof(ok) &&
                       write(fds[1], theirs, sizeof(theirs)) == sizeof(theirs);
    _exit(wrote ? 0 : 1);
  }
  close(fds[1]);
  int ok = 0;
  uint64_t theirs[2] = {0, 0};
  const bool got = read(fds[0], &ok, sizeof(ok)) == sizeof(ok) &&
                   read(fds[0], theirs, sizeof(theirs)) == sizeof(theirs);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(got);
  if (!ok) GTEST_SKIP() << "no UTS namespace here (needs CAP_SYS_ADMIN)";
  EXPECT_FALSE(mine[0] == theirs[0] && mine[1] == theirs[1])
      << "another hostname must be another host";
  EXPECT_TRUE(same_kernel(mine, theirs));
}

}  // namespace

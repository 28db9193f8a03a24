// Who may talk to whom through the firmware_sim socket: the default
// socket lives in a directory of the user's alone (a squatted or open one
// is refused by library and daemon alike), the socket file is private
// whatever the umask, and each end checks the other's user (SO_PEERCRED):
// the daemon serves its own user only, the library talks to its own
// user's daemon or root's. The second-user cases need root (to become
// another user) and are skipped with a message otherwise.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <ucc/api/ucc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "offload/channel.h"
#include "offload/proto.h"
#include "platform/os/segment.h"
#include "platform/os/sock.h"
#include "tests/common/harness.h"
#include "tests/mp/emu_daemon.h"

namespace {

namespace proto = ucc::off::proto;
constexpr uid_t kNobody = 65534;

// A context in emu mode under the current environment; its status.
ucc_status_t emu_context() {
  setenv("UCC_OFFLOAD", "emu", 1);
  ucc_lib_config_h lc = nullptr;
  ucc_lib_params_t lp{};
  lp.mask = UCC_LIB_PARAM_FIELD_THREAD_MODE;
  lp.thread_mode = UCC_THREAD_SINGLE;
  ucc_lib_h lib = nullptr;
  if (ucc_lib_config_read(nullptr, nullptr, &lc) != UCC_OK) return UCC_ERR_NO_MESSAGE;
  ucc_status_t st = ucc_init(&lp, lc, &lib);
  ucc_lib_config_release(lc);
  if (st != UCC_OK) return st;
  ucc_context_params_t cp{};
  ucc_context_h ctx = nullptr;
  st = ucc_context_create(lib, &cp, nullptr, &ctx);
  if (st == UCC_OK) ucc_context_destroy(ctx);
  ucc_finalize(lib);
  return st;
}

std::string temp_dir(const char* tag) {
  char t[64];
  snprintf(t, sizeof(t), "/tmp/ucct-%s-XXXXXX", tag);
  return mkdtemp(t) != nullptr ? t : "";
}

// The default socket goes in $XDG_RUNTIME_DIR when that is the user's
// alone, and has no group or other permissions even under umask 000 (an auto-started daemon
// inherits its first client's umask); a directory open to others is
// refused by the library and by the daemon.
TEST(DaemonUsers, DefaultSocketIsPrivate) {
  if (!ucct::have_firmware_sim()) GTEST_SKIP() << "no firmware_sim built";
  const std::string open_dir = temp_dir("xdg-open");
  const std::string good_dir = temp_dir("xdg-good");
  ASSERT_FALSE(open_dir.empty());
  ASSERT_FALSE(good_dir.empty());
  chmod(open_dir.c_str(), 0777);
  chmod(good_dir.c_str(), 0700);
  EXPECT_TRUE(ucct::run_ranks(1, [&](ucct::Rank&) {
    unsetenv("UCC_FIRMWARE_SOCKET");
    setenv("UCC_FIRMWARE_SIM", UCC_FIRMWARE_SIM_BUILD_PATH, 1);
    setenv("XDG_RUNTIME_DIR", open_dir.c_str(), 1);
    if (emu_context() != UCC_ERR_NO_RESOURCE) return 1;
    // The daemon refuses that directory too.
    const pid_t d = fork();
    if (d == 0) {
      execl(UCC_FIRMWARE_SIM_BUILD_PATH, "firmware_sim", "--exit-idle", "1",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    int ws = 0;
    waitpid(d, &ws, 0);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 1) return 2;
    // A private directory: the library starts its daemon there, and the
    // socket is its owner's alone whatever the umask.
    setenv("XDG_RUNTIME_DIR", good_dir.c_str(), 1);
    umask(0);
    if (emu_context() != UCC_OK) return 3;
    struct stat sb;
    const std::string sock = good_dir + "/" + proto::kDefaultSocketName;
    if (stat(sock.c_str(), &sb) != 0 || (sb.st_mode & 077) != 0) {
      std::fprintf(stderr, "socket mode %o\n", unsigned(sb.st_mode & 0777));
      return 4;
    }
    // Stop that daemon.
    const pid_t q = fork();
    if (q == 0) {
      execl(UCC_FIRMWARE_SIM_BUILD_PATH, "firmware_sim", "--socket",
            sock.c_str(), "--shutdown", static_cast<char*>(nullptr));
      _exit(127);
    }
    waitpid(q, &ws, 0);
    return 0;
  }));
  rmdir(open_dir.c_str());
}

// Another user's process is disconnected by the daemon before it can say
// anything; a daemon of another user is refused by the library.
TEST(DaemonUsers, OtherUsersAreRefused) {
  if (!ucct::have_firmware_sim()) GTEST_SKIP() << "no firmware_sim built";
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as a second user";
  ucct::Daemon d;
  ASSERT_TRUE(d.start("users"));
  // The file mode alone would stop it: open it, so that the daemon's own
  // check is what is tested.
  ASSERT_EQ(chmod(d.sock.c_str(), 0666), 0);
  const pid_t other = fork();
  if (other == 0) {
    if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(10);
    const int s = ucc::plat::sock::connect_to(d.sock.c_str());
    if (s < 0) _exit(2);
    proto::MsgHeader h{proto::kMagic, proto::kVersion, proto::kStats, 0, 1};
    ucc::plat::sock::send_all(s, &h, sizeof(h), nullptr, 0);
    proto::MsgHeader rh{};
    // No answer: the connection is closed (0) or reset (-1).
    _exit(ucc::plat::sock::recv_all(s, &rh, sizeof(rh), 5000) == 1 ? 1 : 0);
  }
  int ws = 0;
  waitpid(other, &ws, 0);
  EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
      << "another user's client was served (status " << ws << ")";
  d.stop();

  // A daemon running as another user, on a socket we can reach.
  const std::string dir = temp_dir("users-nobody");
  ASSERT_FALSE(dir.empty());
  chmod(dir.c_str(), 0777);
  const std::string sock = dir + "/d.sock";
  const pid_t dn = fork();
  if (dn == 0) {
    if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(10);
    execl(UCC_FIRMWARE_SIM_BUILD_PATH, "firmware_sim", "--socket",
          sock.c_str(), "--allow-users", static_cast<char*>(nullptr));
    _exit(127);
  }
  bool up = false;
  for (int i = 0; i < 2500 && !up; ++i) {
    const int s = ucc::plat::sock::connect_to(sock.c_str());
    if (s >= 0) {
      close(s);
      up = true;
    } else {
      usleep(2000);
    }
  }
  ASSERT_TRUE(up);
  EXPECT_TRUE(ucct::run_ranks(1, [&](ucct::Rank&) {
    setenv("UCC_FIRMWARE_SOCKET", sock.c_str(), 1);
    setenv("UCC_FIRMWARE_SIM", "none", 1);
    return emu_context() == UCC_ERR_NO_RESOURCE ? 0 : 1;
  }));
  kill(dn, SIGTERM);
  waitpid(dn, nullptr, 0);
  unlink(sock.c_str());
  rmdir(dir.c_str());
}

// A daemon shared by every user (--allow-users) is reachable by them and
// serves them, but only its own user (or root) may shut it down.
TEST(DaemonUsers, SharedDaemonOnlyItsOwnerShutsDown) {
  if (!ucct::have_firmware_sim()) GTEST_SKIP() << "no firmware_sim built";
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as a second user";
  ucct::Daemon d;
  ASSERT_TRUE(d.start("shared", {"--allow-users"}));
  struct stat sb {};
  ASSERT_EQ(stat(d.sock.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0666u);
  // One request, its reply's status (INT32_MIN: no reply).
  auto ask = [](int s, uint16_t type) {
    proto::MsgHeader h{proto::kMagic, proto::kVersion, type, 0, 7};
    proto::MsgHeader rh{};
    int32_t st = INT32_MIN;
    if (ucc::plat::sock::send_all(s, &h, sizeof(h), nullptr, 0) &&
        ucc::plat::sock::recv_all(s, &rh, sizeof(rh), 5000) == 1 &&
        rh.len >= 4 && rh.len <= 4096) {
      char body[4096];
      if (ucc::plat::sock::recv_all(s, body, rh.len, 5000) == 1)
        memcpy(&st, body, 4);
    }
    return st;
  };
  const pid_t other = fork();
  if (other == 0) {
    if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(10);
    const int s = ucc::plat::sock::connect_to(d.sock.c_str());
    if (s < 0) _exit(2);
    if (ask(s, proto::kStats) != 0) _exit(3);     // served
    if (ask(s, proto::kShutdown) == 0) _exit(4);  // but not obeyed
    _exit(0);
  }
  int ws = 0;
  waitpid(other, &ws, 0);
  EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
      << "another user's client (exit status " << ws << ")";
  usleep(200 * 1000);
  EXPECT_TRUE(d.alive()) << "another user shut the shared daemon down";
  const int s = ucc::plat::sock::connect_to(d.sock.c_str());
  ASSERT_GE(s, 0);
  EXPECT_EQ(ask(s, proto::kShutdown), 0);
  close(s);
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = waitpid(d.pid, nullptr, WNOHANG) == d.pid;
    if (!gone) usleep(10 * 1000);
  }
  EXPECT_TRUE(gone) << "the owner's shutdown was not obeyed";
  if (gone) d.pid = -1;
}

}  // namespace

// Over the DPDK wire (two firmware_sim daemons joined by memif): a node's
// daemon killed in the middle of a collective ends the collective of its
// peer on the other node with an error within the wire's peer timeout,
// not a hang; and that node's daemon goes on serving. Skips where
// firmware_sim was built without DPDK.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/emu_daemon.h"

#ifndef UCC_TEST_HAVE_WIRE
#define UCC_TEST_HAVE_WIRE 0
#endif

namespace {

using ucct::allreduce_i32;
using ucct::Daemon;

TEST(WireFaults, PeerNodeKilledMidCollective) {
  if (!ucct::have_firmware_sim() || !UCC_TEST_HAVE_WIRE)
    GTEST_SKIP() << "firmware_sim built without DPDK: no wire to test";
  char dir[] = "/tmp/ucc-wire-kill.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  Daemon n0, n1;
  const std::vector<std::string> common = {"--wire-peer-timeout-ms", "500"};
  std::vector<std::string> a0 = common, a1 = common;
  a0.insert(a0.end(), {"--wire-mesh", std::string(dir) + ":0:2"});
  a1.insert(a1.end(), {"--wire-mesh", std::string(dir) + ":1:2"});
  ASSERT_TRUE(n0.start("wire0", a0));
  ASSERT_TRUE(n1.start("wire1", a1));
  const pid_t victim = n1.pid;
  bool ok = ucct::run_ranks(2, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = (r.rank == 0 ? n0 : n1).env();
    if (w.init(r) != UCC_OK) return 1;
    // One collective that works, so the wire is known to be up.
    std::vector<int32_t> s(1 << 20, r.rank + 1), d(1 << 20, 0);
    ucc_coll_args_t a = allreduce_i32(s, d);
    if (w.run(a) != UCC_OK || d[12345] != 3) return 2;
    ucc_coll_req_h req = nullptr;
    if (ucc_collective_init(&a, &req, w.team) != UCC_OK) return 3;
    ucc_status_t st = UCC_OK;
    if (r.rank == 1) {
      // Rank 0's collective is in flight, waiting on our node, when that
      // node dies; then our own post fails too.
      usleep(200 * 1000);
      kill(victim, SIGKILL);
      usleep(100 * 1000);
      st = ucc_collective_post(req);
    } else {
      st = ucc_collective_post(req);
      for (int i = 0; i < 200; ++i) ucc_context_progress(w.ctx);
    }
    const double t0 = ucct::now_s();
    if (st == UCC_OK) st = w.wait(req, 30);
    const double took = ucct::now_s() - t0;
    ucc_collective_finalize(req);
    if (st == UCC_OK || st == UCC_INPROGRESS || st == UCC_ERR_TIMED_OUT ||
        took > 10) {
      std::fprintf(stderr, "rank %d: %s after %.2f s\n", r.rank,
                   ucct::status_name(st), took);
      return 5;
    }
    return 0;
  });
  EXPECT_TRUE(ok);
  waitpid(victim, nullptr, 0);
  n1.pid = -1;
  n1.stop();
  // The surviving node still serves a team of its own.
  bool again = ucct::run_ranks(2, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = n0.env();
    if (w.init(r) != UCC_OK) return 1;
    std::vector<int32_t> s(4096, 2), d(4096, 0);
    ucc_coll_args_t a = allreduce_i32(s, d);
    return w.run(a) == UCC_OK && d[4095] == 4 ? 0 : 2;
  });
  EXPECT_TRUE(again);
  n0.stop();
  rmdir(dir);
}

}  // namespace

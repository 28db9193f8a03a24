// Faults around the offload daemon (UCC_OFFLOAD=emu): the daemon killed
// with SIGKILL in the middle of a collective, and a host process killed
// with SIGKILL in the middle of one. Nobody may hang: every host call ends
// with an error within seconds, the survivors can still finalize, and the
// daemon goes on serving others. Each test starts its own daemon on a
// private socket, so it can kill it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "platform/os/sock.h"
#include "tests/common/harness.h"
#include "tests/mp/emu_daemon.h"

namespace {

using ucct::allreduce_i32;
using ucct::Daemon;

// An error, and soon: not success, and not the wait's own timeout.
bool ended_in_error(ucc_status_t st, double took) {
  return st != UCC_OK && st != UCC_INPROGRESS && st != UCC_ERR_TIMED_OUT &&
         took < 10;
}

TEST(EmuFaults, DaemonKilledMidCollective) {
  if (!ucct::have_firmware_sim()) GTEST_SKIP() << "no firmware_sim";
  Daemon d;
  ASSERT_TRUE(d.start());
  const pid_t dpid = d.pid;
  bool ok = ucct::run_ranks(2, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = d.env();
    if (w.init(r) != UCC_OK) return 1;
    std::vector<int32_t> s(100000, 1), dst(100000, 0);
    ucc_coll_args_t a = allreduce_i32(s, dst);
    ucc_coll_req_h req = nullptr;
    ucc_status_t st = UCC_OK;
    double t0 = ucct::now_s();
    if (r.rank == 0) {
      // In flight (rank 1 never posts it) when the daemon dies.
      if (ucc_collective_init(&a, &req, w.team) != UCC_OK) return 2;
      if (ucc_collective_post(req) != UCC_OK) return 3;
      for (int i = 0; i < 1000; ++i) ucc_context_progress(w.ctx);
      t0 = ucct::now_s();
      kill(dpid, SIGKILL);
      st = w.wait(req, 30);
      ucc_collective_finalize(req);
    } else {
      // Posts only after the daemon is gone (its socket refuses us).
      int c;
      while ((c = ucc::plat::sock::connect_to(d.sock.c_str())) >= 0 &&
             ucct::now_s() - t0 < 20) {
        close(c);
        usleep(1000);
      }
      t0 = ucct::now_s();
      st = ucc_collective_init(&a, &req, w.team);
      if (st == UCC_OK) {
        st = ucc_collective_post(req);
        if (st == UCC_OK) st = w.wait(req, 30);
        ucc_collective_finalize(req);
      }
    }
    double took = ucct::now_s() - t0;
    if (!ended_in_error(st, took)) {
      std::fprintf(stderr, "rank %d: %s after %.2f s\n", r.rank,
                   ucct::status_name(st), took);
      return 4;
    }
    return 0;  // ~World: team, context and library go cleanly
  });
  d.pid = -1;  // killed and reaped? reap it here
  waitpid(dpid, nullptr, 0);
  d.stop();
  EXPECT_TRUE(ok);
}

TEST(EmuFaults, HostKilledMidCollective) {
  if (!ucct::have_firmware_sim()) GTEST_SKIP() << "no firmware_sim";
  Daemon d;
  ASSERT_TRUE(d.start());
  bool ok = ucct::run_ranks(
      3,
      [&](ucct::Rank& r) {
        ucct::World w;
        w.env = d.env();
        if (w.init(r) != UCC_OK) return 1;
        std::vector<int32_t> s(1 << 20, 1), dst(1 << 20, 0);
        ucc_coll_args_t a = allreduce_i32(s, dst);
        ucc_coll_req_h req = nullptr;
        if (ucc_collective_init(&a, &req, w.team) != UCC_OK) return 2;
        if (r.rank == 2) {
          // Dies holding a collective in flight and its daemon client.
          if (ucc_collective_post(req) != UCC_OK) return 3;
          for (int i = 0; i < 100; ++i) ucc_context_progress(w.ctx);
          kill(getpid(), SIGKILL);
        }
        usleep(200 * 1000);  // rank 2 is gone before we even post
        if (ucc_collective_post(req) != UCC_OK) return 3;
        double t0 = ucct::now_s();
        ucc_status_t st = w.wait(req, 30);
        double took = ucct::now_s() - t0;
        ucc_collective_finalize(req);
        if (!ended_in_error(st, took)) {
          std::fprintf(stderr, "rank %d: %s after %.2f s\n", r.rank,
                       ucct::status_name(st), took);
          return 4;
        }
        // Our own context is still served: a one-rank team of ours works.
        ucc_context_params_t cp{};
        ucc_context_h ctx = nullptr;
        if (ucc_context_create(w.lib, &cp, nullptr, &ctx) != UCC_OK) return 5;
        ucc_team_params_t tp{};
        tp.mask = UCC_TEAM_PARAM_FIELD_EP | UCC_TEAM_PARAM_FIELD_TEAM_SIZE;
        tp.ep = 0;
        tp.team_size = 1;
        ucc_team_h team = nullptr;
        ucc_status_t ts = ucc_team_create_post(&ctx, 1, &tp, &team);
        while (ts == UCC_OK &&
               (ts = ucc_team_create_test(team)) == UCC_INPROGRESS)
          ucc_context_progress(ctx);
        if (ts != UCC_OK) return 6;
        std::vector<int32_t> s1(1000, 7), d1(1000, 0);
        ucc_coll_args_t a1 = allreduce_i32(s1, d1);
        if (ucc_collective_init(&a1, &req, team) != UCC_OK) return 7;
        ucc_collective_post(req);
        while (ucc_collective_test(req) == UCC_INPROGRESS)
          ucc_context_progress(ctx);
        st = ucc_collective_test(req);
        ucc_collective_finalize(req);
        for (int32_t v : d1)
          if (v != 7) return 8;
        if (st != UCC_OK) return 9;
        while (ucc_team_destroy(team) == UCC_INPROGRESS)
          ucc_context_progress(ctx);
        ucc_context_destroy(ctx);
        return 0;
      },
      60, false, /*may_be_killed=*/uint64_t{1} << 2);
  EXPECT_TRUE(d.alive());
  d.stop();
  EXPECT_TRUE(ok);
}

}  // namespace

// dpu mode (UCC_OFFLOAD=dpu, docs/dpu.md): the engine in a firmware_sim
// that serves hosts over TCP (--listen) and reaches their memory by verbs
// RDMA only, here on tests/verbs_loop's provider. Each test starts its own
// daemon on a free loopback port, so it can kill it or talk to it
// directly: the attacks of the threat model (no key, a wrong key, an
// impostor daemon, a replayed proof, a forged or replayed message) end in
// a refusal, and the faults (the daemon or a host killed mid-collective)
// in an error or freed resources, never a hang. The collectives matrix
// runs in dpu mode with each host's daemon in namespaces of its own
// (ctest dpu_ns, tests/dpu/run_dpu.sh).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "offload/control_auth.h"
#include "offload/proto.h"
#include "platform/os/crypto.h"
#include "platform/os/sock.h"
#include "tests/common/harness.h"
#include "tests/mp/dpu_daemon.h"
#include "tests/mp/emu_daemon.h"
#include "tests/unit/free_port.h"

namespace {

namespace proto = ucc::off::proto;
using ucct::allreduce_i32;
using ucct::closed;
using ucct::DpuDaemon;
using ucct::key_file;
using ucct::kLoopLib;
using ucct::Raw;
using ucct::recv_msg;
using ucct::secret_of;

bool ended_in_error(ucc_status_t st, double took) {
  return st != UCC_OK && st != UCC_INPROGRESS && st != UCC_ERR_TIMED_OUT &&
         took < 15;
}

TEST(Dpu, AllreduceServedOverTheNetwork) {
  NEEDS_DPU();
  DpuDaemon dd;
  ASSERT_TRUE(dd.start("serve"));
  EXPECT_TRUE(ucct::allreduce_served(dd));
  // Served by the daemon: the ranks' buffers were registered with it.
  proto::StatsReply st{};
  ASSERT_TRUE(dd.d.stats(&st));
  EXPECT_GE(st.registered, 2u);
  EXPECT_EQ(st.clients, 0u);
  EXPECT_TRUE(ucct::steps_counted(st));
}

// How the engine learns of descriptors (docs/dpu.md): by default each
// host pushes them into the engine's inbox, and the engine reads the
// host's ring only before it naps (a few reads, none of them per
// collective); with UCC_DPU_RING=read it polls the ring and nothing is
// pushed, and so it does for hosts past the daemon's budget of pinned
// inbox memory (--inbox-budget). Results are checked every way.
TEST(Dpu, DescriptorsArePushedUnlessAskedToRead) {
  NEEDS_DPU();
  using ucc::plat::MemStep;
  const auto ring_reads = static_cast<uint32_t>(MemStep::kDescriptors);
  struct Case {
    const char* tag;
    const char* ring;
    const char* budget;
    bool pushed;
  };
  for (const Case& k : {Case{"push", "push", nullptr, true},
                        Case{"read", "read", nullptr, false},
                        Case{"budget", "push", "0", false}}) {
    SCOPED_TRACE(k.tag);
    DpuDaemon dd;
    if (k.budget != nullptr) dd.more = {"--inbox-budget", k.budget};
    ASSERT_TRUE(dd.start(k.tag));
    EXPECT_TRUE(ucct::allreduce_served(dd, {{"UCC_DPU_RING", k.ring}}));
    proto::StatsReply st{};
    ASSERT_TRUE(dd.d.stats(&st));
    EXPECT_TRUE(ucct::steps_counted(st));
    if (k.pushed) {
      // How many go by the inbox depends on timing: one posted while the
      // engine is going to nap (between its idle flag and its read of
      // the ring) is taken by that read. A loaded machine has many such
      // windows, so only "some" is certain. What the engine reads of the
      // ring it reads at a nap: a ring head read before each (at most
      // two pieces of descriptors after one), never one per collective.
      const auto heads = static_cast<uint32_t>(MemStep::kRingHead);
      EXPECT_GE(st.pushed, 1u);
      EXPECT_LE(st.step_n[ring_reads], 2 * st.step_n[heads]);
    } else {
      EXPECT_EQ(st.pushed, 0u);
      EXPECT_GE(st.step_n[ring_reads], 1u);
    }
  }
}

// The daemon's own code never reaches into a host process: no cross-memory
// attach, no /proc/<pid>, no fd of the host's (its counter of such calls
// stays 0 while it serves collectives of every kind of buffer handling),
// where an emu daemon serving the same collective makes such calls at
// once: the counter counts. What moves host bytes is the NIC (the
// provider) alone. tests/tools/check_host_reach.sh shows the counted
// functions are the only ones that could.
TEST(Dpu, OnlyTheNicReachesHostMemory) {
  NEEDS_DPU();
  auto served =
      [](const std::vector<std::pair<std::string, std::string>>& env) {
        return ucct::run_ranks(2, [&](ucct::Rank& r) {
          ucct::World w;
          w.env = env;
          if (w.init(r) != UCC_OK) return 1;
          std::vector<int32_t> s(1 << 16, r.rank + 1), d(1 << 16, 0);
          ucc_coll_args_t a = allreduce_i32(s, d);
          if (w.run(a, 60) != UCC_OK) return 2;
          for (int32_t v : d)
            if (v != 3) return 3;
          ucc_coll_args_t b{};
          b.coll_type = UCC_COLL_TYPE_BCAST;
          b.root = 1;
          b.src.info = {s.data(), s.size(), UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
          if (w.run(b, 60) != UCC_OK) return 4;
          for (int32_t v : s)
            if (v != 2) return 5;
          return 0;
        });
      };
  ucct::Daemon emu;
  ASSERT_TRUE(emu.start("reach-emu"));
  EXPECT_TRUE(served(emu.env()));
  proto::StatsReply st{};
  ASSERT_TRUE(emu.stats(&st));
  EXPECT_GT(st.foreign_reaches, 0u) << "the counter does not count";
  emu.stop();
  DpuDaemon dd;
  ASSERT_TRUE(dd.start("reach"));
  EXPECT_TRUE(served(dd.env(dd.key)));
  ASSERT_TRUE(dd.d.stats(&st));
  EXPECT_GE(st.registered, 2u);
  EXPECT_EQ(st.foreign_reaches, 0u);
}

TEST(Dpu, NoKeyOrAWrongKeyIsRefused) {
  NEEDS_DPU();
  DpuDaemon dd;
  ASSERT_TRUE(dd.start("wrongkey"));
  const std::string other = key_file("other", "somebody else's secret");
  for (const std::string& k : {std::string(), other}) {
    bool ok = ucct::run_ranks(1, [&](ucct::Rank& r) {
      ucct::World w;
      w.env = dd.env(k);
      const double t0 = ucct::now_s();
      const ucc_status_t st = w.init(r);
      if (st == UCC_OK || ucct::now_s() - t0 > 10) return 1;
      return 0;
    });
    EXPECT_TRUE(ok) << (k.empty() ? "no key" : "a wrong key");
  }
  unlink(other.c_str());
  proto::StatsReply st{};
  ASSERT_TRUE(dd.d.stats(&st));
  EXPECT_EQ(st.clients, 0u);
}

// A listener that answers the handshake with a made-up proof: the host
// says nothing more to it (no queue pair, no memory).
TEST(Dpu, ImpostorDaemonIsRefused) {
  NEEDS_DPU();
  const std::string key = key_file("impostor", "the deployment's secret");
  const std::string addr =
      "127.0.0.1:" + std::to_string(ucct::free_loopback_port());
  const int l = ucc::plat::sock::tcp_listen(addr.c_str());
  ASSERT_GE(l, 0);
  int after_auth = -1;  // what came after our verdict: 0 = closed
  // The rank is forked only once the impostor's thread waits in poll():
  // a fork while that thread is starting can copy a lock it holds (the
  // sanitizers' allocator's), and the rank would wait on it for ever.
  std::atomic<bool> waiting{false};
  std::thread fake([&] {
    pollfd pf{l, POLLIN, 0};
    waiting.store(true);
    if (poll(&pf, 1, 10000) != 1) return;
    const int c = accept(l, nullptr, nullptr);
    if (c < 0) return;
    proto::AuthChallenge ch{proto::kVersion, 0, {}};
    proto::MsgHeader h{proto::kMagic, proto::kVersion, proto::kChallenge,
                       sizeof(ch), 0};
    ucc::plat::sock::send_all(c, &h, sizeof(h), &ch, sizeof(ch));
    proto::AuthProof p{};
    if (recv_msg(c, &h, &p, sizeof(p))) {
      proto::AuthReply r{0, 0, {}};  // "kOk", and no proof of the key
      proto::MsgHeader rh{proto::kMagic, proto::kVersion,
                          static_cast<uint16_t>(proto::kAuth | proto::kReply),
                          sizeof(r), h.seq};
      ucc::plat::sock::send_all(c, &rh, sizeof(rh), &r, sizeof(r));
      char b;
      after_auth = ucc::plat::sock::recv_all(c, &b, 1, 5000);
    }
    close(c);
  });
  while (!waiting.load()) std::this_thread::yield();
  bool ok = ucct::run_ranks(1, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_OFFLOAD", "dpu"},
             {"UCC_DPU_ADDR", addr},
             {"UCC_DPU_KEY_FILE", key},
             {"UCC_VERBS_LIB", kLoopLib},
             {"UCC_FIRMWARE_TIMEOUT", "5s"}};
    return w.init(r) == UCC_OK ? 1 : 0;
  });
  fake.join();
  close(l);
  unlink(key.c_str());
  EXPECT_TRUE(ok);
  EXPECT_EQ(after_auth, 0) << "the host went on talking to an impostor";
}

// Strangers holding silent connections (they never prove the key) do not
// keep a host out, and the daemon lets go of each of them: at once beyond
// its bound of unproven connections, after its io timeout otherwise.
TEST(Dpu, SilentStrangersAreDropped) {
  NEEDS_DPU();
  DpuDaemon dd;
  ASSERT_TRUE(dd.start("silent"));
  std::vector<int> silent;
  for (int i = 0; i < 200; ++i) {
    const int s = ucc::plat::sock::tcp_connect(dd.addr.c_str(), 2000);
    ASSERT_GE(s, 0);
    silent.push_back(s);
  }
  bool ok = ucct::run_ranks(2, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = dd.env(dd.key);
    if (w.init(r, 10) != UCC_OK) return 1;
    std::vector<int32_t> s(1000, r.rank + 1), d(1000, 0);
    ucc_coll_args_t a = allreduce_i32(s, d);
    if (w.run(a, 10) != UCC_OK) return 2;
    return d[999] == 3 ? 0 : 3;
  });
  EXPECT_TRUE(ok) << "a host was kept out";
  // Every silent connection is closed by the daemon (its challenge, then
  // the end) within the io timeout (2 s) and some slack.
  const double deadline = ucct::now_s() + 8;
  size_t closed_n = 0;
  for (int s : silent) {
    char b[256];
    for (;;) {
      const int left = static_cast<int>((deadline - ucct::now_s()) * 1000);
      pollfd pf{s, POLLIN, 0};
      if (left <= 0 || poll(&pf, 1, left) != 1) break;
      const ssize_t n = recv(s, b, sizeof(b), 0);
      if (n <= 0) {
        ++closed_n;
        break;
      }
    }
    close(s);
  }
  EXPECT_EQ(closed_n, silent.size());
}

// A proof seen on one connection is worth nothing on another.
TEST(Dpu, ReplayedProofIsRefused) {
  NEEDS_DPU();
  DpuDaemon dd;
  ASSERT_TRUE(dd.start("replay"));
  const ucc::plat::Secret k = secret_of(dd.key);
  ASSERT_NE(k.len, 0u);
  Raw first;
  ASSERT_TRUE(first.hello(dd.addr, k));
  EXPECT_EQ(first.reply.status, 0);  // the honest one is accepted
  Raw again;
  const bool answered = again.hello(dd.addr, k, &first.proof);
  EXPECT_TRUE(!answered || again.reply.status != 0);
  EXPECT_TRUE(closed(again.s));
}

// After the handshake: a message without its tag, with a forged one, or
// sent again (same seq) ends the connection; a tagged one is answered.
TEST(Dpu, ForgedOrReplayedMessageEndsTheConnection) {
  NEEDS_DPU();
  DpuDaemon dd;
  ASSERT_TRUE(dd.start("forge"));
  const ucc::plat::Secret k = secret_of(dd.key);
  for (int how = 0; how < 3; ++how) {
    Raw c;
    ASSERT_TRUE(c.hello(dd.addr, k));
    ASSERT_EQ(c.reply.status, 0);
    proto::Session sess;
    ASSERT_TRUE(proto::auth_session(k, c.ch.nonce, c.proof.nonce, &sess));
    auto send_stats = [&](uint32_t seq, bool forge) {
      proto::MsgHeader h{proto::kMagic, proto::kVersion, proto::kStats,
                         static_cast<uint32_t>(proto::kTagBytes), seq};
      uint8_t tag[proto::kTagBytes];
      proto::message_tag(sess, proto::End::kHost, h, nullptr, 0, tag);
      if (forge) tag[0] ^= 1;
      return ucc::plat::sock::send_all(c.s, &h, sizeof(h), tag, sizeof(tag));
    };
    proto::MsgHeader rh{};
    unsigned char body[sizeof(proto::StatsReply) + proto::kTagBytes];
    ASSERT_TRUE(send_stats(2, how == 0));
    if (how == 0) {
      EXPECT_TRUE(closed(c.s)) << "a forged tag was answered";
      continue;
    }
    ASSERT_TRUE(recv_msg(c.s, &rh, body, sizeof(body)));
    EXPECT_TRUE(proto::message_ok(sess, proto::End::kEngine, rh, body));
    if (how == 2) {
      ASSERT_TRUE(send_stats(2, false));  // the same message once more
      EXPECT_TRUE(closed(c.s)) << "a replayed message was answered";
    }
  }
}

void daemon_killed_mid_collective(bool tcp) {
  DpuDaemon dd;
  dd.tcp = tcp;
  ASSERT_TRUE(dd.start("kill"));
  const pid_t dpid = dd.d.pid;
  bool ok = ucct::run_ranks(2, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = dd.env(dd.key);
    w.env.emplace_back("UCC_NET_PEER_TIMEOUT", "3s");
    if (w.init(r) != UCC_OK) return 1;
    std::vector<int32_t> s(100000, 1), dst(100000, 0);
    ucc_coll_args_t a = allreduce_i32(s, dst);
    ucc_coll_req_h req = nullptr;
    if (ucc_collective_init(&a, &req, w.team) != UCC_OK) return 2;
    // Both requests exist (their buffers registered) before the kill.
    if (w.barrier() != UCC_OK) return 7;
    // Rank 1 never posts: the collective is in flight when it dies.
    if (r.rank == 0) {
      if (ucc_collective_post(req) != UCC_OK) return 3;
      for (int i = 0; i < 1000; ++i) ucc_context_progress(w.ctx);
      kill(dpid, SIGKILL);
    } else {
      // Posts once the daemon has gone (its port refuses us).
      int c;
      const double t0 = ucct::now_s();
      while ((c = ucc::plat::sock::tcp_connect(dd.addr.c_str(), 100)) >= 0 &&
             ucct::now_s() - t0 < 20) {
        close(c);
        usleep(1000);
      }
      if (ucc_collective_post(req) != UCC_OK) {
        ucc_collective_finalize(req);
        return 0;  // refused at once: an error too
      }
    }
    const double t0 = ucct::now_s();
    const ucc_status_t st = w.wait(req, 30);
    const double took = ucct::now_s() - t0;
    ucc_collective_finalize(req);
    if (!ended_in_error(st, took)) {
      std::fprintf(stderr, "rank %d: %s after %.2f s\n", r.rank,
                   ucct::status_name(st), took);
      return 4;
    }
    return 0;
  });
  waitpid(dpid, nullptr, 0);
  dd.d.pid = -1;
  EXPECT_TRUE(ok);
}

TEST(Dpu, DaemonKilledMidCollectiveFailsTheHosts) {
  NEEDS_DPU();
  daemon_killed_mid_collective(false);
}
TEST(DpuTcp, DaemonKilledMidCollectiveFailsTheHosts) {
  NEEDS_DPU_TCP();
  daemon_killed_mid_collective(true);
}

// A host that dies (SIGKILL, no goodbye) frees what it held on the DPU.
void host_killed_frees(bool tcp) {
  DpuDaemon dd;
  dd.tcp = tcp;
  ASSERT_TRUE(dd.start("hostkill"));
  ucct::run_ranks(1, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = dd.env(dd.key);
    if (w.init(r) != UCC_OK) return 1;
    std::vector<int32_t> s(1000, 1), d(1000, 0);
    ucc_coll_args_t a = allreduce_i32(s, d);
    if (w.run(a, 30) != UCC_OK) return 2;
    kill(getpid(), SIGKILL);
    return 3;
  });
  proto::StatsReply st{};
  bool freed = false;
  for (int i = 0; i < 500 && !freed; ++i) {
    freed = dd.d.stats(&st) && st.clients == 0 && st.registrations == 0 &&
            st.teams == 0;
    if (!freed) usleep(10000);
  }
  EXPECT_TRUE(freed) << st.clients << " clients, " << st.teams << " teams, "
                     << st.registrations << " registrations left";
  EXPECT_EQ(st.tcp_mem_clients, 0u);
  EXPECT_TRUE(!tcp || st.tcp_mem_requests > 0);
  EXPECT_TRUE(dd.d.alive());
}
TEST(Dpu, HostKilledFreesItsResources) {
  NEEDS_DPU();
  host_killed_frees(false);
}
TEST(DpuTcp, HostKilledFreesItsResources) {
  NEEDS_DPU_TCP();
  host_killed_frees(true);
}

// The host's link to its DPU cut mid-collective (the control link:
// tmfifo_net0 of tests/dpu/run_dpu.sh, taken down from inside the host's
// namespace): the host's collectives end in an error within the peer
// timeout, never a hang. Runs under run_dpu.sh only (ctest dpu_ns_cut),
// where each host reaches its own DPU; it leaves that link down.
TEST(DpuCut, LinkCutMidCollectiveFailsTheHost) {
  const char* off = getenv("UCC_OFFLOAD");
  const char* pids = getenv("UCCT_HOST_PIDS");
  if (off == nullptr || strcmp(off, "dpu") != 0 || pids == nullptr ||
      *pids == 0)
    GTEST_SKIP() << "runs under tests/dpu/run_dpu.sh (ctest dpu_ns_cut)";
  bool ok = ucct::run_ranks(2, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_NET_PEER_TIMEOUT", "3s"}};
    if (w.init(r) != UCC_OK) return 1;
    std::vector<int32_t> s(1 << 16, 1), dst(1 << 16, 0);
    ucc_coll_args_t a = allreduce_i32(s, dst);
    if (w.run(a, 30) != UCC_OK) return 2;  // served before the cut
    ucc_coll_req_h req = nullptr;
    if (ucc_collective_init(&a, &req, w.team) != UCC_OK) return 3;
    if (w.barrier() != UCC_OK) return 7;  // both requests made before the cut
    double t0 = ucct::now_s();
    ucc_status_t st = UCC_OK;
    if (r.rank == 0) {
      // In flight (rank 1 never posts it) when the link goes.
      if (ucc_collective_post(req) != UCC_OK) return 4;
      for (int i = 0; i < 1000; ++i) ucc_context_progress(w.ctx);
      if (system("ip link set tmfifo_net0 down") != 0) return 5;
      t0 = ucct::now_s();
      st = w.wait(req, 30);
    } else {
      // Never posts (the provider has no link state: RDMA between the
      // engines goes on, and a matching post could complete rank 0's).
      // Its context must still go down cleanly afterwards.
      while (ucct::now_s() - t0 < 5) {
        ucc_context_progress(w.ctx);
        usleep(1000);
      }
      ucc_collective_finalize(req);
      return 0;
    }
    const double took = ucct::now_s() - t0;
    ucc_collective_finalize(req);
    if (!ended_in_error(st, took)) {
      std::fprintf(stderr, "rank %d: %s after %.2f s\n", r.rank,
                   ucct::status_name(st), took);
      return 6;
    }
    return 0;
  });
  EXPECT_TRUE(ok);
}

}  // namespace

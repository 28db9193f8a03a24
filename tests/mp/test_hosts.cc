// Teams across hosts (UCC_HOST_ID tells the "hosts" apart here; the same
// tests pass in network namespaces, tests/multihost): how the network
// choice fails when it cannot work, and what the survivors see when a
// host dies or stops in the middle of a collective: an error within
// UCC_NET_PEER_TIMEOUT, never a hang.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/emu_daemon.h"

namespace {

using ucct::allreduce_i32;

// The hosts of tests/multihost/hosts.sh (network namespaces), when this
// binary runs under it: a comma-separated list of holder pids.
const char* ns_hosts() {
  const char* p = getenv("UCCT_HOST_PIDS");
  return p != nullptr && *p != '\0' ? p : nullptr;
}

// Rank r counts as host r / per; its engine is inline (TCP is the inline
// engine's network; the emu label runs this binary with UCC_OFFLOAD=emu).
// Under hosts.sh the harness has already put the rank in its host's
// namespaces (UCCT_RANKS_PER_HOST, which must then be `per`).
void on_host(ucct::World& w, int rank, int per) {
  w.env.emplace_back("UCC_OFFLOAD", "inline");
  if (ns_hosts() == nullptr)
    w.env.emplace_back("UCC_HOST_ID",
                       "ucct-hosts-" + std::to_string(rank / per));
}

// Sets host `h`'s interface (hosts.sh's eth0) "up" or "down".
bool set_link(int h, const char* state) {
  std::string pids = ns_hosts();
  for (int i = 0; i < h; ++i) pids = pids.substr(pids.find(',') + 1);
  pids = pids.substr(0, pids.find(','));
  const std::string cmd =
      "nsenter -t " + pids + " -n ip link set dev eth0 " + state;
  return std::system(cmd.c_str()) == 0;
}

// Why a test placed `per` ranks per host cannot run here, or "": under
// hosts.sh the harness's placement (UCCT_RANKS_PER_HOST) must be `per`;
// an ns_only test needs hosts.sh.
std::string placement_problem(int per, bool ns_only) {
  const char* k = getenv("UCCT_RANKS_PER_HOST");
  const std::string want = "UCCT_RANKS_PER_HOST=" + std::to_string(per);
  if (ns_hosts() == nullptr)
    return ns_only ? "needs tests/multihost/hosts.sh (network namespaces) "
                     "with " + want
                   : "";
  const char* how = getenv("UCCT_HOST_PLACEMENT");
  if (how != nullptr && std::string(how) == "cyclic")
    return "under hosts.sh this test needs ranks placed host by host";
  return k != nullptr && atoi(k) == per
             ? ""
             : "under hosts.sh this test needs " + want;
}

#define PLACED(per, ns_only)                                   \
  do {                                                         \
    const std::string why_ = placement_problem(per, ns_only);  \
    if (!why_.empty()) GTEST_SKIP() << why_;                   \
  } while (0)

bool ended_in_error(ucc_status_t st, double took, double limit) {
  return st != UCC_OK && st != UCC_INPROGRESS && st != UCC_ERR_TIMED_OUT &&
         took < limit;
}

TEST(Hosts, NetTcpWithoutInterfaceFailsContextCreation) {
  bool ok = ucct::run_ranks(1, [](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_OFFLOAD", "inline"},
             {"UCC_NET", "tcp"},
             {"UCC_NET_IF", "ucct-no-such-if0"}};
    const ucc_status_t st = w.init(r);
    if (st != UCC_ERR_INVALID_PARAM) {
      std::fprintf(stderr, "init: %s\n", ucct::status_name(st));
      return 1;
    }
    // auto: the context works, for teams on one host.
    ucct::World w2;
    w2.env = {{"UCC_OFFLOAD", "inline"},
              {"UCC_NET", "auto"},
              {"UCC_NET_IF", "ucct-no-such-if0"}};
    return w2.init(r) == UCC_OK ? 0 : 2;
  });
  EXPECT_TRUE(ok);
}

// UCC_NET=sim exists only inside a simulation (tests/sim/ucc_simperf
// installs it): anywhere else it fails context creation, not silently
// becomes another network.
TEST(Hosts, SimulatedNetOutsideASimulationFailsContextCreation) {
  bool ok = ucct::run_ranks(1, [](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_OFFLOAD", "inline"}, {"UCC_NET", "sim"}};
    const ucc_status_t st = w.init(r);
    if (st == UCC_OK || st == UCC_INPROGRESS) {
      std::fprintf(stderr, "init: %s\n", ucct::status_name(st));
      return 1;
    }
    return 0;
  });
  EXPECT_TRUE(ok);
}

TEST(Hosts, NoNetworkRefusesATeamAcrossHosts) {
  PLACED(1, false);
  bool ok = ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_NET", "none"}};
    on_host(w, r.rank, 1);
    const double t0 = ucct::now_s();
    const ucc_status_t st = w.init(r, 30);
    if (st == UCC_OK || st == UCC_ERR_TIMED_OUT || ucct::now_s() - t0 > 10) {
      std::fprintf(stderr, "rank %d: team creation %s\n", r.rank,
                   ucct::status_name(st));
      return 1;
    }
    return 0;
  });
  EXPECT_TRUE(ok);
}

// The algorithm each collective runs at `bytes`, as ucc_team_coll_algs
// tells it.
std::string alg_at(ucc_team_h team, ucc_coll_type_t coll, uint64_t bytes) {
  ucc_coll_alg_range_t r[8];
  uint32_t n = 8;
  if (ucc_team_coll_algs(team, coll, r, &n) != UCC_OK || n == 0) return "?";
  uint32_t i = 0;
  while (i + 1 < n && r[i + 1].min_bytes <= bytes) ++i;
  return r[i].alg_name;
}

// Two hosts of two ranks: every collective but alltoallv and the rooted
// linear ones runs node-aware, alltoall below UCC_ALLTOALL_HIER_MAX,
// allgather by its packed exchange below UCC_ALLGATHER_HIER_MAX (the
// collective matrices check their results across hosts, with ranks
// placed host by host and round-robin);
// a team on one host, or with one rank per host, runs the flat ones; a
// knob brings the flat one back.
TEST(Hosts, NodeAwareAlgorithmsWhereTheShapeCallsForThem) {
  PLACED(2, false);
  bool ok = ucct::run_ranks(4, [](ucct::Rank& r) {
    ucct::World w;
    on_host(w, r.rank, 2);
    if (w.init(r) != UCC_OK) return 1;
    const ucc_coll_type_t colls[] = {
        UCC_COLL_TYPE_ALLREDUCE,       UCC_COLL_TYPE_BCAST,
        UCC_COLL_TYPE_REDUCE,          UCC_COLL_TYPE_BARRIER,
        UCC_COLL_TYPE_ALLGATHER,       UCC_COLL_TYPE_ALLGATHERV,
        UCC_COLL_TYPE_REDUCE_SCATTER,  UCC_COLL_TYPE_REDUCE_SCATTERV};
    for (ucc_coll_type_t c : colls) {
      for (uint64_t bytes : {uint64_t{8}, uint64_t{16} << 20}) {
        std::string want = "hier";
        if (c == UCC_COLL_TYPE_ALLREDUCE && bytes > 8) want = "hier_ring";
        if (c == UCC_COLL_TYPE_ALLGATHER && bytes == 8) want = "hier_exchange";
        if (alg_at(w.team, c, bytes) != want) {
          std::fprintf(stderr, "rank %d: coll %#x runs %s at %llu B\n",
                       r.rank, static_cast<unsigned>(c),
                       alg_at(w.team, c, bytes).c_str(),
                       static_cast<unsigned long long>(bytes));
          return 2;
        }
      }
    }
    if (alg_at(w.team, UCC_COLL_TYPE_ALLTOALL, 8) != "hier" ||
        alg_at(w.team, UCC_COLL_TYPE_ALLTOALL, 256 << 10) != "pairwise")
      return 3;
    std::vector<int32_t> s(1000, r.rank + 1), d(1000, 0);
    ucc_coll_args_t a = allreduce_i32(s, d);
    if (w.run(a) != UCC_OK || d[999] != 10) return 4;
    // One rank per host (UCC_HOST_ID only: namespaces fix the placement):
    // flat.
    if (ns_hosts() != nullptr) return 0;
    ucct::World one;
    one.env = {{"UCC_ALLREDUCE_ALG", "rd"}};
    on_host(one, r.rank, 1);
    if (one.init(r) != UCC_OK) return 5;
    if (alg_at(one.team, UCC_COLL_TYPE_BCAST, 8) != "binomial") return 6;
    if (alg_at(one.team, UCC_COLL_TYPE_ALLREDUCE, 8) != "rd") return 7;
    return 0;
  });
  EXPECT_TRUE(ok);
}

// Host 1 (ranks 2 and 3) dies while its ranks hold a collective in
// flight; host 0's ranks, one waiting, one posting after the death, end
// in an error.
TEST(Hosts, HostKilledMidCollective) {
  PLACED(2, false);
  bool ok = ucct::run_ranks(
      4,
      [](ucct::Rank& r) {
        ucct::World w;
        w.env = {{"UCC_NET_PEER_TIMEOUT", "3s"}};
        on_host(w, r.rank, 2);
        if (w.init(r) != UCC_OK) return 1;
        std::vector<int32_t> s(1 << 18, r.rank + 1), d(1 << 18, 0);
        ucc_coll_args_t a = allreduce_i32(s, d);
        if (w.run(a) != UCC_OK || d[777] != 10) return 2;  // the net works
        ucc_coll_req_h req = nullptr;
        if (ucc_collective_init(&a, &req, w.team) != UCC_OK) return 3;
        if (r.rank >= 2) {
          if (ucc_collective_post(req) != UCC_OK) return 4;
          for (int i = 0; i < 100; ++i) ucc_context_progress(w.ctx);
          kill(getpid(), SIGKILL);
        }
        if (r.rank == 1) usleep(300 * 1000);  // posts after the death
        if (ucc_collective_post(req) != UCC_OK) return 4;
        const double t0 = ucct::now_s();
        const ucc_status_t st = w.wait(req, 30);
        const double took = ucct::now_s() - t0;
        ucc_collective_finalize(req);
        if (!ended_in_error(st, took, 10)) {
          std::fprintf(stderr, "rank %d: %s after %.2f s\n", r.rank,
                       ucct::status_name(st), took);
          return 5;
        }
        return 0;
      },
      120, false, /*may_be_killed=*/0xC);
  EXPECT_TRUE(ok);
}

// Host 1 stops (SIGSTOP: its sockets stay open, nothing answers): the
// collective on host 0 fails once the peer has been silent for the
// timeout, not before.
TEST(Hosts, StoppedHostTimesOut) {
  PLACED(1, false);
  auto* pid1 = static_cast<std::atomic<int>*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
           -1, 0));
  ASSERT_NE(pid1, MAP_FAILED);
  pid1->store(0);
  bool ok = ucct::run_ranks(
      2,
      [pid1](ucct::Rank& r) {
        ucct::World w;
        w.env = {{"UCC_NET_PEER_TIMEOUT", "1500ms"}};
        on_host(w, r.rank, 1);
        if (w.init(r) != UCC_OK) return 1;
        std::vector<int32_t> s(4096, r.rank + 1), d(4096, 0);
        ucc_coll_args_t a = allreduce_i32(s, d);
        if (w.run(a) != UCC_OK || d[4095] != 3) return 2;
        if (r.rank == 1) {
          pid1->store(getpid());
          raise(SIGSTOP);  // killed by rank 0 while stopped
          return 3;
        }
        while (pid1->load() == 0) usleep(1000);
        usleep(50 * 1000);
        ucc_coll_req_h req = nullptr;
        if (ucc_collective_init(&a, &req, w.team) != UCC_OK) return 3;
        if (ucc_collective_post(req) != UCC_OK) return 4;
        const double t0 = ucct::now_s();
        const ucc_status_t st = w.wait(req, 30);
        const double took = ucct::now_s() - t0;
        ucc_collective_finalize(req);
        kill(pid1->load(), SIGKILL);
        if (!ended_in_error(st, took, 10) || took < 1.0) {
          std::fprintf(stderr, "rank 0: %s after %.2f s\n",
                       ucct::status_name(st), took);
          return 5;
        }
        return 0;
      },
      120, false, /*may_be_killed=*/0x2);
  munmap(pid1, 4096);
  EXPECT_TRUE(ok);
}

// A rank whose collective has completed owes its peers nothing it would
// only send at its next call: rank 0 (the bcast's root) completes, then
// waits in an OOB barrier without progressing the library (as a rank
// does in MPI, or computing), and rank 1 must still complete. The
// delay knob holds every frame 50 ms inside the sender, so the root's
// data is still in its process when its algorithm has finished.
TEST(Hosts, CompletedRankOwesNothing) {
  PLACED(1, false);
  bool ok = ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_NET_FAULTS", "delay=50000"}};
    on_host(w, r.rank, 1);
    if (w.init(r) != UCC_OK) return 1;
    std::vector<int32_t> buf(1 << 14, r.rank == 0 ? 7 : -1);
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_BCAST;
    a.root = 0;
    a.src.info = {buf.data(), buf.size(), UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    const ucc_status_t st = w.run(a, 20);
    if (st != UCC_OK || buf[0] != 7 || buf.back() != 7) {
      std::fprintf(stderr, "rank %d: bcast %s, %d..%d\n", r.rank,
                   ucct::status_name(st), buf[0], buf.back());
      return 2;
    }
    // No ctx: this barrier does not progress the library.
    return ucct::oob_barrier(r.oob, nullptr, 30) == UCC_OK ? 0 : 3;
  });
  EXPECT_TRUE(ok);
}

// Rank 0's messages are damaged after their checksum (a flipped payload
// byte in every data frame, as a bad NIC or a middlebox would do it).
// With UCC_NET_CHECKSUM=1 rank 1 refuses the first one and closes the
// connection saying why: the collective fails on both ranks, each naming
// the other's engine in its log, long before the peer timeout. Without
// the checksum the same damage gives a wrong sum and UCC_OK.
TEST(Hosts, DamagedPayloadFailsBothEnds) {
  PLACED(1, false);
  const char* net = getenv("UCC_NET");
  if (net != nullptr && std::string(net) == "verbs")
    GTEST_SKIP() << "the checksum and its fault are TCP's";
  for (int summed = 1; summed >= 0; --summed) {
    bool ok = ucct::run_ranks(2, [summed](ucct::Rank& r) {
      ucct::World w;
      w.env = {{"UCC_NET_PEER_TIMEOUT", "20s"},
               {"UCC_NET_CHECKSUM", summed ? "1" : "0"},
               {"UCC_LOG_LEVEL", summed ? "warn" : "error"}};
      if (r.rank == 0) w.env.emplace_back("UCC_NET_FAULTS", "corrupt=1");
      on_host(w, r.rank, 1);
      if (w.init(r) != UCC_OK) return 1;
      std::vector<int32_t> s(1 << 14, r.rank + 1), d(1 << 14, 0);
      ucc_coll_args_t a = allreduce_i32(s, d);
      const double t0 = ucct::now_s();
      const ucc_status_t st = w.run(a, 30);
      const double took = ucct::now_s() - t0;
      bool right = true;
      for (int32_t v : d) right = right && v == 3;
      if (summed ? ended_in_error(st, took, 5) : (st == UCC_OK && !right))
        return 0;
      std::fprintf(stderr, "rank %d, checksum %d: %s after %.2f s, %s\n",
                   r.rank, summed, ucct::status_name(st), took,
                   right ? "right" : "wrong");
      return 2;
    });
    EXPECT_TRUE(ok) << "UCC_NET_CHECKSUM=" << summed;
  }
}

// Rank 0's first message is moved to another collective on the way (its
// key changed; no checksum): rank 1 waits for a message that can never
// come. Once rank 0's next collective's message arrives, which says rank
// 0 had finished the first, rank 1's first collective fails with an
// error instead of waiting for ever, and the next one works on both.
TEST(Hosts, MessageThatCanNeverMatchIsAnError) {
  PLACED(1, false);
  const char* net = getenv("UCC_NET");
  if (net != nullptr && std::string(net) == "verbs")
    GTEST_SKIP() << "the fault is TCP's";
  bool ok = ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    if (r.rank == 0) w.env.emplace_back("UCC_NET_FAULTS", "rekey=1");
    on_host(w, r.rank, 1);
    if (w.init(r) != UCC_OK) return 1;
    std::vector<int32_t> s(256, r.rank + 1), d(256, 0);
    ucc_coll_args_t a = allreduce_i32(s, d);
    const double t0 = ucct::now_s();
    const ucc_status_t first = w.run(a, 10);
    const double took = ucct::now_s() - t0;
    d.assign(d.size(), 0);
    const ucc_status_t second = w.run(a, 10);
    const bool want_first =
        r.rank == 0 ? first == UCC_OK : ended_in_error(first, took, 5);
    if (want_first && second == UCC_OK && d[255] == 3) return 0;
    std::fprintf(stderr, "rank %d: %s after %.2f s, then %s (%d)\n", r.rank,
                 ucct::status_name(first), took, ucct::status_name(second),
                 d[255]);
    return 2;
  });
  EXPECT_TRUE(ok);
}

// Host 1 is cut off: its interface goes down in its network namespace,
// its processes live on and nothing reaches them or comes from them (no
// reset, unlike a killed process). Every rank, on either side, ends the
// collective in an error once its peers have been silent for the
// timeout: not before, and never a hang.
TEST(Hosts, HostCutOffTimesOut) {
  PLACED(2, true);
  bool ok = ucct::run_ranks(4, [](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_NET_PEER_TIMEOUT", "1500ms"}};
    on_host(w, r.rank, 2);
    if (w.init(r) != UCC_OK) return 1;
    std::vector<int32_t> s(1 << 16, r.rank + 1), d(1 << 16, 0);
    ucc_coll_args_t a = allreduce_i32(s, d);
    if (w.run(a) != UCC_OK || d[4095] != 10) return 2;  // the net works
    if (r.rank == 0 && !set_link(1, "down")) return 3;
    if (ucct::oob_barrier(r.oob, w.ctx) != UCC_OK) return 4;
    ucc_coll_req_h req = nullptr;
    if (ucc_collective_init(&a, &req, w.team) != UCC_OK) return 5;
    if (ucc_collective_post(req) != UCC_OK) return 6;
    const double t0 = ucct::now_s();
    const ucc_status_t st = w.wait(req, 30);
    const double took = ucct::now_s() - t0;
    ucc_collective_finalize(req);
    if (!ended_in_error(st, took, 10) || took < 1.0) {
      std::fprintf(stderr, "rank %d: %s after %.2f s\n", r.rank,
                   ucct::status_name(st), took);
      return 7;
    }
    return 0;
  });
  EXPECT_TRUE(ok);
  // Whatever happened: the next tests need host 1.
  EXPECT_TRUE(set_link(1, "up"));
}

}  // namespace

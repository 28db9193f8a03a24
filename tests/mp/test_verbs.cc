// The verbs transport (platform/verbs, UCC_NET=verbs) between emulated
// hosts: two hosts of two ranks (UCC_HOST_ID), so every collective runs
// its cross-host steps over RDMA. ctest's verbs_* entries run these with
// tests/verbs_loop's provider (UCC_VERBS_LIB), whose injected faults
// (VERBS_LOOP_FAULTS) must end every rank's collective in an error within
// the peer timeout, never a hang; on a machine with an active RDMA port
// the same cases run over the device (tests/verbs_loop/run_hw.sh) and the
// fault cases skip. The collective matrices run under the same entries.
#include <gtest/gtest.h>
#include <strings.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/emu_daemon.h"

namespace {

bool verbs_net() {
  const char* n = getenv("UCC_NET");
  return n != nullptr && strcasecmp(n, "verbs") == 0;
}

bool loop_provider() {
  const char* l = getenv("UCC_VERBS_LIB");
  return l != nullptr && strstr(l, "verbs_loop") != nullptr;
}

#define NEEDS_VERBS()                                                   \
  do {                                                                  \
    if (!verbs_net())                                                   \
      GTEST_SKIP() << "runs under UCC_NET=verbs (ctest -L verbs, or "   \
                      "tests/verbs_loop/run_hw.sh on an RDMA port)";    \
  } while (0)

// Ranks 2h and 2h+1 on host h, told apart by UCC_HOST_ID; under
// tests/multihost/hosts.sh the harness has put them in their hosts'
// namespaces already (UCCT_RANKS_PER_HOST=2 there).
void two_per_host(ucct::World& w, int rank) {
  w.env.emplace_back("UCC_OFFLOAD", "inline");
  const char* ns = getenv("UCCT_HOST_PIDS");
  if (ns == nullptr || *ns == '\0')
    w.env.emplace_back("UCC_HOST_ID",
                       "ucct-verbs-" + std::to_string(rank / 2));
}

// Whatever library the environment names, this one is missing: context
// creation fails with a reason, it does not fall back to TCP.
TEST(Verbs, MissingLibraryFailsContextCreation) {
  bool ok = ucct::run_ranks(1, [](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_OFFLOAD", "inline"},
             {"UCC_NET", "verbs"},
             {"UCC_VERBS_LIB", "/nonexistent/libibverbs.so.1"}};
    const ucc_status_t st = w.init(r);
    if (st == UCC_OK) return 1;
    return 0;
  });
  EXPECT_TRUE(ok);
}

TEST(Verbs, UnknownDeviceFailsContextCreation) {
  NEEDS_VERBS();
  bool ok = ucct::run_ranks(1, [](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_OFFLOAD", "inline"},
             {"UCC_NET_DEVICES", "ucct_no_such_dev0:1"}};
    return w.init(r) == UCC_ERR_INVALID_PARAM ? 0 : 1;
  });
  EXPECT_TRUE(ok);
}

// Sizes from one inline message to many slots' worth, twice each (the
// second reuses slots freed by credits), every element checked.
TEST(Verbs, AllreduceAcrossHosts) {
  NEEDS_VERBS();
  bool ok = ucct::run_ranks(4, [](ucct::Rank& r) {
    ucct::World w;
    two_per_host(w, r.rank);
    if (w.init(r) != UCC_OK) return 1;
    for (size_t n : {size_t{2}, size_t{1000}, size_t{1} << 16, size_t{1} << 19}) {
      for (int rep = 0; rep < 2; ++rep) {
        std::vector<int32_t> s(n), d(n, -7);
        for (size_t i = 0; i < n; ++i)
          s[i] = static_cast<int32_t>(i % 1000) * (r.rank + 1) + rep;
        ucc_coll_args_t a = ucct::allreduce_i32(s, d);
        const ucc_status_t st = w.run(a, 60);
        if (st != UCC_OK) {
          std::fprintf(stderr, "rank %d: %zu: %s\n", r.rank, n,
                       ucct::status_name(st));
          return 2;
        }
        for (size_t i = 0; i < n; ++i) {
          const int32_t want = static_cast<int32_t>(i % 1000) * 10 + 4 * rep;
          if (d[i] != want) {
            std::fprintf(stderr, "rank %d: n %zu [%zu] = %d, want %d\n",
                         r.rank, n, i, d[i], want);
            return 3;
          }
        }
      }
    }
    return 0;
  });
  EXPECT_TRUE(ok);
}

// One fault of the provider's, in the ranks of host 0 (which of them
// sends over the network depends on the algorithm): every rank's
// collectives end in an error (a link of host 0 fails; its rank breaks
// its links, so its peers fail, and theirs), none later than the peer
// timeout allows, and the ranks leave cleanly.
void fault_ends_in_error(const char* fault) {
  bool ok = ucct::run_ranks(4, [fault](ucct::Rank& r) {
    ucct::World w;
    two_per_host(w, r.rank);
    w.env.emplace_back("UCC_NET_PEER_TIMEOUT", "2s");
    if (r.rank / 2 == 0) w.env.emplace_back("VERBS_LOOP_FAULTS", fault);
    if (w.init(r) != UCC_OK) return 1;
    const size_t n = size_t{1} << 16;
    std::vector<int32_t> s(n, r.rank + 1), d(n, 0);
    const double t0 = ucct::now_s();
    for (int it = 0; it < 400; ++it) {
      ucc_coll_args_t a = ucct::allreduce_i32(s, d);
      const ucc_status_t st = w.run(a, 30);
      if (st == UCC_OK) {
        if (d[n - 1] != 10) return 2;
        continue;
      }
      const double took = ucct::now_s() - t0;
      if (st == UCC_INPROGRESS || st == UCC_ERR_TIMED_OUT || took > 20) {
        std::fprintf(stderr, "rank %d: %s: %s after %.2f s\n", r.rank, fault,
                     ucct::status_name(st), took);
        return 3;
      }
      return 0;
    }
    std::fprintf(stderr, "rank %d: %s: no error in 400 collectives\n", r.rank,
                 fault);
    return 4;
  });
  EXPECT_TRUE(ok) << fault;
}

#define NEEDS_LOOP()                                                        \
  do {                                                                      \
    NEEDS_VERBS();                                                          \
    if (!loop_provider())                                                   \
      GTEST_SKIP() << "injects faults through tests/verbs_loop's provider"; \
  } while (0)

TEST(Verbs, RemoteAccessErrorEndsInError) {
  NEEDS_LOOP();
  fault_ends_in_error("rae=40");
}

TEST(Verbs, ReceiverNotReadyForEverEndsInError) {
  NEEDS_LOOP();
  fault_ends_in_error("rnr=40");
}

TEST(Verbs, QueuePairErrorMidTransferEndsInError) {
  NEEDS_LOOP();
  fault_ends_in_error("qperr=40");
}

TEST(Verbs, CompletionQueueOverflowEndsInError) {
  NEEDS_LOOP();
  fault_ends_in_error("cqovf=1");
}

// UCC_OFFLOAD_MEM=verbs: a firmware_sim engine (--verbs) reads and writes
// the ranks' buffers by RDMA with the keys of their registrations (the
// link's cache, and ucc_mem_map pins) and gets every element right; a
// daemon without verbs refuses, and context creation says so.
TEST(Verbs, EngineReachesHostMemoryByRdma) {
  NEEDS_LOOP();
  if (!ucct::have_firmware_sim()) GTEST_SKIP() << "no firmware_sim";
  for (bool with_verbs : {true, false}) {
    ucct::Daemon d;
    std::vector<std::string> extra;
    if (with_verbs)
      extra = {"--verbs", "auto", "--verbs-lib", getenv("UCC_VERBS_LIB")};
    ASSERT_TRUE(d.start(with_verbs ? "verbsmem" : "noverbsmem", extra));
    bool ok = ucct::run_ranks(2, [&d, with_verbs](ucct::Rank& r) {
      ucct::World w;
      w.env = d.env();
      w.env.emplace_back("UCC_OFFLOAD_MEM", "verbs");
      const ucc_status_t st = w.init(r);
      if (!with_verbs && st != UCC_ERR_NOT_SUPPORTED) {
        std::fprintf(stderr, "rank %d: without --verbs: %s\n", r.rank,
                     ucct::status_name(st));
        return 1;
      }
      if (!with_verbs) return 0;
      if (st != UCC_OK) return 2;
      const size_t n = size_t{3} << 18;  // 3 MiB: several staging rounds
      std::vector<int32_t> s(n), dst(n, -1);
      for (size_t i = 0; i < n; ++i)
        s[i] = static_cast<int32_t>(i % 977) + r.rank;
      ucc_coll_args_t a = ucct::allreduce_i32(s, dst);
      if (w.run(a) != UCC_OK) return 3;
      for (size_t i = 0; i < n; ++i)
        if (dst[i] != static_cast<int32_t>(i % 977) * 2 + 1) return 4;
      return 0;
    });
    d.stop();
    EXPECT_TRUE(ok) << (with_verbs ? "with" : "without") << " --verbs";
  }
}

}  // namespace

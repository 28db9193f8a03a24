// Large blocks between hosts go one-sided (device/coll/streams.h): the
// sender offers its registered bytes and the receiver reads them straight
// into its own buffer, over verbs RDMA (UCC_NET=verbs) or TCP's emulated
// gets (platform/tcp/tcp_rma.cc), without slots. Two hosts of two ranks
// (UCC_HOST_ID, or tests/multihost/hosts.sh with UCCT_RANKS_PER_HOST=2).
// The proof is the library's own account of its network traffic (the
// net's info line at context destroy), with every element checked.
#include <gtest/gtest.h>
#include <strings.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/harness.h"

namespace {

bool on_verbs() {
  const char* n = getenv("UCC_NET");
  return n != nullptr && strcasecmp(n, "verbs") == 0;
}

// The bytes the net says it read one-sided, from the info lines in
// `path`; -1 when no such line is there.
long long one_sided_bytes(const char* path) {
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return -1;
  long long bytes = -1;
  char line[1024];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long ops = 0, b = 0;
    const char* v = std::strstr(line, "credit writes, ");
    const char* t = std::strstr(line, "in, ");
    // Over verbs its connection manager, a TCP net, logs its line too.
    if (on_verbs()) {
      if (v != nullptr &&
          std::sscanf(v, "credit writes, %llu one-sided (%llu bytes", &ops,
                      &b) == 2)
        bytes = static_cast<long long>(b);
    } else if (std::strstr(line, "tcp: ") != nullptr && t != nullptr &&
               std::sscanf(t, "in, %llu one-sided reads (%llu bytes", &ops,
                           &b) == 2)
      bytes = static_cast<long long>(b);
  }
  std::fclose(f);
  return bytes;
}

// Under hosts.sh the alltoall and bcast below need 2 ranks per host.
bool skip_here() {
  const char* ns = getenv("UCCT_HOST_PIDS");
  const char* per = getenv("UCCT_RANKS_PER_HOST");
  return ns != nullptr && *ns != '\0' &&
         (per == nullptr || strcmp(per, "2") != 0);
}

// Runs body(world) on rank r of 4, two hosts of two ranks, with
// UCC_NET_ZCOPY_MIN and UCC_NET_TCP_ZCOPY_MIN at 256 KiB (and `extra`
// variables), and returns the
// bytes the rank's net read one-sided (-1: no net line), or a negative
// code below -1: -2 the log could not be set up, -3 init failed, -3 - k
// the body returned k.
template <typename Body>
long long one_sided_of(
    ucct::Rank& r, Body body,
    std::vector<std::pair<std::string, std::string>> extra = {}) {
  const char* ns = getenv("UCCT_HOST_PIDS");
  char path[64];
  std::snprintf(path, sizeof path, "/tmp/ucct-zcopy-%d.log",
                static_cast<int>(getpid()));
  // The library logs to stderr: here, to a file of this rank's.
  std::fflush(stderr);
  const int saved = dup(2);
  if (saved < 0 || std::freopen(path, "w", stderr) == nullptr) return -2;
  int err = 0;
  {
    ucct::World w;
    w.env.emplace_back("UCC_OFFLOAD", "inline");
    if (ns == nullptr || *ns == '\0')
      w.env.emplace_back("UCC_HOST_ID",
                         "ucct-zcopy-" + std::to_string(r.rank / 2));
    w.env.emplace_back("UCC_LOG_LEVEL", "info");
    w.env.emplace_back("UCC_NET_ZCOPY_MIN", "256K");
    w.env.emplace_back("UCC_NET_TCP_ZCOPY_MIN", "256K");
    for (const auto& e : extra) w.env.push_back(e);
    if (w.init(r) != UCC_OK)
      err = 1;
    else
      err = body(w);
  }
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  const long long bytes = one_sided_bytes(path);
  unlink(path);
  if (err != 0) return -2 - err;
  return bytes;
}

// 0 where a rank read `want` bytes one-sided (no net line counting as
// none), else 9, the figures on stdout.
int read_as_wanted(int rank, long long bytes, long long want) {
  if (bytes == want || (want == 0 && bytes == -1)) return 0;
  std::fprintf(stdout, "rank %d (%s): %lld bytes read one-sided, want %lld\n",
               rank, on_verbs() ? "verbs" : "tcp", bytes, want);
  return 9;
}

// Alltoall of 64 KiB and 1 MiB blocks, twice each: each rank reads exactly
// its two remote peers' 1 MiB blocks one-sided, twice; the 64 KiB ones,
// and the blocks between ranks of one host, go through slots.
TEST(Hosts, LargeBlocksGoOneSided) {
  if (skip_here())
    GTEST_SKIP() << "under hosts.sh, needs UCCT_RANKS_PER_HOST=2";
  bool ok = ucct::run_ranks(4, [](ucct::Rank& r) {
    const long long bytes = one_sided_of(r, [&r](ucct::World& w) {
      for (size_t block : {size_t{64} << 10, size_t{1} << 20}) {
        for (int rep = 0; rep < 2; ++rep) {
          const size_t n = block / 4;  // int32 per block
          std::vector<int32_t> s(4 * n), d(4 * n, -7);
          for (size_t i = 0; i < 4 * n; ++i)
            s[i] = static_cast<int32_t>((i % 1009) + 100 * r.rank + rep);
          ucc_coll_args_t a{};
          a.coll_type = UCC_COLL_TYPE_ALLTOALL;
          a.src.info = {s.data(), 4 * n, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
          a.dst.info = {d.data(), 4 * n, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
          if (w.run(a) != UCC_OK) return 1;
          for (int p = 0; p < 4; ++p)
            for (size_t j = 0; j < n; ++j) {
              // Rank p's block for us: its src [r.rank * n, +n).
              const size_t i = r.rank * n + j;
              const auto want =
                  static_cast<int32_t>((i % 1009) + 100 * p + rep);
              if (d[p * n + j] != want) return 2;
            }
        }
      }
      return 0;
    });
    if (bytes < -1) return static_cast<int>(-bytes);
    // Two remote peers' 1 MiB blocks, twice.
    const long long want = 2ll * 2 * (1 << 20);
    return read_as_wanted(r.rank, bytes, want);
  });
  EXPECT_TRUE(ok);
}

// The second host's first rank: rank 2, or rank 1 where hosts.sh places
// ranks round-robin (the test names hosts by rank / 2 itself otherwise).
int second_host_first() {
  const char* ns = getenv("UCCT_HOST_PIDS");
  const char* how = getenv("UCCT_HOST_PLACEMENT");
  const bool cyclic = ns != nullptr && *ns != '\0' && how != nullptr &&
                      strcmp(how, "cyclic") == 0;
  return cyclic ? 1 : 2;
}

// A bcast of 4 MiB from rank 0, twice, and one of 64 KiB: the node-aware
// bcast's step between hosts (device/coll/bcast_tree.cc's one-sided
// edges) has the other host's first rank read the 4 MiB vector in 1 MiB
// chunks straight from rank 0's buffer, 8 MiB in all; no other rank
// reads a byte one-sided (their steps are in shared memory), and the
// 64 KiB vector goes through slots.
TEST(Hosts, LargeBcastGoesOneSided) {
  if (skip_here())
    GTEST_SKIP() << "under hosts.sh, needs UCCT_RANKS_PER_HOST=2";
  bool ok = ucct::run_ranks(4, [](ucct::Rank& r) {
    const long long bytes = one_sided_of(r, [&r](ucct::World& w) {
      for (size_t len : {size_t{4} << 20, size_t{64} << 10, size_t{4} << 20}) {
        const size_t n = len / 4;
        std::vector<int32_t> v(n, -7);
        if (r.rank == 0)
          for (size_t i = 0; i < n; ++i)
            v[i] = static_cast<int32_t>(i * 2654435761u + len);
        ucc_coll_args_t a{};
        a.coll_type = UCC_COLL_TYPE_BCAST;
        a.root = 0;
        a.src.info = {v.data(), n, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
        if (w.run(a) != UCC_OK) return 1;
        for (size_t i = 0; i < n; ++i)
          if (v[i] != static_cast<int32_t>(i * 2654435761u + len)) return 2;
      }
      return 0;
    });
    if (bytes < -1) return static_cast<int>(-bytes);
    const long long want = r.rank == second_host_first() ? 2ll * (4 << 20) : 0;
    return read_as_wanted(r.rank, bytes, want);
  });
  EXPECT_TRUE(ok);
}

// An allgather of 1 MiB blocks, twice, by the node-aware ring (the ranks
// host by host): its blocks move whole, step by step (ring_pipeline.cc),
// so on the two links between hosts each host's first rank reads the
// n - 1 = 3 blocks its left neighbour on the other host sends, 6 MiB in
// all, one-sided; the links within hosts carry slots.
TEST(Hosts, LargeAllgatherBlocksGoOneSided) {
  if (skip_here())
    GTEST_SKIP() << "under hosts.sh, needs UCCT_RANKS_PER_HOST=2";
  bool ok = ucct::run_ranks(4, [](ucct::Rank& r) {
    const long long bytes = one_sided_of(
        r,
        [&r](ucct::World& w) {
          const size_t n = (size_t{1} << 20) / 4;
          for (int rep = 0; rep < 2; ++rep) {
            std::vector<int32_t> s(n), d(4 * n, -7);
            for (size_t i = 0; i < n; ++i)
              s[i] = static_cast<int32_t>(i * 7 + 1000003 * r.rank + rep);
            ucc_coll_args_t a{};
            a.coll_type = UCC_COLL_TYPE_ALLGATHER;
            a.src.info = {s.data(), n, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
            a.dst.info = {d.data(), 4 * n, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
            if (w.run(a) != UCC_OK) return 1;
            for (int p = 0; p < 4; ++p)
              for (size_t i = 0; i < n; ++i)
                if (d[p * n + i] !=
                    static_cast<int32_t>(i * 7 + 1000003 * p + rep))
                  return 2;
          }
          return 0;
        },
        {{"UCC_ALLGATHER_ALG", "hier"}});
    if (bytes < -1) return static_cast<int>(-bytes);
    const bool reads = r.rank == 0 || r.rank == second_host_first();
    const long long want = reads ? 2ll * 3 * (1 << 20) : 0;
    return read_as_wanted(r.rank, bytes, want);
  });
  EXPECT_TRUE(ok);
}

}  // namespace

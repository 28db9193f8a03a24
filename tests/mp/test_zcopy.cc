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

// Alltoall of 64 KiB and 1 MiB blocks, twice each, with UCC_NET_ZCOPY_MIN
// and UCC_NET_TCP_ZCOPY_MIN at 256 KiB: each rank reads exactly its two remote
// peers' 1 MiB blocks one-sided, twice; the 64 KiB ones, and the blocks between
// ranks of one host, go through slots.
TEST(Hosts, LargeBlocksGoOneSided) {
  const char* ns = getenv("UCCT_HOST_PIDS");
  const char* per = getenv("UCCT_RANKS_PER_HOST");
  if (ns != nullptr && *ns != '\0' && (per == nullptr || strcmp(per, "2") != 0))
    GTEST_SKIP() << "under hosts.sh, needs UCCT_RANKS_PER_HOST=2";
  bool ok = ucct::run_ranks(4, [ns](ucct::Rank& r) {
    char path[64];
    std::snprintf(path, sizeof path, "/tmp/ucct-zcopy-%d.log",
                  static_cast<int>(getpid()));
    // The library logs to stderr: here, to a file of this rank's.
    std::fflush(stderr);
    const int saved = dup(2);
    if (saved < 0 || std::freopen(path, "w", stderr) == nullptr) return 1;
    {
      ucct::World w;
      w.env.emplace_back("UCC_OFFLOAD", "inline");
      if (ns == nullptr || *ns == '\0')
        w.env.emplace_back("UCC_HOST_ID",
                           "ucct-zcopy-" + std::to_string(r.rank / 2));
      w.env.emplace_back("UCC_LOG_LEVEL", "info");
      w.env.emplace_back("UCC_NET_ZCOPY_MIN", "256K");
      w.env.emplace_back("UCC_NET_TCP_ZCOPY_MIN", "256K");
      if (w.init(r) != UCC_OK) return 2;
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
          if (w.run(a) != UCC_OK) return 3;
          for (int p = 0; p < 4; ++p)
            for (size_t j = 0; j < n; ++j) {
              // Rank p's block for us: its src [r.rank * n, +n).
              const size_t i = r.rank * n + j;
              const auto want =
                  static_cast<int32_t>((i % 1009) + 100 * p + rep);
              if (d[p * n + j] != want) return 4;
            }
        }
      }
    }
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    const long long bytes = one_sided_bytes(path);
    unlink(path);
    // Two remote peers' 1 MiB blocks, twice.
    const long long want = 2ll * 2 * (1 << 20);
    if (bytes != want) {
      std::fprintf(stdout,
                   "rank %d (%s): %lld bytes read one-sided, want %lld\n",
                   r.rank, on_verbs() ? "verbs" : "tcp", bytes, want);
      return 5;
    }
    return 0;
  });
  EXPECT_TRUE(ok);
}

}  // namespace

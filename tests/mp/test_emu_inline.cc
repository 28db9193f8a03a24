// Inline data in emu mode (docs/offload.md, "Inline data"): an allreduce
// of up to UCC_OFFLOAD_INLINE bytes (default 32) carries its input in the
// descriptor and gets its result back in the channel, so the daemon copies
// nothing out of or into the ranks' memory for it. Each test has a daemon of
// its own (emu_daemon.h), whose count of such copies (foreign_copies) then
// counts this test's ranks alone. (Not foreign_reaches: that also counts
// the daemon's look at /proc/<pid> every 100 ms, which a slow machine
// meets inside a round.)
//
//   - after a first round (registrations), allreduces of 1 to 32 bytes,
//     in place and not, one request posted again with new inputs, leave
//     the count where it was, and every result is right;
//   - 36 bytes, one element past, does reach into the ranks (the count
//     can move: the check above could fail);
//   - with UCC_OFFLOAD_INLINE=0 the small ones reach into the ranks too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "tests/common/harness.h"
#include "tests/mp/emu_daemon.h"

namespace {

using ucc::off::proto::StatsReply;

constexpr int kRanks = 3;

// Every allreduce uses these (in each rank process), so that after the
// first round no buffer is new to the daemon.
alignas(64) unsigned char g_src[64];
alignas(64) unsigned char g_dst[64];

// Rank r's element i in round k: small integers, exact in every type used.
int32_t input(int rank, size_t i, int k) {
  return static_cast<int32_t>((rank + 1) * 3 + static_cast<int>(i) + k);
}

// One allreduce of n int32 (sum) or n double (max), checked element by
// element; the same request posted `posts` times, with new inputs each
// time (a persistent request).
bool round_trip(ucct::World& w, size_t n, bool dbl, bool inplace, int posts) {
  const size_t es = dbl ? sizeof(double) : sizeof(int32_t);
  if (n * es > sizeof(g_dst)) return false;
  unsigned char* const src = g_src;
  unsigned char* const dst = g_dst;
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
  const ucc_datatype_t dt = dbl ? UCC_DT_FLOAT64 : UCC_DT_INT32;
  a.src.info = {src, n, dt, UCC_MEMORY_TYPE_HOST};
  a.dst.info = {dst, n, dt, UCC_MEMORY_TYPE_HOST};
  a.op = dbl ? UCC_OP_MAX : UCC_OP_SUM;
  a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
  a.flags = UCC_COLL_ARGS_FLAG_PERSISTENT;
  if (inplace) a.flags |= UCC_COLL_ARGS_FLAG_IN_PLACE;
  unsigned char* in = inplace ? dst : src;
  ucc_coll_req_h req = nullptr;
  if (ucc_collective_init(&a, &req, w.team) != UCC_OK) return false;
  bool good = true;
  for (int k = 0; k < posts && good; ++k) {
    for (size_t i = 0; i < n; ++i) {
      const int32_t v = input(w.rank, i, k);
      if (dbl) {
        const double d = v;
        memcpy(in + i * es, &d, es);
      } else {
        memcpy(in + i * es, &v, es);
      }
    }
    if (!inplace) memset(dst, 0xa5, n * es);  // poison
    if (ucc_collective_post(req) != UCC_OK || w.wait(req) != UCC_OK) {
      good = false;
      break;
    }
    for (size_t i = 0; i < n && good; ++i) {
      int64_t want = 0;
      for (int r = 0; r < w.size; ++r)
        want = dbl ? std::max<int64_t>(want, input(r, i, k))
                   : want + input(r, i, k);
      int64_t got;
      if (dbl) {
        double d;
        memcpy(&d, dst + i * es, es);
        got = static_cast<int64_t>(d);
      } else {
        int32_t v;
        memcpy(&v, dst + i * es, es);
        got = v;
      }
      if (got != want) {
        std::fprintf(stderr,
                     "rank %d: %zu %s inplace=%d post %d elem %zu: got %lld "
                     "want %lld\n",
                     w.rank, n, dbl ? "float64 max" : "int32 sum", inplace, k,
                     i, static_cast<long long>(got),
                     static_cast<long long>(want));
        good = false;
      }
    }
  }
  ucc_collective_finalize(req);
  return good;
}

// Every inline size of both types, in place and not.
bool small_ones(ucct::World& w, int posts) {
  for (int inplace = 0; inplace < 2; ++inplace) {
    for (size_t n = 1; n <= 8; ++n)
      if (!round_trip(w, n, false, inplace != 0, posts)) return false;
    for (size_t n = 1; n <= 4; ++n)
      if (!round_trip(w, n, true, inplace != 0, posts)) return false;
  }
  return true;
}

// Rank 0 reads the daemon's statistics once all ranks are here.
bool sample(ucct::World& w, const ucct::Daemon& d, StatsReply* s) {
  if (w.barrier() != UCC_OK) return false;
  bool ok = w.rank != 0 || d.stats(s);
  return w.barrier() == UCC_OK && ok;
}

// Runs the small ones twice (the first round registers the buffers), then
// one 36-byte allreduce; *small and *past: the daemon's calls into the
// ranks during the second round and during the 36-byte one.
bool measure(const char* inline_bytes, uint64_t* small, uint64_t* past) {
  ucct::Daemon d;
  if (!d.start("inline")) return false;
  const bool ok = ucct::run_ranks(kRanks, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = d.env();
    w.env.push_back({"UCC_OFFLOAD_INLINE", inline_bytes});
    if (w.init(r) != UCC_OK) return 1;
    StatsReply s0{}, s1{}, s2{};
    // The first round registers g_src and g_dst; the second finds them.
    if (!small_ones(w, 2)) return 2;
    if (!sample(w, d, &s0)) return 3;
    if (!small_ones(w, 3)) return 4;
    if (!sample(w, d, &s1)) return 5;
    if (!round_trip(w, 9, false, false, 2)) return 6;
    if (!sample(w, d, &s2)) return 7;
    if (w.rank == 0) {
      // For the test's process, which forked the ranks.
      FILE* f = fopen((d.sock + ".counts").c_str(), "w");
      if (f == nullptr) return 8;
      fprintf(f, "%llu %llu\n",
              static_cast<unsigned long long>(s1.foreign_copies -
                                              s0.foreign_copies),
              static_cast<unsigned long long>(s2.foreign_copies -
                                              s1.foreign_copies));
      fclose(f);
    }
    return 0;
  });
  unsigned long long a = ~0ull, b = ~0ull;
  FILE* f = fopen((d.sock + ".counts").c_str(), "r");
  if (f != nullptr) {
    if (fscanf(f, "%llu %llu", &a, &b) != 2) a = b = ~0ull;
    fclose(f);
    remove((d.sock + ".counts").c_str());
  }
  const bool alive = d.alive();
  d.stop();
  *small = a;
  *past = b;
  return ok && alive && f != nullptr;
}

TEST(EmuInline, SmallAllreducesNeverReachIntoTheRanks) {
  if (!ucct::have_firmware_sim()) GTEST_SKIP() << "no firmware_sim";
  uint64_t small = 0, past = 0;
  ASSERT_TRUE(measure("32", &small, &past));
  EXPECT_EQ(small, 0u) << "calls into the ranks for inline allreduces";
  EXPECT_GT(past, 0u) << "a 36-byte allreduce made no call: the count is dead";
}

TEST(EmuInline, OffReachesIntoTheRanks) {
  if (!ucct::have_firmware_sim()) GTEST_SKIP() << "no firmware_sim";
  uint64_t small = 0, past = 0;
  ASSERT_TRUE(measure("0", &small, &past));
  EXPECT_GT(small, 0u) << "UCC_OFFLOAD_INLINE=0 left them inline";
}

}  // namespace

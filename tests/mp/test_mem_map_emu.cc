// What only the firmware_sim daemon can show about ucc_mem_map. Each test
// has a daemon of its own (emu_daemon.h), whose statistics (--stats:
// registrations granted so far and held now) then count this test's two
// ranks alone, in both ctest modes:
//
//   - a mapped range is registered once, when it is mapped: collectives on
//     buffers inside it register nothing more, whether they say so
//     (MEM_MAPPED_BUFFERS and handles) or not;
//   - it stays registered while more than 256 other ranges pass through
//     the implicit registration cache (which evicts all of its own in the
//     meantime), and collectives on it still work afterwards;
//   - ucc_mem_unmap deregisters it;
//   - a buffer this process has not mapped is refused at init: the daemon
//     will not register it.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/emu_daemon.h"

namespace {

using ucc::off::proto::StatsReply;

constexpr int kRanks = 2;
constexpr uint64_t kCache = 256;  // EngineLink's implicit cache
constexpr int kChurn = 300;       // ranges through the cache, > kCache

ucc_coll_args_t allreduce(const int32_t* s, int32_t* d, size_t n) {
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
  a.src.info = {const_cast<int32_t*>(s), n, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
  a.dst.info = {d, n, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
  a.op = UCC_OP_SUM;
  return a;
}

// Rank r contributes r + i at index i.
void fill(int32_t* s, int32_t* d, size_t n, int rank) {
  for (size_t i = 0; i < n; ++i) {
    s[i] = static_cast<int32_t>(rank + i);
    d[i] = -7;  // poison
  }
}

bool summed(const int32_t* d, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const int64_t want =
        int64_t{kRanks} * static_cast<int64_t>(i) + kRanks * (kRanks - 1) / 2;
    if (d[i] != want) {
      std::fprintf(stderr, "elem %zu: got %d want %lld\n", i, d[i],
                   static_cast<long long>(want));
      return false;
    }
  }
  return true;
}

// Allreduces over sub-ranges of the mapped buffers, with the flag and
// handles on even rounds and without anything on odd ones.
bool on_mapped(ucct::World& w, std::vector<int32_t>& src,
               std::vector<int32_t>& dst, ucc_mem_map_mem_h h) {
  for (int round = 0; round < 8; ++round) {
    const size_t off = static_cast<size_t>(round) * 100;
    const size_t n = 1000 + static_cast<size_t>(round) * 777;
    fill(&src[off], &dst[off], n, w.rank);
    ucc_coll_args_t a = allreduce(&src[off], &dst[off], n);
    if (round % 2 == 0) {
      a.mask = UCC_COLL_ARGS_FIELD_FLAGS |
               UCC_COLL_ARGS_FIELD_MEM_MAP_SRC_MEMH |
               UCC_COLL_ARGS_FIELD_MEM_MAP_DST_MEMH;
      a.flags = UCC_COLL_ARGS_FLAG_MEM_MAPPED_BUFFERS;
      a.src_memh.local_memh = h;
      a.dst_memh.local_memh = h;
    }
    ucc_status_t st = w.run(a);
    if (st != UCC_OK) {
      std::fprintf(stderr, "rank %d: mapped allreduce %d: %s\n", w.rank, round,
                   ucct::status_name(st));
      return false;
    }
    if (!summed(&dst[off], n)) return false;
  }
  return true;
}

// Rank 0 reads the daemon's statistics once both ranks are here.
bool sample(ucct::World& w, const ucct::Daemon& d, StatsReply* s) {
  if (w.barrier() != UCC_OK) return false;
  bool ok = w.rank != 0 || d.stats(s);
  return w.barrier() == UCC_OK && ok;
}

TEST(MemMapEmu, PinnedRangesAreRegisteredOnce) {
  if (!ucct::have_firmware_sim()) GTEST_SKIP() << "no firmware_sim";
  ucct::Daemon d;
  ASSERT_TRUE(d.start("memmap"));
  bool ok = ucct::run_ranks(kRanks, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = d.env();
    if (w.init(r) != UCC_OK) return 1;
    std::vector<int32_t> src(1 << 14), dst(1 << 14);
    ucc_mem_map_t seg[2] = {{src.data(), src.size() * 4},
                            {dst.data(), dst.size() * 4}};
    ucc_mem_map_params_t mp{seg, 2};
    size_t sz = 0;
    ucc_mem_map_mem_h h = nullptr;
    StatsReply s0{}, s1{}, s2{}, s3{}, s4{};
    if (!sample(w, d, &s0)) return 2;
    if (ucc_mem_map(w.ctx, UCC_MEM_MAP_MODE_EXPORT, &mp, &sz, &h) != UCC_OK)
      return 3;
    if (!sample(w, d, &s1)) return 4;
    if (!on_mapped(w, src, dst, h)) return 5;
    if (!sample(w, d, &s2)) return 6;

    // Churn: every collective names two pages never used before.
    const size_t pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t per = pg / sizeof(int32_t);
    void* m = mmap(nullptr, 2 * kChurn * pg, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 7;
    auto* pool = static_cast<int32_t*>(m);
    for (int i = 0; i < kChurn; ++i) {
      int32_t* s = pool + 2 * i * per;
      int32_t* t = s + per;
      fill(s, t, 16, w.rank);
      ucc_coll_args_t a = allreduce(s, t, 16);
      if (w.run(a) != UCC_OK || !summed(t, 16)) return 8;
    }
    if (!sample(w, d, &s3)) return 9;
    if (!on_mapped(w, src, dst, h)) return 10;
    if (!sample(w, d, &s4)) return 11;
    StatsReply s5{};
    if (ucc_mem_unmap(&h) != UCC_OK) return 12;
    if (!sample(w, d, &s5)) return 13;
    munmap(m, 2 * kChurn * pg);

    // A buffer that is not mapped in this process: refused at init (the
    // daemon will not register it), and the context goes on working.
    void* gone = mmap(nullptr, pg, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(gone, pg);
    ucc_coll_args_t a = allreduce(static_cast<int32_t*>(gone), dst.data(), 16);
    ucc_coll_req_h req = nullptr;
    ucc_status_t st = ucc_collective_init(&a, &req, w.team);
    if (st != UCC_ERR_INVALID_PARAM) {
      std::fprintf(stderr, "rank %d: unmapped src: %s\n", w.rank,
                   ucct::status_name(st));
      return 14;
    }
    fill(src.data(), dst.data(), 100, w.rank);
    a = allreduce(src.data(), dst.data(), 100);
    if (w.run(a) != UCC_OK || !summed(dst.data(), 100)) return 15;
    if (w.rank != 0) return 0;

    int bad = 0;
    auto expect = [&](bool c, const char* what, uint64_t got, uint64_t want) {
      if (c) return;
      ++bad;
      std::fprintf(stderr, "%s: got %llu, want %llu\n", what,
                   static_cast<unsigned long long>(got),
                   static_cast<unsigned long long>(want));
    };
    const uint64_t segs = 2 * kRanks;
    expect(s1.registered == s0.registered + segs, "registered by the maps",
           s1.registered - s0.registered, segs);
    expect(s2.registered == s1.registered,
           "registered by collectives on mapped buffers",
           s2.registered - s1.registered, 0);
    const uint64_t churn = 2 * kRanks * uint64_t{kChurn};
    expect(s3.registered == s2.registered + churn, "registered by the churn",
           s3.registered - s2.registered, churn);
    // The cache is full of churn ranges; the pinned ones are still there.
    expect(s3.registrations == kRanks * kCache + segs, "held after the churn",
           s3.registrations, kRanks * kCache + segs);
    expect(s4.registered == s3.registered,
           "registered by mapped collectives after the churn",
           s4.registered - s3.registered, 0);
    expect(s5.registrations == s4.registrations - segs, "held after unmap",
           s5.registrations, s4.registrations - segs);
    return bad == 0 ? 0 : 16;
  });
  EXPECT_TRUE(d.alive());
  d.stop();
  EXPECT_TRUE(ok);
}

}  // namespace

// The v-collectives on the direct path (host/exec/gpu_direct.h): blocks
// of uneven length, each where its rank's arrays put it, in one
// allocation or in one allocation per block (PyTorch's list of tensors:
// a NULL buffer and absolute addresses as displacements), with nothing
// staged; and ranks whose counts arrays disagree end in an error on every
// rank instead of copying what they disagree on. The collectives matrix
// runs the v-collectives on this path too (ctest gpu_loop_collectives:
// CollectivesV on tests/cuda_loop).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/common/gpu.h"
#include "tests/common/harness.h"
#include "tests/mp/gpu_test.h"

namespace {

using gput::loop;
using gput::Loop;

constexpr int kRanks = 3;

// Elements rank p sends to rank q (alltoallv), and rank p's block
// (allgatherv, gatherv, scatterv: q unused); some are empty.
uint64_t cnt(int p, int q) {
  static const uint64_t k[kRanks][kRanks] = {
      {3, 0, 517}, {1, 64, 0}, {0, 2049, 7}};
  return k[p][q];
}
int32_t val(int from, int to, uint64_t i) {
  return from * 1000000 + to * 10000 + static_cast<int32_t>(i);
}

// Device blocks, one allocation each (`apart`) or one allocation with a
// gap of 5 elements before each block, in reverse rank order.
struct Blocks {
  std::vector<uint64_t> addr;  // of block j
  std::vector<uint64_t> len;   // elements
  std::vector<uint64_t> own;   // allocations to free
  uint64_t base = 0;           // the buffer the displacements count from
  std::vector<uint64_t> displ;
  bool make(const std::vector<uint64_t>& lens, bool apart) {
    len = lens;
    const size_t n = lens.size();
    addr.assign(n, 0);
    displ.assign(n, 0);
    if (apart) {
      for (size_t j = 0; j < n; ++j) {
        uint64_t a = 0;
        if (!ucct::gpu::alloc((lens[j] + 1) * 4, false, &a)) return false;
        own.push_back(a);
        addr[j] = a;
        displ[j] = a / 4;  // absolute, in int32 elements, from NULL
      }
      return true;
    }
    uint64_t total = 0;
    for (size_t j = 0; j < n; ++j) total += lens[j] + 5;
    if (!ucct::gpu::alloc(total * 4, false, &base)) return false;
    own.push_back(base);
    uint64_t at = 0;
    for (size_t j = n; j-- > 0;) {
      at += 5;
      displ[j] = at;
      addr[j] = base + at * 4;
      at += lens[j];
    }
    return true;
  }
  // Fills block j with f(j, i) (or the poison everywhere).
  template <typename F>
  bool fill(F f) {
    for (size_t j = 0; j < len.size(); ++j) {
      std::vector<int32_t> h(len[j] + (own.size() > 1 ? 1 : 0), -7);
      for (uint64_t i = 0; i < len[j]; ++i) h[i] = f(j, i);
      if (!h.empty() && !ucct::gpu::to_device(addr[j], h.data(), h.size() * 4))
        return false;
    }
    return true;
  }
  void* buffer() const {
    return own.size() > 1 ? nullptr : reinterpret_cast<void*>(base);
  }
  ~Blocks() {
    for (uint64_t a : own) ucct::gpu::release(a);
  }
};

ucc_coll_buffer_info_v_t vinfo(const Blocks& b, std::vector<uint64_t>* counts) {
  *counts = b.len;
  ucc_coll_buffer_info_v_t v{};
  v.buffer = b.buffer();
  v.counts = reinterpret_cast<ucc_count_t*>(counts->data());
  v.displacements =
      reinterpret_cast<ucc_aint_t*>(const_cast<uint64_t*>(b.displ.data()));
  v.datatype = UCC_DT_INT32;
  v.mem_type = UCC_MEMORY_TYPE_CUDA;
  return v;
}

// Block j of `b` holds want(j, i) element by element (and, apart, the
// element after it the poison).
template <typename F>
int check(const Blocks& b, int rank, const char* what, F want) {
  for (size_t j = 0; j < b.len.size(); ++j) {
    const size_t m = b.len[j] + (b.own.size() > 1 ? 1 : 0);
    std::vector<int32_t> h(m, 0);
    if (m != 0 && !ucct::gpu::to_host(h.data(), b.addr[j], m * 4)) return 1;
    for (uint64_t i = 0; i < b.len[j]; ++i)
      if (h[i] != want(j, i)) {
        fprintf(stderr, "%s rank %d: block %zu element %llu is %d, want %d\n",
                what, rank, j, static_cast<unsigned long long>(i), h[i],
                want(j, i));
        return 1;
      }
    if (m > b.len[j] && h[b.len[j]] != -7) {
      fprintf(stderr, "%s rank %d: written past block %zu\n", what, rank, j);
      return 1;
    }
  }
  return 0;
}

// Runs `a`: nothing staged, and only the worker launches a kernel (the
// one that raises the peers' flags after the copies).
int run_direct(ucct::World& w, const Loop& l, int rank, ucc_coll_args_t& a,
               const char* what) {
  const unsigned long long c0 = l.on() ? l.host_copies() : 0;
  const unsigned long long k0 = l.on() ? l.launches() : 0;
  const ucc_status_t st = w.run(a);
  if (st != UCC_OK) {
    fprintf(stderr, "%s rank %d: %s\n", what, rank, ucct::status_name(st));
    return 1;
  }
  if (l.on() &&
      (l.host_copies() != c0 || l.launches() - k0 != (rank == 0 ? 1u : 0u))) {
    fprintf(stderr, "%s rank %d: %llu copies through the host, %llu kernels\n",
            what, rank, l.host_copies() - c0, l.launches() - k0);
    return 1;
  }
  return 0;
}

constexpr uint64_t kFlags64 =
    UCC_COLL_ARGS_FLAG_COUNT_64BIT | UCC_COLL_ARGS_FLAG_DISPLACEMENTS_64BIT;

// An allgatherv of blocks lens[p] long: this rank's src holds val(me, 0,
// i), dst (apart or in one buffer) the poison.
bool allgatherv(int me, const std::vector<uint64_t>& lens, bool apart,
                Blocks* src, Blocks* dst, std::vector<uint64_t>* counts,
                ucc_coll_args_t* a) {
  if (!src->make({lens[me]}, false) || !dst->make(lens, apart) ||
      !src->fill([&](size_t, uint64_t i) { return val(me, 0, i); }) ||
      !dst->fill([](size_t, uint64_t) { return -7; }))
    return false;
  *a = ucc_coll_args_t{};
  a->mask = UCC_COLL_ARGS_FIELD_FLAGS;
  a->flags = kFlags64;
  a->coll_type = UCC_COLL_TYPE_ALLGATHERV;
  a->src.info = {reinterpret_cast<void*>(src->addr[0]), lens[me], UCC_DT_INT32,
                 UCC_MEMORY_TYPE_CUDA};
  a->dst.info_v = vinfo(*dst, counts);
  return true;
}

TEST(GpuDirect, VAllgathervAndAlltoallv) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(kRanks, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const Loop l = loop();
    const int me = r.rank;
    for (int apart = 0; apart < 2; ++apart) {
      // allgatherv: rank p's block is cnt(p, 0) elements.
      std::vector<uint64_t> lens(kRanks), counts;
      for (int p = 0; p < kRanks; ++p) lens[p] = cnt(p, 0);
      Blocks src, dst;
      ucc_coll_args_t a{};
      EXPECT(allgatherv(me, lens, apart == 1, &src, &dst, &counts, &a),
             "allgatherv buffers");
      CK(run_direct(w, l, me, a, "allgatherv") == 0 ? UCC_OK
                                                    : UCC_ERR_NO_MESSAGE);
      EXPECT(check(dst, me, "allgatherv",
                   [](size_t j, uint64_t i) {
                     return val(static_cast<int>(j), 0, i);
                   }) == 0,
             "allgatherv result (apart %d)", apart);
      // alltoallv: block q of p's src, cnt(p, q) elements, to block p of
      // q's dst.
      std::vector<uint64_t> sl(kRanks), dl(kRanks), sc, dc;
      for (int q = 0; q < kRanks; ++q) {
        sl[q] = cnt(me, q);
        dl[q] = cnt(q, me);
      }
      Blocks s2, d2;
      EXPECT(s2.make(sl, apart == 1) && d2.make(dl, apart == 0) &&
                 s2.fill([&](size_t q, uint64_t i) {
                   return val(me, static_cast<int>(q), i);
                 }) &&
                 d2.fill([](size_t, uint64_t) { return -7; }),
             "alltoallv buffers");
      ucc_coll_args_t b{};
      b.mask = UCC_COLL_ARGS_FIELD_FLAGS;
      b.flags = kFlags64;
      b.coll_type = UCC_COLL_TYPE_ALLTOALLV;
      b.src.info_v = vinfo(s2, &sc);
      b.dst.info_v = vinfo(d2, &dc);
      CK(run_direct(w, l, me, b, "alltoallv") == 0 ? UCC_OK
                                                   : UCC_ERR_NO_MESSAGE);
      EXPECT(check(d2, me, "alltoallv",
                   [&](size_t p, uint64_t i) {
                     return val(static_cast<int>(p), me, i);
                   }) == 0,
             "alltoallv result (apart %d)", apart);
      EXPECT(check(s2, me, "alltoallv src",
                   [&](size_t q, uint64_t i) {
                     return val(me, static_cast<int>(q), i);
                   }) == 0,
             "alltoallv changed its src");
      CK(w.barrier());
    }
    return 0;
  }));
}

// Gatherv and scatterv at every root, the root's blocks apart or in one
// buffer; a non-root's dst (gatherv) stays untouched.
TEST(GpuDirect, VGathervAndScatterv) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(kRanks, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const Loop l = loop();
    const int me = r.rank;
    for (int c = 0; c < 2 * kRanks; ++c) {
      const int root = c % kRanks;
      const bool gather = c < kRanks;
      const bool apart = c % 2 == 1;
      std::vector<uint64_t> lens(kRanks), counts;
      for (int p = 0; p < kRanks; ++p) lens[p] = cnt(p, 2);
      Blocks whole, mine;
      EXPECT(whole.make(me == root ? lens : std::vector<uint64_t>(kRanks, 0),
                        apart) &&
                 mine.make({lens[me]}, false),
             "buffers");
      EXPECT(whole.fill([&](size_t j, uint64_t i) {
        return gather ? -7 : val(static_cast<int>(j), 2, i);
      }) && mine.fill([&](size_t, uint64_t i) {
        return gather ? val(me, 2, i) : -7;
      }),
             "inputs");
      ucc_coll_args_t a{};
      a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
      a.flags = kFlags64;
      a.root = static_cast<uint64_t>(root);
      const ucc_coll_buffer_info_t one{reinterpret_cast<void*>(mine.addr[0]),
                                       lens[me], UCC_DT_INT32,
                                       UCC_MEMORY_TYPE_CUDA};
      if (gather) {
        a.coll_type = UCC_COLL_TYPE_GATHERV;
        a.src.info = one;
        a.dst.info_v = vinfo(whole, &counts);
      } else {
        a.coll_type = UCC_COLL_TYPE_SCATTERV;
        a.dst.info = one;
        a.src.info_v = vinfo(whole, &counts);
      }
      CK(run_direct(w, l, me, a, gather ? "gatherv" : "scatterv") == 0
             ? UCC_OK
             : UCC_ERR_NO_MESSAGE);
      if (gather && me == root)
        EXPECT(check(whole, me, "gatherv",
                     [](size_t j, uint64_t i) {
                       return val(static_cast<int>(j), 2, i);
                     }) == 0,
               "gatherv result, root %d", root);
      if (!gather)
        EXPECT(check(mine, me, "scatterv",
                     [&](size_t, uint64_t i) { return val(me, 2, i); }) == 0,
               "scatterv result, root %d", root);
      CK(w.barrier());
    }
    return 0;
  }));
}

// In-place alltoall and alltoallv (counts symmetric between each pair,
// as MPI requires in place): block q of rank p and block p of rank q trade
// places by one swap kernel of the worker's (the diagonal stays); the
// alltoallv's blocks in one buffer with gaps, then one allocation each.
// Nothing staged.
TEST(GpuDirect, AlltoallInPlaceSwaps) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(kRanks, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const Loop l = loop();
    const int me = r.rank;
    constexpr uint64_t kN = 333;
    Blocks whole;
    EXPECT(
        whole.make({kN * kRanks}, false) && whole.fill([&](size_t, uint64_t i) {
          return val(me, static_cast<int>(i / kN), i % kN);
        }),
        "alltoall buffer");
    ucc_coll_args_t a{};
    a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
    a.coll_type = UCC_COLL_TYPE_ALLTOALL;
    a.dst.info = {reinterpret_cast<void*>(whole.addr[0]), kN * kRanks,
                  UCC_DT_INT32, UCC_MEMORY_TYPE_CUDA};
    CK(run_direct(w, l, me, a, "in-place alltoall") == 0 ? UCC_OK
                                                         : UCC_ERR_NO_MESSAGE);
    EXPECT(check(whole, me, "in-place alltoall",
                 [&](size_t, uint64_t i) {
                   return val(static_cast<int>(i / kN), me, i % kN);
                 }) == 0,
           "in-place alltoall result");
    // Symmetric counts: sym(p, q) == sym(q, p).
    static const uint64_t sym[kRanks][kRanks] = {
        {3, 0, 517}, {0, 64, 9}, {517, 9, 7}};
    for (int apart = 0; apart < 2; ++apart) {
      std::vector<uint64_t> lens(kRanks), counts;
      for (int q = 0; q < kRanks; ++q) lens[q] = sym[me][q];
      Blocks d;
      EXPECT(d.make(lens, apart == 1) && d.fill([&](size_t q, uint64_t i) {
        return val(me, static_cast<int>(q), i);
      }),
             "alltoallv buffers");
      ucc_coll_args_t v{};
      v.mask = UCC_COLL_ARGS_FIELD_FLAGS;
      v.flags = kFlags64 | UCC_COLL_ARGS_FLAG_IN_PLACE;
      v.coll_type = UCC_COLL_TYPE_ALLTOALLV;
      v.dst.info_v = vinfo(d, &counts);
      CK(run_direct(w, l, me, v, "in-place alltoallv") == 0
             ? UCC_OK
             : UCC_ERR_NO_MESSAGE);
      EXPECT(check(d, me, "in-place alltoallv",
                   [&](size_t p, uint64_t i) {
                     return val(static_cast<int>(p), me, i);
                   }) == 0,
             "in-place alltoallv result (apart %d)", apart);
      CK(w.barrier());
    }
    return 0;
  }));
}

// Every block in an allocation of its own at 4 ranks, with an IPC cache
// of 8 (UCC_GPU_IPC_CACHE): alltoallv names 24 peer allocations of the
// worker's, allgatherv 15, in-place alltoallv 12, more than the cache
// holds. The worker takes them in batches, the entries of one going back
// to the cache before the next, and every result is whole; nothing is
// staged. Without batches each of them failed on every rank.
TEST(GpuDirect, VManyAllocationsGoInBatches) {
  NEED_GPU();
  constexpr int kN = 4;
  EXPECT_TRUE(ucct::run_ranks(kN, [](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_GPU_IPC_CACHE", "8"}};
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const Loop l = loop();
    const int me = r.rank;
    // Elements p sends q: none empty, symmetric (in place needs it).
    auto len = [](int p, int q) { return uint64_t(7 + 3 * (p + q)); };
    const unsigned long long o0 = l.on() ? l.opens() : 0;
    const unsigned long long c0 = l.on() ? l.host_copies() : 0;
    std::vector<uint64_t> sl(kN), dl(kN), sc, dc, counts;
    for (int q = 0; q < kN; ++q) {
      sl[q] = len(me, q);
      dl[q] = len(q, me);
    }
    Blocks s, d;
    EXPECT(s.make(sl, true) && d.make(dl, true) &&
               s.fill([&](size_t q, uint64_t i) {
                 return val(me, static_cast<int>(q), i);
               }) &&
               d.fill([](size_t, uint64_t) { return -7; }),
           "alltoallv buffers");
    ucc_coll_args_t a{};
    a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags = kFlags64;
    a.coll_type = UCC_COLL_TYPE_ALLTOALLV;
    a.src.info_v = vinfo(s, &sc);
    a.dst.info_v = vinfo(d, &dc);
    ucc_status_t st = w.run(a);
    EXPECT(st == UCC_OK, "alltoallv rank %d: %s", me, ucct::status_name(st));
    EXPECT(check(d, me, "batched alltoallv",
                 [&](size_t p, uint64_t i) {
                   return val(static_cast<int>(p), me, i);
                 }) == 0,
           "alltoallv result");
    CK(w.barrier());
    // allgatherv: rank p's block is len(p, 0) elements.
    std::vector<uint64_t> lens(kN);
    for (int p = 0; p < kN; ++p) lens[p] = len(p, 0);
    Blocks gs, gd;
    ucc_coll_args_t g{};
    EXPECT(allgatherv(me, lens, true, &gs, &gd, &counts, &g),
           "allgatherv buffers");
    st = w.run(g);
    EXPECT(st == UCC_OK, "allgatherv rank %d: %s", me, ucct::status_name(st));
    EXPECT(check(gd, me, "batched allgatherv",
                 [](size_t j, uint64_t i) {
                   return val(static_cast<int>(j), 0, i);
                 }) == 0,
           "allgatherv result");
    CK(w.barrier());
    // In-place alltoallv on the alltoallv's src: swaps in batches.
    ucc_coll_args_t v{};
    v.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    v.flags = kFlags64 | UCC_COLL_ARGS_FLAG_IN_PLACE;
    v.coll_type = UCC_COLL_TYPE_ALLTOALLV;
    v.dst.info_v = vinfo(s, &sc);
    st = w.run(v);
    EXPECT(st == UCC_OK, "in-place alltoallv rank %d: %s", me,
           ucct::status_name(st));
    EXPECT(check(s, me, "batched in-place alltoallv",
                 [&](size_t p, uint64_t i) {
                   return val(static_cast<int>(p), me, i);
                 }) == 0,
           "in-place alltoallv result");
    if (l.on()) {
      EXPECT(l.host_copies() == c0, "rank %d: %llu copies through the host", me,
             l.host_copies() - c0);
      // The worker opened more than the cache holds.
      EXPECT(me != 0 || l.opens() - o0 >= 24 + 15 - 8,
             "the worker opened %llu peer allocations", l.opens() - o0);
    }
    CK(w.barrier());
    return 0;
  }));
}

// A rank that cannot describe its buffers (rank 1's third block runs two
// elements past the end of its allocation) still sends its token, marked
// broken: every rank ends with an error at once instead of
// waiting in the exchange for a token that never comes. Then in-place
// allgather on rank 1 alone: the worker refuses it (every rank must say
// alike), nothing is written.
TEST(GpuDirect, BrokenTokensAndInPlaceDisagreementFailEveryRank) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(kRanks, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const int me = r.rank;
    std::vector<uint64_t> lens = {4, 9, 6}, counts;
    Blocks src, dst;
    ucc_coll_args_t a{};
    EXPECT(allgatherv(me, lens, true, &src, &dst, &counts, &a), "buffers");
    std::vector<uint64_t> displ = dst.displ;
    if (me == 1) {
      displ[2] += 2;
      a.dst.info_v.displacements = reinterpret_cast<ucc_aint_t*>(displ.data());
    }
    const double t0 = ucct::now_s();
    ucc_status_t st = w.run(a, 20);
    EXPECT(gput::ended_in_error(st) && ucct::now_s() - t0 < 10,
           "rank %d: %s after %.1f s (an error, at once, was due)", me,
           ucct::status_name(st), ucct::now_s() - t0);
    CK(w.barrier());
    // In place on rank 1 only (its block already in its dst).
    ucc_coll_args_t g{};
    constexpr size_t kN = 50;
    uint64_t d = 0, s = 0;
    EXPECT(gput::filled(kN * kRanks, -7, &d) && gput::filled(kN, me, &s),
           "allgather buffers");
    g.coll_type = UCC_COLL_TYPE_ALLGATHER;
    g.src.info = {reinterpret_cast<void*>(s), kN, UCC_DT_INT32,
                  UCC_MEMORY_TYPE_CUDA};
    g.dst.info = {reinterpret_cast<void*>(d), kN * kRanks, UCC_DT_INT32,
                  UCC_MEMORY_TYPE_CUDA};
    if (me == 1) {
      g.mask = UCC_COLL_ARGS_FIELD_FLAGS;
      g.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
    }
    st = w.run(g, 20);
    EXPECT(gput::ended_in_error(st), "rank %d: in place on one rank: %s", me,
           ucct::status_name(st));
    EXPECT(me == 1 || gput::all_equal(d, kN * kRanks, -7), "rank %d: written",
           me);
    int32_t h0 = 0, h99 = 0;
    CK(gput::host_allreduce(w, me, &h0, &h99));
    EXPECT(h0 == 3 && h99 == 3, "the host allreduce after: %d", h0);
    CK(w.barrier());
    ucct::gpu::release(d);
    ucct::gpu::release(s);
    return 0;
  }));
}

// Rank 2 says block 1 is one element longer than the others say: every
// rank ends the allgatherv with an error (the worker finds the lengths
// disagree and tells its peers), nothing is written, and the team's
// collectives go on.
TEST(GpuDirect, VCountsThatDisagreeFailEveryRank) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(kRanks, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const int me = r.rank;
    std::vector<uint64_t> lens = {4, 9, 6}, counts;
    if (me == 2) lens[1] = 10;
    Blocks src, dst;
    ucc_coll_args_t a{};
    EXPECT(allgatherv(me, lens, false, &src, &dst, &counts, &a), "buffers");
    const ucc_status_t st = w.run(a, 20);
    EXPECT(gput::ended_in_error(st), "rank %d: %s (an error was due)", me,
           ucct::status_name(st));
    EXPECT(check(dst, me, "disagreeing allgatherv",
                 [](size_t, uint64_t) { return -7; }) == 0,
           "dst written");
    int32_t h0 = 0, h99 = 0;
    CK(gput::host_allreduce(w, me, &h0, &h99));
    EXPECT(h0 == 3 && h99 == 3, "the host allreduce after: %d", h0);
    CK(w.barrier());
    return 0;
  }));
}

}  // namespace

// GPU buffers read and written in place across the ranks of one host
// (host/exec/gpu_direct.h): the post never waits for the GPU, the IPC
// cache opens each peer allocation once and stays within its capacity,
// and UCC_GPU_DIRECT=no stages. The whole collectives matrix runs on the
// direct path too (ctest gpu_loop_collectives, gpu_collectives).
//
// On a GPU these check results only; against tests/cuda_loop (ctest
// gpu_direct_loop) they also read the provider's counters: blocking
// calls, kernel launches, IPC opens and closes.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/common/gpu.h"
#include "tests/common/harness.h"
#include "tests/mp/gpu_test.h"

namespace {

using gput::all_equal;
using gput::allreduce;
using gput::filled;
using gput::loop;
using gput::Loop;

// The post returns before the GPU has done anything (the provider holds
// every event back for a few queries), and neither the post nor the
// progress that completes the collective makes a blocking driver call.
// Only the worker (rank 0) launches a kernel: one, which reduces and
// raises the peers' flags.
TEST(GpuDirect, PostNeverWaitsForTheGpu) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(3, [](ucct::Rank& r) {
    setenv("CUDA_LOOP_EVENT_LAG", "4", 1);
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const Loop l = loop();
    constexpr size_t kN = 4099;
    uint64_t src = 0, dst = 0;
    EXPECT(filled(kN, r.rank + 1, &src) && filled(kN, -7, &dst), "buffers");
    for (int round = 0; round < 3; ++round) {
      ucc_coll_args_t a = allreduce(src, dst, kN, UCC_DT_INT32);
      ucc_coll_req_h req = nullptr;
      CK(ucc_collective_init(&a, &req, w.team));
      const unsigned long long b0 = l.on() ? l.blocking() : 0;
      const unsigned long long k0 = l.on() ? l.launches() : 0;
      CK(ucc_collective_post(req));
      if (l.on()) {
        EXPECT(l.blocking() == b0, "the post made a blocking driver call");
        EXPECT(ucc_collective_test(req) == UCC_INPROGRESS,
               "done before the GPU could have run it");
      }
      CK(w.wait(req));
      CK(ucc_collective_finalize(req));
      if (l.on()) {
        EXPECT(l.blocking() == b0,
               "completing the collective made %llu blocking driver calls",
               l.blocking() - b0);
        const unsigned long long k = l.launches() - k0;
        EXPECT(r.rank == 0 ? k == 1 : k == 0,
               "rank %d launched %llu kernels (the worker launches the "
               "reduction, which raises the flags; the others nothing)",
               r.rank, k);
      }
      EXPECT(all_equal(dst, kN, 6), "round %d: wrong result", round);
      EXPECT(all_equal(src, kN, r.rank + 1), "round %d: src changed", round);
    }
    ucct::gpu::release(src);
    ucct::gpu::release(dst);
    return 0;
  }));
}

// The worker opens each peer allocation once however often it is used,
// and with a small cache (UCC_GPU_IPC_CACHE=8) it cycles through more
// allocations than fit, closing the least recently used; everything it
// opened is closed when the context goes.
TEST(GpuDirect, IpcCacheOpensOnceAndStaysBounded) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(3, [](ucct::Rank& r) {
    constexpr size_t kN = 1000;
    constexpr int kBufs = 6;  // 2 peers x 6 allocations: more than 8
    uint64_t src[kBufs], dst = 0;
    Loop l;
    const int body = [&]() {
      ucct::World w;
      w.env = {{"UCC_GPU_IPC_CACHE", "8"}};
      if (w.init(r) != UCC_OK) return 1;
      EXPECT(ucct::gpu::init(), "CUDA init");
      l = loop();
      for (int i = 0; i < kBufs; ++i)
        EXPECT(filled(kN, (r.rank + 1) * (i + 1), &src[i]), "buffers");
      EXPECT(filled(kN, 0, &dst), "dst");
      // The same two buffers ten times: the worker opens each peer's once.
      const unsigned long long o0 = l.on() ? l.opens() : 0;
      for (int i = 0; i < 10; ++i) {
        ucc_coll_args_t a = allreduce(src[0], dst, kN, UCC_DT_INT32);
        CK(w.run(a));
        EXPECT(all_equal(dst, kN, 6), "same buffers, round %d", i);
      }
      if (l.on())
        EXPECT(l.opens() - o0 == (r.rank == 0 ? 4u : 0u),
               "rank %d opened %llu peer allocations for one src and one "
               "dst per peer",
               r.rank, l.opens() - o0);
      // Cycling through 6 srcs (plus the dst) per peer with room for 8.
      for (int round = 0; round < 2; ++round)
        for (int i = 0; i < kBufs; ++i) {
          ucc_coll_args_t a = allreduce(src[i], dst, kN, UCC_DT_INT32);
          CK(w.run(a));
          EXPECT(all_equal(dst, kN, 6 * (i + 1)), "buffer %d", i);
          if (l.on())
            EXPECT(l.open_now() <= 8, "%d allocations open with room for 8",
                   l.open_now());
        }
      if (l.on() && r.rank == 0)
        EXPECT(l.opens() - o0 > 8, "the cache never evicted (%llu opens)",
               l.opens() - o0);
      CK(w.barrier());
      return 0;
    }();
    if (body != 0) return body;
    // The context is gone: everything it opened is closed.
    if (l.on() && (l.open_now() != 0 || l.opens() != l.closes())) {
      std::fprintf(stderr,
                   "rank %d: %d peer allocations left open (%llu opens, %llu "
                   "closes)\n",
                   r.rank, l.open_now(), l.opens(), l.closes());
      return 1;
    }
    for (int i = 0; i < kBufs; ++i) ucct::gpu::release(src[i]);
    ucct::gpu::release(dst);
    return 0;
  }));
}

// Peers free their buffers and allocate new ones between collectives (as
// ucc_perftest does from one size to the next): the new allocations land
// where the old ones were, and the worker must close what it still maps
// of the old ones before the driver opens the new ones (it refuses with
// CUDA_ERROR_ALREADY_MAPPED; tests/cuda_loop refuses the same way).
TEST(GpuDirect, PeerBuffersFreedAndMadeAgain) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    for (int round = 0; round < 6; ++round) {
      const size_t n = 100 + round * 3;
      uint64_t src = 0, dst = 0;
      EXPECT(filled(n, (r.rank + 1) * (round + 1), &src) && filled(n, -1, &dst),
             "buffers");
      ucc_coll_args_t a = allreduce(src, dst, n, UCC_DT_INT32);
      CK(w.run(a));
      EXPECT(all_equal(dst, n, 3 * (round + 1)), "round %d", round);
      CK(w.barrier());  // both collectives done before either frees
      ucct::gpu::release(src);
      ucct::gpu::release(dst);
    }
    return 0;
  }));
}

// A rank frees its src right after posting (before any progress): the
// worker cannot open it, gives up, and tells its peers, so every rank's
// collective ends with an error instead of the others waiting for a done
// word that never comes. The team goes on: a host collective and a GPU
// one on fresh buffers are right after. A real driver may have opened
// the allocation before the free (it then stays alive for the opener),
// so there the collective may also succeed; it must never wait.
TEST(GpuDirect, WorkerGivesUpAndTellsItsPeers) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(3, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    constexpr size_t kN = 999;
    uint64_t src = 0, dst = 0;
    EXPECT(filled(kN, r.rank + 1, &src) && filled(kN, -7, &dst), "buffers");
    ucc_coll_args_t a = allreduce(src, dst, kN, UCC_DT_INT32);
    ucc_coll_req_h req = nullptr;
    CK(ucc_collective_init(&a, &req, w.team));
    CK(ucc_collective_post(req));
    if (r.rank == 2) ucct::gpu::release(src);
    const ucc_status_t st = w.wait(req, 20);
    EXPECT(st != UCC_INPROGRESS && st != UCC_ERR_TIMED_OUT &&
               (st != UCC_OK || !gput::loop().on()),
           "rank %d: %s (an error, at once, was due)", r.rank,
           ucct::status_name(st));
    CK(ucc_collective_finalize(req));
    int32_t h0 = 0, h99 = 0;
    CK(gput::host_allreduce(w, r.rank, &h0, &h99));
    EXPECT(h0 == 3 && h99 == 3, "the host allreduce after: %d", h0);
    if (r.rank == 2) EXPECT(filled(kN, r.rank + 1, &src), "new src");
    a = allreduce(src, dst, kN, UCC_DT_INT32);
    CK(w.run(a));
    EXPECT(all_equal(dst, kN, 6), "the GPU allreduce after");
    CK(w.barrier());
    ucct::gpu::release(src);
    ucct::gpu::release(dst);
    return 0;
  }));
}

// Reduce (every root, in place at one) and reduce_scatter (in place and
// not) on the direct path: nothing staged, one kernel of the worker's
// only (reduce_scatter's blocks too), results element by
// element against a serial reference, a non-root's dst and the blocks
// reduce_scatter does not own left as they were.
int32_t rs_input(int p, size_t i) {
  return static_cast<int32_t>((i * 31 + p * 7) % 1001) - 500 + p;
}

TEST(GpuDirect, ReduceAndReduceScatter) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(4, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const Loop l = loop();
    const int n = 4;
    // Odd: a vector body and a tail; reduce_scatter also at 1024, whose
    // blocks the GPU reduces 16 bytes a load.
    constexpr size_t kN = 1027;
    std::vector<int32_t> in(kN * n), want(kN * n), got(kN * n);
    for (size_t i = 0; i < kN * n; ++i) {
      in[i] = rs_input(r.rank, i);
      want[i] = 0;
      for (int p = 0; p < n; ++p) want[i] += rs_input(p, i);
    }
    const std::vector<int32_t> poison(kN * n, -7);
    uint64_t src = 0, dst = 0;
    EXPECT(ucct::gpu::alloc(kN * n * 4, false, &src) &&
               ucct::gpu::alloc(kN * n * 4, false, &dst),
           "buffers");
    auto start = [&](const std::vector<int32_t>& s) {
      return ucct::gpu::to_device(src, s.data(), kN * n * 4) &&
             ucct::gpu::to_device(dst, poison.data(), kN * n * 4);
    };
    for (int c = 0; c < 2 * n + 4; ++c) {
      const bool rs = c >= 2 * n;
      const bool in_place = rs ? (c - 2 * n) % 2 == 1 : c == 2 * n - 1;
      const size_t m = rs && c >= 2 * n + 2 ? 1024 : kN;
      const int root = rs ? 0 : c % n;
      ucc_coll_args_t a = allreduce(src, dst, m, UCC_DT_INT32);
      a.coll_type = rs ? UCC_COLL_TYPE_REDUCE_SCATTER : UCC_COLL_TYPE_REDUCE;
      a.root = root;
      if (rs) a.src.info.count = m * n;
      if (in_place && (rs || r.rank == root)) {
        // In place: the input starts in dst (the whole vector for
        // reduce_scatter, whose block `rank` ends up holding the result).
        a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
        a.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
        if (rs) a.dst.info.count = m * n;
        EXPECT(
            start(poison) && ucct::gpu::to_device(dst, in.data(), kN * n * 4),
            "in-place input");
      } else {
        EXPECT(start(in), "input");
      }
      const unsigned long long c0 = l.on() ? l.host_copies() : 0;
      const unsigned long long k0 = l.on() ? l.launches() : 0;
      CK(w.run(a));
      if (l.on()) {
        EXPECT(l.host_copies() == c0, "case %d: staged", c);
        const unsigned long long k = l.launches() - k0;
        EXPECT(k == (r.rank != 0 ? 0u : 1u),
               "case %d: rank %d launched %llu kernels", c, r.rank, k);
      }
      EXPECT(ucct::gpu::to_host(got.data(), dst, kN * n * 4), "result");
      for (size_t i = 0; i < kN * n; ++i) {
        int32_t expect = -7;
        if (rs && in_place)
          expect = i / m == size_t(r.rank) ? want[i] : in[i];
        else if (rs)
          expect = i < m ? want[r.rank * m + i] : -7;
        else if (r.rank == root)
          expect = i < kN ? want[i] : (in_place ? in[i] : -7);
        EXPECT(got[i] == expect,
               "case %d (%s, root %d%s) rank %d: "
               "element %zu is %d, want %d",
               c, rs ? "reduce_scatter" : "reduce", root,
               in_place ? ", in place" : "", r.rank, i, got[i], expect);
      }
      CK(w.barrier());
    }
    ucct::gpu::release(src);
    ucct::gpu::release(dst);
    return 0;
  }));
}

// Gather and scatter on the direct path, every root, in place at one:
// nothing staged, one copy kernel of the worker's only, the root's
// vector (and a non-root's dst for scatter) element by element; a
// non-root's dst (gather) and the root's own block in place untouched.
TEST(GpuDirect, GatherAndScatter) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(3, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const Loop l = loop();
    const int n = 3;
    constexpr size_t kN = 333;
    auto val = [](int p, size_t i) { return int32_t(p * 100000 + int(i)); };
    std::vector<int32_t> in(kN * n), got(kN * n);
    const std::vector<int32_t> poison(kN * n, -7);
    uint64_t src = 0, dst = 0;
    EXPECT(ucct::gpu::alloc(kN * n * 4, false, &src) &&
               ucct::gpu::alloc(kN * n * 4, false, &dst),
           "buffers");
    for (int c = 0; c < 2 * n + 2; ++c) {
      const bool gather = c < n + 1;
      const int root = c % (n + 1) == n ? 1 : c % (n + 1);
      const bool in_place = c % (n + 1) == n && r.rank == root;
      // gather: rank p's src holds val(p, i); scatter: the root's src
      // holds block p as val(p, i). In place the root's vector is its dst
      // (gather) or src (scatter), with its own block already there.
      for (size_t i = 0; i < kN * n; ++i)
        in[i] = gather ? val(r.rank, i) : val(int(i / kN), i % kN);
      std::vector<int32_t> d0 = poison;
      if (in_place && gather)
        for (size_t i = 0; i < kN; ++i) d0[root * kN + i] = val(root, i);
      EXPECT(ucct::gpu::to_device(src, in.data(), kN * n * 4) &&
                 ucct::gpu::to_device(dst, d0.data(), kN * n * 4),
             "input");
      ucc_coll_args_t a = allreduce(src, dst, kN, UCC_DT_INT32);
      a.coll_type = gather ? UCC_COLL_TYPE_GATHER : UCC_COLL_TYPE_SCATTER;
      a.root = root;
      if (gather)
        a.dst.info.count = kN * n;
      else
        a.src.info.count = kN * n;
      if (in_place) {
        a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
        a.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
      }
      const unsigned long long c0 = l.on() ? l.host_copies() : 0;
      const unsigned long long k0 = l.on() ? l.launches() : 0;
      CK(w.run(a));
      if (l.on()) {
        EXPECT(l.host_copies() == c0, "case %d: staged", c);
        EXPECT(l.launches() - k0 == (r.rank == 0 ? 1u : 0u),
               "case %d: rank %d launched %llu kernels", c, r.rank,
               l.launches() - k0);
      }
      EXPECT(ucct::gpu::to_host(got.data(), dst, kN * n * 4), "result");
      for (size_t i = 0; i < kN * n; ++i) {
        int32_t expect = -7;
        if (gather && r.rank == root)
          expect = val(int(i / kN), i % kN);
        else if (!gather && !in_place && i < kN)
          expect = val(r.rank, i);
        EXPECT(got[i] == expect,
               "case %d (%s, root %d%s) rank %d: element %zu is %d, want %d", c,
               gather ? "gather" : "scatter", root,
               in_place ? ", in place" : "", r.rank, i, got[i], expect);
      }
      CK(w.barrier());
    }
    ucct::gpu::release(src);
    ucct::gpu::release(dst);
    return 0;
  }));
}

// The worker cannot map any peer's flag page (tests/cuda_loop refuses to
// register it for the GPU: CUDA_LOOP_NO_DEVICE_MAP in the worker only),
// so it cannot write into them that it gave up: the peers read it in the
// worker's own page instead, and every rank ends with an error at once
// (not the 20 s wait). The team's host collectives go on.
TEST(GpuDirect, WorkerThatCannotReachItsPeersTellsThem) {
  NEED_GPU();
  if (!gput::is_cuda_loop())
    GTEST_SKIP() << "SKIPPED: needs a fault of tests/cuda_loop's";
  EXPECT_TRUE(ucct::run_ranks(3, [](ucct::Rank& r) {
    if (r.rank == 0) setenv("CUDA_LOOP_NO_DEVICE_MAP", "1", 1);
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    constexpr size_t kN = 500;
    uint64_t src = 0, dst = 0;
    EXPECT(filled(kN, r.rank + 1, &src) && filled(kN, -7, &dst), "buffers");
    ucc_coll_args_t a = allreduce(src, dst, kN, UCC_DT_INT32);
    const double t0 = ucct::now_s();
    const ucc_status_t st = w.run(a, 20);
    EXPECT(gput::ended_in_error(st),
           "rank %d: %s after %.1f s (an error, at once, was due)", r.rank,
           ucct::status_name(st), ucct::now_s() - t0);
    EXPECT(all_equal(dst, kN, -7), "rank %d: dst written", r.rank);
    int32_t h0 = 0, h99 = 0;
    CK(gput::host_allreduce(w, r.rank, &h0, &h99));
    EXPECT(h0 == 3 && h99 == 3, "the host allreduce after: %d", h0);
    CK(w.barrier());
    ucct::gpu::release(src);
    ucct::gpu::release(dst);
    return 0;
  }));
}

// UCC_GPU_DIRECT=no stages every GPU buffer: no kernel runs, no peer
// allocation is opened, and the result is the same.
TEST(GpuDirect, NoStagesInstead) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_GPU_DIRECT", "no"}};
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const Loop l = loop();
    constexpr size_t kN = 257;
    uint64_t src = 0, dst = 0;
    EXPECT(filled(kN, r.rank + 1, &src) && filled(kN, 0, &dst), "buffers");
    const unsigned long long k0 = l.on() ? l.launches() : 0;
    const unsigned long long o0 = l.on() ? l.opens() : 0;
    ucc_coll_args_t a = allreduce(src, dst, kN, UCC_DT_INT32);
    CK(w.run(a));
    EXPECT(all_equal(dst, kN, 3), "staged result");
    if (l.on())
      EXPECT(l.launches() == k0 && l.opens() == o0,
             "UCC_GPU_DIRECT=no still launched or opened");
    ucct::gpu::release(src);
    ucct::gpu::release(dst);
    return 0;
  }));
}

// Complex numbers (sum, prod, avg) and MAXLOC/MINLOC pairs on GPU
// buffers: their kernels on the direct path, and the staged path
// (UCC_GPU_DIRECT=no), against a serial reference in rank order. The
// inputs are small integers, so every partial result is exact and the
// comparison is bit for bit; an odd count has a vector body and a tail.
template <typename T>
struct Two {
  T a, b;  // real and imaginary parts, or a pair's value and index
};

// Rank p's element i (its parts from two small integers).
template <typename T>
Two<T> input(int p, size_t i, bool pair) {
  const T v = static_cast<T>(static_cast<int>((i * 7 + p * 3) % 5) - 2);
  const T w = static_cast<T>(static_cast<int>((i * 5 + p) % 3) - 1);
  return pair ? Two<T>{v, static_cast<T>(p)} : Two<T>{v, w};
}

template <typename T>
Two<T> combine(ucc_reduction_op_t op, Two<T> x, Two<T> y) {
  switch (op) {
    case UCC_OP_PROD:
      return {static_cast<T>(x.a * y.a - x.b * y.b),
              static_cast<T>(x.a * y.b + x.b * y.a)};
    case UCC_OP_MAXLOC:
    case UCC_OP_MINLOC: {
      const bool better = op == UCC_OP_MAXLOC ? x.a > y.a : x.a < y.a;
      return better || (x.a == y.a && x.b < y.b) ? x : y;
    }
    default:
      return {static_cast<T>(x.a + y.a), static_cast<T>(x.b + y.b)};
  }
}

template <typename T>
int wide_case(ucct::World& w, int rank, int n, ucc_datatype_t dt,
              ucc_reduction_op_t op) {
  constexpr size_t kN = 1001;
  const bool pair = op == UCC_OP_MAXLOC || op == UCC_OP_MINLOC;
  std::vector<Two<T>> in(kN), want(kN), got(kN);
  for (size_t i = 0; i < kN; ++i) {
    in[i] = input<T>(rank, i, pair);
    Two<T> acc = input<T>(0, i, pair);
    for (int p = 1; p < n; ++p) acc = combine(op, acc, input<T>(p, i, pair));
    if (op == UCC_OP_AVG)
      acc = {static_cast<T>(acc.a / T(n)), static_cast<T>(acc.b / T(n))};
    want[i] = acc;
  }
  const size_t bytes = kN * sizeof(Two<T>);
  uint64_t src = 0, dst = 0;
  EXPECT(ucct::gpu::alloc(bytes, false, &src) &&
             ucct::gpu::alloc(bytes, false, &dst) &&
             ucct::gpu::to_device(src, in.data(), bytes),
         "buffers");
  std::vector<unsigned char> poison(bytes, 0xa5);
  EXPECT(ucct::gpu::to_device(dst, poison.data(), bytes), "poison");
  ucc_coll_args_t a = allreduce(src, dst, kN, dt);
  a.op = op;
  CK(w.run(a));
  EXPECT(ucct::gpu::to_host(got.data(), dst, bytes), "to host");
  for (size_t i = 0; i < kN; ++i)
    EXPECT(memcmp(&got[i], &want[i], sizeof(Two<T>)) == 0,
           "dt %#llx op %d element %zu: (%g, %g), want (%g, %g)",
           static_cast<unsigned long long>(dt), static_cast<int>(op), i,
           static_cast<double>(got[i].a), static_cast<double>(got[i].b),
           static_cast<double>(want[i].a), static_cast<double>(want[i].b));
  ucct::gpu::release(src);
  ucct::gpu::release(dst);
  return 0;
}

TEST(GpuDirect, ComplexAndPairs) {
  NEED_GPU();
  for (int way = 0; way < 2; ++way) {
    EXPECT_TRUE(ucct::run_ranks(3, [way](ucct::Rank& r) {
      ucct::World w;
      if (way == 1) w.env = {{"UCC_GPU_DIRECT", "no"}};
      if (w.init(r) != UCC_OK) return 1;
      EXPECT(ucct::gpu::init(), "CUDA init");
      const int n = 3;
      for (ucc_reduction_op_t op : {UCC_OP_SUM, UCC_OP_PROD, UCC_OP_AVG}) {
        if (int e = wide_case<float>(w, r.rank, n, UCC_DT_FLOAT32_COMPLEX, op))
          return e;
        if (int e = wide_case<double>(w, r.rank, n, UCC_DT_FLOAT64_COMPLEX, op))
          return e;
      }
      for (ucc_reduction_op_t op : {UCC_OP_MAXLOC, UCC_OP_MINLOC}) {
        if (int e = wide_case<int32_t>(w, r.rank, n, UCC_DT_INT32, op))
          return e;
        if (int e = wide_case<int8_t>(w, r.rank, n, UCC_DT_INT8, op)) return e;
        if (int e = wide_case<double>(w, r.rank, n, UCC_DT_FLOAT64, op))
          return e;
      }
      return 0;
    })) << (way == 0 ? "direct" : "staged");
  }
}

}  // namespace

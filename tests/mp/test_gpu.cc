// GPU memory and CUDA stream execution engines (host/exec/gpu_stage.h,
// host/exec/ee_cuda.h). Where there is no CUDA GPU the GPU cases skip with the
// reason, and the refusal cases run instead; the collectives suites run on
// GPU buffers with UCCT_MEM=cuda (ctest gpu_*).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/common/gpu.h"
#include "tests/common/harness.h"
#include "tests/mp/gpu_test.h"

namespace {

ucc_coll_args_t allreduce_i32(void* src, void* dst, size_t n,
                              ucc_memory_type_t mt) {
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
  a.op = UCC_OP_SUM;
  a.src.info = {src, n, UCC_DT_INT32, mt};
  a.dst.info = {dst, n, UCC_DT_INT32, mt};
  return a;
}

// A collective triggered on a CUDA stream runs in the stream's order: its
// input is what a memset queued just before it (behind a long run of
// other work) wrote, and a copy queued just after it sees its result,
// before the next memset on the stream overwrites dst. Also on a blocking
// stream, which the legacy default stream waits for (the direct path
// must not wait for its input there: the stream waits for the collective).
struct StreamCase {
  int ranks;
  bool blocking;
};
void PrintTo(const StreamCase& c, std::ostream* os) {
  *os << c.ranks << " ranks" << (c.blocking ? ", a blocking stream" : "");
}
class GpuStream : public ::testing::TestWithParam<StreamCase> {};

TEST_P(GpuStream, TriggeredAllreduceInStreamOrder) {
  NEED_GPU();
  const bool blocking = GetParam().blocking;
  EXPECT_TRUE(ucct::run_ranks(GetParam().ranks, [blocking](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    constexpr size_t kN = 1 << 20;          // int32 elements: 4 MiB
    constexpr size_t kBusy = size_t{64} << 20;  // words of filler work
    uint64_t src = 0, dst = 0, busy = 0;
    void* stream = nullptr;
    EXPECT(ucct::gpu::alloc(kN * 4, false, &src) &&
               ucct::gpu::alloc(kN * 4, false, &dst) &&
               ucct::gpu::alloc(kBusy * 4, false, &busy) &&
               ucct::gpu::stream_create(&stream, blocking),
           "GPU setup");
    auto* out = static_cast<int32_t*>(ucct::gpu::host_alloc(kN * 4));
    EXPECT(out != nullptr, "pinned host memory");
    ucc_ee_params_t ep{};
    ep.ee_type = UCC_EE_CUDA_STREAM;
    ep.ee_context = stream;
    ep.ee_context_size = sizeof(void*);
    ucc_ee_h ee = nullptr;
    CK(ucc_ee_create(w.team, &ep, &ee));
    for (int round = 0; round < 4; ++round) {
      // Poison first, synchronously: an early start would read it.
      EXPECT(ucct::gpu::memset32_async(src, 0x7f7f7f7f, kN, stream) &&
                 ucct::gpu::memset32_async(dst, 0x7f7f7f7f, kN, stream) &&
                 ucct::gpu::stream_sync(stream),
             "poison");
      std::memset(out, 0x55, kN * 4);
      for (int k = 0; k < 8; ++k)
        EXPECT(ucct::gpu::memset32_async(busy, k, kBusy, stream), "filler");
      const auto mine = static_cast<uint32_t>(r.rank + 1 + round * 10);
      EXPECT(ucct::gpu::memset32_async(src, mine, kN, stream), "input");
      ucc_coll_args_t a =
          allreduce_i32(reinterpret_cast<void*>(src),
                        reinterpret_cast<void*>(dst), kN, UCC_MEMORY_TYPE_CUDA);
      ucc_coll_req_h req = nullptr;
      CK(ucc_collective_init(&a, &req, w.team));
      ucc_ev_t ev{UCC_EVENT_COMPUTE_COMPLETE, nullptr, 0, req};
      CK(ucc_collective_triggered_post(ee, &ev));
      ucc_ev_t* got = nullptr;
      CK(ucc_ee_get_event(ee, &got));  // what PyTorch checks
      EXPECT(got->ev_type == UCC_EVENT_COLLECTIVE_POST && got->req == req,
             "POST event right after the triggered post");
      CK(ucc_ee_ack_event(ee, got));
      EXPECT(ucct::gpu::to_host_async(out, dst, kN * 4, stream), "result copy");
      EXPECT(ucct::gpu::memset32_async(dst, 0, kN, stream), "later work");
      CK(w.wait(req));
      EXPECT(ucct::gpu::stream_sync(stream), "stream");
      int32_t want = 0;
      for (int p = 0; p < r.size; ++p) want += p + 1 + round * 10;
      for (size_t i = 0; i < kN; ++i)
        EXPECT(out[i] == want, "round %d element %zu: %d, expected %d", round,
               i, out[i], want);
      CK(ucc_ee_get_event(ee, &got));
      EXPECT(got->ev_type == UCC_EVENT_COLLECTIVE_COMPLETE, "COMPLETE event");
      CK(ucc_ee_ack_event(ee, got));
      CK(ucc_collective_finalize(req));
    }
    CK(ucc_ee_destroy(ee));
    ucct::gpu::stream_destroy(stream);
    ucct::gpu::release(src);
    ucct::gpu::release(dst);
    ucct::gpu::release(busy);
    ucct::gpu::host_free(out);
    return 0;
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, GpuStream,
                         ::testing::Values(StreamCase{1, false},
                                           StreamCase{2, false},
                                           StreamCase{4, false},
                                           StreamCase{2, true}),
                         [](const ::testing::TestParamInfo<StreamCase>& i) {
                           return "n" + std::to_string(i.param.ranks) +
                                  (i.param.blocking ? "_blocking" : "");
                         });

// In a process that has loaded CUDA, host memory given as UNKNOWN is still
// host memory, and device memory given as UNKNOWN is found to be the GPU's.
TEST(Gpu, UnknownMemoryResolved) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    constexpr size_t kN = 1000;
    std::vector<int32_t> in(kN, r.rank + 1), out(kN, -1);
    ucc_coll_args_t a =
        allreduce_i32(in.data(), out.data(), kN, UCC_MEMORY_TYPE_UNKNOWN);
    CK(w.run(a));
    for (size_t i = 0; i < kN; ++i) EXPECT(out[i] == 3, "host result %zu", i);
    uint64_t d = 0;
    EXPECT(ucct::gpu::alloc(kN * 4, false, &d), "alloc");
    EXPECT(ucct::gpu::to_device(d, in.data(), kN * 4), "to device");
    a = allreduce_i32(reinterpret_cast<void*>(d), reinterpret_cast<void*>(d),
                      kN, UCC_MEMORY_TYPE_UNKNOWN);
    a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
    CK(w.run(a));
    std::fill(out.begin(), out.end(), -1);
    EXPECT(ucct::gpu::to_host(out.data(), d, kN * 4), "to host");
    for (size_t i = 0; i < kN; ++i) EXPECT(out[i] == 3, "GPU result %zu", i);
    ucct::gpu::release(d);
    return 0;
  }));
}

// A staged post (UCC_GPU_DIRECT=no: allreduce, and reduce, whose
// non-roots copy nothing back) returns before the GPU has copied its input
// (the provider holds every event back for 4 queries) and makes no
// blocking driver call; nor does the progress that copies the results
// back and completes it.
TEST(Gpu, StagedPostNeverWaits) {
  NEED_GPU();
  for (int way = 0; way < 2; ++way) {
    EXPECT_TRUE(ucct::run_ranks(
        3,
        [way](ucct::Rank& r) {
          setenv("CUDA_LOOP_EVENT_LAG", "4", 1);
          ucct::World w;
          w.env = {{"UCC_GPU_DIRECT", "no"}};
          if (w.init(r) != UCC_OK) return 1;
          EXPECT(ucct::gpu::init(), "CUDA init");
          const gput::Loop l = gput::loop();
          constexpr size_t kN = 3001;
          uint64_t src = 0, dst = 0;
          EXPECT(
              gput::filled(kN, r.rank + 1, &src) && gput::filled(kN, -7, &dst),
              "buffers");
          for (int round = 0; round < 2; ++round) {
            ucc_coll_args_t a = gput::allreduce(src, dst, kN, UCC_DT_INT32);
            if (way == 1) {
              a.coll_type = UCC_COLL_TYPE_REDUCE;
              a.root = 1;
            }
            ucc_coll_req_h req = nullptr;
            CK(ucc_collective_init(&a, &req, w.team));
            const unsigned long long b0 = l.on() ? l.blocking() : 0;
            CK(ucc_collective_post(req));
            if (l.on()) {
              EXPECT(l.blocking() == b0, "way %d: the post blocked", way);
              EXPECT(ucc_collective_test(req) == UCC_INPROGRESS,
                     "way %d: done before the GPU could have copied", way);
            }
            CK(w.wait(req));
            CK(ucc_collective_finalize(req));
            if (l.on())
              EXPECT(l.blocking() == b0,
                     "way %d: completing made %llu blocking driver calls", way,
                     l.blocking() - b0);
            const bool written = way == 0 || r.rank == 1;
            EXPECT(gput::all_equal(dst, kN, written ? 6 : -7),
                   "way %d round %d: wrong result", way, round);
          }
          CK(w.barrier());
          ucct::gpu::release(src);
          ucct::gpu::release(dst);
          return 0;
        }))
        << "way " << way;
  }
}

// Without a GPU: CUDA memory and CUDA stream engines are refused with
// UCC_ERR_NOT_SUPPORTED (runtimes fall back), host memory declared
// UNKNOWN works, and nothing is loaded for it.
TEST(Gpu, RefusedWithoutDriver) {
  const char* why = "";
  if (ucct::gpu::available(&why))
    GTEST_SKIP() << "this machine has a CUDA GPU: the GPU cases run instead";
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    std::vector<int32_t> in(100, r.rank + 1), out(100, -1);
    ucc_coll_args_t a =
        allreduce_i32(in.data(), out.data(), 100, UCC_MEMORY_TYPE_CUDA);
    ucc_coll_req_h req = nullptr;
    EXPECT(ucc_collective_init(&a, &req, w.team) == UCC_ERR_NOT_SUPPORTED,
           "CUDA memory without a GPU: NOT_SUPPORTED");
    a = allreduce_i32(in.data(), out.data(), 100, UCC_MEMORY_TYPE_UNKNOWN);
    CK(w.run(a));
    for (int32_t v : out) EXPECT(v == 3, "UNKNOWN host memory result");
    ucc_ee_params_t ep{};
    ep.ee_type = UCC_EE_CUDA_STREAM;
    ucc_ee_h ee = nullptr;
    EXPECT(ucc_ee_create(w.team, &ep, &ee) == UCC_ERR_NOT_SUPPORTED,
           "CUDA stream engine without a GPU: NOT_SUPPORTED");
    return 0;
  }));
}

// Staging where the direct path could have run says why, at info level,
// once per process and reason: a float128 allreduce (no GPU arithmetic)
// and an allreduce on managed memory, each twice, give two lines; a
// float32 allreduce on device memory, direct, none. Each rank's stderr
// goes to a file of its own.
TEST(Gpu, StagedSaysWhyOnce) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(3, [](ucct::Rank& r) {
    char path[64];
    std::snprintf(path, sizeof path, "/tmp/ucct-staged-%d.log",
                  static_cast<int>(getpid()));
    std::fflush(stderr);
    const int saved = dup(2);
    if (saved < 0 || std::freopen(path, "w", stderr) == nullptr) return 2;
    int err = 0;
    {
      ucct::World w;
      w.env.emplace_back("UCC_LOG_LEVEL", "info");
      err = w.init(r) != UCC_OK || !ucct::gpu::init() ? 3 : 0;
      constexpr size_t kN = 64;
      const int n = 3;
      uint64_t a = 0, b = 0, ma = 0, mb = 0;
      if (err == 0 && !(ucct::gpu::alloc(kN * 16 * n, false, &a) &&
                        ucct::gpu::alloc(kN * 16 * n, false, &b) &&
                        ucct::gpu::alloc(kN * 4, true, &ma) &&
                        ucct::gpu::alloc(kN * 4, true, &mb)))
        err = 4;
      std::vector<int32_t> ones(kN, 1), got(kN);
      for (int round = 0; err == 0 && round < 2; ++round) {
        // float128 zeros: the sum is zeros.
        std::vector<uint8_t> zero(kN * 16, 0), out(kN * 16, 0xA5);
        ucc_coll_args_t q =
            allreduce_i32(reinterpret_cast<void*>(a),
                          reinterpret_cast<void*>(b), kN, UCC_MEMORY_TYPE_CUDA);
        q.src.info.datatype = q.dst.info.datatype = UCC_DT_FLOAT128;
        if (!ucct::gpu::to_device(a, zero.data(), zero.size()) ||
            !ucct::gpu::to_device(b, out.data(), out.size()) ||
            w.run(q) != UCC_OK ||
            !ucct::gpu::to_host(out.data(), b, out.size()) || out != zero)
          err = 5;
        // Managed memory (staged; GPUDirect RDMA too would stage it).
        ucc_coll_args_t m = allreduce_i32(reinterpret_cast<void*>(ma),
                                          reinterpret_cast<void*>(mb), kN,
                                          UCC_MEMORY_TYPE_CUDA_MANAGED);
        if (err == 0 &&
            (!ucct::gpu::to_device(ma, ones.data(), kN * 4) ||
             w.run(m) != UCC_OK || !ucct::gpu::to_host(got.data(), mb, kN * 4)))
          err = 6;
        for (size_t i = 0; err == 0 && i < kN; ++i)
          if (got[i] != n) err = 7;
        // Direct: no line.
        ucc_coll_args_t d =
            allreduce_i32(reinterpret_cast<void*>(a),
                          reinterpret_cast<void*>(b), kN, UCC_MEMORY_TYPE_CUDA);
        if (err == 0 && w.run(d) != UCC_OK) err = 8;
      }
      if (err == 0 && w.barrier() != UCC_OK) err = 9;
      ucct::gpu::release(a);
      ucct::gpu::release(b);
      ucct::gpu::release(ma);
      ucct::gpu::release(mb);
    }
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    int lines = 0, arith = 0, managed = 0;
    if (FILE* f = std::fopen(path, "r")) {
      char line[512];
      while (std::fgets(line, sizeof line, f) != nullptr) {
        if (std::strstr(line, "staged through host memory") == nullptr)
          continue;
        ++lines;
        arith += std::strstr(line, "128-bit") != nullptr;
        managed += std::strstr(line, "managed memory") != nullptr;
      }
      std::fclose(f);
    }
    unlink(path);
    if (err != 0) {
      std::fprintf(stderr, "rank %d: step %d failed\n", r.rank, err);
      return 1;
    }
    if (lines != 2 || arith != 1 || managed != 1) {
      std::fprintf(stderr,
                   "rank %d: %d staging lines (%d for the arithmetic, %d for "
                   "managed memory), want one each\n",
                   r.rank, lines, arith, managed);
      return 1;
    }
    return 0;
  }));
}

}  // namespace

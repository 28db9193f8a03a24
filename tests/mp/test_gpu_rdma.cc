// GPU buffers reached by the engine with GPUDirect RDMA (host/exec/
// gpu_rdma.h), where it reaches memory by RDMA: emu with
// UCC_OFFLOAD_MEM=verbs and dpu (ctest gpu_rdma_loop, dpu_ns_gpu). GPU
// memory is registered with the device by dma-buf once per allocation,
// never staged; a post waits for the GPU's input without blocking, and
// the team's later posts wait behind it; where the device takes GPU
// memory neither by dma-buf nor by pointer, the collective is staged.
//
// Against tests/cuda_loop and tests/verbs_loop they also read the
// providers' counters (dma-buf fds handed out, dma-buf registrations,
// copies between host and device, blocking driver calls); the fake
// device memory is mapped PROT_NONE, so
// only a registration by dma-buf reaches it.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/mp/gpu_test.h"

namespace {

using gput::all_equal;
using gput::allreduce;
using gput::filled;
using gput::loop;
using gput::Loop;

// Skips where the engine does not reach memory by RDMA.
#define NEED_GPU_RDMA()                                                    \
  do {                                                                     \
    NEED_GPU();                                                            \
    const char* m_ = getenv("UCC_OFFLOAD_MEM");                            \
    const char* o_ = getenv("UCC_OFFLOAD");                                \
    if (!((m_ != nullptr && strcmp(m_, "verbs") == 0) ||                   \
          (o_ != nullptr && strcmp(o_, "dpu") == 0)))                      \
      GTEST_SKIP() << "SKIPPED: the engine does not reach memory by RDMA " \
                      "here (UCC_OFFLOAD_MEM=verbs or UCC_OFFLOAD=dpu)";   \
  } while (0)

// tests/verbs_loop's count of dma-buf registrations in this process
// (nullptr on real hardware).
unsigned long long (*verbs_dmabufs())() {
  const char* lib = getenv("UCC_VERBS_LIB");
  void* h = lib != nullptr ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  return h == nullptr ? nullptr
                      : reinterpret_cast<unsigned long long (*)()>(
                            dlsym(h, "verbs_loop_dmabuf_mrs"));
}

// Peers' buffers in place would take allreduce on one host (gpu_direct.h).
const std::vector<std::pair<std::string, std::string>> kNoIpc = {
    {"UCC_GPU_DIRECT", "no"}};

// Three rounds of allreduce on the same device buffers: each rank's
// allocations are registered by dma-buf once, nothing is staged (no copy
// between host and device, no blocking driver call), and the post returns
// before the GPU has produced the input (every event held back 4
// queries), the descriptor going to the engine from progress.
TEST(GpuRdma, ByDmaBufNeverStaged) {
  NEED_GPU_RDMA();
  EXPECT_TRUE(ucct::run_ranks(3, [](ucct::Rank& r) {
    setenv("CUDA_LOOP_EVENT_LAG", "4", 1);
    ucct::World w;
    w.env = kNoIpc;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const Loop l = loop();
    auto mrs = verbs_dmabufs();
    constexpr size_t kN = 5000;
    uint64_t src = 0, dst = 0;
    EXPECT(filled(kN, r.rank + 1, &src) && filled(kN, -7, &dst), "buffers");
    unsigned long long x1 = 0, m1 = 0;
    for (int round = 0; round < 3; ++round) {
      ucc_coll_args_t a = allreduce(src, dst, kN, UCC_DT_INT32);
      ucc_coll_req_h req = nullptr;
      CK(ucc_collective_init(&a, &req, w.team));
      const unsigned long long b0 = l.on() ? l.blocking() : 0;
      const unsigned long long c0 = l.on() ? l.host_copies() : 0;
      CK(ucc_collective_post(req));
      if (l.on())
        EXPECT(ucc_collective_test(req) == UCC_INPROGRESS,
               "done before the GPU could have produced the input");
      CK(w.wait(req));
      CK(ucc_collective_finalize(req));
      if (l.on()) {
        EXPECT(l.blocking() == b0, "round %d: %llu blocking driver calls",
               round, l.blocking() - b0);
        EXPECT(l.host_copies() == c0, "round %d: staged (%llu copies)", round,
               l.host_copies() - c0);
      }
      EXPECT(all_equal(dst, kN, 6), "round %d: wrong result", round);
      EXPECT(all_equal(src, kN, r.rank + 1), "round %d: src changed", round);
      if (round == 0) {
        x1 = l.on() ? l.dmabufs() : 0;
        m1 = mrs != nullptr ? mrs() : 0;
      }
    }
    if (l.on())
      EXPECT(x1 == 2 && l.dmabufs() == x1,
             "%llu dma-buf fds after the first round, %llu after three (one "
             "per allocation: src and dst)",
             x1, l.dmabufs());
    // A real GPU's dma-buf is no file tests/verbs_loop can read: there the
    // registration falls back (to staging) and the result alone is checked.
    if (mrs != nullptr && l.on())
      EXPECT(m1 == 2 && mrs() == m1,
             "%llu dma-buf registrations after the first round, %llu after "
             "three",
             m1, mrs());
    CK(w.barrier());
    ucct::gpu::release(src);
    ucct::gpu::release(dst);
    return 0;
  }));
}

// Rank 0's GPU allreduce is held (its events lag), then a host-memory
// allreduce is posted on the same team at once. The others submit both
// at once: rank 0's second post must wait behind its first, or the
// engine would pair rank 0's host allreduce with the others' GPU one.
TEST(GpuRdma, LaterPostsWaitTheirTurn) {
  NEED_GPU_RDMA();
  EXPECT_TRUE(ucct::run_ranks(3, [](ucct::Rank& r) {
    if (r.rank == 0) setenv("CUDA_LOOP_EVENT_LAG", "50", 1);
    ucct::World w;
    w.env = kNoIpc;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const Loop l = loop();
    constexpr size_t kN = 3000, kH = 1000;
    uint64_t src = 0, dst = 0;
    EXPECT(filled(kN, r.rank + 1, &src) && filled(kN, -7, &dst), "buffers");
    std::vector<int64_t> hs(kH, 10 * (r.rank + 1)), hd(kH, -1);
    for (int round = 0; round < 2; ++round) {
      ucc_coll_args_t g = allreduce(src, dst, kN, UCC_DT_INT32);
      ucc_coll_args_t h{};
      h.coll_type = UCC_COLL_TYPE_ALLREDUCE;
      h.op = UCC_OP_MAX;
      h.src.info = {hs.data(), kH, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
      h.dst.info = {hd.data(), kH, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
      ucc_coll_req_h rg = nullptr, rh = nullptr;
      CK(ucc_collective_init(&g, &rg, w.team));
      CK(ucc_collective_init(&h, &rh, w.team));
      CK(ucc_collective_post(rg));
      CK(ucc_collective_post(rh));
      if (l.on() && r.rank == 0)
        EXPECT(ucc_collective_test(rh) == UCC_INPROGRESS,
               "the host allreduce went ahead of the held GPU one");
      CK(w.wait(rh));
      CK(w.wait(rg));
      CK(ucc_collective_finalize(rg));
      CK(ucc_collective_finalize(rh));
      EXPECT(all_equal(dst, kN, 6), "round %d: GPU allreduce wrong", round);
      for (size_t i = 0; i < kH; ++i)
        EXPECT(hd[i] == 30, "round %d: host allreduce [%zu] = %lld", round, i,
               static_cast<long long>(hd[i]));
    }
    CK(w.barrier());
    ucct::gpu::release(src);
    ucct::gpu::release(dst);
    return 0;
  }));
}

// Each fallback: a device without dma-buf (verbs_loop's nodmabuf fault),
// then a driver without it (CUDA_LOOP_NO_DMABUF), take GPU memory by
// pointer, which the provider refuses for memory the process cannot
// read, as hardware does without nvidia-peermem: the collective is
// staged (copies between host and device) and right.
TEST(GpuRdma, FallsBackToStaging) {
  NEED_GPU_RDMA();
  for (int way = 0; way < 2; ++way) {
    EXPECT_TRUE(ucct::run_ranks(
        2,
        [way](ucct::Rank& r) {
          if (way == 0) {
            setenv("VERBS_LOOP_FAULTS", "nodmabuf=1", 1);
          } else {
            setenv("CUDA_LOOP_NO_DMABUF", "1", 1);
          }
          ucct::World w;
          w.env = kNoIpc;
          if (w.init(r) != UCC_OK) return 1;
          EXPECT(ucct::gpu::init(), "CUDA init");
          const Loop l = loop();
          auto mrs = verbs_dmabufs();
          constexpr size_t kN = 777;
          uint64_t src = 0, dst = 0;
          EXPECT(filled(kN, r.rank + 5, &src) && filled(kN, 0, &dst),
                 "buffers");
          const unsigned long long c0 = l.on() ? l.host_copies() : 0;
          ucc_coll_args_t a = allreduce(src, dst, kN, UCC_DT_INT32);
          CK(w.run(a));
          EXPECT(all_equal(dst, kN, 11), "way %d: wrong result", way);
          if (l.on()) {
            EXPECT(l.host_copies() > c0, "way %d: not staged", way);
            EXPECT(way == 0 || l.dmabufs() == 0,
                   "a dma-buf from a driver without them");
          }
          if (mrs != nullptr)
            EXPECT(mrs() == 0, "way %d: %llu dma-buf registrations", way,
                   mrs());
          CK(w.barrier());
          ucct::gpu::release(src);
          ucct::gpu::release(dst);
          return 0;
        }))
        << "way " << way;
  }
}

// Buffers freed and allocated again between collectives (new allocations
// where the old ones were): the registration of a freed allocation names
// its old memory, so it is dropped and the new one registered.
TEST(GpuRdma, BuffersFreedAndMadeAgain) {
  NEED_GPU_RDMA();
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    w.env = kNoIpc;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    for (int round = 0; round < 4; ++round) {
      const size_t n = 2000 + round;
      uint64_t src = 0, dst = 0;
      EXPECT(filled(n, (r.rank + 1) * (round + 1), &src) && filled(n, -1, &dst),
             "buffers");
      ucc_coll_args_t a = allreduce(src, dst, n, UCC_DT_INT32);
      CK(w.run(a));
      EXPECT(all_equal(dst, n, 3 * (round + 1)), "round %d", round);
      CK(w.barrier());
      ucct::gpu::release(src);
      ucct::gpu::release(dst);
    }
    return 0;
  }));
}

}  // namespace

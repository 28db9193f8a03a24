// What the GPU suites share (test_gpu*.cc): the rank
// checks, and the skip where this machine has no CUDA GPU (nor
// tests/cuda_loop in its place).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "tests/common/gpu.h"
#include "tests/common/harness.h"
#include "tests/mp/rank_check.h"

// Skips the test where no CUDA GPU (nor tests/cuda_loop) is usable.
#define NEED_GPU()                                                  \
  do {                                                              \
    const char* why_ = "";                                          \
    if (!ucct::gpu::available(&why_))                               \
      GTEST_SKIP() << "SKIPPED: no CUDA GPU here (" << why_ << ")"; \
  } while (0)

namespace gput {

// The provider's counters, where the driver is tests/cuda_loop (nullptr
// on a real GPU).
struct Loop {
  unsigned long long (*blocking)() = nullptr;
  unsigned long long (*launches)() = nullptr;
  unsigned long long (*opens)() = nullptr;
  unsigned long long (*closes)() = nullptr;
  int (*open_now)() = nullptr;
  unsigned long long (*dmabufs)() = nullptr;  // dma-buf fds handed out
  unsigned long long (*host_copies)() = nullptr;  // async, host<->device
  bool on() const { return blocking != nullptr; }
};

inline Loop loop() {
  Loop l;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return l;
  l.blocking = reinterpret_cast<unsigned long long (*)()>(
      dlsym(h, "cuda_loop_blocking_calls"));
  l.launches = reinterpret_cast<unsigned long long (*)()>(
      dlsym(h, "cuda_loop_launches"));
  l.opens = reinterpret_cast<unsigned long long (*)()>(
      dlsym(h, "cuda_loop_ipc_opens"));
  l.closes = reinterpret_cast<unsigned long long (*)()>(
      dlsym(h, "cuda_loop_ipc_closes"));
  l.open_now = reinterpret_cast<int (*)()>(dlsym(h, "cuda_loop_ipc_open_now"));
  l.dmabufs = reinterpret_cast<unsigned long long (*)()>(
      dlsym(h, "cuda_loop_dmabuf_exports"));
  l.host_copies = reinterpret_cast<unsigned long long (*)()>(
      dlsym(h, "cuda_loop_async_host_copies"));
  if (l.launches == nullptr || l.opens == nullptr || l.closes == nullptr ||
      l.open_now == nullptr || l.dmabufs == nullptr || l.host_copies == nullptr)
    l.blocking = nullptr;
  return l;
}

// Whether libcuda.so.1 here is tests/cuda_loop (loads it to ask: for a
// test that needs one of its faults, before forking the ranks).
inline bool is_cuda_loop() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW);
  return h != nullptr && dlsym(h, "cuda_loop_launches") != nullptr;
}

inline ucc_coll_args_t allreduce(uint64_t src, uint64_t dst, size_t n,
                                 ucc_datatype_t dt) {
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
  a.op = UCC_OP_SUM;
  a.src.info = {reinterpret_cast<void*>(src), n, dt, UCC_MEMORY_TYPE_CUDA};
  a.dst.info = {reinterpret_cast<void*>(dst), n, dt, UCC_MEMORY_TYPE_CUDA};
  return a;
}

// Device buffer of n int32 holding `v` everywhere.
inline bool filled(size_t n, int32_t v, uint64_t* d) {
  std::vector<int32_t> h(n, v);
  return ucct::gpu::alloc(n * 4, false, d) &&
         ucct::gpu::to_device(*d, h.data(), n * 4);
}

inline bool all_equal(uint64_t d, size_t n, int32_t want) {
  std::vector<int32_t> h(n, -1);
  if (!ucct::gpu::to_host(h.data(), d, n * 4)) return false;
  for (int32_t v : h)
    if (v != want) return false;
  return true;
}

// A collective that was due to fail at once: an error, not success, not
// still running, not the wait's timeout.
inline bool ended_in_error(ucc_status_t st) {
  return st != UCC_OK && st != UCC_INPROGRESS && st != UCC_ERR_TIMED_OUT;
}

// The team's host collectives still work after a GPU one failed: a host
// allreduce of 100 int32 (each rank its rank). Its status; its first and
// last results in *first and *last.
inline ucc_status_t host_allreduce(ucct::World& w, int rank, int32_t* first,
                                   int32_t* last) {
  std::vector<int32_t> hs(100, rank), hd(100, -1);
  ucc_coll_args_t h{};
  h.coll_type = UCC_COLL_TYPE_ALLREDUCE;
  h.op = UCC_OP_SUM;
  h.src.info = {hs.data(), hs.size(), UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
  h.dst.info = {hd.data(), hd.size(), UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
  const ucc_status_t st = w.run(h);
  *first = hd[0];
  *last = hd[99];
  return st;
}

}  // namespace gput

// What the GPU suites' rank bodies share (test_gpu.cc,
// test_gpu_direct.cc): checks that print the rank and fail the rank
// process, and the skip where this machine has no CUDA GPU (nor
// tests/cuda_loop in its place).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>

#include "tests/common/gpu.h"
#include "tests/common/harness.h"

// A library call that must return UCC_OK (in a rank body with World w).
#define CK(call)                                                          \
  do {                                                                    \
    ucc_status_t s_ = (call);                                             \
    if (s_ != UCC_OK) {                                                   \
      std::fprintf(stderr, "rank %d: %s:%d: %s = %s\n", w.rank, __FILE__, \
                   __LINE__, #call, ucct::status_name(s_));               \
      return 1;                                                           \
    }                                                                     \
  } while (0)

// A condition that must hold; the rest says what went wrong (printf).
#define EXPECT(cond, ...)                                                   \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "rank %d: %s:%d: ", w.rank, __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                    \
      std::fprintf(stderr, "\n");                                           \
      return 1;                                                             \
    }                                                                       \
  } while (0)

// Skips the test where no CUDA GPU (nor tests/cuda_loop) is usable.
#define NEED_GPU()                                                  \
  do {                                                              \
    const char* why_ = "";                                          \
    if (!ucct::gpu::available(&why_))                               \
      GTEST_SKIP() << "SKIPPED: no CUDA GPU here (" << why_ << ")"; \
  } while (0)

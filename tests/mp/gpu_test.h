// What the GPU suites share (test_gpu.cc, test_gpu_direct.cc): the rank
// checks, and the skip where this machine has no CUDA GPU (nor
// tests/cuda_loop in its place).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>

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

// Checks for multi-process rank bodies (a lambda with `ucct::World w` in
// scope): print the rank, file and line, and fail the rank process.
#pragma once

#include <cstdio>

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

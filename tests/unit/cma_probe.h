// Whether this process can use cross-memory attach at all
// (plat::cma_available). qemu-user has no process_vm_readv (ENOSYS: the
// aarch64 tests, docs/testing.md), a seccomp profile may refuse it
// (EPERM). The tests of the paths built on it skip, saying why, where it
// is missing; the library itself logs and takes another path.
#pragma once

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "platform/mem/cma.h"

namespace ucct {

// Empty where cross-memory attach works here.
inline std::string cma_missing() {
  if (ucc::plat::cma_available()) return {};
  return std::string("no cross-memory attach here (process_vm_readv: ") +
         strerror(errno) + "; qemu-user has none)";
}

}  // namespace ucct

#define SKIP_WITHOUT_CMA_HERE()                       \
  do {                                                \
    const std::string cma_why_ = ucct::cma_missing(); \
    if (!cma_why_.empty()) GTEST_SKIP() << cma_why_;  \
  } while (0)

// Whether this process can use cross-memory attach at all. qemu-user has
// no process_vm_readv (ENOSYS: the aarch64 tests, docs/testing.md), a
// seccomp profile may refuse it (EPERM). The tests of the paths built on
// it skip, saying why, where it is missing; the library itself logs and
// takes another path (platform/mem/cma.h).
#pragma once

#include <gtest/gtest.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace ucct {

// Empty where a read of this process's own memory by CMA works.
inline std::string cma_missing() {
  unsigned char from = 1, to = 0;
  iovec l{&to, 1}, r{&from, 1};
  if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) == 1 && to == 1) return {};
  return std::string("no cross-memory attach here (process_vm_readv: ") +
         strerror(errno) + "; qemu-user has none)";
}

}  // namespace ucct

#define SKIP_WITHOUT_CMA_HERE()                       \
  do {                                                \
    const std::string cma_why_ = ucct::cma_missing(); \
    if (!cma_why_.empty()) GTEST_SKIP() << cma_why_;  \
  } while (0)

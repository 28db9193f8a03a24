#include "platform/mem/cma.h"

#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "platform/os/log.h"
#include "platform/os/proc_id.h"

namespace ucc::plat {

bool cma_transfer(pid_t pid, bool to_remote, uint64_t remote, void* local,
                  uint64_t len) {
  // The kernel moves at most about 2 GiB per call and stops early at a
  // page it cannot reach: loop, and let the next call report the error.
  constexpr uint64_t kMaxCall = uint64_t{1} << 30;
  note_foreign_copy(pid);
  uint64_t done = 0;
  while (done < len) {
    uint64_t n = len - done < kMaxCall ? len - done : kMaxCall;
    iovec loc{static_cast<char*>(local) + done, static_cast<size_t>(n)};
    iovec rem{reinterpret_cast<void*>(static_cast<uintptr_t>(remote + done)),
              static_cast<size_t>(n)};
    ssize_t got = to_remote ? process_vm_writev(pid, &loc, 1, &rem, 1, 0)
                            : process_vm_readv(pid, &loc, 1, &rem, 1, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (got == 0) {
      errno = EFAULT;
      return false;
    }
    done += static_cast<uint64_t>(got);
  }
  return true;
}

bool cma_available() {
  char a = 1, b = 0;
  return cma_transfer(getpid(), false, reinterpret_cast<uintptr_t>(&a), &b,
                      1) &&
         b == 1;
}

bool cma_enable_peers() {
  if (!cma_available()) {
    UCC_INFO("single-copy transfers off: process_vm_readv: %s",
             strerror(errno));
    return false;
  }
  int scope = 0;  // no Yama: same-user processes may attach
  if (FILE* f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r")) {
    if (fscanf(f, "%d", &scope) != 1) scope = 0;
    fclose(f);
  }
  if (scope >= 2) {
    UCC_INFO("single-copy transfers off: Yama ptrace_scope is %d", scope);
    return false;
  }
  if (scope == 1 && prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) != 0) {
    UCC_INFO("single-copy transfers off: PR_SET_PTRACER: %s", strerror(errno));
    return false;
  }
  return true;
}

}  // namespace ucc::plat

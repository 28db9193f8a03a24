// Cross-memory attach (CMA): process_vm_readv / process_vm_writev between
// processes of one node, the kernel copying straight from one address
// space into the other (one copy, no shared staging memory).
//
// Two users: MemAccess's cross-process mode (an engine in firmware_sim
// reaching its host) and the inline engine's single-copy algorithms (a rank
// reading a peer rank's user buffer, device/coll/single_copy.cc).
//
// The kernel checks every access: a range that is not mapped in the other
// process fails with EFAULT, a process that is gone with ESRCH, one we may
// not attach to with EPERM. Same-user processes may attach to each other
// when Yama's ptrace_scope is 0 (or Yama is absent); with scope 1 only
// after the target allows it (cma_enable_peers).
//
// Threads: reentrant.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace ucc::plat {

// Moves `len` bytes between local memory and address `remote` of process
// `pid` (to_remote: local -> remote), looping over partial transfers. true
// when every byte moved; false with errno otherwise (part of the bytes may
// have moved). Zero bytes succeed without a system call.
bool cma_transfer(pid_t pid, bool to_remote, uint64_t remote, void* local,
                  uint64_t len);

// Whether this kernel (or emulator) has cross-memory attach at all: a
// read of a byte of this process's own. false with errno otherwise
// (ENOSYS: qemu-user; EPERM: a seccomp profile), without a log line.
bool cma_available();

// Whether peer processes of this user can read this process's memory with
// CMA (and, the same settings being node-wide, this one theirs). With Yama
// ptrace_scope 1 it first lets any process of this user attach to this one
// (prctl PR_SET_PTRACER_ANY), as MPI libraries do for the same purpose.
// false, with one log line, when the kernel has no process_vm_readv or
// ptrace_scope is 2 or 3.
bool cma_enable_peers();

}  // namespace ucc::plat

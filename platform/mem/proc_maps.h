// Whether a range of another process's virtual memory is mapped, read from
// /proc/<pid>/maps: what firmware_sim asks before it registers a range for
// a host, so that a registration naming memory the host has not mapped
// (a forged or stale address) is refused at once instead of being kept
// until some descriptor uses it.
//
// The answer is a snapshot: the host may unmap the range right after. It
// is no substitute for the checks on every access (the registrations, then
// the kernel's own in process_vm_readv/writev); it only refuses early.
//
// Reading the maps file needs the same permission as reading the process's
// memory (PTRACE_MODE_READ: same user, or CAP_SYS_PTRACE); Yama's
// ptrace_scope does not restrict it. The file streams through a fixed
// buffer on the stack: nothing is allocated, and lines of any length
// (long mapped file names) are parsed as they arrive.
//
// Threads: any; reentrant.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace ucc::plat {

enum class MapState : uint8_t {
  kMapped,    // every byte lies in mappings that are readable or writable
  kUnmapped,  // some byte lies in a hole or a PROT_NONE mapping, or the
              // range wraps past 2^64 - 1
  kUnknown,   // the maps file could not be read (no /proc, no permission,
              // the process has gone) or did not parse
};

// What /proc/<pid>/maps says about [addr, addr + len). An empty range is
// kMapped (it touches nothing).
MapState range_mapped(pid_t pid, uint64_t addr, uint64_t len);

}  // namespace ucc::plat

// Who a process is, as far as a daemon serving it must know: the same
// process (its start time: a pid may be reused after the process dies),
// running the same program (its executable: a process may exec another,
// a setuid one say, and keep the daemon's socket through a child), as
// the same user (its effective uid). A daemon takes a snapshot when a
// client says hello and compares before every privileged act
// (registrations, teams) and now and then while it serves the client:
// a client whose process is no longer the one that said hello is
// dropped, so the daemon never reaches into another image's memory for
// it.
//
// Threads: any; reentrant.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace ucc::plat {

struct ProcId {
  uint64_t start = 0;  // clock ticks after boot (/proc/<pid>/stat)
  uint64_t exe_dev = 0, exe_ino = 0;
  uint32_t euid = 0;
  bool valid = false;
};

// The identity of `pid` now; valid = false when it cannot be read (the
// process has gone, or /proc says nothing).
ProcId proc_id(pid_t pid);

// Whether `pid` is still the process `was` describes.
bool same_process(pid_t pid, const ProcId& was);

// Whether `pid` has exited or is exiting (gone, a zombie, or without its
// executable any more).
bool process_exited(pid_t pid);

// Every function of the library that reaches into another process by the
// kernel (cross-memory attach, /proc/<pid>, another process's fds) counts
// the call here when that process is not this one: what dpu mode must
// never do (docs/dpu.md, "Only the NIC reaches host memory"). They are
// the only places that do (tests/tools/check_host_reach.sh).
void note_foreign_reach(pid_t pid);
uint64_t foreign_reaches();

// Of those, the calls that copy another process's memory (cross-memory
// attach, platform/mem/cma.h): what the engine pays per collective for
// data in the ranks. The others are looks at /proc, such as the daemon's
// check every 100 ms that a client is still the process that said hello,
// and they come by the clock, not by the collective.
void note_foreign_copy(pid_t pid);
uint64_t foreign_copies();

}  // namespace ucc::plat

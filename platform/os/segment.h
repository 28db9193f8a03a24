// Shared-memory segments between processes: memfds that cannot change
// size once made, and the checks a process runs before it maps another
// process's segment. Everything mapped from another process is untrusted:
// a segment that could shrink would fault (SIGBUS) when touched, and a
// descriptor path (/proc/<pid>/fd/<n>) could name any file that process
// opened (a read-only file of another user, reopened read-write by a
// privileged daemon). So a segment is only ever:
//   made by seg_create: a memfd (MFD_ALLOW_SEALING), sized, then sealed
//   against shrinking, growing and further sealing;
//   mapped by seg_map_fd / seg_open_peer: a memfd (its /proc link says
//   so) of exactly the expected size, sealed that way, owned by the
//   expected user.
//
// Threads: any; no state.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "platform/base/status.h"

namespace ucc::plat {

using base::Status;

// A sealed memfd of `bytes` bytes (zero-filled), mapped read-write at
// *mem; *fd stays open (CLOEXEC). kNoMemory (one log line) on failure.
Status seg_create(const char* name, size_t bytes, int* fd, void** mem);

// Checks that `fd` (one of this process's) is a sealed memfd of exactly
// `bytes` bytes owned by `uid` (any owner when uid < 0): kOk, or
// kInvalidParam with *why set.
Status seg_check(int fd, size_t bytes, int64_t uid, const char** why);

// seg_check, then maps it read-write at *mem (the fd stays the caller's).
Status seg_map_fd(int fd, size_t bytes, int64_t uid, void** mem);

// Opens descriptor `peer_fd` of process `pid` through /proc, checks it
// (seg_check, owner `uid`, or any owner when uid < 0) before anything is
// mapped, and maps it read-write at *mem. kInvalidParam for a descriptor
// that is not such a segment, kError when it cannot be opened or mapped
// (one log line naming `what`).
Status seg_open_peer(int pid, int peer_fd, size_t bytes, int64_t uid,
                     const char* what, void** mem);

}  // namespace ucc::plat

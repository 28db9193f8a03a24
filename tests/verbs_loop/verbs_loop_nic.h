// The verbs_loop provider's "NIC": a process of its own that moves the
// bytes of every WR, so that the processes using the provider need no
// rights over each other (docs/dpu.md, "Only the NIC reaches host
// memory").
//
// Without it, the process posting a WR moves the bytes itself, with
// process_vm_readv/writev into its peer and /proc/<pid>/fd for a peer's
// dma-buf: every user of the fabric must share one pid namespace and be
// allowed to trace the others. With VERBS_LOOP_NIC=PATH set, the provider
// asks the NIC process listening on the unix socket PATH
// (tests/verbs_loop/verbs_loop_nic_main.cc, `verbs_loop_nic --socket
// PATH`) to do it instead, the way a real NIC's DMA engine, not the
// posting process, touches the peer's memory. The posting process may
// then live in a pid namespace of its own, where no peer exists to be
// named, as a DPU's daemon does (tests/dpu/run_dpu.sh).
//
// Pids: the NIC learns each client's pid from SO_PEERCRED, in the NIC's
// own pid namespace, and answers it to the client's hello. That pid (the
// "fabric pid") is what the client records as the owner of its entries in
// the fabric file, so the owners of every namespace are named in one, the
// NIC's; a process in a pid namespace of its own cannot know it otherwise.
// Liveness (Alive, asked for every WR's peer) is what the NIC publishes:
// its hello reply carries a memfd, sealed against writes by anyone but
// the NIC, that lists the pids of its connected clients (NicLive); a
// client maps it read-only. A process is alive while its connection is
// open, which the kernel closes when it exits.
//
// The wire: one request, one reply, on a stream socket, one at a time per
// client connection. Every request begins with NicReq; the NIC reads only
// fixed-size records and checks every count it is given.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#pragma GCC visibility push(hidden)

namespace verbs_loop {

inline constexpr uint32_t kNicMagic = 0x4e494331u;  // "NIC1"
inline constexpr uint32_t kNicMaxIov = 16;          // per side of a copy

inline constexpr uint32_t kNicMaxClients = 1024;

// The NIC's table of live clients: slot i holds a connected client's pid
// or 0. A slot is only ever written by the NIC (a pid when it accepts the
// client, before the hello's reply; 0 when the connection closes), and
// never moves to another slot, so a reader scanning [0, hwm) sees every
// client connected before its scan began.
struct NicLive {
  uint32_t hwm;  // slots ever used
  int32_t pid[kNicMaxClients];
};

enum NicOp : uint32_t {
  kNicHello = 1,  // reply.value: the caller's fabric pid; NicLive's memfd
  kNicCopy = 2,   // NicIov[nlocal + nremote] follow; len bytes moved
  kNicOpen = 3,   // the file of fd `fd` of process `peer`, by SCM_RIGHTS
};

struct NicReq {
  uint32_t magic;
  uint32_t op;
  int32_t peer;      // the other process, by fabric pid
  int32_t fd;        // kNicOpen
  uint32_t write;    // kNicCopy: 1 the caller's bytes to the peer, 0 back
  uint32_t nlocal;   // kNicCopy: the caller's pieces
  uint32_t nremote;  // kNicCopy: the peer's pieces
  uint32_t pad;
  uint64_t len;  // kNicCopy: bytes to move
};
static_assert(sizeof(NicReq) == 40);

struct NicIov {
  uint64_t addr;
  uint64_t len;
};

struct NicReply {
  uint32_t magic;
  int32_t err;    // 0 or an errno value
  int64_t value;  // kNicHello: the fabric pid
};

// Drops the first `k` bytes of an iovec list (after a partial transfer).
inline void AdvanceIov(iovec** v, int* n, size_t k) {
  while (*n > 0 && k >= (*v)->iov_len) {
    k -= (*v)->iov_len;
    ++*v;
    --*n;
  }
  if (*n > 0) {
    (*v)->iov_base = static_cast<char*>((*v)->iov_base) + k;
    (*v)->iov_len -= k;
  }
}

namespace nic {

// Whether VERBS_LOOP_NIC names a NIC socket (read once per process).
bool Enabled();
// This process's fabric pid from the NIC, connecting (again after a fork)
// when needed; 0 if the NIC cannot be reached (errno set).
int32_t SelfPid();
// Moves `len` bytes between this process's `local` pieces and process
// `pid`'s `remote` pieces, as CopyRemote does in-process. 0 or an errno.
int Copy(int32_t pid, const iovec* local, int nlocal, const iovec* remote,
         int nremote, uint64_t len, bool write);
// Opens fd `fd` of process `owner` (a dma-buf MR's dup); -1 and errno.
int OpenPeerFile(int32_t owner, int fd);
// Whether process `pid` (a fabric pid) is a connected client of the NIC.
bool Alive(int32_t pid);

}  // namespace nic
}  // namespace verbs_loop

#pragma GCC visibility pop

// Process-local objects of the verbs_loop provider: what the ibv_* handles
// the caller holds point into. Each embeds the rdma-core struct as its
// first member, so a handle casts back to its object.
//
// Threads: every call on a context takes LoopContext::mu, so the objects
// below are only touched under it. The shared fabric's own locks nest
// inside (see verbs_loop_fabric.h).
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "verbs_loop_fabric.h"

// Only the rdma-core entry points leave the .so.
#pragma GCC visibility push(hidden)

namespace verbs_loop {

inline constexpr uint64_t kMaxMsg = 1ull << 30;
// Bytes of a dma-buf copy staged at a time (LoopContext::bounce).
inline constexpr uint32_t kBounce = 1u << 16;

struct LoopQp;

struct LoopContext {
  ibv_context ctx;
  FabricFile* fab;
  pthread_mutex_t mu;
  int32_t pid;
  uint32_t host;  // index in FabricFile::hosts; LID = host + 1
  uint8_t link_layer;
  ibv_gid gid;           // GID index 0
  uint64_t guid;         // host order
  uint64_t rng;          // key generator state
  LoopQp* deferred;      // QPs with WRs waiting (RNR, slow peer)
  LoopQp* qps[kMaxQps];  // by fabric slot, to retire send-queue slots
  // Stages the bytes of a local dma-buf piece (MoveBytes).
  uint8_t bounce[kBounce];
};

struct LoopPd {
  ibv_pd pd;
  uint32_t pd_id;  // fabric-wide, for the PD checks peers make
  uint32_t refs;
};

struct LoopMr {
  ibv_mr mr;
  uint32_t slot;
  int dmabuf_fd;  // our dup of a dma-buf MR's fd, closed at dereg; else -1
};

struct LoopCq {
  ibv_cq cq;
  uint32_t slot;
  uint32_t gen;
  uint32_t refs;
};

struct LoopSrq {
  ibv_srq srq;
  uint32_t slot;
  uint32_t gen;
  uint32_t max_sge;
  uint32_t refs;
};

// Per-WR fault marks, decided at post time (VERBS_LOOP_FAULTS).
inline constexpr uint8_t kFaultRae = 1;
inline constexpr uint8_t kFaultRnr = 2;
inline constexpr uint8_t kFaultQpErr = 4;

// A posted send WR, kept until executed. SGEs are copied (the caller may
// reuse its list); inline payload lives in LoopQp::inline_buf.
struct SendWqe {
  uint64_t wr_id;
  uint64_t remote_addr;
  uint64_t first_try_ns;  // 0 until the first attempt
  uint64_t length;
  uint32_t rkey;
  uint32_t imm;
  uint32_t num_sge;
  uint8_t opcode;  // ibv_wr_opcode
  uint8_t signaled;
  uint8_t inline_data;
  uint8_t faults;
  ibv_sge sge[kMaxSge];
};

// The send queue is a ring of cap.max_send_wr WQEs over three monotonic
// counters: retired <= head <= posted. [head, posted) wait to execute;
// [retired, head) executed but still hold their slot until a completion
// at or after them is polled.
struct LoopQp {
  ibv_qp qp;
  LoopContext* lc;
  LoopPd* pd;
  LoopCq* scq;
  LoopCq* rcq;
  LoopSrq* srq;
  uint32_t slot;
  uint32_t gen;
  ibv_qp_cap cap;
  int sig_all;
  ibv_qp_attr attr;  // last values set, for ibv_query_qp and the sender
  SendWqe* sq;
  uint8_t* inline_buf;  // cap.max_send_wr * cap.max_inline_data
  uint64_t posted;
  uint64_t head;
  uint64_t retired;
  LoopQp* next_deferred;
  bool deferred;
};

static_assert(std::is_standard_layout_v<LoopContext> &&
              offsetof(LoopContext, ctx) == 0);
static_assert(std::is_standard_layout_v<LoopQp> && offsetof(LoopQp, qp) == 0);
static_assert(offsetof(LoopCq, cq) == 0 && offsetof(LoopSrq, srq) == 0 &&
              offsetof(LoopPd, pd) == 0 && offsetof(LoopMr, mr) == 0);

inline LoopContext* Ctx(ibv_context* c) {
  return reinterpret_cast<LoopContext*>(c);
}
inline LoopQp* Qp(ibv_qp* q) { return reinterpret_cast<LoopQp*>(q); }
inline LoopCq* Cq(ibv_cq* c) { return reinterpret_cast<LoopCq*>(c); }
inline LoopSrq* Srq(ibv_srq* s) { return reinterpret_cast<LoopSrq*>(s); }
inline LoopPd* Pd(ibv_pd* p) { return reinterpret_cast<LoopPd*>(p); }
inline LoopMr* Mr(ibv_mr* m) { return reinterpret_cast<LoopMr*>(m); }

class ProcessGuard {
 public:
  explicit ProcessGuard(LoopContext* lc) : m_(&lc->mu) {
    pthread_mutex_lock(m_);
  }
  ~ProcessGuard() { pthread_mutex_unlock(m_); }
  ProcessGuard(const ProcessGuard&) = delete;
  ProcessGuard& operator=(const ProcessGuard&) = delete;

 private:
  pthread_mutex_t* m_;
};

inline uint32_t LoadState(const QpEntry& e) {
  return __atomic_load_n(&e.state, __ATOMIC_RELAXED);
}

// verbs_loop.cc: registration, shared by both kinds of MR.
// True if `access` is a valid set of MR rights (REMOTE_WRITE and
// REMOTE_ATOMIC need LOCAL_WRITE, as rdma-core checks).
bool AccessOk(unsigned access);
// Takes an MR entry and fills it from `e` (the keys, owner and PD are set
// here); the ibv_mr shows `addr` and `length`. Returns the MR, or NULL
// with errno ENOMEM (the table is full or no memory). On success the MR
// owns `dmabuf_fd` (-1 for none); on failure the caller still does.
ibv_mr* InstallMr(ibv_pd* pd, MrEntry e, void* addr, size_t length,
                  int dmabuf_fd);

// verbs_loop_dmabuf.cc: moving a WR's bytes.

// Where one piece of a WR's bytes is on one side: `len` bytes at `addr`,
// an address in that side's process (fd -1) or an offset in file `fd`.
struct Seg {
  uint64_t addr;
  uint64_t len;
  int fd;
};

// The piece `len` bytes at `at` (from MrRange) of an MR of the caller's
// own context: its dma-buf dup stays open while the caller holds mu.
inline Seg OwnSeg(const MrEntry& mr, uint64_t at, uint64_t len) {
  return Seg{at, len, mr.kind == kMrDmabuf ? mr.fd : -1};
}

// The files of the responder's dma-buf MRs that one WR reaches. Add opens
// the owner's fd through /proc/<pid>/fd (or dups it, if the owner is this
// process) while the caller holds FabricFile::lock, so the MR found there,
// and the fd it names, is still registered; the files are closed when the
// holder goes.
class PeerFiles {
 public:
  explicit PeerFiles(int32_t self) : self_(self) {}
  ~PeerFiles();
  PeerFiles(const PeerFiles&) = delete;
  PeerFiles& operator=(const PeerFiles&) = delete;
  // Fills *out for `len` bytes at `at` (from MrRange) of `mr`. False if
  // the owner's file cannot be opened (it died or closed it), or if more
  // than kMaxSge files are asked for.
  bool Add(const MrEntry& mr, uint64_t at, uint64_t len, Seg* out);

 private:
  int32_t self_;
  int n_ = 0;
  int fds_[kMaxSge];
};

// Moves `len` bytes between this process's `local` pieces and process
// `pid`'s `remote` pieces: to the remote side if `write`, else from it.
// Memory only: process_vm_writev/readv; with files, piece by piece with
// pread/pwrite (a local file through `bounce`). Returns 0 or an errno
// value (ESRCH: the peer is gone; EFAULT: a piece is not there).
int MoveBytes(int32_t pid, const Seg* local, int nlocal, const Seg* remote,
              int nremote, uint64_t len, bool write, uint8_t* bounce);

// verbs_loop_post.cc: the ibv_context_ops data path.
int PostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int PostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int PostSrqRecv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int PollCq(ibv_cq* cq, int num_entries, ibv_wc* wc);
int ReqNotifyCq(ibv_cq* cq, int solicited_only);

// Completes [head, posted) of `q` with IBV_WC_WR_FLUSH_ERR. Needs mu and
// FabricFile::lock.
void FlushSqLocked(LoopQp* q);
// Forgets `q`'s queued WRs without completions (move to RESET, destroy).
void DropSq(LoopQp* q);

// Reads VERBS_LOOP_FAULTS and zeroes the counters; called at the first
// open of a process. CqCapacity applies cqovf=N to a new CQ's size.
void ResetFaults();
uint32_t CqCapacity(uint32_t asked);
// nodmabuf=1: ibv_reg_dmabuf_mr is refused (EOPNOTSUPP).
bool DmabufRefused();
// Whether the noreg fault refuses a memory registration of `access`.
bool RegRefused(unsigned access);

// verbs_loop_qp.cc: the GID of GID index 0 of host `host`.
ibv_gid HostGid(uint8_t link_layer, uint32_t host, uint64_t guid);

}  // namespace verbs_loop

#pragma GCC visibility pop

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
};

struct LoopPd {
  ibv_pd pd;
  uint32_t pd_id;  // fabric-wide, for the PD checks peers make
  uint32_t refs;
};

struct LoopMr {
  ibv_mr mr;
  uint32_t slot;
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

// verbs_loop_qp.cc: the GID of GID index 0 of host `host`.
ibv_gid HostGid(uint8_t link_layer, uint32_t host, uint64_t guid);

}  // namespace verbs_loop

#pragma GCC visibility pop

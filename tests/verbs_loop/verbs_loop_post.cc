// The data path of the verbs_loop provider: post_send, post_recv,
// post_srq_recv and poll_cq, reached through ibv_context::ops.
//
// Execution: the sender does all the work, at post time, in WR order per
// QP. A WR moves bytes with process_vm_writev/readv straight into or out
// of the peer process (pread/pwrite for dma-buf MRs: see MoveBytes),
// consumes the peer's receive WQE from the fabric file and pushes the
// peer's receive completion into its CQ there (bytes first, then the CQE,
// so the peer never sees a completion before its data). A WR that cannot run
// yet (no receive WQE: RNR; the peer is not yet in RTR) stays at the head of
// its QP, with every WR behind it, and the QP joins the context's deferred
// list, retried by every later call into this context until it runs or its
// retry budget is spent.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "verbs_loop_internal.h"
#include "verbs_loop_nic.h"

namespace verbs_loop {
namespace {

struct Faults {
  uint64_t rae;
  uint64_t rnr;
  uint64_t qperr;
  uint64_t cqovf;
  uint64_t nodmabuf;
  uint64_t noreg;
  std::atomic<uint64_t> rdma_posted;
  std::atomic<uint64_t> recv_posted;  // SENDs and WRITE_WITH_IMMs
  std::atomic<uint64_t> wr_posted;
};
Faults g_faults;

constexpr uint64_t kMs = 1000000;

bool IsRdma(uint8_t op) {
  return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
         op == IBV_WR_RDMA_READ;
}

bool ConsumesRecv(uint8_t op) {
  return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
         op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

bool HasImm(uint8_t op) {
  return op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

ibv_wc_opcode SendWcOpcode(uint8_t op) {
  switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
      return IBV_WC_RDMA_READ;
    default:
      return IBV_WC_SEND;
  }
}

void AfterPush(FabricFile* f, Push r, uint32_t cq, bool locked) {
  if (r != Push::kOverflowed) return;
  if (locked) {
    CqOverflowedLocked(f, cq);
  } else {
    SharedGuard g(&f->lock);
    CqOverflowedLocked(f, cq);
  }
}

void PushSendCqe(LoopQp* q, uint64_t seq, const SendWqe& w,
                 ibv_wc_status status, bool locked) {
  Cqe c{};
  c.wr_id = w.wr_id;
  c.sq_seq = seq;
  c.byte_len = uint32_t(w.length);
  c.qp_num = q->qp.qp_num;
  c.qp_slot = q->slot;
  c.qp_gen = q->gen;
  c.status = uint8_t(status);
  c.opcode = uint8_t(SendWcOpcode(w.opcode));
  c.flags = kCqeSend;
  FabricFile* f = q->lc->fab;
  AfterPush(f, PushCqe(f, q->scq->slot, q->scq->gen, c), q->scq->slot, locked);
}

struct Outcome {
  bool wait;  // not yet: keep the WR at the head and retry later
  ibv_wc_status status;
};

// Local SGEs of `w` as pieces, checked against this process's lkeys.
bool GatherLocal(LoopQp* q, SendWqe& w, Seg* seg, int* n) {
  LoopContext* lc = q->lc;
  *n = 0;
  if (w.inline_data) {
    size_t at = size_t(&w - q->sq) * q->cap.max_inline_data;
    if (w.length > 0)
      seg[(*n)++] = {reinterpret_cast<uint64_t>(q->inline_buf + at), w.length,
                     -1};
    return true;
  }
  bool need_write = w.opcode == IBV_WR_RDMA_READ;
  SharedGuard g(&lc->fab->lock);
  for (uint32_t i = 0; i < w.num_sge; ++i) {
    const ibv_sge& s = w.sge[i];
    if (s.length == 0) continue;  // as mlx5 does: a zero SGE moves nothing
    const MrEntry* mr = FindMrByLkey(lc->fab, s.lkey, lc->pid);
    uint64_t addr;
    if (mr == nullptr || mr->pd_id != q->pd->pd_id ||
        !MrRange(*mr, s.addr, s.length, &addr) ||
        (need_write && !(mr->access & IBV_ACCESS_LOCAL_WRITE))) {
      return false;
    }
    // The lkey names an MR of our PD, so of this context.
    seg[(*n)++] = OwnSeg(*mr, addr, s.length);
  }
  return true;
}

// Receiver-side failure of a SEND: the responder completes its WQE with
// `rstatus` and both QPs go to ERR (the caller handles ours).
void FailReceiver(FabricFile* f, QpEntry* t, uint64_t wr_id,
                  ibv_wc_status rstatus) {
  Cqe c{};
  c.wr_id = wr_id;
  c.qp_num = t->qpn;
  c.status = uint8_t(rstatus);
  c.opcode = IBV_WC_RECV;
  AfterPush(f, PushCqe(f, t->recv_cq, t->recv_cq_gen, c), t->recv_cq, true);
  SetErrLocked(f, uint32_t(t - f->qps));
}

Outcome Execute(LoopQp* q, SendWqe& w) {
  LoopContext* lc = q->lc;
  FabricFile* f = lc->fab;
  uint64_t now = NowNs();
  if (w.first_try_ns == 0) w.first_try_ns = now;
  if (w.length > kMaxMsg) return {false, IBV_WC_LOC_LEN_ERR};
  Seg local[kMaxSge];
  int nlocal = 0;
  if (!GatherLocal(q, w, local, &nlocal)) return {false, IBV_WC_LOC_PROT_ERR};

  Seg remote[kMaxSge];
  int nremote = 0;
  PeerFiles files(lc->pid);  // the responder's dma-bufs, open until we return
  int32_t peer = 0;
  uint32_t peer_slot = 0, peer_qpn = 0, rcq = kNone, rcq_gen = 0;
  uint64_t recv_wr_id = 0;
  bool rdma = IsRdma(w.opcode);
  {
    SharedGuard g(&f->lock);
    QpEntry* t = FindQp(f, q->attr.dest_qp_num);
    if (t == nullptr || t->state == IBV_QPS_ERR)
      return {false, IBV_WC_RETRY_EXC_ERR};
    if ((t->state != IBV_QPS_RTR && t->state != IBV_QPS_RTS) ||
        t->dest_qpn != q->qp.qp_num) {
      // Not ready yet: a peer a little slow to reach RTR must still work,
      // as transport retries let it on hardware.
      uint64_t budget = (uint64_t(q->attr.retry_cnt) + 1) * 5 * kMs;
      if (now - w.first_try_ns < budget) return {true, IBV_WC_SUCCESS};
      return {false, IBV_WC_RETRY_EXC_ERR};
    }
    peer = t->owner;
    peer_slot = uint32_t(t - f->qps);
    peer_qpn = t->qpn;
    if (rdma) {
      uint32_t need = w.opcode == IBV_WR_RDMA_READ ? IBV_ACCESS_REMOTE_READ
                                                   : IBV_ACCESS_REMOTE_WRITE;
      const MrEntry* mr = FindMrByRkey(f, w.rkey, t->owner);
      uint64_t addr;
      if ((w.faults & kFaultRae) || mr == nullptr || mr->pd_id != t->pd_id ||
          !(mr->access & need) || !(t->access & need) ||
          !MrRange(*mr, w.remote_addr, w.length, &addr) ||
          (w.length > 0 && !files.Add(*mr, addr, w.length, &remote[0]))) {
        SetErrLocked(f, peer_slot);
        return {false, IBV_WC_REM_ACCESS_ERR};
      }
      nremote = w.length > 0 ? 1 : 0;
    }
    if (ConsumesRecv(w.opcode)) {
      RecvWqe rw;
      uint32_t rpd;
      if ((w.faults & kFaultRnr) || !PopRecv(f, t, &rw, &rpd)) {
        uint8_t rnr = q->attr.rnr_retry;
        uint64_t budget = (uint64_t(rnr) + 1) * 10 * kMs;
        if (rnr >= 7 || now - w.first_try_ns < budget)
          return {true, IBV_WC_SUCCESS};
        return {false, IBV_WC_RNR_RETRY_EXC_ERR};
      }
      recv_wr_id = rw.wr_id;
      if (t->recv_cq < kMaxCqs) {
        rcq = t->recv_cq;
        rcq_gen = t->recv_cq_gen;
      }
      if (!rdma) {
        // Scatter list of the receive WQE, checked against its owner's
        // lkeys and trimmed to the message.
        uint64_t left = w.length;
        for (uint32_t i = 0; i < rw.num_sge && left > 0; ++i) {
          const Sge& s = rw.sge[i];
          if (s.length == 0) continue;
          const MrEntry* mr = FindMrByLkey(f, s.lkey, t->owner);
          uint64_t addr;
          uint64_t take = left < s.length ? left : s.length;
          if (mr == nullptr || mr->pd_id != rpd ||
              !(mr->access & IBV_ACCESS_LOCAL_WRITE) ||
              !MrRange(*mr, s.addr, s.length, &addr) ||
              !files.Add(*mr, addr, take, &remote[nremote])) {
            FailReceiver(f, t, rw.wr_id, IBV_WC_LOC_PROT_ERR);
            return {false, IBV_WC_REM_OP_ERR};
          }
          ++nremote;
          left -= take;
        }
        if (left > 0) {
          FailReceiver(f, t, rw.wr_id, IBV_WC_LOC_LEN_ERR);
          return {false, IBV_WC_REM_INV_REQ_ERR};
        }
      }
    }
  }

  // The bytes move without the fabric lock: a long copy must not stall
  // every other process. Deregistering a peer MR meanwhile is a race the
  // emulator does not fence (hardware would).
  if (w.length > 0) {
    int err = MoveBytes(peer, local, nlocal, remote, nremote, w.length,
                        w.opcode != IBV_WR_RDMA_READ, lc->bounce);
    if (err != 0) {
      SharedGuard g(&f->lock);
      // The peer's process is gone: with the NIC (verbs_loop_nic.h),
      // which refuses any process no longer its client, EPERM, when the
      // NIC saw the peer leave before our post saw its liveness entry
      // cleared. Hardware retries a dead peer until retry is exceeded.
      if (err == ESRCH || (err == EPERM && nic::Enabled()))
        return {false, IBV_WC_RETRY_EXC_ERR};
      if (f->qps[peer_slot].qpn == peer_qpn) SetErrLocked(f, peer_slot);
      return {false, rdma ? IBV_WC_REM_ACCESS_ERR : IBV_WC_REM_OP_ERR};
    }
  }
  if (ConsumesRecv(w.opcode) && rcq != kNone) {
    Cqe c{};
    c.wr_id = recv_wr_id;
    c.byte_len = uint32_t(w.length);
    c.imm = w.imm;
    c.qp_num = peer_qpn;
    c.src_qp = q->qp.qp_num;
    c.slid = lc->link_layer == IBV_LINK_LAYER_INFINIBAND
                 ? uint16_t(lc->host + 1)
                 : 0;
    c.status = IBV_WC_SUCCESS;
    c.opcode = rdma ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
    c.flags = HasImm(w.opcode) ? kCqeWithImm : 0;
    AfterPush(f, PushCqe(f, rcq, rcq_gen, c), rcq, false);
  }
  return {false, IBV_WC_SUCCESS};
}

// Executes queued WRs in order. Returns false if one must wait.
bool RunSq(LoopQp* q) {
  FabricFile* f = q->lc->fab;
  while (q->head != q->posted) {
    uint64_t seq = q->head;
    SendWqe& w = q->sq[seq % q->cap.max_send_wr];
    if (w.faults & kFaultQpErr) {
      w.faults &= uint8_t(~kFaultQpErr);
      SharedGuard g(&f->lock);
      SetErrLocked(f, q->slot);
    }
    if (LoadState(f->qps[q->slot]) == IBV_QPS_ERR) {
      SharedGuard g(&f->lock);
      FlushSqLocked(q);
      return true;
    }
    Outcome o = Execute(q, w);
    if (o.wait) return false;
    ++q->head;
    if (o.status != IBV_WC_SUCCESS) {
      SharedGuard g(&f->lock);
      PushSendCqe(q, seq, w, o.status, true);
      SetErrLocked(f, q->slot);
    } else if (w.signaled) {
      PushSendCqe(q, seq, w, IBV_WC_SUCCESS, false);
    }
  }
  return true;
}

void Defer(LoopQp* q) {
  if (q->deferred) return;
  q->deferred = true;
  q->next_deferred = q->lc->deferred;
  q->lc->deferred = q;
}

// Retries every deferred QP of the context once; never waits.
void Progress(LoopContext* lc) {
  LoopQp** pp = &lc->deferred;
  while (*pp != nullptr) {
    LoopQp* q = *pp;
    if (RunSq(q)) {
      q->deferred = false;
      *pp = q->next_deferred;
    } else {
      pp = &q->next_deferred;
    }
  }
}

void ParseFaultList(const char* s) {
  while (s != nullptr && *s != '\0') {
    const char* eq = strchr(s, '=');
    if (eq == nullptr) break;
    uint64_t v = strtoull(eq + 1, nullptr, 10);
    size_t klen = size_t(eq - s);
    if (klen == 3 && strncmp(s, "rae", 3) == 0) {
      g_faults.rae = v;
    } else if (klen == 3 && strncmp(s, "rnr", 3) == 0) {
      g_faults.rnr = v;
    } else if (klen == 5 && strncmp(s, "qperr", 5) == 0) {
      g_faults.qperr = v;
    } else if (klen == 5 && strncmp(s, "cqovf", 5) == 0) {
      g_faults.cqovf = v;
    } else if (klen == 8 && strncmp(s, "nodmabuf", 8) == 0) {
      g_faults.nodmabuf = v;
    } else if (klen == 5 && strncmp(s, "noreg", 5) == 0) {
      g_faults.noreg = v;
    } else {
      fprintf(stderr, "verbs_loop: unknown fault '%.*s'\n", int(klen), s);
    }
    s = strchr(eq, ',');
    if (s != nullptr) ++s;
  }
}

// Checks one WR and appends it to the send queue. Returns 0, EINVAL or
// ENOMEM (queue full).
int Enqueue(LoopQp* q, const ibv_send_wr* wr) {
  uint8_t op = uint8_t(wr->opcode);
  if (!IsRdma(op) && op != IBV_WR_SEND && op != IBV_WR_SEND_WITH_IMM)
    return EINVAL;
  if (wr->num_sge < 0 || uint32_t(wr->num_sge) > q->cap.max_send_sge ||
      (wr->num_sge > 0 && wr->sg_list == nullptr)) {
    return EINVAL;
  }
  uint64_t len = 0;
  for (int i = 0; i < wr->num_sge; ++i) len += wr->sg_list[i].length;
  bool inl = (wr->send_flags & IBV_SEND_INLINE) != 0;
  if (inl && (op == IBV_WR_RDMA_READ || len > q->cap.max_inline_data))
    return EINVAL;
  if (q->posted - q->retired >= q->cap.max_send_wr) return ENOMEM;

  SendWqe& w = q->sq[q->posted % q->cap.max_send_wr];
  w = SendWqe{};
  w.wr_id = wr->wr_id;
  w.remote_addr = wr->wr.rdma.remote_addr;
  w.rkey = wr->wr.rdma.rkey;
  w.imm = wr->imm_data;
  w.length = len;
  w.opcode = op;
  w.signaled = q->sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
  w.inline_data = inl;
  w.num_sge = uint32_t(wr->num_sge);
  if (inl) {
    // Copied now: the caller may reuse the buffer as soon as we return.
    uint8_t* dst = q->inline_buf + size_t(&w - q->sq) * q->cap.max_inline_data;
    for (int i = 0; i < wr->num_sge; ++i) {
      const ibv_sge& s = wr->sg_list[i];
      if (s.length > 0)
        memcpy(dst, reinterpret_cast<const void*>(s.addr), s.length);
      dst += s.length;
    }
  } else {
    for (int i = 0; i < wr->num_sge; ++i) w.sge[i] = wr->sg_list[i];
  }
  uint64_t n = ++g_faults.wr_posted;
  if (g_faults.qperr != 0 && n == g_faults.qperr) w.faults |= kFaultQpErr;
  if (IsRdma(op)) {
    n = ++g_faults.rdma_posted;
    if (g_faults.rae != 0 && n == g_faults.rae) w.faults |= kFaultRae;
  }
  if (ConsumesRecv(op)) {
    n = ++g_faults.recv_posted;
    if (g_faults.rnr != 0 && n >= g_faults.rnr) w.faults |= kFaultRnr;
  }
  ++q->posted;
  return 0;
}

// Appends one receive WQE to `r`. Returns 0, EINVAL or ENOMEM.
int PushRecv(FabricFile* f, Ring* r, uint32_t max_sge, const ibv_recv_wr* wr) {
  if (wr->num_sge < 0 || uint32_t(wr->num_sge) > max_sge ||
      (wr->num_sge > 0 && wr->sg_list == nullptr)) {
    return EINVAL;
  }
  if (!RingOk(*r, kWqeSlots) || r->tail - r->head >= r->cap) return ENOMEM;
  RecvWqe& d = f->wqe[r->base + r->tail % r->cap];
  d.wr_id = wr->wr_id;
  d.num_sge = uint32_t(wr->num_sge);
  for (int i = 0; i < wr->num_sge; ++i)
    d.sge[i] = {wr->sg_list[i].addr, wr->sg_list[i].length,
                wr->sg_list[i].lkey};
  ++r->tail;
  return 0;
}

}  // namespace

void FlushSqLocked(LoopQp* q) {
  for (; q->head != q->posted; ++q->head) {
    PushSendCqe(q, q->head, q->sq[q->head % q->cap.max_send_wr],
                IBV_WC_WR_FLUSH_ERR, true);
  }
}

void DropSq(LoopQp* q) {
  // The counters go on (not back to 0) so that completions of the old
  // WRs still in the CQ cannot retire new ones.
  q->head = q->retired = q->posted;
  LoopQp** pp = &q->lc->deferred;
  while (*pp != nullptr && *pp != q) pp = &(*pp)->next_deferred;
  if (*pp == q) *pp = q->next_deferred;
  q->deferred = false;
}

void ResetFaults() {
  g_faults.rae = g_faults.rnr = g_faults.qperr = g_faults.cqovf = 0;
  g_faults.nodmabuf = g_faults.noreg = 0;
  g_faults.rdma_posted = g_faults.recv_posted = g_faults.wr_posted = 0;
  ParseFaultList(getenv("VERBS_LOOP_FAULTS"));
}

uint32_t CqCapacity(uint32_t asked) {
  return g_faults.cqovf != 0 ? uint32_t(g_faults.cqovf) : asked;
}

bool DmabufRefused() { return g_faults.nodmabuf != 0; }

bool RegRefused(unsigned access) {
  if ((access & IBV_ACCESS_REMOTE_WRITE) != 0) return false;
  uint64_t kind = 0;  // local read alone (a send's source): never refused
  if ((access & IBV_ACCESS_REMOTE_READ) != 0) {
    kind = 2;
  } else if ((access & IBV_ACCESS_LOCAL_WRITE) != 0) {
    kind = 1;
  }
  return (g_faults.noreg & kind) != 0;
}

int PostSend(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  LoopQp* q = Qp(ibqp);
  LoopContext* lc = q->lc;
  ProcessGuard pg(lc);
  Progress(lc);
  uint32_t st = LoadState(lc->fab->qps[q->slot]);
  int err = 0;
  if (st != IBV_QPS_RTS && st != IBV_QPS_ERR) err = EINVAL;
  for (; wr != nullptr && err == 0; wr = wr->next) {
    err = Enqueue(q, wr);
    if (err != 0) break;
  }
  if (err != 0 && bad_wr != nullptr) *bad_wr = wr;
  if (!RunSq(q)) Defer(q);
  return err;
}

int PostRecv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  LoopQp* q = Qp(ibqp);
  LoopContext* lc = q->lc;
  ProcessGuard pg(lc);
  Progress(lc);
  FabricFile* f = lc->fab;
  SharedGuard g(&f->lock);
  QpEntry& e = f->qps[q->slot];
  int err = 0;
  if (q->srq != nullptr || e.state == IBV_QPS_RESET) err = EINVAL;
  for (; wr != nullptr && err == 0; wr = wr->next) {
    if (e.state != IBV_QPS_ERR) {
      err = PushRecv(f, &e.rq, q->cap.max_recv_sge, wr);
      if (err != 0) break;
      continue;
    }
    // An RQ in ERR completes what it is given at once.
    Cqe c{};
    c.wr_id = wr->wr_id;
    c.qp_num = e.qpn;
    c.status = IBV_WC_WR_FLUSH_ERR;
    c.opcode = IBV_WC_RECV;
    AfterPush(f, PushCqe(f, q->rcq->slot, q->rcq->gen, c), q->rcq->slot, true);
  }
  if (err != 0 && bad_wr != nullptr) *bad_wr = wr;
  return err;
}

int PostSrqRecv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  LoopSrq* s = Srq(ibsrq);
  LoopContext* lc = Ctx(ibsrq->context);
  ProcessGuard pg(lc);
  Progress(lc);
  FabricFile* f = lc->fab;
  SharedGuard g(&f->lock);
  SrqEntry& e = f->srqs[s->slot];
  int err = 0;
  for (; wr != nullptr; wr = wr->next) {
    err = PushRecv(f, &e.ring, s->max_sge, wr);
    if (err != 0) break;
  }
  if (err != 0 && bad_wr != nullptr) *bad_wr = wr;
  return err;
}

int PollCq(ibv_cq* ibcq, int num_entries, ibv_wc* wc) {
  LoopCq* cq = Cq(ibcq);
  LoopContext* lc = Ctx(ibcq->context);
  ProcessGuard pg(lc);
  Progress(lc);
  FabricFile* f = lc->fab;
  CqEntry& e = f->cqs[cq->slot];
  if (__atomic_load_n(&e.overflow, __ATOMIC_ACQUIRE) != 0) return -1;
  // A1: pairs with R1 in PushCqe. Only this process moves head.
  if (__atomic_load_n(&e.ring.tail, __ATOMIC_ACQUIRE) == e.ring.head) return 0;
  SharedGuard g(&e.lock);
  if (e.gen != cq->gen || e.overflow != 0 || !RingOk(e.ring, kCqeSlots))
    return -1;
  int n = 0;
  for (; n < num_entries && e.ring.head != e.ring.tail; ++n, ++e.ring.head) {
    const Cqe& c = f->cqe[e.ring.base + e.ring.head % e.ring.cap];
    ibv_wc& o = wc[n];
    memset(&o, 0, sizeof(o));
    o.wr_id = c.wr_id;
    o.status = ibv_wc_status(c.status);
    o.opcode = ibv_wc_opcode(c.opcode);
    o.byte_len = c.byte_len;
    o.qp_num = c.qp_num;
    o.src_qp = c.src_qp;
    o.slid = c.slid;
    if (c.flags & kCqeWithImm) {
      o.imm_data = c.imm;
      o.wc_flags = IBV_WC_WITH_IMM;
    }
    if (c.flags & kCqeSend) {
      // This completion frees its WR's slot and every earlier one.
      LoopQp* q = lc->qps[c.qp_slot % kMaxQps];
      if (q != nullptr && q->gen == c.qp_gen && c.sq_seq < q->head &&
          c.sq_seq >= q->retired) {
        q->retired = c.sq_seq + 1;
      }
    }
  }
  return n;
}

int ReqNotifyCq(ibv_cq*, int) { return ENOSYS; }

}  // namespace verbs_loop

// QPs of the verbs_loop provider: creation, the RC state machine,
// query and destruction.
//
// State machine (RC only): RESET -> INIT -> RTR -> RTS, INIT -> INIT and
// RTS -> RTS for attribute changes, and any state -> ERR or RESET. Each
// transition requires the attribute mask bits hardware requires and
// refuses bits it does not allow (EINVAL). RTR also checks the path the
// way a subnet would: the destination QP must exist on the fabric now
// (else EINVAL), and the address vector must name its host: the LID for
// link layer ib, a GRH with that host's GID for eth (RoCE).
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <new>

#include "verbs_loop_internal.h"

namespace verbs_loop {
namespace {

constexpr int kReqInit = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kReqRtr = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                        IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                        IBV_QP_MIN_RNR_TIMER;
constexpr int kOptRtr =
    IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
constexpr int kReqRts = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
constexpr int kOptRts = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH |
                        IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
                        IBV_QP_PATH_MIG_STATE;
constexpr int kOptRtsRts = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS |
                           IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
                           IBV_QP_MIN_RNR_TIMER;

// Required and allowed mask bits (besides IBV_QP_STATE) of a transition;
// false if the transition does not exist.
bool TransitionMasks(uint32_t cur, uint32_t next, int* req, int* opt) {
  *req = *opt = 0;
  if (next == IBV_QPS_RESET || next == IBV_QPS_ERR) return true;
  if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) {
    *req = kReqInit;
  } else if (cur == IBV_QPS_INIT && next == IBV_QPS_INIT) {
    *opt = kReqInit;
  } else if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) {
    *req = kReqRtr;
    *opt = kOptRtr;
  } else if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS) {
    *req = kReqRts;
    *opt = kOptRts;
  } else if (cur == IBV_QPS_RTS && next == IBV_QPS_RTS) {
    *opt = kOptRtsRts;
  } else {
    return false;
  }
  return true;
}

// RTR's path checks; returns 0 or EINVAL.
int CheckPath(LoopContext* lc, const ibv_qp_attr* attr) {
  FabricFile* f = lc->fab;
  const QpEntry* t = FindQp(f, attr->dest_qp_num);
  if (t == nullptr || t->host >= kMaxHosts) return EINVAL;
  if (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096)
    return EINVAL;
  const ibv_ah_attr& ah = attr->ah_attr;
  if (ah.port_num > 1) return EINVAL;
  if (lc->link_layer == IBV_LINK_LAYER_ETHERNET) {
    // RoCE has no LIDs: the GRH's destination GID is the address.
    ibv_gid want = HostGid(IBV_LINK_LAYER_ETHERNET, t->host, 0);
    if (!ah.is_global || ah.grh.sgid_index >= 4 ||
        memcmp(&ah.grh.dgid, &want, sizeof(want)) != 0) {
      return EINVAL;
    }
    return 0;
  }
  return ah.dlid == t->host + 1 ? 0 : EINVAL;
}

void SetState(QpEntry& e, uint32_t s) {
  __atomic_store_n(&e.state, s, __ATOMIC_RELAXED);
}

}  // namespace

ibv_gid HostGid(uint8_t link_layer, uint32_t host, uint64_t guid) {
  ibv_gid g;
  memset(&g, 0, sizeof(g));
  if (link_layer == IBV_LINK_LAYER_ETHERNET) {
    // ::ffff:10.77.x.y, x.y = LID of the host: unique per host.
    uint32_t lid = host + 1;
    g.raw[10] = g.raw[11] = 0xff;
    g.raw[12] = 10;
    g.raw[13] = 77;
    g.raw[14] = uint8_t(lid >> 8);
    g.raw[15] = uint8_t(lid);
  } else {
    g.raw[0] = 0xfe;
    g.raw[1] = 0x80;
    for (int i = 0; i < 8; ++i) g.raw[8 + i] = uint8_t(guid >> (56 - 8 * i));
  }
  return g;
}

}  // namespace verbs_loop

using namespace verbs_loop;

extern "C" {

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  if (pd == nullptr || init == nullptr || init->qp_type != IBV_QPT_RC ||
      init->send_cq == nullptr || init->recv_cq == nullptr ||
      init->send_cq->context != pd->context ||
      init->recv_cq->context != pd->context ||
      (init->srq != nullptr && init->srq->context != pd->context)) {
    errno = EINVAL;
    return nullptr;
  }
  ibv_qp_cap cap = init->cap;
  if (cap.max_send_wr > kMaxWr || cap.max_send_sge > kMaxSge ||
      cap.max_recv_sge > kMaxSge || cap.max_inline_data > kMaxInline ||
      (init->srq == nullptr && cap.max_recv_wr > kMaxWr)) {
    errno = EINVAL;
    return nullptr;
  }
  if (init->srq != nullptr) cap.max_recv_wr = cap.max_recv_sge = 0;
  LoopContext* lc = Ctx(pd->context);
  ProcessGuard pg(lc);
  LoopQp* q = static_cast<LoopQp*>(calloc(1, sizeof(LoopQp)));
  uint32_t sq_len = cap.max_send_wr > 0 ? cap.max_send_wr : 1;
  if (q != nullptr) {
    q->sq = new (std::nothrow) SendWqe[sq_len];
    q->inline_buf =
        new (std::nothrow) uint8_t[size_t(sq_len) * cap.max_inline_data + 1];
  }
  auto fail = [&](int err) -> ibv_qp* {
    if (q != nullptr) {
      delete[] q->sq;
      delete[] q->inline_buf;
      free(q);
    }
    errno = err;
    return nullptr;
  };
  if (q == nullptr || q->sq == nullptr || q->inline_buf == nullptr)
    return fail(ENOMEM);

  FabricFile* f = lc->fab;
  SharedGuard g(&f->lock);
  uint32_t slot = TakeQp(f);
  if (slot == kNone) return fail(ENOMEM);
  QpEntry& e = f->qps[slot];
  if (cap.max_recv_wr > 0) {
    uint32_t base = AllocWqeSlots(f, cap.max_recv_wr, QpWqeTag(slot));
    if (base == kNone) return fail(ENOMEM);  // the entry stays unowned
    e.rq = Ring{base, cap.max_recv_wr, 0, 0};
  }
  LoopCq* scq = Cq(init->send_cq);
  LoopCq* rcq = Cq(init->recv_cq);
  e.qpn = ((e.gen << kQpIndexBits) | slot) & 0xffffff;
  e.state = IBV_QPS_RESET;
  e.pd_id = Pd(pd)->pd_id;
  e.host = lc->host;
  e.send_cq = scq->slot;
  e.send_cq_gen = scq->gen;
  e.recv_cq = rcq->slot;
  e.recv_cq_gen = rcq->gen;
  if (init->srq != nullptr) {
    e.srq = Srq(init->srq)->slot;
    e.srq_gen = Srq(init->srq)->gen;
  }
  e.max_recv_sge = cap.max_recv_sge;
  e.owner = lc->pid;

  q->lc = lc;
  q->pd = Pd(pd);
  q->scq = scq;
  q->rcq = rcq;
  q->srq = init->srq != nullptr ? Srq(init->srq) : nullptr;
  q->slot = slot;
  q->gen = e.gen;
  q->cap = cap;
  q->sig_all = init->sq_sig_all;
  q->attr.qp_state = IBV_QPS_RESET;
  q->attr.cap = cap;
  ++q->pd->refs;
  ++scq->refs;
  ++rcq->refs;
  if (q->srq != nullptr) ++q->srq->refs;
  lc->qps[slot] = q;

  ibv_qp& qp = q->qp;
  qp.context = pd->context;
  qp.qp_context = init->qp_context;
  qp.pd = pd;
  qp.send_cq = init->send_cq;
  qp.recv_cq = init->recv_cq;
  qp.srq = init->srq;
  qp.handle = slot;
  qp.qp_num = e.qpn;
  qp.state = IBV_QPS_RESET;
  qp.qp_type = IBV_QPT_RC;
  pthread_mutex_init(&qp.mutex, nullptr);
  pthread_cond_init(&qp.cond, nullptr);
  init->cap = cap;  // what was granted
  return &qp;
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  if (attr == nullptr) return EINVAL;
  LoopQp* q = Qp(qp);
  LoopContext* lc = q->lc;
  ProcessGuard pg(lc);
  FabricFile* f = lc->fab;
  SharedGuard g(&f->lock);
  QpEntry& e = f->qps[q->slot];
  if (e.owner != lc->pid || e.gen != q->gen) return EINVAL;
  uint32_t cur = e.state;
  uint32_t next = (mask & IBV_QP_STATE) ? uint32_t(attr->qp_state) : cur;
  int req, opt;
  if (!TransitionMasks(cur, next, &req, &opt)) return EINVAL;
  int extra = mask & ~(IBV_QP_STATE | req | opt);
  if ((mask & req) != req || extra != 0) return EINVAL;
  if ((mask & IBV_QP_CUR_STATE) && uint32_t(attr->cur_qp_state) != cur)
    return EINVAL;
  if ((mask & IBV_QP_PORT) && attr->port_num != 1) return EINVAL;
  if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0) return EINVAL;
  if ((mask & IBV_QP_RETRY_CNT) && attr->retry_cnt > 7) return EINVAL;
  if ((mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7) return EINVAL;
  if ((mask & IBV_QP_AV) && CheckPath(lc, attr) != 0) return EINVAL;

  ibv_qp_attr& a = q->attr;
  if (mask & IBV_QP_ACCESS_FLAGS) {
    a.qp_access_flags = attr->qp_access_flags;
    e.access = attr->qp_access_flags;
  }
  if (mask & IBV_QP_PKEY_INDEX) a.pkey_index = attr->pkey_index;
  if (mask & IBV_QP_PORT) a.port_num = attr->port_num;
  if (mask & IBV_QP_AV) a.ah_attr = attr->ah_attr;
  if (mask & IBV_QP_PATH_MTU) a.path_mtu = attr->path_mtu;
  if (mask & IBV_QP_DEST_QPN) {
    a.dest_qp_num = attr->dest_qp_num;
    e.dest_qpn = attr->dest_qp_num;
  }
  if (mask & IBV_QP_RQ_PSN) a.rq_psn = attr->rq_psn;
  if (mask & IBV_QP_SQ_PSN) a.sq_psn = attr->sq_psn;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
    a.max_dest_rd_atomic = attr->max_dest_rd_atomic;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) a.max_rd_atomic = attr->max_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) a.min_rnr_timer = attr->min_rnr_timer;
  if (mask & IBV_QP_TIMEOUT) a.timeout = attr->timeout;
  if (mask & IBV_QP_RETRY_CNT) a.retry_cnt = attr->retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) a.rnr_retry = attr->rnr_retry;
  if (mask & IBV_QP_PATH_MIG_STATE) a.path_mig_state = attr->path_mig_state;
  if (mask & IBV_QP_ALT_PATH) {
    a.alt_ah_attr = attr->alt_ah_attr;
    a.alt_pkey_index = attr->alt_pkey_index;
    a.alt_port_num = attr->alt_port_num;
    a.alt_timeout = attr->alt_timeout;
  }

  if (next == IBV_QPS_ERR) {
    SetErrLocked(f, q->slot);
    FlushSqLocked(q);
  } else if (next == IBV_QPS_RESET) {
    SetState(e, IBV_QPS_RESET);
    e.dest_qpn = 0;
    e.rq.head = e.rq.tail;
    DropSq(q);
    uint32_t access = a.qp_access_flags;
    a = ibv_qp_attr{};
    a.qp_access_flags = access;
    a.cap = q->cap;
  } else {
    SetState(e, next);
  }
  a.qp_state = a.cur_qp_state = ibv_qp_state(next);
  qp->state = ibv_qp_state(next);
  return 0;
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int, ibv_qp_init_attr* init) {
  LoopQp* q = Qp(qp);
  LoopContext* lc = q->lc;
  ProcessGuard pg(lc);
  // The state may have been changed by a peer (remote access error) or
  // a CQ overflow: the fabric has the truth.
  ibv_qp_state st = ibv_qp_state(LoadState(lc->fab->qps[q->slot]));
  qp->state = st;
  if (attr != nullptr) {
    *attr = q->attr;
    attr->qp_state = attr->cur_qp_state = st;
    attr->cap = q->cap;
  }
  if (init != nullptr) {
    memset(init, 0, sizeof(*init));
    init->qp_context = qp->qp_context;
    init->send_cq = qp->send_cq;
    init->recv_cq = qp->recv_cq;
    init->srq = qp->srq;
    init->cap = q->cap;
    init->qp_type = IBV_QPT_RC;
    init->sq_sig_all = q->sig_all;
  }
  return 0;
}

int ibv_destroy_qp(ibv_qp* qp) {
  LoopQp* q = Qp(qp);
  LoopContext* lc = q->lc;
  ProcessGuard pg(lc);
  {
    FabricFile* f = lc->fab;
    SharedGuard g(&f->lock);
    QpEntry& e = f->qps[q->slot];
    if (e.owner == lc->pid && e.gen == q->gen) {
      // Peers see the QPN vanish: their next WR fails with retry-exceeded.
      SetState(e, IBV_QPS_RESET);
      e.owner = 0;
      FreeWqeSlots(f, QpWqeTag(q->slot));
    }
  }
  DropSq(q);
  lc->qps[q->slot] = nullptr;
  --q->pd->refs;
  --q->scq->refs;
  --q->rcq->refs;
  if (q->srq != nullptr) --q->srq->refs;
  pthread_mutex_destroy(&qp->mutex);
  pthread_cond_destroy(&qp->cond);
  delete[] q->sq;
  delete[] q->inline_buf;
  free(q);
  return 0;
}

}  // extern "C"

// Connection management of a verbs fabric (verbs_fabric.h): queue pairs
// through RESET, INIT, RTR and RTS, and the messages over the connection
// manager's fabric that carry what each side needs (verbs_net.h:
// hello, ready, goodbye and its answer).
#include <cstring>

#include "platform/os/clock.h"
#include "platform/os/log.h"
#include "platform/verbs/verbs_fabric.h"
#include "platform/verbs/verbs_net.h"

namespace ucc::plat::verbs {
namespace {

// Where a shadow's release counts lie, from its start.
size_t done_offset() {
  alignas(InboxCtl) char buf[sizeof(InboxCtl)];
  auto* c = reinterpret_cast<InboxCtl*>(buf);
  return static_cast<size_t>(reinterpret_cast<char*>(&c->done[0]) - buf);
}

}  // namespace

void VerbsFabric::seal() {
  // Every member has connected its connection manager's fabric: only now
  // may messages go over it (a member not connected yet drops them).
  sealed_ = true;
  const uint64_t now = now_ns();
  for (uint32_t k = 0; k < nmade_; ++k) {
    const uint32_t r = made_[k];
    VLink& l = links_[r];
    if (l.state != VLink::State::kConnecting) continue;
    l.since = now;
    advance(r);
  }
}

void VerbsFabric::advance(uint32_t r) {
  // In this order, each once: our hello (after seal), our ready (after
  // our hello and the peer's: the peer must know our queue pair before it
  // hears that we can take its writes), then ready both ways.
  VLink& l = links_[r];
  if (l.state != VLink::State::kConnecting) return;
  if (!l.hello_sent && sealed_) l.hello_sent = send_cm(r, CmMsg::kHello);
  if (l.hello_sent && l.got_hello && !l.ready_sent)
    l.ready_sent = send_cm(r, CmMsg::kReady);
  if (l.ready_sent && l.peer_ready) {
    l.state = VLink::State::kReady;
    --connecting_;
    owe(r);  // what was committed meanwhile
  }
}

void VerbsFabric::create_qp(uint32_t r) {
  VLink& l = links_[r];
  const uint32_t cq = cq_with_room();
  if (cq == kNoCq) {
    fail(r, "no completion queue can take its queue pair");
    return;
  }
  ibv_qp_init_attr a{};
  a.send_cq = cqs_[cq];
  a.recv_cq = cqs_[cq];
  a.srq = net_->srq();
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = max_send_;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  // As much inline data as the device grants of what we ask, halving
  // down to none (providers refuse a queue pair above their limit).
  uint32_t inl = max_inline_ != kUnknownInline ? max_inline_
                                                 : net_->config().max_inline;
  // None even without inline data: the device is out of queue pairs (no
  // waiting for lingering members here, inside the engine's calls).
  for (;;) {
    a.cap.max_inline_data = inl;
    l.qp = net_->api().create_qp(net_->pd(), &a);
    if (l.qp != nullptr || inl == 0) break;
    inl /= 2;
  }
  if (l.qp == nullptr) {
    fail(r, "cannot create a queue pair");
    return;
  }
  l.cq = static_cast<uint8_t>(cq);
  --cq_room_[cq];
  ++net_->counters().qps;
  if (!reg_link(r)) return;
  max_inline_ = a.cap.max_inline_data;
  l.psn = static_cast<uint32_t>(net_->rand64()) & 0xffffffu;
  // Peers write messages and credits, and read what a member offers
  // (its registrations say what each may reach).
  if (!net_->qp_init(l.qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ))
    fail(r, "cannot move a queue pair to INIT");
}

void VerbsFabric::fail(uint32_t r, const char* why) {
  if (!made(r)) return;
  VLink& l = links_[r];
  if (l.state == VLink::State::kFailed || l.state == VLink::State::kLeft ||
      l.state == VLink::State::kNone)
    return;
  if (l.state == VLink::State::kConnecting) --connecting_;
  l.state = VLink::State::kFailed;
  lost_ = true;
  if (l.ack_owed) {  // nothing to answer on a failed link
    l.ack_owed = false;
    --acks_owed_;
  }
  if (broken_) return;  // one of ours, failing as we broke it
  UCC_WARN("verbs: rank %u: link to team rank %u failed: %s", cfg_.rank, r,
           why);
}

bool VerbsFabric::send_cm(uint32_t r, uint32_t type) {
  void* p = cm_->tx_reserve(r);
  if (p == nullptr) return false;
  CmMsg m{};
  m.type = type;
  const VLink& l = links_[r];
  if (type == CmMsg::kHello) {
    m.qp = net_->qp_addr(l.qp, l.psn);
    m.seg_rkey = l.inbox_mr->rkey;
    m.seg_addr = reinterpret_cast<uintptr_t>(seg_);
    m.shadow_rkey = l.shadow_mr->rkey;
    m.shadow_addr = reinterpret_cast<uintptr_t>(shadows_);
    m.slot_size = cfg_.slot_size;
    m.nslots = static_cast<uint16_t>(cfg_.nslots);
  }
  m.lost = lost_leave_ ? 1 : 0;
  memcpy(p, &m, sizeof(m));
  // Hellos and goodbyes are the peer's attention (kind 1): they may find
  // its link idle (progress).
  const uint8_t kind = type == CmMsg::kHello || type == CmMsg::kBye ? 1 : 0;
  cm_->tx_commit(r, sizeof(m), MsgKey{{kVerbsAddrMagic, type, 0}}, kind);
  return true;
}

void VerbsFabric::on_cm(uint32_t r, const CmMsg& m) {
  VLink& l = links_[r];
  if (l.state == VLink::State::kFailed || l.state == VLink::State::kLeft)
    return;
  if (l.state == VLink::State::kIdle) {
    if (m.type == CmMsg::kHello && broken_) {
      // Our team failed before this peer reached us: it hears so.
      l.state = VLink::State::kFailed;
      send_cm(r, CmMsg::kBye);
      return;
    }
    if (m.type == CmMsg::kHello) {  // the peer talks to us first
      start(r);
      if (l.state != VLink::State::kConnecting) return;  // no queue pair
    }
    if (m.type == CmMsg::kReady || m.type == CmMsg::kByeAck) return;
  }
  switch (m.type) {
    case CmMsg::kHello:
      if (l.got_hello) return;
      if (m.slot_size != cfg_.slot_size || m.nslots != cfg_.nslots ||
          !qp_addr_ok(m.qp)) {
        fail(r, "its hello does not fit our fabric");
        return;
      }
      l.peer_seg = m.seg_addr;
      l.peer_seg_rkey = m.seg_rkey;
      l.peer_shadow = m.shadow_addr + shadow_bytes(cfg_) * cfg_.rank +
                      done_offset();
      l.peer_shadow_rkey = m.shadow_rkey;
      if (!net_->qp_connect(l.qp, m.qp, l.psn)) {
        fail(r, "cannot connect its queue pair (RTR/RTS)");
        return;
      }
      l.got_hello = true;
      break;
    case CmMsg::kReady:
      if (!l.got_hello) {
        fail(r, "ready before hello");
        return;
      }
      l.peer_ready = true;
      break;
    case CmMsg::kBye:
      if (m.lost != 0) {
        fail(r, "it failed");
        return;
      }
      if (l.state == VLink::State::kConnecting) --connecting_;
      l.state = VLink::State::kLeft;
      // Nothing more goes to it; the answer tells it so once what we
      // posted is done, and it may then free what we wrote into.
      l.ack_owed = true;
      ++acks_owed_;
      return;
    case CmMsg::kByeAck:
      l.bye_acked = true;
      return;
    default:
      fail(r, "unknown connection message");
      return;
  }
  advance(r);
}

uint64_t VerbsFabric::read_cm(uint32_t r) {
  if (made(r)) advance(r);  // what could not go before (no free slot)
  const uint32_t n = cm_->rx_poll(r);
  if (n != 0) make(r);  // a peer talks to us first
  for (uint32_t i = 0; i < n; ++i) {
    const MsgHdr* h = cm_->rx_hdr(r, i);
    if (h == nullptr) continue;
    if (h->len == sizeof(CmMsg) && h->key.w[0] == kVerbsAddrMagic) {
      CmMsg m;
      memcpy(&m, cm_->rx_payload(r, i), sizeof(m));
      on_cm(r, m);
    }
    cm_->rx_release(r, i);
  }
  return n;
}

}  // namespace ucc::plat::verbs

#include "platform/verbs/verbs_fabric.h"

#include <arpa/inet.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <new>
#include <type_traits>

#include "platform/os/clock.h"
#include "platform/os/log.h"
#include "platform/verbs/verbs_net.h"

namespace ucc::plat::verbs {
namespace {

constexpr uint64_t kRecvId = ~uint64_t{0};
constexpr uint64_t kMsgWr = 1;
constexpr uint64_t kCreditWr = 2;

void* map_zeroed(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

VerbsFabric::VerbsFabric(VerbsNet* net, const FabricConfig& cfg, Fabric* cm)
    : InboxFabric(cfg), net_(net), cm_(cm) {}

VerbsFabric::~VerbsFabric() {
  const Api& api = net_->api();
  if (links_ != nullptr) {
    for (uint32_t i = 0; i < nmade_; ++i) {
      const VLink& l = links_[made_[i]];
      if (l.qp != nullptr) api.destroy_qp(l.qp);
      if (l.inbox_mr != nullptr) api.dereg_mr(l.inbox_mr);
      if (l.shadow_mr != nullptr) api.dereg_mr(l.shadow_mr);
      if (l.credit_mr != nullptr) api.dereg_mr(l.credit_mr);
    }
  }
  for (uint32_t i = 0; i < ncq_; ++i) api.destroy_cq(cqs_[i]);
  for (uint32_t h = 0; regs_ != nullptr && h < kMaxRmaRegs; ++h)
    if (regs_[h].mr != nullptr) api.dereg_mr(regs_[h].mr);
  if (seg_ != nullptr) munmap(seg_, seg_bytes_);
  if (shadows_ != nullptr) munmap(shadows_, shadows_bytes_);
  static_assert(std::is_trivially_destructible_v<VLink>);
}

bool VerbsFabric::setup() {
  const uint32_t n = cfg_.nranks;
  // Per-peer state in the fabric's arena; the inboxes and shadows in
  // mappings of their own, each registered with the device.
  for (int pass = 0; pass < 2; ++pass) {
    links_ = mem_.take<VLink>(n);
    made_ = mem_.take<uint32_t>(n);
    is_made_ = mem_.take<uint8_t>(n);
    rma_ = mem_.take<uint32_t>(n);
    heads_ = mem_.take<uint32_t>(n);
    owe_ = mem_.take<uint32_t>(n);
    regs_ = mem_.take<RegEnt>(kMaxRmaRegs);
    if (pass == 0 && !mem_.commit()) return false;
  }
  seg_bytes_ = segment_bytes(cfg_);
  shadows_bytes_ = shadow_bytes(cfg_) * n;
  seg_ = static_cast<char*>(map_zeroed(seg_bytes_));
  shadows_ = static_cast<char*>(map_zeroed(shadows_bytes_));
  if (links_ == nullptr || made_ == nullptr || is_made_ == nullptr ||
      rma_ == nullptr || heads_ == nullptr || owe_ == nullptr ||
      regs_ == nullptr || seg_ == nullptr || shadows_ == nullptr)
    return false;
  seg_init(seg_, cfg_, getpid());
  for (uint32_t h = 0; h < kMaxRmaRegs; ++h)
    regs_[h] = RegEnt{nullptr, 0, false};
  // Peers write messages into the slots and release counts into the
  // shadows; our release counts are the source of our credit writes. All
  // three are registered link by link as links start (reg_link): the
  // mappings cost nothing until then, and pinned memory grows with the
  // peers a member talks to.
  return true;
}

bool VerbsFabric::reg_link(uint32_t r) {
  VLink& l = links_[r];
  const Api& api = net_->api();
  const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  const size_t in = slot_stride(cfg_.slot_size) * cfg_.nslots;
  const size_t sb = shadow_bytes(cfg_);
  l.inbox_mr = api.reg_mr(net_->pd(), seg_slots(seg_, cfg_, r), in, acc);
  if (l.inbox_mr != nullptr)
    l.shadow_mr = api.reg_mr(net_->pd(), shadows_ + sb * r, sb, acc);
  // The release counts are only read, by our own credit writes.
  if (l.shadow_mr != nullptr)
    l.credit_mr =
        api.reg_mr(net_->pd(), &seg_ctl(seg_, r)->done[0], kMaxSlots, 0);
  if (l.credit_mr == nullptr) {
    UCC_ERROR("verbs: cannot register %zu bytes for team rank %u: %s",
              in + sb + kMaxSlots, r, strerror(errno));
    fail(r, "cannot register its inbox");
    return false;
  }
  net_->counters().fabric_regs += in + sb + kMaxSlots;
  return true;
}

bool VerbsFabric::add_cq(uint32_t links) {
  if (ncq_ == kMaxCqs || links == 0) return false;
  const int cqe = static_cast<int>(links * (max_send_ + cfg_.nslots) + 64);
  ibv_cq* cq = net_->api().create_cq(net_->ctx(), cqe, nullptr, nullptr, 0);
  if (cq == nullptr) return false;
  cqs_[ncq_] = cq;
  cq_room_[ncq_++] = links;
  cq_links_ += links;
  last_cq_links_ = links;
  net_->counters().cqes += static_cast<uint64_t>(cqe);
  return true;
}

uint32_t VerbsFabric::cq_with_room() {
  for (uint32_t i = 0; i < ncq_; ++i)
    if (cq_room_[i] != 0) return i;
  // Twice the last one, no more than the remote peers not yet covered.
  const uint32_t left = nremote_ > cq_links_ ? nremote_ - cq_links_ : 0;
  const uint32_t twice = ncq_ != 0 ? 2 * last_cq_links_ : left;
  const uint32_t links = twice < left ? twice : left;
  if (add_cq(links)) return ncq_ - 1;
  UCC_ERROR("verbs: cannot create a CQ for %u more links: %s", links,
            ncq_ == kMaxCqs ? "too many CQs" : strerror(errno));
  return kNoCq;
}

Status VerbsFabric::connect(const FabricAddr* addrs, const bool* mine) {
  const uint32_t n = cfg_.nranks;
  Status st = take_pairs(mine, false, seg_, true);
  if (failed(st)) return st;
  auto* cm_addrs = new (std::nothrow) FabricAddr[n];
  if (cm_addrs == nullptr) return Status::kNoMemory;
  memset(cm_addrs, 0, sizeof(FabricAddr) * n);
  nremote_ = 0;
  const uint32_t my_rma = cfg_.rma ? net_->config().zcopy_min : 0;
  for (uint32_t r = 0; r < n; ++r) {
    if (!mine[r] || r == cfg_.rank) continue;
    if (addrs[r].kind != kVerbsAddrMagic) {
      UCC_ERROR("rank %u: team rank %u has no verbs address", cfg_.rank, r);
      delete[] cm_addrs;
      return Status::kError;
    }
    cm_addrs[r].kind = net_->cm_kind();
    memcpy(cm_addrs[r].bytes, addrs[r].bytes, sizeof(addrs[r].bytes));
    rma_[r] = rma_agree(my_rma, addrs[r].pad);
    ++nremote_;
  }
  st = cm_->connect(cm_addrs, mine);
  delete[] cm_addrs;
  if (failed(st)) return st;
  // Every completion a CQ's links can have outstanding fits it: no
  // overflow. The first CQ now (creation fails early where there is no
  // room), the others as links start (cq_with_room).
  max_send_ = 2 * cfg_.nslots + 8;
  const uint32_t first =
      nremote_ < net_->config().cq_links ? nremote_ : net_->config().cq_links;
  if (first != 0 && !add_cq(first) && !(net_->make_room() && add_cq(first))) {
    UCC_ERROR("verbs: cannot create a CQ for %u links: %s", first,
              strerror(errno));
    return Status::kNoResource;
  }
  // The pairs and links come when a peer is talked to (make).
  return Status::kOk;
}

VLink& VerbsFabric::make(uint32_t r) {
  VLink& l = links_[r];
  if (is_made_[r] != 0) return l;
  new (&l) VLink;
  l.state = VLink::State::kIdle;
  l.shadow = pair(r).tx();
  l.rma_min = rma_[r];
  is_made_[r] = 1;
  made_[nmade_++] = r;
  return l;
}

void VerbsFabric::start(uint32_t r) {
  if (!serves(r) || r == cfg_.rank) return;
  VLink& l = make(r);
  if (l.state != VLink::State::kIdle) return;
  l.state = VLink::State::kConnecting;
  l.since = now_ns();
  ++connecting_;
  create_qp(r);
  advance(r);
}

void VerbsFabric::waiting_on(uint32_t peer) { start(peer); }

void VerbsFabric::owe(uint32_t r) {
  VLink& l = links_[r];
  if (l.listed) return;
  l.listed = true;
  owe_[nowe_++] = r;
}

bool VerbsFabric::post_wr(VLink& l, uint32_t r, ibv_send_wr& wr) {
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(l.qp, &wr, &bad);
  if (rc != 0) {
    fail(r, strerror(rc));
    return false;
  }
  // The net's clock may be old here (the engine runs before the net).
  if (l.outstanding++ == 0) l.since = now_ns();
  return true;
}

bool VerbsFabric::post_write(VLink& l, uint32_t r, const void* src,
                             uint32_t len, uint32_t lkey, uint64_t raddr,
                             uint32_t rkey, bool imm, uint32_t imm_slot) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(src);
  sge.length = len;
  sge.lkey = lkey;
  ibv_send_wr wr{};
  wr.wr_id = (uint64_t{r} << 8) | (imm ? kMsgWr : kCreditWr);
  wr.sg_list = &sge;
  wr.num_sge = len != 0 ? 1 : 0;
  wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  const bool inl = len <= max_inline_;
  if (inl) wr.send_flags |= IBV_SEND_INLINE;
  if (imm) wr.imm_data = htonl((cfg_.rank << 8) | (imm_slot & 0xffu));
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  if (!post_wr(l, r, wr)) return false;
  VerbsStats& s = net_->counters();
  if (imm) {
    ++s.tx_msgs;
    if (inl) ++s.inline_msgs;
  } else {
    ++s.credits;
  }
  return true;
}

bool VerbsFabric::post_owed(uint32_t r) {
  VLink& l = links_[r];
  if (l.state == VLink::State::kConnecting) return false;
  if (l.state != VLink::State::kReady) return true;  // never will
  const uint32_t head = shadow_head(*l.shadow.ctl);
  const uint32_t mask = cfg_.nslots - 1;
  while (l.msgs != head) {
    if (l.outstanding >= max_send_) return false;
    const uint32_t slot = l.shadow.ctl->order[l.msgs & mask] & mask;
    const char* s = l.shadow.slot(cfg_, slot);
    uint32_t len = reinterpret_cast<const MsgHdr*>(s)->len;
    if (len > cfg_.slot_size) len = cfg_.slot_size;
    const uint64_t raddr =
        l.peer_seg + data_offset(cfg_.nranks) +
        (uint64_t{cfg_.rank} * cfg_.nslots + slot) * slot_stride(cfg_.slot_size);
    if (!post_write(l, r, s, static_cast<uint32_t>(kSlotHdr) + len,
                    l.shadow_mr->lkey, raddr, l.peer_seg_rkey, true, slot))
      return true;
    ++l.msgs;
  }
  if (l.credit_owed) {
    if (l.outstanding >= max_send_) return false;
    l.credit_owed = false;
    post_write(l, r, &seg_ctl(seg_, r)->done[0], kMaxSlots, l.credit_mr->lkey,
               l.peer_shadow, l.peer_shadow_rkey, false, 0);
  }
  return true;
}

void VerbsFabric::tx_commit(uint32_t peer, uint32_t len, const MsgKey& key,
                            uint8_t kind, uint32_t lag) {
  pair(peer).tx_commit(cfg_, len, key, kind, lag);
  ++events_;
  start(peer);  // (made and started once: idle links only)
  // Straight out (after anything still waiting: post_owed goes in
  // order); what cannot go now goes from progress.
  if (!post_owed(peer)) owe(peer);
}

void VerbsFabric::rx_release(uint32_t peer, uint32_t i) {
  InboxPair* pp = made_pair(peer);
  if (pp == nullptr || !pp->rx_release(i)) return;
  ++events_;
  if (!made(peer)) return;  // (a message came on its link: never)
  links_[peer].credit_owed = true;
  owe(peer);
}

void VerbsFabric::publish(uint32_t r, uint32_t slot) {
  InboxCtl* c = seg_ctl(seg_, r);
  publish_head(c, cfg_.nslots - 1, ++heads_[r], slot);
  const auto* mh =
      reinterpret_cast<const MsgHdr*>(pair(r).rx().slot(cfg_, slot));
  if (mh->kind != 0)
    seg_header(seg_)->attention.fetch_add(1, std::memory_order_release);
}

void VerbsFabric::on_recv(const ibv_wc& wc) {
  const uint32_t imm = ntohl(wc.imm_data);
  const uint32_t r = imm >> 8;
  // The immediate is the peer's: it must name the link it came on. A
  // peer that left may have written its last messages before its goodbye
  // (our completions can come after the goodbye): they count.
  if (!made(r) || links_[r].qp == nullptr ||
      links_[r].qp->qp_num != wc.qp_num || !links_[r].got_hello ||
      links_[r].state == VLink::State::kFailed) {
    ++net_->counters().bad_imm;
    return;
  }
  publish(r, imm & (cfg_.nslots - 1));
  ++net_->counters().rx_msgs;
  ++events_;
}

uint64_t VerbsFabric::poll_cq(uint32_t i) {
  ibv_wc wc[16];
  const int n = ibv_poll_cq(cqs_[i], 16, wc);
  if (n < 0) {  // the CQ overflowed or broke: every link with it
    for (uint32_t k = 0; k < nmade_; ++k) {
      const uint32_t r = made_[k];
      if (links_[r].qp != nullptr && links_[r].cq == i)
        fail(r, "completion queue error");
    }
    return 0;
  }
  for (int i = 0; i < n; ++i) {
    const ibv_wc& w = wc[i];
    if (w.wr_id == kRecvId) {
      net_->srq_used();
      if (w.status == IBV_WC_SUCCESS && w.opcode == IBV_WC_RECV_RDMA_WITH_IMM)
        on_recv(w);
      continue;
    }
    const auto r = static_cast<uint32_t>((w.wr_id >> 8) & 0xffffffu);
    if (!made(r)) continue;
    VLink& l = links_[r];
    if (l.outstanding > 0) --l.outstanding;
    l.since = net_->now();
    if ((w.wr_id & 0xffu) == kRmaWrKind)
      rma_completed(w.wr_id, l, w.status == IBV_WC_SUCCESS);
    if (w.status != IBV_WC_SUCCESS) {
      ++net_->counters().errors;
      fail(r, net_->api().wc_status_str(w.status));
    }
  }
  return static_cast<uint64_t>(n);
}

uint64_t VerbsFabric::progress(bool cm_too) {
  uint64_t ev = 0;
  // Every completion before any goodbye is read: a peer's goodbye comes
  // after its writes completed, and those must be published first. (The
  // CQ holds at most what the member can have outstanding.)
  for (uint32_t i = 0; i < ncq_; ++i) {
    for (uint64_t n = 16; n == 16;) {
      n = poll_cq(i);
      ev += n;
    }
  }
  // Lingering after our goodbyes: the connection manager's fabric is
  // gone, and nothing more goes out.
  if (cm_closed) return ev;
  // A peer's hello or goodbye to a link of ours still idle (hellos and
  // goodbyes count as the manager's attention): the link starts, or
  // takes the goodbye. Looked for among the peers the manager has heard
  // from (TCP: the links its frames made), not the team.
  const uint32_t attn = cm_->attention();
  if (attn != cm_attention_) {
    cm_attention_ = attn;
    const uint32_t heard = cm_->heard_count();
    const uint32_t m = heard == kAllPeers ? cfg_.nranks : heard;
    for (uint32_t i = 0; i < m; ++i) {
      const uint32_t r = heard == kAllPeers ? i : cm_->heard_peer(i);
      if (made(r) ? links_[r].state == VLink::State::kIdle
                  : serves(r) && r != cfg_.rank)
        ev += read_cm(r);
    }
  }
  if (connecting_ != 0 || cm_too || leaving_ || acks_owed_ != 0) {
    for (uint32_t k = 0; k < nmade_; ++k) {
      const uint32_t r = made_[k];
      const VLink& l = links_[r];
      if (l.state == VLink::State::kConnecting ||
          (l.state == VLink::State::kReady && (cm_too || leaving_)))
        ev += read_cm(r);
      if (l.ack_owed && l.outstanding == 0 && send_cm(r, CmMsg::kByeAck)) {
        links_[r].ack_owed = false;
        --acks_owed_;
        ++ev;
      }
    }
  }
  if (nowe_ != 0) {
    const uint32_t n = nowe_;
    nowe_ = 0;
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t r = owe_[k];
      links_[r].listed = false;
      if (!post_owed(r)) owe(r);
    }
  }
  if (leaving_) {
    for (uint32_t k = 0; k < nmade_; ++k) {
      const uint32_t r = made_[k];
      VLink& l = links_[r];
      if (l.state == VLink::State::kReady && !l.bye_sent && !l.listed &&
          l.msgs == shadow_head(*l.shadow.ctl) && l.outstanding == 0)
        l.bye_sent = send_cm(r, CmMsg::kBye);
    }
  }
  return ev;
}

void VerbsFabric::leave(bool lost) {
  leaving_ = true;
  lost_leave_ = lost;
  // A member that failed owes nothing: its peers learn at once (errored
  // queue pairs, a goodbye that says so) instead of after a timeout.
  if (lost && !broken_) break_links();
}

bool VerbsFabric::drained() const {
  for (uint32_t k = 0; k < nmade_; ++k) {
    const VLink& l = links_[made_[k]];
    if (l.state == VLink::State::kReady &&
        (!l.bye_sent || !l.bye_acked || l.outstanding != 0))
      return false;
    // A peer that has not had our hello cannot write to us.
    if (l.state == VLink::State::kConnecting && l.hello_sent) return false;
    if (l.ack_owed) return false;  // its goodbye is not answered yet
  }
  return true;
}

bool VerbsFabric::peer_lost() const {
  // The engine asks when a team seems stuck (every 100 ms at most): a
  // query, which also probes. const_cast: the probes are ours to post.
  return const_cast<VerbsFabric*>(this)->check_peers();
}

bool VerbsFabric::check_peers() {
  bool lost = lost_ || cm_->peer_lost();
  const uint64_t now = now_ns();
  const uint64_t limit = uint64_t{net_->config().peer_timeout_ms} * 1000000u;
  for (uint32_t k = 0; k < nmade_ && !lost; ++k) {
    const uint32_t r = made_[k];
    VLink& l = links_[r];
    // Not connected in time, or a work request the peer never answered
    // (RNR or transport retries going on for ever).
    if ((l.state == VLink::State::kConnecting ||
         (l.state == VLink::State::kReady && l.outstanding != 0)) &&
        now - l.since > limit) {
      fail(r, "no answer within the peer timeout");
      lost = true;
    } else if (l.state == VLink::State::kReady && l.outstanding == 0) {
      // An idle link tells nothing: a zero-length write does. It fails
      // (retries exceeded, or flushed) when the peer's queue pair or ours
      // is in error, as after a fault, or when the peer broke its links.
      post_write(l, r, nullptr, 0, 0, l.peer_shadow, l.peer_shadow_rkey,
                 false, 0);
    }
  }
  if (lost && !broken_) break_links();
  return lost;
}

void VerbsFabric::break_links() {
  // The team fails here: tell every peer at once, so that none waits on
  // us for ever. Our queue pairs go to the error state (a peer's next
  // write or probe fails), and a goodbye saying so goes out.
  broken_ = true;
  lost_ = true;
  lost_leave_ = true;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  for (uint32_t k = 0; k < nmade_; ++k) {
    const uint32_t r = made_[k];
    VLink& l = links_[r];
    // A peer that never reached us hears it when it does (on_cm).
    if (l.state == VLink::State::kIdle) continue;
    if (l.qp != nullptr) net_->api().modify_qp(l.qp, &a, IBV_QP_STATE);
    // Before seal a peer may not have its end yet (it would drop the
    // message); it has not had our hello either, so it writes nothing.
    if (sealed_ && (l.state == VLink::State::kReady ||
                    l.state == VLink::State::kConnecting))
      send_cm(r, CmMsg::kBye);
    if (l.state == VLink::State::kConnecting) --connecting_;
    if (l.state != VLink::State::kNone) l.state = VLink::State::kFailed;
  }
}

bool VerbsFabric::tx_flushed() const {
  for (uint32_t k = 0; k < nmade_; ++k) {
    const VLink& l = links_[made_[k]];
    if (l.state == VLink::State::kReady &&
        (l.msgs != shadow_head(*l.shadow.ctl) || l.outstanding != 0))
      return false;
    if (l.state == VLink::State::kConnecting &&
        shadow_head(*l.shadow.ctl) != 0)
      return false;
  }
  return true;
}

uint32_t VerbsFabric::attention() const {
  return seg_header(seg_)->attention.load(std::memory_order_acquire);
}

}  // namespace ucc::plat::verbs

#include "platform/tcp/tcp_fabric.h"

#include <unistd.h>

#include <cstring>
#include <new>
#include <type_traits>

#include "platform/os/log.h"
#include "platform/tcp/tcp_conn.h"
#include "platform/tcp/tcp_net.h"

namespace ucc::plat::tcp {

TcpFabric::TcpFabric(TcpNet* net, uint32_t id, const FabricConfig& cfg)
    : InboxFabric(cfg), net_(net), id_(id) {
  // Pages of inboxes of ranks not reached over TCP are never touched (a
  // large arena is fresh mappings); the per-peer state comes at connect.
  for (int pass = 0; pass < 2; ++pass) {
    seg_ = mem_.take<char>(segment_bytes(cfg), 64);
    regs_ = mem_.take<Reg>(kMaxRmaRegs);
    if (pass == 0 && !mem_.commit()) return;  // seg_ stays nullptr
  }
  seg_init(seg_, cfg, getpid());
  for (uint32_t h = 0; h < kMaxRmaRegs; ++h) regs_[h] = Reg{};
}

TcpFabric::~TcpFabric() {
  for (uint32_t i = 0; i < nmade_; ++i)
    if (links_[made_[i]].conn != nullptr) net_->detach(&links_[made_[i]]);
  // The links need no destructor; the blocks go with their arenas.
  static_assert(std::is_trivially_destructible_v<Link> &&
                std::is_trivially_destructible_v<Reg> &&
                std::is_trivially_destructible_v<Peer>);
}

Status TcpFabric::connect(const FabricAddr* addrs, const bool* mine) {
  if (seg_ == nullptr) return Status::kNoMemory;
  Status st = take_pairs(mine, false, seg_, true);
  if (failed(st)) return st;
  // The shadows and links of peers never reached stay untouched pages (a
  // large block is a fresh mapping); the addresses are all written.
  const size_t sb = shadow_bytes(cfg_);
  for (int pass = 0; pass < 2; ++pass) {
    shadows_ = link_mem_.take<char>(size_t{npairs()} * sb, 64);
    links_ = link_mem_.take<Link>(npairs());
    peers_ = link_mem_.take<Peer>(npairs());
    made_ = link_mem_.take<uint32_t>(npairs());
    if (pass == 0 && !link_mem_.commit()) return Status::kNoMemory;
  }
  nmade_ = 0;
  for (uint32_t r = 0; r < cfg_.nranks; ++r) {
    if (!serves(r)) continue;
    TcpAddr a;
    memcpy(&a, addrs[r].bytes, sizeof(a));
    if (addrs[r].kind != kTcpAddrMagic || a.slot_size != cfg_.slot_size ||
        a.nslots != cfg_.nslots || a.nranks != cfg_.nranks ||
        a.instance == 0) {
      UCC_ERROR(
          "rank %u: team rank %u has no TCP address, or its fabric differs "
          "(slot %u/%u, slots %u/%u, ranks %u/%u)",
          cfg_.rank, r, a.slot_size, cfg_.slot_size, a.nslots, cfg_.nslots,
          a.nranks, cfg_.nranks);
      return Status::kError;
    }
    if (a.instance == net_->instance()) {
      UCC_ERROR("tcp: team rank %u is in this engine: it shares our host", r);
      return Status::kError;
    }
    const uint32_t k = pair_of(r);
    Peer& p = peers_[k];
    p.instance = a.instance;
    memcpy(p.key, a.key, sizeof(p.key));
    p.rma_min = rma_agree(cfg_.rma ? net_->config().zcopy_min : 0, a.rma_min);
    p.ip = a.ip;
    p.ep = a.ep;
    p.rank = r;
    p.port = a.port;
    p.made = false;
  }
  return Status::kOk;
}

void TcpFabric::make(uint32_t k) {
  const Peer& p = peers_[k];
  Link& l = *new (&links_[k]) Link;
  l.fab = this;
  l.rank = p.rank;
  l.peer_ep = p.ep;
  l.instance = p.instance;
  l.peer_ip = p.ip;
  l.peer_port = p.port;
  memcpy(l.peer_key, p.key, sizeof(l.peer_key));
  l.rma_min = p.rma_min;
  l.state = Link::State::kLive;
  l.shadow = pair(p.rank).tx();  // (the pair is made now)
  l.rx = pair(p.rank).rx();
  if (leaving_ || failed_) owe_bye(l);
  peers_[k].made = true;
  made_[nmade_++] = k;
}

Link& TcpFabric::reached(uint32_t k) {
  Link& l = made(k);
  // A connection that failed keeps its links (lost): none is made again.
  if (l.conn == nullptr && l.state == Link::State::kLive &&
      failed(net_->attach(&l)))
    l.state = Link::State::kLost;  // no memory for a connection
  return l;
}

void TcpFabric::tx_commit(uint32_t peer, uint32_t len, const MsgKey& key,
                          uint8_t kind, uint32_t lag) {
  const uint32_t k = pair_of(peer);
  pair(peer).tx_commit(cfg_, len, key, kind, lag);
  ++events_;
  net_->kick(&reached(k));  // (the first message: sent once connected)
}

void TcpFabric::rx_release(uint32_t peer, uint32_t i) {
  const uint32_t k = pair_of(peer);
  InboxPair* pp = made_pair(peer);
  if (pp == nullptr || !pp->rx_release(i)) return;
  ++events_;
  net_->owe_credit(&made(k), false);  // made by the message's frame already
}

void TcpFabric::publish(Link& l, uint32_t slot) {
  InboxCtl* c = l.rx.ctl;
  publish_head(c, cfg_.nslots - 1, ++l.heads, slot);
  const auto* mh = reinterpret_cast<const MsgHdr*>(l.rx.slot(cfg_, slot));
  if (mh->kind != 0)
    seg_header(seg_)->attention.fetch_add(1, std::memory_order_release);
}

bool TcpFabric::peer_lost() const {
  for (uint32_t i = 0; i < nmade_; ++i) {
    Link& l = links_[made_[i]];
    if (l.state == Link::State::kLost) return true;
    // The engine asks when a team is stuck: a peer silent past the
    // keepalive gets pinged, and past the timeout its links are lost.
    if (l.state == Link::State::kLive) net_->want_ping(&l);
  }
  return false;
}

// A team stuck on a peer it has not heard from yet: the connection to its
// engine is made now, which tells us whether it is there at all (a dead
// engine's port refuses, a host cut off times out), and our credits go
// out, which makes the peer's link, so that a peer whose team has failed
// tells us so (fail()).
void TcpFabric::waiting_on(uint32_t peer) {
  if (!serves(peer)) return;
  const uint32_t k = pair_of(peer);
  if (peers_[k].made && links_[k].conn != nullptr) return;  // reached
  net_->owe_credit(&reached(k), true);
}

void TcpFabric::fail() {
  failed_ = true;
  say_goodbyes();
}

void TcpFabric::say_goodbyes() {
  for (uint32_t i = 0; i < nmade_; ++i) {
    Link& l = links_[made_[i]];
    if (l.state != Link::State::kLive) continue;
    owe_bye(l);
    net_->kick(&l);
  }
}

bool TcpFabric::tx_flushed() const {
  for (uint32_t i = 0; i < nmade_; ++i) {
    const Link& l = links_[made_[i]];
    // A link given up on (lost, or the peer left) owes nothing. One whose
    // connection is not made yet, is being made again, or lost the race
    // of two calls (on_hello: the peer's call stands, and needs our
    // answer) still owes its messages: those need our progress too.
    if (l.state != Link::State::kLive) continue;
    // Our own thread wrote head (tx_commit): relaxed.
    if (l.msgs != shadow_head(*l.shadow.ctl))
      return false;
    // Written but not acknowledged on a call of ours that the peer has
    // not taken yet: it may still refuse it (both engines called), and
    // they then go again on the connection that stands, which needs our
    // progress. (A connection that breaks after the peer took it is not
    // waited for: the peer has most likely read them, and waiting would
    // take its progress to remake the connection.)
    const Conn* c = l.conn;
    if (l.msgs != l.acked && c != nullptr && c->state == Conn::State::kReady &&
        !c->confirmed)
      return false;
  }
  return true;
}

uint32_t TcpFabric::attention() const {
  return seg_header(seg_)->attention.load(std::memory_order_acquire);
}

void TcpFabric::leave(bool lost) {
  leaving_ = true;
  failed_ = failed_ || lost;
  say_goodbyes();
}

bool TcpFabric::drained() const {
  for (uint32_t i = 0; i < nmade_; ++i) {
    const Link& l = links_[made_[i]];
    // A connection given up delivers nothing more; a link never
    // connected has nothing under way.
    if (l.conn == nullptr || l.conn->state == Conn::State::kDead) continue;
    // A live peer must have our goodbye (and so every message before it:
    // one lost in a break is sent again on the next connection), a peer
    // that left our answer to its own.
    if ((l.state == Link::State::kLive && !l.bye_acked) || l.byeack_owed)
      return false;
  }
  return true;
}

}  // namespace ucc::plat::tcp

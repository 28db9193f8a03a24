#include "platform/wire/endpoint.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "platform/os/log.h"
#include "platform/wire/wire.h"

namespace ucc::plat::wire {
namespace {}  // namespace

Status Endpoint::init(Wire* w, uint32_t id, const FabricConfig& cfg) {
  wire_ = w;
  id_ = id;
  cfg_ = cfg;
  seg_bytes_ = segment_bytes(cfg);
  const size_t sb = shadow_bytes(cfg);
  for (int pass = 0; pass < 2; ++pass) {
    seg_ = mem_.take<char>(seg_bytes_, 4096);
    shadows_ = mem_.take<char>(sb * cfg.nranks, 64);
    links_ = mem_.take<Link>(cfg.nranks);
    if (pass == 0 && !mem_.commit()) return Status::kNoMemory;
  }
  seg_init(seg_, cfg, getpid());
  for (uint32_t i = 0; i < cfg.nranks; ++i) {
    Link* l = new (&links_[i]) Link;
    char* base = shadows_ + sb * i;
    l->shadow.ctl = inbox_init(base);
    l->shadow.slots = base + sizeof(InboxCtl);
  }
  state_ = State::kOpen;
  return Status::kOk;
}

void Endpoint::release() {
  static_assert(std::is_trivially_destructible_v<Link>);
  mem_.release();
  seg_ = nullptr;
  shadows_ = nullptr;
  links_ = nullptr;
  state_ = State::kFree;
}

Status Endpoint::connect(const FabricAddr* addrs, const bool* mine) {
  if (state_ != State::kOpen) return Status::kInvalidParam;
  const WireConfig& wc = wire_->config();
  const uint64_t now = wire_->now();
  for (uint32_t i = 0; i < cfg_.nranks; ++i) {
    Link& l = links_[i];
    // Ourselves (direct, into our segment) and ranks reached otherwise
    // have no link: nothing is sent to them or taken from them.
    l.state = Peer::kLeft;
    if (i == cfg_.rank || !mine[i]) continue;
    WireAddr a;
    memcpy(&a, addrs[i].bytes, sizeof(a));
    if (addrs[i].kind != kWireAddrMagic || a.slot_size != cfg_.slot_size ||
        a.nslots != cfg_.nslots || a.nranks != cfg_.nranks) {
      UCC_ERROR(
          "rank %u: peer %u is not on the wire or its fabric differs "
          "(slot %u/%u, slots %u/%u, ranks %u/%u)",
          cfg_.rank, i, a.slot_size, cfg_.slot_size, a.nslots, cfg_.nslots,
          a.nranks, cfg_.nranks);
      return Status::kError;
    }
    l.mac = a.mac;
    l.ep = a.ep;
    l.state = Peer::kLive;
    l.rto = uint64_t{wc.rto_min_us} * 2000;
    l.heard = now;
    l.pinged = now;
  }
  state_ = State::kConnected;
  return Status::kOk;
}

void Endpoint::kick(uint32_t peer) {
  if (state_ == State::kConnected) pump(peer);
}

bool Endpoint::peer_lost() const {
  if (state_ != State::kConnected) return false;
  const uint64_t limit = uint64_t{wire_->config().peer_timeout_ms} * 1000000;
  for (uint32_t i = 0; i < cfg_.nranks; ++i) {
    const Link& l = links_[i];
    if (l.state == Peer::kLost ||
        (l.state == Peer::kLive && wire_->now() - l.heard > limit))
      return true;
  }
  return false;
}

bool Endpoint::send_frame(uint32_t peer, FrameType t, uint8_t flags,
                          uint32_t seq, uint16_t slot, uint32_t off,
                          const void* data, uint32_t len) {
  Link& l = links_[peer];
  FrameHdr h{};
  h.magic = kFrameMagic;
  h.version = kFrameVersion;
  h.type = t;
  h.dst_ep = l.ep;
  h.src_ep = id_;
  h.src_rank = cfg_.rank;
  h.seq = seq;
  h.ack = l.rcv;
  h.sack = l.have >> 1;
  h.ctl = l.ctl_out + 1;
  h.ctl_ack = l.ctl_in;
  h.slot = slot;
  h.flags = flags;
  h.off = off;
  h.len = len;
  const InboxCtl* in = seg_ctl(seg_, peer);
  for (uint32_t k = 0; k < cfg_.nslots; ++k)
    h.done[k] = in->done[k].load(std::memory_order_relaxed);
  if (!wire_->send(Mac::unpack(l.mac), &h, data, len)) return false;
  ++l.ctl_out;
  if (memcmp(l.done_sent, h.done, cfg_.nslots) != 0) {
    memcpy(l.done_sent, h.done, cfg_.nslots);
    l.ctl_need = l.ctl_out;
  }
  l.ack_owed = false;
  l.ack_at = wire_->now();
  return true;
}

bool Endpoint::done_changed(uint32_t peer) const {
  const InboxCtl* in = seg_ctl(seg_, peer);
  const Link& l = links_[peer];
  for (uint32_t k = 0; k < cfg_.nslots; ++k)
    if (in->done[k].load(std::memory_order_relaxed) != l.done_sent[k])
      return true;
  return false;
}

uint32_t Endpoint::pump(uint32_t peer) {
  Link& l = links_[peer];
  if (l.state != Peer::kLive) return 0;
  const uint32_t window = wire_->config().window;
  const uint32_t mask = cfg_.nslots - 1;
  uint32_t n = 0;
  while (l.nxt - l.una < window) {
    // Our own thread wrote head (the fabric's tx_commit): relaxed.
    if (l.msgs == shadow_head(*l.shadow.ctl)) break;
    const uint32_t slot = l.shadow.ctl->order[l.msgs & mask] & mask;
    const char* base = l.shadow.slot(cfg_, slot);
    uint32_t mlen = reinterpret_cast<const MsgHdr*>(base)->len;
    if (mlen > cfg_.slot_size) mlen = cfg_.slot_size;
    const uint32_t total = static_cast<uint32_t>(kSlotHdr) + mlen;
    uint32_t chunk = total - l.msg_off;
    if (chunk > wire_->max_payload()) chunk = wire_->max_payload();
    const bool end = l.msg_off + chunk == total;
    const uint8_t flags = end ? kLast : 0;
    if (!send_frame(peer, FrameType::kData, flags, l.nxt,
                    static_cast<uint16_t>(slot), l.msg_off, base + l.msg_off,
                    chunk))
      break;
    l.win[l.nxt % kMaxWindow] = TxEnt{
        wire_->now(), l.msg_off, chunk, static_cast<uint16_t>(slot), flags, 1};
    if (l.una == l.nxt) l.check_at = wire_->now() + l.rto;
    ++l.nxt;
    wire_->counters().tx_bytes += chunk;
    l.msg_off += chunk;
    if (end) {
      ++l.msgs;
      l.msg_off = 0;
    }
    ++n;
  }
  return n;
}

uint32_t Endpoint::resend_due(uint32_t peer, bool holes_only) {
  Link& l = links_[peer];
  const uint64_t now = wire_->now();
  const uint64_t rto_max = uint64_t{wire_->config().rto_max_us} * 1000;
  // Holes: frames older than one the peer already has.
  uint32_t top = l.una;
  if (holes_only) {
    for (uint32_t s = l.una; s != l.nxt; ++s)
      if (l.win[s % kMaxWindow].tries == 0) top = s;
  }
  uint32_t n = 0;
  uint64_t next = UINT64_MAX;
  for (uint32_t s = l.una; s != (holes_only ? top : l.nxt); ++s) {
    TxEnt& e = l.win[s % kMaxWindow];
    if (e.tries == 0) continue;
    uint64_t wait = l.rto << (e.tries > 6 ? 6 : e.tries - 1);
    if (wait > rto_max) wait = rto_max;
    if (holes_only) wait = l.srtt > 20000 ? l.srtt : 20000;
    if (now - e.sent_ns < wait) {
      if (e.sent_ns + wait < next) next = e.sent_ns + wait;
      continue;
    }
    const char* base = l.shadow.slot(cfg_, e.slot);
    if (!send_frame(peer, FrameType::kData, e.flags, s, e.slot, e.off,
                    base + e.off, e.len))
      break;
    e.sent_ns = now;
    if (e.tries < 255) ++e.tries;
    ++wire_->counters().retransmits;
    ++n;
  }
  if (!holes_only) l.check_at = next == UINT64_MAX ? now + l.rto : next;
  return n;
}

void Endpoint::on_frame(const FrameHdr& h, const uint8_t* payload,
                        uint64_t src_mac) {
  if (state_ != State::kConnected && state_ != State::kClosing) return;
  if (h.src_rank >= cfg_.nranks || h.src_rank == cfg_.rank) {
    ++wire_->counters().bad_frames;
    return;
  }
  Link& l = links_[h.src_rank];
  if (l.mac != src_mac || l.ep != h.src_ep) {
    ++wire_->counters().bad_frames;  // not the member we connected to
    return;
  }
  l.heard = wire_->now();
  on_acks(l, h);
  switch (h.type) {
    case FrameType::kData:
      on_data(l, h.src_rank, h, payload);
      break;
    case FrameType::kPing:
      l.ack_owed = true;
      break;
    case FrameType::kBye:
      if (l.state == Peer::kLive) {
        l.state = (h.flags & kLost) != 0 ? Peer::kLost : Peer::kLeft;
        if (l.state == Peer::kLost)
          UCC_INFO("wire: rank %u of a team reports it failed", h.src_rank);
      }
      break;
    default:
      break;
  }
  if (h.type != FrameType::kBye && l.state == Peer::kLive) {
    // Acknowledgements may have opened the window.
    pump(h.src_rank);
  }
}

void Endpoint::on_acks(Link& l, const FrameHdr& h) {
  const uint32_t inflight = l.nxt - l.una;
  if (h.ack - l.una <= inflight) {
    const uint64_t now = wire_->now();
    for (uint32_t s = l.una; s != h.ack; ++s) {
      const TxEnt& e = l.win[s % kMaxWindow];
      if (e.tries != 1) continue;  // Karn: no sample from a resent frame
      const uint64_t r = now - e.sent_ns;
      if (l.srtt == 0) {
        l.srtt = r;
        l.rttvar = r / 2;
      } else {
        const uint64_t d = r > l.srtt ? r - l.srtt : l.srtt - r;
        l.rttvar = (3 * l.rttvar + d) / 4;
        l.srtt = (7 * l.srtt + r) / 8;
      }
      const WireConfig& wc = wire_->config();
      uint64_t rto = l.srtt + 4 * l.rttvar;
      const uint64_t lo = uint64_t{wc.rto_min_us} * 1000;
      const uint64_t hi = uint64_t{wc.rto_max_us} * 1000;
      l.rto = rto < lo ? lo : (rto > hi ? hi : rto);
    }
    l.una = h.ack;
    bool any = false;
    for (uint32_t i = 0; i < 64; ++i) {
      if (((h.sack >> i) & 1) == 0) continue;
      const uint32_t s = h.ack + 1 + i;
      if (s - l.una < l.nxt - l.una) {
        l.win[s % kMaxWindow].tries = 0;
        any = true;
      }
    }
    if (any) resend_due(static_cast<uint32_t>(&l - links_), true);
  }
  if (!l.ctl_any || static_cast<int32_t>(h.ctl - l.ctl_in) > 0) {
    l.ctl_any = true;
    l.ctl_in = h.ctl;
    // C1 (fabric/inbox.h) reads these with acquire; one thread here, so
    // release is only for symmetry with the shm fabric.
    for (uint32_t k = 0; k < cfg_.nslots; ++k)
      l.shadow.ctl->done[k].store(h.done[k], std::memory_order_release);
  }
  if (static_cast<int32_t>(h.ctl_ack - l.ctl_acked) > 0)
    l.ctl_acked = h.ctl_ack;
}

void Endpoint::on_data(Link& l, uint32_t peer, const FrameHdr& h,
                       const uint8_t* p) {
  l.ack_owed = true;  // new or not: our earlier ack may have been lost
  const uint32_t d = h.seq - l.rcv;
  if (d >= kMaxWindow || ((l.have >> d) & 1) != 0) {
    ++wire_->counters().dup_rx;
    return;
  }
  // The put must stay inside the slot it names.
  const uint64_t room = kSlotHdr + cfg_.slot_size;
  if (h.slot >= cfg_.nslots || h.off > room || h.len > room - h.off) {
    ++wire_->counters().bad_frames;
    return;
  }
  if (state_ == State::kConnected) {
    InboxView in{seg_ctl(seg_, peer), seg_slots(seg_, cfg_, peer)};
    memcpy(in.slot(cfg_, h.slot) + h.off, p, h.len);
  }
  wire_->counters().rx_bytes += h.len;
  l.have |= uint64_t{1} << d;
  if ((h.flags & kLast) != 0) {
    l.last |= uint64_t{1} << d;
    l.rslot[h.seq % kMaxWindow] = static_cast<uint8_t>(h.slot);
  }
  while ((l.have & 1) != 0) {
    if ((l.last & 1) != 0 && state_ == State::kConnected)
      publish(peer, l.rslot[l.rcv % kMaxWindow]);
    l.have >>= 1;
    l.last >>= 1;
    ++l.rcv;
  }
}

void Endpoint::publish(uint32_t peer, uint32_t slot) {
  InboxCtl* c = seg_ctl(seg_, peer);
  Link& l = links_[peer];
  publish_head(c, cfg_.nslots - 1, ++l.heads, slot);
  const auto* mh = reinterpret_cast<const MsgHdr*>(
      InboxView{c, seg_slots(seg_, cfg_, peer)}.slot(cfg_, slot));
  if (mh->kind != 0) {
    reinterpret_cast<SegHeader*>(seg_)->attention.fetch_add(
        1, std::memory_order_release);
  }
}

uint64_t Endpoint::tick() {
  const WireConfig& wc = wire_->config();
  const uint64_t now = wire_->now();
  const uint64_t keep = uint64_t{wc.keepalive_ms} * 1000000;
  const uint64_t limit = uint64_t{wc.peer_timeout_ms} * 1000000;
  uint64_t n = 0;
  for (uint32_t p = 0; p < cfg_.nranks; ++p) {
    if (p == cfg_.rank) continue;
    Link& l = links_[p];
    if (l.state == Peer::kLost) continue;
    if (l.state == Peer::kLive) {
      n += pump(p);
      if (l.una != l.nxt && now >= l.check_at) n += resend_due(p, false);
    }
    bool ack = l.ack_owed || (l.state == Peer::kLive && done_changed(p));
    // A credit update the peer has not confirmed: say it again.
    if (!ack && l.state == Peer::kLive &&
        static_cast<int32_t>(l.ctl_acked - l.ctl_need) < 0 &&
        now - l.ack_at > l.rto)
      ack = true;
    if (ack && send_frame(p, FrameType::kAck, 0, 0, 0, 0, nullptr, 0)) ++n;
    if (l.state != Peer::kLive || state_ != State::kConnected) continue;
    if (now - l.heard > keep && now - l.pinged > keep) {
      l.pinged = now;
      if (send_frame(p, FrameType::kPing, 0, 0, 0, 0, nullptr, 0)) ++n;
    }
    if (now - l.heard > limit) {
      l.state = Peer::kLost;
      UCC_INFO("wire: team rank %u silent for %u ms: lost", p,
               wc.peer_timeout_ms);
    }
  }
  return n;
}

bool Endpoint::drained() const {
  for (uint32_t p = 0; p < cfg_.nranks; ++p) {
    const Link& l = links_[p];
    if (p == cfg_.rank || l.state != Peer::kLive) continue;
    if (l.una != l.nxt ||
        l.msgs != shadow_head(*l.shadow.ctl))
      return false;
  }
  return true;
}

}  // namespace ucc::plat::wire

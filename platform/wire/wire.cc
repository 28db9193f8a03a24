#include "platform/wire/wire.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "platform/os/clock.h"
#include "platform/os/log.h"
#include "platform/wire/endpoint.h"
#include "platform/wire/wire_fabric.h"

namespace ucc::plat::wire {
namespace {

constexpr uint32_t kIdxBits = 12;  // endpoint id: generation << 12 | slot
constexpr uint32_t kIdxMask = (1u << kIdxBits) - 1;

bool valid_prob(double p) { return p >= 0 && p <= 1; }

}  // namespace

Status Wire::init(const WireConfig& cfg, FramePort* const* ports,
                  uint32_t nports) {
  const WireFaults& f = cfg.faults;
  if (nports == 0 || cfg.window == 0 || cfg.window > kMaxWindow ||
      cfg.rto_min_us == 0 || cfg.rto_max_us < cfg.rto_min_us ||
      cfg.peer_timeout_ms == 0 || cfg.keepalive_ms == 0 ||
      cfg.max_endpoints == 0 || cfg.max_endpoints > kIdxMask + 1 ||
      !valid_prob(f.drop) || !valid_prob(f.dup) || !valid_prob(f.reorder) ||
      !valid_prob(f.corrupt))
    return Status::kInvalidParam;
  cfg_ = cfg;
  ports_ = ports;
  nports_ = nports;
  mac_ = ports[0]->mac();
  max_frame_ = ports[0]->max_frame();
  for (uint32_t i = 1; i < nports; ++i)
    if (ports[i]->max_frame() < max_frame_) max_frame_ = ports[i]->max_frame();
  if (max_frame_ < kFrameOverhead + 64) return Status::kInvalidParam;
  max_payload_ = (max_frame_ - kFrameOverhead) & ~63u;
  rng_ = cfg.faults.seed * 0x9E3779B97F4A7C15ull + 1;
  for (int pass = 0; pass < 2; ++pass) {
    eps_ = tables_.take<Endpoint*>(cfg.max_endpoints);
    gen_ = tables_.take<uint16_t>(cfg.max_endpoints);
    stage_ = tables_.take<uint8_t>(max_frame_, 64);
    held_ = tables_.take<uint8_t>(max_frame_, 64);
    loop_ = tables_.take<uint8_t>(size_t{kLoop} * max_frame_, 64);
    if (pass == 0 && !tables_.commit()) break;
  }
  if (eps_ == nullptr || gen_ == nullptr || stage_ == nullptr ||
      held_ == nullptr || loop_ == nullptr) {
    fini();
    return Status::kNoMemory;
  }
  now_ = now_ns();
  return Status::kOk;
}

void Wire::fini() {
  if (eps_ != nullptr) {
    for (uint32_t i = 0; i < top_; ++i) {
      if (eps_[i] == nullptr) continue;
      eps_[i]->release();
      delete eps_[i];
    }
  }
  tables_.release();
  eps_ = nullptr;
  gen_ = nullptr;
  stage_ = held_ = loop_ = nullptr;
  nopen_ = top_ = 0;
}

Endpoint* Wire::open_endpoint(const FabricConfig& cfg, FabricAddr* addr) {
  uint32_t i = 0;
  while (i < cfg_.max_endpoints && eps_[i] != nullptr) ++i;
  if (i == cfg_.max_endpoints) {
    UCC_ERROR("wire: all %u endpoints are in use", cfg_.max_endpoints);
    return nullptr;
  }
  auto* ep = new (std::nothrow) Endpoint;
  if (ep == nullptr) return nullptr;
  const uint32_t id = (uint32_t{++gen_[i]} << kIdxBits) | i;
  if (failed(ep->init(this, id, cfg))) {
    delete ep;
    return nullptr;
  }
  eps_[i] = ep;
  ++nopen_;
  if (i >= top_) top_ = i + 1;
  *addr = FabricAddr{};
  addr->kind = kWireAddrMagic;
  const WireAddr a{id, cfg.slot_size, cfg.nslots, cfg.nranks, mac_.pack()};
  memcpy(addr->bytes, &a, sizeof(a));
  return ep;
}

Fabric* Wire::open(const FabricConfig& cfg, FabricAddr* addr) {
  Endpoint* ep = open_endpoint(cfg, addr);
  if (ep == nullptr) return nullptr;
  auto* f = new (std::nothrow) WireFabric(ep);
  if (f == nullptr) close_endpoint(ep, false);
  return f;
}

void Wire::close(Fabric* f, bool lost) {
  auto* wf = static_cast<WireFabric*>(f);
  if (wf == nullptr) return;
  close_endpoint(wf->endpoint(), lost);
  delete wf;
}

void Wire::close_endpoint(Endpoint* ep, bool lost) {
  if (ep == nullptr) return;
  if (ep->state_ == Endpoint::State::kConnected) {
    for (uint32_t p = 0; p < ep->cfg_.nranks; ++p) {
      if (p == ep->cfg_.rank) continue;
      ep->send_frame(p, FrameType::kBye, lost ? kLost : 0, 0, 0, 0, nullptr, 0);
    }
    ep->state_ = Endpoint::State::kClosing;
    ep->closed_at_ = now_;
    return;  // progress() frees it once drained
  }
  const uint32_t i = ep->id_ & kIdxMask;
  ep->release();
  delete ep;
  vacate(i);
}

void Wire::vacate(uint32_t i) {
  eps_[i] = nullptr;
  --nopen_;
  while (top_ != 0 && eps_[top_ - 1] == nullptr) --top_;
}

uint64_t Wire::rand64() {
  // splitmix64
  uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool Wire::send(const Mac& dst, FrameHdr* h, const void* payload,
                uint32_t len) {
  const uint32_t flen = kFrameOverhead + len;
  if (len > max_payload_) return false;
  memcpy(stage_, dst.b, 6);
  memcpy(stage_ + 6, mac_.b, 6);
  stage_[12] = kEtherType >> 8;
  stage_[13] = kEtherType & 0xff;
  h->csum = 0;
  h->csum = crc32c(crc32c(0, h, sizeof(*h)), payload, len);
  memcpy(stage_ + kEthHdr, h, sizeof(*h));
  if (len != 0) memcpy(stage_ + kFrameOverhead, payload, len);
  const WireFaults& f = cfg_.faults;
  if (chance(f.drop)) {
    ++stats_.inj_drop;
    ++stats_.tx_frames;
    return true;
  }
  if (chance(f.corrupt)) {
    ++stats_.inj_corrupt;
    const uint64_t r = rand64();
    stage_[kEthHdr + (r % (flen - kEthHdr))] ^=
        static_cast<uint8_t>(1 + (r >> 32) % 255);
  }
  if (held_len_ == 0 && chance(f.reorder)) {
    ++stats_.inj_reorder;
    memcpy(held_, stage_, flen);
    held_len_ = flen;
    held_dst_ = dst;
    return true;  // goes out after the next frame
  }
  if (!emit(dst, stage_, flen)) {
    ++stats_.no_room;
    return false;
  }
  if (chance(f.dup)) {
    ++stats_.inj_dup;
    emit(dst, stage_, flen);
  }
  if (held_len_ != 0 && emit(held_dst_, held_, held_len_)) held_len_ = 0;
  return true;
}

bool Wire::emit(const Mac& dst, const uint8_t* f, uint32_t len) {
  if (dst == mac_) {
    if (loop_head_ - loop_tail_ == kLoop) return false;
    const uint32_t i = loop_head_++ % kLoop;
    memcpy(loop_ + size_t{i} * max_frame_, f, len);
    loop_len_[i] = len;
    ++stats_.tx_frames;
    return true;
  }
  if (!route(dst, f, len)) return false;
  ++stats_.tx_frames;
  return true;
}

bool Wire::route(const Mac& dst, const uint8_t* f, uint32_t len) {
  const uint64_t key = dst.pack();
  for (uint32_t i = 0; i < nroutes_; ++i)
    if (routes_[i].mac == key) return ports_[routes_[i].port]->tx(f, len);
  bool any = false;  // not learned yet: every port
  for (uint32_t p = 0; p < nports_; ++p) any |= ports_[p]->tx(f, len);
  return any;
}

void Wire::learn(const Mac& src, uint32_t port) {
  const uint64_t key = src.pack();
  for (uint32_t i = 0; i < nroutes_; ++i) {
    if (routes_[i].mac == key) {
      routes_[i].port = port;
      return;
    }
  }
  if (nroutes_ < kRoutes) routes_[nroutes_++] = Route{key, port};
}

void Wire::on_frame(void* ctx, uint32_t port, const uint8_t* f, uint32_t len) {
  static_cast<Wire*>(ctx)->receive(port, f, len);
}

void Wire::receive(uint32_t port, const uint8_t* f, uint32_t len) {
  ++stats_.rx_frames;
  if (len < kEthHdr) return;
  if (f[12] != (kEtherType >> 8) || f[13] != (kEtherType & 0xff))
    return;  // someone else's traffic (af_packet sees the whole link)
  Mac dst, src;
  memcpy(dst.b, f, 6);
  memcpy(src.b, f + 6, 6);
  if (dst != mac_) return;  // flooded to us, for another node
  if (len < kFrameOverhead) {
    ++stats_.bad_frames;
    return;
  }
  FrameHdr h;
  memcpy(&h, f + kEthHdr, sizeof(h));
  const uint32_t csum = h.csum;
  h.csum = 0;
  if (h.magic != kFrameMagic || h.version != kFrameVersion ||
      h.len != len - kFrameOverhead ||
      crc32c(crc32c(0, &h, sizeof(h)), f + kFrameOverhead, h.len) != csum) {
    ++stats_.bad_frames;
    return;
  }
  if (port != UINT32_MAX) learn(src, port);
  const uint32_t i = h.dst_ep & kIdxMask;
  if (i >= cfg_.max_endpoints || eps_[i] == nullptr || eps_[i]->id_ != h.dst_ep)
    return;  // an endpoint that has gone
  eps_[i]->on_frame(h, f + kFrameOverhead, src.pack());
}

uint64_t Wire::progress() {
  now_ = now_ns();
  uint64_t n = 0;
  for (uint32_t p = 0; p < nports_; ++p)
    n += ports_[p]->rx(&Wire::on_frame, this, p, 64);
  for (uint32_t k = loop_head_ - loop_tail_; k != 0; --k, ++n) {
    // The slot stays taken while we read it: receiving may send, and a
    // frame to ourselves must not land on the one being read.
    const uint32_t i = loop_tail_ % kLoop;
    receive(UINT32_MAX, loop_ + size_t{i} * max_frame_, loop_len_[i]);
    ++loop_tail_;
  }
  const uint64_t linger = uint64_t{cfg_.peer_timeout_ms} * 1000000;
  for (uint32_t i = 0; i < top_; ++i) {
    Endpoint* ep = eps_[i];
    if (ep == nullptr) continue;
    if (ep->state_ == Endpoint::State::kConnected ||
        ep->state_ == Endpoint::State::kClosing)
      n += ep->tick();
    if (ep->state_ == Endpoint::State::kClosing &&
        (ep->drained() || now_ - ep->closed_at_ > linger)) {
      ep->release();
      delete ep;
      vacate(i);
    }
  }
  if (held_len_ != 0 && emit(held_dst_, held_, held_len_)) held_len_ = 0;
  for (uint32_t p = 0; p < nports_; ++p) ports_[p]->flush();
  if (now_ >= next_maintain_) {
    next_maintain_ = now_ + 100000000ull;
    for (uint32_t p = 0; p < nports_; ++p) ports_[p]->maintain(now_);
  }
  return n;
}

bool Wire::busy() const {
  if (held_len_ != 0 || loop_head_ != loop_tail_) return true;
  for (uint32_t i = 0; i < top_; ++i) {  // top_ is 0 without a table
    const Endpoint* ep = eps_[i];
    if (ep == nullptr) continue;
    if (ep->state_ == Endpoint::State::kClosing) return true;
    if (ep->state_ != Endpoint::State::kConnected) continue;
    for (uint32_t p = 0; p < ep->cfg_.nranks; ++p) {
      const Endpoint::Link& l = ep->links_[p];
      if (l.state != Endpoint::Peer::kLive) continue;
      if (l.una != l.nxt || l.ack_owed) return true;
    }
  }
  return false;
}

}  // namespace ucc::plat::wire

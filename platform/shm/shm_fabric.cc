#include "platform/shm/shm_fabric.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "platform/os/log.h"
#include "platform/shm/seg_layout.h"
#include "platform/wire/endpoint.h"
#include "platform/wire/wire.h"

namespace ucc::plat::shm {

char* ShmTeamFabric::tx_at(const Peer& p, uint32_t s) const {
  return p.tx_slots + (s & (cfg_.nslots - 1)) * slot_stride(cfg_.slot_size);
}
char* ShmTeamFabric::rx_at(const Peer& p, uint32_t s) const {
  return p.rx_slots + (s & (cfg_.nslots - 1)) * slot_stride(cfg_.slot_size);
}

Status ShmTeamFabric::open(const FabricConfig& cfg, SegAddr* out,
                           wire::Wire* wire) {
  if (cfg.nranks == 0 || cfg.rank >= cfg.nranks || cfg.slot_size < 64 ||
      cfg.slot_size % 64 != 0 || cfg.nslots < 2 || cfg.nslots > kMaxSlots ||
      (cfg.nslots & (cfg.nslots - 1)) != 0)
    return Status::kInvalidParam;
  cfg_ = cfg;
  seg_bytes_ = segment_bytes(cfg);
  if (wire != nullptr) return open_wire(wire, out);
  fd_ = memfd_create("ucc-team", MFD_CLOEXEC);
  if (fd_ < 0) {
    UCC_ERROR("memfd_create failed: %s", strerror(errno));
    return Status::kNoMemory;
  }
  if (ftruncate(fd_, static_cast<off_t>(seg_bytes_)) != 0) {
    UCC_ERROR("ftruncate(%zu) failed: %s", seg_bytes_, strerror(errno));
    close();
    return Status::kNoMemory;
  }
  void* p =
      mmap(nullptr, seg_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    UCC_ERROR("mmap(%zu) failed: %s", seg_bytes_, strerror(errno));
    close();
    return Status::kNoMemory;
  }
  seg_ = static_cast<char*>(p);
  seg_init(seg_, cfg, getpid());
  if (failed(new_peers())) return Status::kNoMemory;
  *out = SegAddr{kSegMagic,  getpid(),   fd_,       cfg.slot_size,
                 cfg.nslots, cfg.nranks, seg_bytes_};
  return Status::kOk;
}

Status ShmTeamFabric::new_peers() {
  peers_ = static_cast<Peer*>(calloc(cfg_.nranks, sizeof(Peer)));
  if (peers_ == nullptr) {
    close();
    return Status::kNoMemory;
  }
  for (uint32_t i = 0; i < cfg_.nranks; ++i) {
    Peer* p = new (&peers_[i]) Peer;
    p->rx_ctl = seg_ctl(seg_, i);
    p->rx_slots = seg_slots(seg_, cfg_, i);
  }
  return Status::kOk;
}

Status ShmTeamFabric::open_wire(wire::Wire* wire, SegAddr* out) {
  ep_ = wire->open(cfg_, out);
  if (ep_ == nullptr) return Status::kNoMemory;
  wire_ = wire;
  seg_ = ep_->segment();
  return new_peers();
}

void ShmTeamFabric::point_tx(uint32_t i, char* base) {
  Peer& p = peers_[i];
  p.base = base;
  p.tx_ctl = seg_ctl(base, cfg_.rank);
  p.tx_slots = seg_slots(base, cfg_, cfg_.rank);
  p.tx_attention = &reinterpret_cast<SegHeader*>(base)->attention;
}

Status ShmTeamFabric::connect(const SegAddr* addrs) {
  if (ep_ != nullptr) {
    Status st = ep_->connect(addrs);
    if (failed(st)) return st;
    for (uint32_t i = 0; i < cfg_.nranks; ++i) {
      if (i == cfg_.rank) {
        point_tx(i, seg_);  // to ourselves: straight into our segment
        continue;
      }
      InboxView v = ep_->shadow(i);
      peers_[i].tx_ctl = v.ctl;
      peers_[i].tx_slots = v.slots;
    }
    return Status::kOk;
  }
  for (uint32_t i = 0; i < cfg_.nranks; ++i) {
    const SegAddr& a = addrs[i];
    if (a.magic != kSegMagic || a.slot_size != cfg_.slot_size ||
        a.nslots != cfg_.nslots || a.nranks != cfg_.nranks ||
        a.bytes != seg_bytes_) {
      UCC_ERROR(
          "rank %u: segment address of peer %u does not match ours "
          "(slot %u/%u, slots %u/%u, ranks %u/%u)",
          cfg_.rank, i, a.slot_size, cfg_.slot_size, a.nslots, cfg_.nslots,
          a.nranks, cfg_.nranks);
      return Status::kError;
    }
    peers_[i].pid = a.pid;
    if (i == cfg_.rank) {
      point_tx(i, seg_);
      peers_[i].bytes = 0;  // not a separate mapping
      continue;
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", a.pid, a.fd);
    int fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      UCC_ERROR("cannot open peer %u segment %s: %s", i, path, strerror(errno));
      return Status::kError;
    }
    void* p = mmap(nullptr, a.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) {
      UCC_ERROR("cannot map peer %u segment: %s", i, strerror(errno));
      return Status::kError;
    }
    const auto* h = static_cast<const SegHeader*>(p);
    if (h->magic != kSegMagic || h->version != kSegVersion ||
        h->owner_pid != a.pid) {
      munmap(p, a.bytes);
      UCC_ERROR("peer %u segment header mismatch", i);
      return Status::kError;
    }
    point_tx(i, static_cast<char*>(p));
    peers_[i].bytes = a.bytes;
  }
  return Status::kOk;
}

void ShmTeamFabric::seal() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void ShmTeamFabric::close(bool lost) {
  if (peers_ != nullptr) {
    for (uint32_t i = 0; i < cfg_.nranks; ++i) {
      if (peers_[i].bytes != 0) munmap(peers_[i].base, peers_[i].bytes);
    }
    free(peers_);
    peers_ = nullptr;
  }
  if (ep_ != nullptr) {
    wire_->close(ep_, lost);  // the segment goes with the endpoint
    ep_ = nullptr;
    seg_ = nullptr;
  }
  if (seg_ != nullptr) {
    // Peers keep their mapping: this tells them how we left. A member
    // that leaves normally may still have messages on their way to peers
    // that need nothing more from it, and its process may exit: peers must
    // not take either for a failure. Lost: we will not answer.
    reinterpret_cast<SegHeader*>(seg_)->closed.store(lost ? 2 : 1,
                                                     std::memory_order_release);
    munmap(seg_, seg_bytes_);
    seg_ = nullptr;
  }
  seal();
}

void* ShmTeamFabric::tx_reserve(uint32_t peer) {
  Peer& p = peers_[peer];
  if (p.tx_slot < 0) {
    const InboxCtl* c = p.tx_ctl;
    // Round robin from the last slot taken, as a ring would: a slot the
    // owner has just read is taken last, which keeps its lines from moving
    // between the two cores while they are still in use there.
    for (uint32_t k = 1; k <= cfg_.nslots; ++k) {
      uint32_t s = (p.tx_last + k) & (cfg_.nslots - 1);
      // C1 pairs with R1 in rx_release(): the owner is done with the slot.
      if (c->done[s].load(std::memory_order_acquire) == p.sent[s]) {
        p.tx_slot = static_cast<int32_t>(s);
        p.tx_last = s;
        break;
      }
    }
    if (p.tx_slot < 0) return nullptr;
  }
  return tx_at(p, static_cast<uint32_t>(p.tx_slot)) + kSlotHdr;
}

uint32_t ShmTeamFabric::tx_free(uint32_t peer) {
  const Peer& p = peers_[peer];
  const InboxCtl* c = p.tx_ctl;
  uint32_t n = 0;
  for (uint32_t s = 0; s < cfg_.nslots; ++s)
    n += c->done[s].load(std::memory_order_acquire) == p.sent[s] ? 1 : 0;
  return n;
}

void ShmTeamFabric::tx_commit(uint32_t peer, uint32_t len, const MsgKey& key,
                              uint8_t kind) {
  Peer& p = peers_[peer];
  auto s = static_cast<uint32_t>(p.tx_slot);
  auto* h = reinterpret_cast<MsgHdr*>(tx_at(p, s));
  h->len = len;
  h->kind = kind;
  h->key = key;
  InboxCtl* c = p.tx_ctl;
  c->order[p.tx_head & (cfg_.nslots - 1)] = static_cast<uint8_t>(s);
  ++p.sent[s];
  ++p.tx_head;
  p.tx_slot = -1;
  ++events_;
  // P1 pairs with C2 in rx_end(): slot and order entry before the count.
  c->head.store(p.tx_head, std::memory_order_release);
  if (p.tx_attention == nullptr) {
    ep_->kick(peer);  // over the wire: the receiver's side counts attention
  } else if (kind != 0) {
    // After P1, so a receiver that sees the count change finds the message.
    p.tx_attention->fetch_add(1, std::memory_order_release);
  }
}

uint32_t ShmTeamFabric::rx_poll(uint32_t peer) {
  Peer& p = peers_[peer];
  if (p.rx_dead != 0) {  // drop released entries, keeping the order
    uint32_t n = 0;
    for (uint32_t i = 0; i < p.npend; ++i) {
      if (((p.rx_dead >> i) & 1) == 0) p.pend[n++] = p.pend[i];
    }
    p.npend = n;
    p.rx_dead = 0;
    ++p.epoch;
  }
  // C2 pairs with P1. Unread order entries are intact (port.h), but a
  // broken sender could claim more messages than slots: never take more
  // than the free slots could hold.
  const InboxCtl* c = p.rx_ctl;
  uint32_t h = c->head.load(std::memory_order_acquire);
  if (h - p.rx_head > cfg_.nslots - p.npend)
    h = p.rx_head + (cfg_.nslots - p.npend);
  for (; p.rx_head != h; ++p.rx_head) {
    p.pend[p.npend++] = static_cast<uint8_t>(
        c->order[p.rx_head & (cfg_.nslots - 1)] & (cfg_.nslots - 1));
  }
  return p.npend;
}

const MsgHdr* ShmTeamFabric::rx_hdr(uint32_t peer, uint32_t i) const {
  const Peer& p = peers_[peer];
  if (i >= p.npend || ((p.rx_dead >> i) & 1)) return nullptr;
  return reinterpret_cast<const MsgHdr*>(rx_at(p, p.pend[i]));
}

const void* ShmTeamFabric::rx_payload(uint32_t peer, uint32_t i) const {
  const Peer& p = peers_[peer];
  return rx_at(p, p.pend[i]) + kSlotHdr;
}

void ShmTeamFabric::rx_release(uint32_t peer, uint32_t i) {
  Peer& p = peers_[peer];
  if (i >= p.npend || ((p.rx_dead >> i) & 1)) return;
  p.rx_dead |= uint64_t{1} << i;
  ++events_;
  // R1 pairs with C1: our reads of the slot happen before its reuse.
  std::atomic<uint8_t>& d = p.rx_ctl->done[p.pend[i]];
  d.store(static_cast<uint8_t>(d.load(std::memory_order_relaxed) + 1),
          std::memory_order_release);
}

bool ShmTeamFabric::peer_lost() const {
  if (ep_ != nullptr) return ep_->peer_lost();
  if (peers_ == nullptr) return false;
  for (uint32_t i = 0; i < cfg_.nranks; ++i) {
    if (i == cfg_.rank || peers_[i].base == nullptr) continue;
    const auto* h = reinterpret_cast<const SegHeader*>(peers_[i].base);
    uint32_t how = h->closed.load(std::memory_order_acquire);
    if (how == 2) return true;
    if (how == 0 && kill(h->owner_pid, 0) != 0 && errno == ESRCH)
      return true;  // died without leaving the team
  }
  return false;
}

uint32_t ShmTeamFabric::attention() const {
  return reinterpret_cast<const SegHeader*>(seg_)->attention.load(
      std::memory_order_acquire);
}

}  // namespace ucc::plat::shm

#include "platform/shm/shm_fabric.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "platform/os/log.h"

namespace ucc::plat::shm {
namespace {

constexpr uint32_t kSegMagic = 0x55435347u;  // "UCSG"
constexpr uint32_t kSegVersion = 1;
constexpr size_t kSlotHdr = 64;  // keeps payloads 64-byte aligned

struct SegHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t nranks;
  uint32_t slot_size;
  uint32_t nslots;
  int32_t owner_pid;
};

// Producer and consumer indices of one inbox, each on its own line.
struct InboxCtl {
  alignas(64) std::atomic<uint32_t> head;  // written by the sending peer
  alignas(64) std::atomic<uint32_t> tail;  // written by the owner
};
static_assert(sizeof(InboxCtl) == 128);

struct SlotHdr {
  uint32_t len;
  uint32_t tag;
};

constexpr size_t kCtlOff = 64;

size_t data_offset(uint32_t nranks) {
  size_t end = kCtlOff + sizeof(InboxCtl) * nranks;
  return (end + 4095) & ~size_t{4095};
}
size_t slot_stride(uint32_t slot_size) { return kSlotHdr + slot_size; }
size_t segment_bytes(const FabricConfig& c) {
  return data_offset(c.nranks) +
         slot_stride(c.slot_size) * c.nslots * static_cast<size_t>(c.nranks);
}

InboxCtl* ctl(char* seg, uint32_t inbox) {
  return reinterpret_cast<InboxCtl*>(seg + kCtlOff) + inbox;
}
char* slot(char* seg, const FabricConfig& c, uint32_t inbox, uint32_t idx) {
  size_t n = static_cast<size_t>(inbox) * c.nslots + (idx & (c.nslots - 1));
  return seg + data_offset(c.nranks) + n * slot_stride(c.slot_size);
}

}  // namespace

Status ShmTeamFabric::open(const FabricConfig& cfg, SegAddr* out) {
  if (cfg.nranks == 0 || cfg.rank >= cfg.nranks || cfg.slot_size < 64 ||
      cfg.slot_size % 64 != 0 || cfg.nslots < 2 ||
      (cfg.nslots & (cfg.nslots - 1)) != 0)
    return Status::kInvalidParam;
  cfg_ = cfg;
  seg_bytes_ = segment_bytes(cfg);
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
  auto* h = reinterpret_cast<SegHeader*>(seg_);
  h->magic = kSegMagic;
  h->version = kSegVersion;
  h->nranks = cfg.nranks;
  h->slot_size = cfg.slot_size;
  h->nslots = cfg.nslots;
  h->owner_pid = getpid();
  for (uint32_t i = 0; i < cfg.nranks; ++i) {
    InboxCtl* c = new (ctl(seg_, i)) InboxCtl;
    c->head.store(0, std::memory_order_relaxed);
    c->tail.store(0, std::memory_order_relaxed);
  }
  peers_ = static_cast<Peer*>(calloc(cfg.nranks, sizeof(Peer)));
  if (peers_ == nullptr) {
    close();
    return Status::kNoMemory;
  }
  for (uint32_t i = 0; i < cfg.nranks; ++i) new (&peers_[i]) Peer;
  *out = SegAddr{kSegMagic,  getpid(),   fd_,       cfg.slot_size,
                 cfg.nslots, cfg.nranks, seg_bytes_};
  return Status::kOk;
}

Status ShmTeamFabric::connect(const SegAddr* addrs) {
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
    if (i == cfg_.rank) {
      peers_[i].base = seg_;
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
    peers_[i].base = static_cast<char*>(p);
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

void ShmTeamFabric::close() {
  if (peers_ != nullptr) {
    for (uint32_t i = 0; i < cfg_.nranks; ++i) {
      if (peers_[i].bytes != 0) munmap(peers_[i].base, peers_[i].bytes);
    }
    free(peers_);
    peers_ = nullptr;
  }
  if (seg_ != nullptr) {
    munmap(seg_, seg_bytes_);
    seg_ = nullptr;
  }
  seal();
}

void* ShmTeamFabric::tx_reserve(uint32_t peer) {
  Peer& p = peers_[peer];
  if (p.tx_head - p.tx_tail >= cfg_.nslots) {
    // C1 pairs with R1 in rx_release(): the owner is done with the slot.
    p.tx_tail = ctl(p.base, cfg_.rank)->tail.load(std::memory_order_acquire);
    if (p.tx_head - p.tx_tail >= cfg_.nslots) return nullptr;
  }
  return slot(p.base, cfg_, cfg_.rank, p.tx_head) + kSlotHdr;
}

void ShmTeamFabric::tx_commit(uint32_t peer, uint32_t len, uint32_t tag) {
  Peer& p = peers_[peer];
  auto* h =
      reinterpret_cast<SlotHdr*>(slot(p.base, cfg_, cfg_.rank, p.tx_head));
  h->len = len;
  h->tag = tag;
  ++p.tx_head;
  ++events_;
  // P1 pairs with C2 in rx_peek(): header and payload before the index.
  ctl(p.base, cfg_.rank)->head.store(p.tx_head, std::memory_order_release);
}

const void* ShmTeamFabric::rx_peek(uint32_t peer, uint32_t* len,
                                   uint32_t* tag) {
  Peer& p = peers_[peer];
  if (p.rx_head == p.rx_tail) {
    // C2 pairs with P1.
    p.rx_head = ctl(seg_, peer)->head.load(std::memory_order_acquire);
    if (p.rx_head == p.rx_tail) return nullptr;
  }
  const char* s = slot(seg_, cfg_, peer, p.rx_tail);
  const auto* h = reinterpret_cast<const SlotHdr*>(s);
  *len = h->len;
  *tag = h->tag;
  return s + kSlotHdr;
}

void ShmTeamFabric::rx_release(uint32_t peer) {
  Peer& p = peers_[peer];
  ++p.rx_tail;
  ++events_;
  // R1 pairs with C1: our reads of the slot happen before its reuse.
  ctl(seg_, peer)->tail.store(p.rx_tail, std::memory_order_release);
}

}  // namespace ucc::plat::shm

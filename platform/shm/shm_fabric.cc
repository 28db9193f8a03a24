#include "platform/shm/shm_fabric.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "platform/os/log.h"
#include "platform/os/segment.h"

namespace ucc::plat::shm {
namespace {

// Our FabricAddr: where peers find our segment.
struct ShmAddr {
  int32_t pid;
  int32_t fd;
  uint32_t slot_size;
  uint32_t nslots;
  uint32_t nranks;
  uint32_t pad;
  uint64_t bytes;
  uint64_t key[2];  // the segment's secret (SegHeader::key)
};
static_assert(sizeof(ShmAddr) <= sizeof(FabricAddr::bytes));

}  // namespace

Status ShmFabric::open(const FabricConfig& cfg, FabricAddr* out) {
  if (!fabric_config_ok(cfg)) return Status::kInvalidParam;
  cfg_ = cfg;
  failed_ = false;
  seg_bytes_ = segment_bytes(cfg);
  void* p = nullptr;
  Status st = seg_create("ucc-team", seg_bytes_, &fd_, &p);
  if (failed(st)) return st;
  seg_ = static_cast<char*>(p);
  seg_init(seg_, cfg, getpid());
  SegHeader* sh = seg_header(seg_);
  if (getrandom(sh->key, sizeof(sh->key), 0) != sizeof(sh->key)) {
    close();
    return Status::kError;
  }
  *out = FabricAddr{};
  out->kind = kShmAddrMagic;
  const ShmAddr a{getpid(),   fd_, cfg.slot_size, cfg.nslots,
                  cfg.nranks, 0,   seg_bytes_,    {sh->key[0], sh->key[1]}};
  memcpy(out->bytes, &a, sizeof(a));
  return Status::kOk;
}

Status ShmFabric::connect(const FabricAddr* addrs, const bool* mine) {
  // Pairs and maps for ourselves and the ranks on this host only.
  Status st = take_pairs(mine, true, seg_);
  if (failed(st)) return st;
  for (int pass = 0; pass < 2; ++pass) {
    maps_ = mem_.take<Map>(npairs());
    if (pass == 0 && !mem_.commit()) {
      maps_ = nullptr;
      return Status::kNoMemory;
    }
  }
  for (uint32_t k = 0; k < npairs(); ++k) new (&maps_[k]) Map;
  for (uint32_t i = 0; i < cfg_.nranks; ++i) {
    if (!serves(i)) continue;
    Map& m = maps_[pair_of(i)];
    pair(i).set_stamped(true);  // peers store straight into our slots
    if (i == cfg_.rank) {  // to ourselves: straight into our segment
      m.base = seg_;
      m.pid = getpid();
    } else {
      ShmAddr a;
      memcpy(&a, addrs[i].bytes, sizeof(a));
      if (addrs[i].kind != kShmAddrMagic || a.slot_size != cfg_.slot_size ||
          a.nslots != cfg_.nslots || a.nranks != cfg_.nranks ||
          a.bytes != seg_bytes_) {
        UCC_ERROR(
            "rank %u: segment address of peer %u does not match ours "
            "(slot %u/%u, slots %u/%u, ranks %u/%u)",
            cfg_.rank, i, a.slot_size, cfg_.slot_size, a.nslots, cfg_.nslots,
            a.nranks, cfg_.nranks);
        return Status::kError;
      }
      // A sealed memfd of our own user and exactly this size, checked
      // before it is mapped: a forged address must not make us map (or
      // fault on) anything else (segment.h).
      void* p = nullptr;
      if (failed(seg_open_peer(a.pid, a.fd, a.bytes,
                               static_cast<int64_t>(geteuid()),
                               "team segment", &p)))
        return Status::kError;
      const SegHeader* h = seg_header(static_cast<char*>(p));
      if (h->magic != kSegMagic || h->version != kSegVersion ||
          h->owner_pid != a.pid || h->key[0] != a.key[0] ||
          h->key[1] != a.key[1]) {
        munmap(p, a.bytes);
        UCC_ERROR("peer %u segment header mismatch (or a forged address)", i);
        return Status::kError;
      }
      m.base = static_cast<char*>(p);
      m.bytes = a.bytes;
      m.pid = a.pid;
    }
    m.attention = &seg_header(m.base)->attention;
    pair(i).bind_tx(InboxView{seg_ctl(m.base, cfg_.rank),
                              seg_slots(m.base, cfg_, cfg_.rank)});
  }
  return Status::kOk;
}

void ShmFabric::seal() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void ShmFabric::close(bool lost) {
  if (maps_ != nullptr) {
    for (uint32_t k = 0; k < npairs(); ++k) {
      if (maps_[k].bytes != 0) munmap(maps_[k].base, maps_[k].bytes);
    }
  }
  static_assert(std::is_trivially_destructible_v<Map>);
  mem_.release();
  maps_ = nullptr;
  release_pairs();
  if (seg_ != nullptr) {
    // Peers keep their mapping: this tells them how we left. A member
    // that leaves normally may still have messages on their way to peers
    // that need nothing more from it, and its process may exit: peers must
    // not take either for a failure. Lost: we will not answer.
    seg_header(seg_)->closed.store(lost || failed_ ? 2 : 1,
                                   std::memory_order_release);
    munmap(seg_, seg_bytes_);
    seg_ = nullptr;
  }
  seal();
}

void ShmFabric::fail() {
  failed_ = true;
  if (seg_ != nullptr)
    seg_header(seg_)->closed.store(2, std::memory_order_release);
}

bool ShmFabric::peer_lost() const {
  if (maps_ == nullptr) return false;
  for (uint32_t k = 0; k < npairs(); ++k) {
    if (maps_[k].base == nullptr || maps_[k].base == seg_) continue;
    const SegHeader* h = seg_header(maps_[k].base);
    uint32_t how = h->closed.load(std::memory_order_acquire);
    if (how == 2) return true;
    if (how == 0 && kill(h->owner_pid, 0) != 0 && errno == ESRCH)
      return true;  // died without leaving the team
  }
  return false;
}

}  // namespace ucc::plat::shm

#include "platform/fabric/inbox.h"

#include <type_traits>

#include "platform/fabric/inbox_fabric.h"

namespace ucc::plat {

InboxCtl* inbox_init(void* at) {
  InboxCtl* ic = new (at) InboxCtl;
  ic->head.store(0, std::memory_order_relaxed);
  for (auto& d : ic->done) d.store(0, std::memory_order_relaxed);
  return ic;
}

void seg_init(char* seg, const FabricConfig& c, int32_t owner) {
  SegHeader* h = seg_header(seg);
  h->magic = kSegMagic;
  h->version = kSegVersion;
  h->nranks = c.nranks;
  h->slot_size = c.slot_size;
  h->nslots = c.nslots;
  h->owner_pid = owner;
  new (&h->attention) std::atomic<uint32_t>(0);
  new (&h->closed) std::atomic<uint32_t>(0);
  // The control blocks are left as they are: zero bytes, an empty inbox
  // (the segment is fresh memory). Writing every one would give each
  // member pages for all the team's ranks, where it uses its peers' only.
}

Status InboxFabric::take_pairs(const bool* mine, bool self, char* seg,
                               bool lazy) {
  const uint32_t n = cfg_.nranks;
  uint32_t count = 0;
  for (uint32_t r = 0; r < n; ++r)
    count += (r == cfg_.rank ? self : mine[r]) ? 1 : 0;
  for (int pass = 0; pass < 2; ++pass) {
    idx_ = pair_mem_.take<uint32_t>(n);
    pairs_ = pair_mem_.take<InboxPair>(count, 64);
    if (pass == 0 && !pair_mem_.commit()) {
      idx_ = nullptr;
      pairs_ = nullptr;
      return Status::kNoMemory;
    }
  }
  npairs_ = 0;
  nmade_pairs_ = 0;
  pair_seg_ = seg;
  for (uint32_t r = 0; r < n; ++r) {
    if (!(r == cfg_.rank ? self : mine[r])) {
      idx_[r] = kNoPair;
      continue;
    }
    // (A lazy pair's memory stays untouched until made: pages of a large
    // block are a fresh mapping.)
    idx_[r] = npairs_++ | kLazy;
    if (!lazy) make_pair(r);
  }
  return Status::kOk;
}

uint32_t InboxFabric::make_pair(uint32_t r) {
  // Callers route each rank to the transport that serves it (links.h);
  // a pair for any other would be written out of bounds.
  if (idx_[r] == kNoPair) __builtin_trap();
  const uint32_t k = idx_[r] & ~kLazy;
  InboxPair* p = new (&pairs_[k]) InboxPair;
  p->bind_rx(InboxView{seg_ctl(pair_seg_, r), seg_slots(pair_seg_, cfg_, r)});
  p->bind_tx(shadow_of(r, k));
  idx_[r] = k;
  ++nmade_pairs_;
  return k;
}

void InboxFabric::release_pairs() {
  static_assert(std::is_trivially_destructible_v<InboxPair>);
  pair_mem_.release();
  idx_ = nullptr;
  pairs_ = nullptr;
  npairs_ = 0;
}

}  // namespace ucc::plat

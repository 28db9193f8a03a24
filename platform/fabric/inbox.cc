#include "platform/fabric/inbox.h"

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
  for (uint32_t i = 0; i < c.nranks; ++i) inbox_init(seg_ctl(seg, i));
}

}  // namespace ucc::plat

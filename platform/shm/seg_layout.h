// Layout of a team segment (see shm_fabric.h): the memory a rank's peers
// put messages into. Shared by the shm fabric (peers map the segment) and
// the wire (platform/wire: peers' puts arrive as frames and are applied
// here by the owner's side of the wire, and a sender keeps a shadow of
// the one inbox it writes).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "platform/shm/shm_fabric.h"

namespace ucc::plat::shm {

inline constexpr uint32_t kSegMagic = 0x55435347u;  // "UCSG"
inline constexpr uint32_t kSegVersion = 2;
inline constexpr size_t kSlotHdr = 64;  // keeps payloads 64-byte aligned

struct SegHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t nranks;
  uint32_t slot_size;
  uint32_t nslots;
  int32_t owner_pid;
  uint32_t pad;
  std::atomic<uint32_t> attention;  // control messages delivered here
  std::atomic<uint32_t> closed;     // 1: the owner left normally; 2: lost
};
static_assert(sizeof(SegHeader) <= 64);

// Control of one inbox. Its slots are a pool, not a ring: the sender takes
// a free slot, fills it, appends its index to `order` and publishes `head`;
// the owner reads `order` to learn the arrival order and bumps the slot's
// `done` count when it releases it. A slot is free when the sender's count
// of messages put through it equals `done`. Each word has one writer, so
// no atomic read-modify-write is needed, and releases in any order free
// slots at once (a ring would keep every slot behind the oldest unreleased
// message). An `order` entry the owner has not read yet cannot be
// overwritten: that takes nslots more messages, and the unread ones hold
// their slots; so the owner copies entries out as it learns of them.
struct InboxCtl {
  alignas(64) std::atomic<uint32_t> head;            // by the sender
  alignas(64) std::atomic<uint8_t> done[kMaxSlots];  // by the owner
  alignas(64) uint8_t order[kMaxSlots];              // by the sender
};
static_assert(sizeof(InboxCtl) == 192);
static_assert(kMaxSlots <= 64, "one bit per slot in the owner's masks");

inline constexpr size_t kCtlOff = 64;

inline size_t data_offset(uint32_t nranks) {
  size_t end = kCtlOff + sizeof(InboxCtl) * nranks;
  return (end + 4095) & ~size_t{4095};
}
inline size_t slot_stride(uint32_t slot_size) { return kSlotHdr + slot_size; }
inline size_t segment_bytes(const FabricConfig& c) {
  return data_offset(c.nranks) +
         slot_stride(c.slot_size) * c.nslots * static_cast<size_t>(c.nranks);
}

inline InboxCtl* seg_ctl(char* seg, uint32_t inbox) {
  return reinterpret_cast<InboxCtl*>(seg + kCtlOff) + inbox;
}
// The first slot of `inbox`.
inline char* seg_slots(char* seg, const FabricConfig& c, uint32_t inbox) {
  return seg + data_offset(c.nranks) +
         static_cast<size_t>(inbox) * c.nslots * slot_stride(c.slot_size);
}

// Writes a fresh segment's header and empty inbox controls (the slots
// need no initialising). `owner` is the creating process.
inline void seg_init(char* seg, const FabricConfig& c, int32_t owner) {
  auto* h = reinterpret_cast<SegHeader*>(seg);
  h->magic = kSegMagic;
  h->version = kSegVersion;
  h->nranks = c.nranks;
  h->slot_size = c.slot_size;
  h->nslots = c.nslots;
  h->owner_pid = owner;
  new (&h->attention) std::atomic<uint32_t>(0);
  new (&h->closed) std::atomic<uint32_t>(0);
  for (uint32_t i = 0; i < c.nranks; ++i) {
    InboxCtl* ic = new (seg_ctl(seg, i)) InboxCtl;
    ic->head.store(0, std::memory_order_relaxed);
    for (auto& d : ic->done) d.store(0, std::memory_order_relaxed);
  }
}

// One inbox seen from its sender or its owner: its control and its slots.
struct InboxView {
  InboxCtl* ctl = nullptr;
  char* slots = nullptr;
  // Slot `idx`, masked into range (indices come from shared memory).
  char* slot(const FabricConfig& c, uint32_t idx) const {
    return slots + (idx & (c.nslots - 1)) * slot_stride(c.slot_size);
  }
};

}  // namespace ucc::plat::shm

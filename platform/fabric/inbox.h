// The memory every fabric works on, and the protocol over it (fabric.h):
// a member's segment holds one inbox per peer, and each inbox is a pool
// of slots with one control block. Over shared memory the sender writes
// straight into the receiver's segment; over a network (wire, TCP) it
// writes into a local shadow of that one inbox, the transport carries
// the message, and the receiver's side applies it to the real one. The
// protocol code below is the same everywhere.
//
// Layout of a segment:
//   SegHeader    64 bytes: identity, attention counter, how its owner left
//   InboxCtl[n]  one per peer (the peer's inbox for messages to us)
//   slots        per peer, nslots slots of kSlotHdr + slot_size bytes,
//                from a page boundary
//
// An inbox's slots are a pool, not a ring: the sender takes a free slot,
// fills it, appends its index to `order` and publishes `head`; the owner
// reads `order` to learn the arrival order and bumps the slot's `done`
// count when it releases it. A slot is free when the sender's count of
// messages put through it equals `done`. Each word has one writer, so no
// atomic read-modify-write is needed, and releases in any order free
// slots at once (a ring would keep every slot behind the oldest
// unreleased message). An `order` entry the owner has not read yet cannot
// be overwritten: that takes nslots more messages, and the unread ones
// hold their slots; so the owner copies entries out as it learns of them.
//
// Everything in a segment a peer can write is untrusted: indices are
// masked, counts bounded by the free slots, lengths checked by the caller.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "platform/fabric/fabric.h"

namespace ucc::plat {

inline constexpr uint32_t kSegMagic = 0x55435347u;  // "UCSG"
inline constexpr uint32_t kSegVersion = 3;
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
  // A random secret of the segment, also in its address (which only the
  // team's members get, through their OOB): whoever maps a segment
  // checks it, so a tenant that guesses a segment's pid and fd cannot
  // join another team's fabric.
  uint64_t key[2];
};
static_assert(sizeof(SegHeader) <= 64);

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
// The inbox control block and slots of one inbox alone (a shadow).
inline size_t shadow_bytes(const FabricConfig& c) {
  size_t b = sizeof(InboxCtl) + slot_stride(c.slot_size) * c.nslots;
  return (b + 63) & ~size_t{63};
}

inline SegHeader* seg_header(char* seg) {
  return reinterpret_cast<SegHeader*>(seg);
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
void seg_init(char* seg, const FabricConfig& c, int32_t owner);
// An empty inbox control block (a shadow's) at `at`.
InboxCtl* inbox_init(void* at);

// One inbox seen from its sender or its owner: its control and its slots.
struct InboxView {
  InboxCtl* ctl = nullptr;
  char* slots = nullptr;
  // Slot `idx`, masked into range (indices come from shared memory).
  char* slot(const FabricConfig& c, uint32_t idx) const {
    return slots + (idx & (c.nslots - 1)) * slot_stride(c.slot_size);
  }
};

// The protocol between this member and one peer: sending into the
// peer's inbox for us (tx: its memory, or our shadow of it), receiving
// from our inbox for the peer (rx: in our segment). Geometry comes from
// the fabric's configuration, passed to every call.
class InboxPair {
 public:
  void bind_tx(InboxView v) { tx_ = v; }
  void bind_rx(InboxView v) { rx_ = v; }
  bool has_tx() const { return tx_.ctl != nullptr; }
  const InboxView& tx() const { return tx_; }
  const InboxView& rx() const { return rx_; }

  // Sender (fabric.h).
  void* tx_reserve(const FabricConfig& c) {
    if (tx_slot_ < 0) {
      const InboxCtl* ctl = tx_.ctl;
      // Round robin from the last slot taken, as a ring would: a slot the
      // owner has just read is taken last, which keeps its lines from
      // moving between the two cores while they are still in use there.
      for (uint32_t k = 1; k <= c.nslots; ++k) {
        uint32_t s = (tx_last_ + k) & (c.nslots - 1);
        // C1 pairs with R1 in rx_release(): the owner is done with the slot.
        if (ctl->done[s].load(std::memory_order_acquire) == sent_[s]) {
          tx_slot_ = static_cast<int32_t>(s);
          tx_last_ = s;
          break;
        }
      }
      if (tx_slot_ < 0) return nullptr;
    }
    return tx_.slot(c, static_cast<uint32_t>(tx_slot_)) + kSlotHdr;
  }
  uint32_t tx_free(const FabricConfig& c) const {
    uint32_t n = 0;
    for (uint32_t s = 0; s < c.nslots; ++s)
      n += tx_.ctl->done[s].load(std::memory_order_acquire) == sent_[s] ? 1 : 0;
    return n;
  }
  // Publishes the reserved slot (one must be reserved).
  void tx_commit(const FabricConfig& c, uint32_t len, const MsgKey& key,
                 uint8_t kind) {
    const auto s = static_cast<uint32_t>(tx_slot_);
    auto* h = reinterpret_cast<MsgHdr*>(tx_.slot(c, s));
    h->len = len;
    h->kind = kind;
    h->key = key;
    InboxCtl* ctl = tx_.ctl;
    ctl->order[tx_head_ & (c.nslots - 1)] = static_cast<uint8_t>(s);
    ++sent_[s];
    ++tx_head_;
    tx_slot_ = -1;
    // P1 pairs with C2 in rx_poll(): slot and order entry before the count.
    ctl->head.store(tx_head_, std::memory_order_release);
  }

  // Receiver (fabric.h).
  uint32_t rx_poll(const FabricConfig& c) {
    if (rx_dead_ != 0) {  // drop released entries, keeping the order
      uint32_t n = 0;
      for (uint32_t i = 0; i < npend_; ++i) {
        if (((rx_dead_ >> i) & 1) == 0) pend_[n++] = pend_[i];
      }
      npend_ = n;
      rx_dead_ = 0;
      ++epoch_;
    }
    // C2 pairs with P1. Unread order entries are intact, but a broken
    // sender could claim more messages than slots: never take more than
    // the free slots could hold.
    const InboxCtl* ctl = rx_.ctl;
    uint32_t h = ctl->head.load(std::memory_order_acquire);
    if (h - rx_head_ > c.nslots - npend_) h = rx_head_ + (c.nslots - npend_);
    for (; rx_head_ != h; ++rx_head_) {
      pend_[npend_++] = static_cast<uint8_t>(
          ctl->order[rx_head_ & (c.nslots - 1)] & (c.nslots - 1));
    }
    return npend_;
  }
  uint32_t rx_npend() const { return npend_; }
  uint32_t rx_epoch() const { return epoch_; }
  const MsgHdr* rx_hdr(const FabricConfig& c, uint32_t i) const {
    if (i >= npend_ || ((rx_dead_ >> i) & 1)) return nullptr;
    return reinterpret_cast<const MsgHdr*>(rx_.slot(c, pend_[i]));
  }
  const void* rx_payload(const FabricConfig& c, uint32_t i) const {
    return rx_.slot(c, pend_[i]) + kSlotHdr;
  }
  // false when there is no such message (released already).
  bool rx_release(uint32_t i) {
    if (i >= npend_ || ((rx_dead_ >> i) & 1)) return false;
    rx_dead_ |= uint64_t{1} << i;
    // R1 pairs with C1: our reads of the slot happen before its reuse.
    std::atomic<uint8_t>& d = rx_.ctl->done[pend_[i]];
    d.store(static_cast<uint8_t>(d.load(std::memory_order_relaxed) + 1),
            std::memory_order_release);
    return true;
  }

 private:
  InboxView tx_;
  InboxView rx_;
  uint32_t tx_head_ = 0;           // messages sent into the peer's inbox for us
  int32_t tx_slot_ = -1;           // slot reserved there, or -1
  uint32_t tx_last_ = UINT32_MAX;  // slot taken last
  uint8_t sent_[kMaxSlots] = {};   // messages put through each slot
  uint32_t rx_head_ = 0;           // messages seen arriving in our inbox
  uint32_t npend_ = 0;       // of which not released (as of the last poll)
  uint64_t rx_dead_ = 0;     // bit i: pend_[i] released since the last poll
  uint32_t epoch_ = 0;       // renumberings so far
  uint8_t pend_[kMaxSlots];  // their slots, in arrival order
};

}  // namespace ucc::plat

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
// fills it, appends its index to `order` and publishes `head`, which also
// names the slot of the latest message, so that an owner who finds just
// one new message (the common case for small collectives) reads it
// without first missing on `order`'s cache line; the owner
// reads `order` to learn the arrival order and bumps the slot's `done`
// count when it releases it. A slot is free when the sender's count of
// messages put through it equals `done`. Each word has one writer, so no
// atomic read-modify-write is needed, and releases in any order free
// slots at once (a ring would keep every slot behind the oldest
// unreleased message). An `order` entry the owner has not read yet cannot
// be overwritten: that takes nslots more messages, and the unread ones
// hold their slots; so the owner copies entries out as it learns of them.
//
// Each slot's header also carries a stamp with the message's number,
// stored after the header and payload, so that over shared memory the
// owner can find the next message by its stamp before `head` shows it.
//
// Everything in a segment a peer can write is untrusted: indices are
// masked, counts bounded by the free slots, lengths checked by the caller.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "platform/base/order.h"
#include "platform/fabric/fabric.h"

namespace ucc::plat {

inline constexpr uint32_t kSegMagic = 0x55435347u;  // "UCSG"
inline constexpr uint32_t kSegVersion = 4;
inline constexpr size_t kSlotHdr = 64;  // keeps payloads 64-byte aligned
// A slot's header: the MsgHdr, then the stamp of the message it holds
// (stamp_of its number), written last; see InboxPair::rx_poll.
inline constexpr size_t kStampOff = 32;
static_assert(sizeof(MsgHdr) <= kStampOff && kStampOff + 4 <= kSlotHdr);
// Message n's stamp: never 0, the value of a slot never written.
inline uint32_t stamp_of(uint32_t n) { return n | 0x80000000u; }

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
  alignas(64) std::atomic<uint64_t> head;            // by the sender
  alignas(64) std::atomic<uint8_t> done[kMaxSlots];  // by the owner
  alignas(64) uint8_t order[kMaxSlots];              // by the sender
};
static_assert(sizeof(InboxCtl) == 192);
static_assert(kMaxSlots <= 64, "one bit per slot in the owner's masks");

inline constexpr size_t kCtlOff = 64;

// The head word: the count of messages published (low 32 bits) and the
// slot of the last of them (bits 32-39; a peer may write anything there,
// so readers mask it like any index).
inline uint64_t head_word(uint32_t count, uint32_t slot) {
  return uint64_t{count} | (uint64_t{slot & 0xffu} << 32);
}
inline uint32_t head_count(uint64_t w) { return static_cast<uint32_t>(w); }
inline uint32_t head_slot(uint64_t w) {
  return static_cast<uint32_t>(w >> 32) & 0xffu;
}
// The count of a shadow inbox (its sender's own thread wrote it: relaxed).
inline uint32_t shadow_head(const InboxCtl& ctl) {
  return head_count(ctl.head.load(std::memory_order_relaxed));
}
// Publishes message number `count` (the new count), through `slot`: its
// order entry first, then the head word. P1 pairs with C2 in rx_poll():
// the slot and its order entry before the count.
inline void publish_head(InboxCtl* ctl, uint32_t mask, uint32_t count,
                         uint32_t slot) {
  ctl->order[(count - 1) & mask] = static_cast<uint8_t>(slot);
  ctl->head.store(head_word(count, slot), base::release_of(base::kInboxHead));
}

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

// The shadow at `at` (shadow_bytes long) in zeroed memory, an empty inbox
// as it is: nothing is written, so the pages of a peer never reached stay
// untouched.
inline InboxView shadow_view(char* at) {
  return InboxView{reinterpret_cast<InboxCtl*>(at), at + sizeof(InboxCtl)};
}

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

  // Sender (fabric.h). Free slots are learnt from the owner's `done`
  // counts, a line the owner writes on every release: reading it for
  // every message would put a miss on that line into every send, so the
  // sender keeps the slots it has seen free (free_) and reads `done`
  // again only when it has none left, or when asked how many are free
  // and knows of fewer than two.
  void* tx_reserve(const FabricConfig& c) {
    if (tx_slot_ < 0) {
      if (free_ == 0) refresh(c);
      if (free_ == 0) return nullptr;
      // Round robin from the last slot taken, as a ring would: a slot the
      // owner has just read is taken last, which keeps its lines from
      // moving between the two cores while they are still in use there.
      const uint32_t from = (tx_last_ + 1) & (c.nslots - 1);
      uint64_t later = free_ & (~uint64_t{0} << from);
      const uint32_t s =
          static_cast<uint32_t>(__builtin_ctzll(later != 0 ? later : free_));
      free_ &= ~(uint64_t{1} << s);
      tx_slot_ = static_cast<int32_t>(s);
      tx_last_ = s;
    }
    return tx_.slot(c, static_cast<uint32_t>(tx_slot_)) + kSlotHdr;
  }
  // Free slots, the reserved one included.
  uint32_t tx_free(const FabricConfig& c) {
    if (__builtin_popcountll(free_) < 2) refresh(c);
    return static_cast<uint32_t>(__builtin_popcountll(free_)) +
           (tx_slot_ >= 0 ? 1 : 0);
  }
  // Publishes the reserved slot (one must be reserved).
  void tx_commit(const FabricConfig& c, uint32_t len, const MsgKey& key,
                 uint8_t kind, uint32_t lag) {
    const auto s = static_cast<uint32_t>(tx_slot_);
    char* slot = tx_.slot(c, s);
    auto* h = reinterpret_cast<MsgHdr*>(slot);
    h->len = len;
    h->kind = kind;
    set_lag(h, lag);
    h->key = key;
    ++sent_[s];  // not free until the owner's `done` catches up
    ++tx_head_;
    tx_slot_ = -1;
    // P2 pairs with C3 in rx_poll(): header and payload before the stamp.
    reinterpret_cast<std::atomic<uint32_t>*>(slot + kStampOff)
        ->store(stamp_of(tx_head_), base::release_of(base::kInboxStamp));
    publish_head(tx_.ctl, c.nslots - 1, tx_head_, s);
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
    // With stamps, the next messages first where they most likely lie:
    // one cache miss (the slot's line, which the sender wrote last) where
    // `head` would cost two in a row (its line, then the slot's). `head`
    // is read only when no stamp is found, so a receiver that keeps up
    // leaves its line to the sender.
    if (stamped_) {
      const uint32_t before = npend_;
      while (rx_stamp(c)) {
      }
      if (npend_ != before) return npend_;
    }
    // C2 pairs with P1. Unread order entries are intact, but a broken
    // sender could claim more messages than slots: never take more than
    // the free slots could hold.
    const InboxCtl* ctl = rx_.ctl;
    const uint64_t w = ctl->head.load(base::acquire_of(base::kInboxHead));
    uint32_t h = head_count(w);
    // Nothing new; with stamps, `head` may also lag behind messages
    // already taken by their stamps.
    if (static_cast<int32_t>(h - rx_head_) <= 0) return npend_;
    if (h - rx_head_ == 1 && npend_ < c.nslots) {
      // One new message: the head word names its slot.
      take(head_slot(w) & (c.nslots - 1));
      rx_head_ = h;
      return npend_;
    }
    if (h - rx_head_ > c.nslots - npend_) h = rx_head_ + (c.nslots - npend_);
    for (; rx_head_ != h; ++rx_head_)
      take(ctl->order[rx_head_ & (c.nslots - 1)] & (c.nslots - 1));
    return npend_;
  }
  // Where the sender's slot stores become visible in order (shared
  // memory, not a transport that fills slots frame by frame), rx_poll
  // also looks for the next message where it most likely lies: the slot
  // after the last one's (the sender takes free slots round robin). Its
  // stamp is on the header's line, so a small message is seen one cache
  // miss earlier than through `head` and `order`.
  void set_stamped(bool on) { stamped_ = on; }
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
            base::release_of(base::kInboxReuse));
    return true;
  }

 private:
  void take(uint32_t slot) {
    pend_[npend_++] = static_cast<uint8_t>(slot);
    rx_last_ = slot;
  }
  // Message rx_head_ + 1 in the slot after the last one's, found by its
  // stamp: taken (true), or not there.
  bool rx_stamp(const FabricConfig& c) {
    if (npend_ >= c.nslots) return false;
    const uint32_t s = (rx_last_ + 1) & (c.nslots - 1);
    const char* slot = rx_.slot(c, s);
    // Ask for the payload's first line with the stamp's: both arrive in
    // the same round trip when the message is there.
    __builtin_prefetch(slot + kSlotHdr);
    // C3 pairs with P2: a matching stamp means header and payload are in.
    const uint32_t st =
        reinterpret_cast<const std::atomic<uint32_t>*>(slot + kStampOff)
            ->load(base::acquire_of(base::kInboxStamp));
    if (st != stamp_of(rx_head_ + 1)) return false;
    // A slot still pending holds an older message (the sender cannot have
    // reused it), whatever a peer wrote into its stamp.
    for (uint32_t i = 0; i < npend_; ++i)
      if (pend_[i] == s) return false;
    take(s);
    ++rx_head_;
    return true;
  }

  // Every slot whose `done` count has caught up with ours, but the one
  // reserved.
  void refresh(const FabricConfig& c) {
    uint64_t f = 0;
    for (uint32_t s = 0; s < c.nslots; ++s) {
      // C1 pairs with R1 in rx_release(): the owner is done with the slot.
      if (tx_.ctl->done[s].load(base::acquire_of(base::kInboxReuse)) ==
          sent_[s])
        f |= uint64_t{1} << s;
    }
    if (tx_slot_ >= 0) f &= ~(uint64_t{1} << tx_slot_);
    free_ = f;
  }

  InboxView tx_;
  InboxView rx_;
  uint32_t tx_head_ = 0;           // messages sent into the peer's inbox for us
  int32_t tx_slot_ = -1;           // slot reserved there, or -1
  uint32_t tx_last_ = UINT32_MAX;  // slot taken last
  uint64_t free_ = 0;              // bit s: slot s seen free, not taken
  uint8_t sent_[kMaxSlots] = {};   // messages put through each slot
  uint32_t rx_head_ = 0;           // messages seen arriving in our inbox
  uint32_t rx_last_ = UINT32_MAX;  // slot of the last of them
  bool stamped_ = false;           // rx_poll may look for stamps
  uint32_t npend_ = 0;       // of which not released (as of the last poll)
  uint64_t rx_dead_ = 0;     // bit i: pend_[i] released since the last poll
  uint32_t epoch_ = 0;       // renumberings so far
  uint8_t pend_[kMaxSlots];  // their slots, in arrival order
};

}  // namespace ucc::plat

// Message matching for one engine team: the layer between the algorithms
// and the fabric that lets many collectives of a team run at once.
//
// Every message carries a key naming the collective it belongs to (MsgKey,
// built by key_ordered / key_tagged) and a kind (data, abort, status). A
// collective finds its messages from a peer by key, in the order the peer
// sent them, wherever they sit in the inbox; messages of other collectives
// stay where they are. A message whose key is
//   live     belongs to a running collective of ours: left for it;
//   stale    belongs to one that has already ended here (a peer's late
//            data after a timeout or an error): dropped when met;
//   future   belongs to one not started here yet: kept.
// When a team makes no progress and a peer's inbox is full, or full but
// for the slot the sender keeps for its oldest collective (below), sweep()
// moves that inbox's oldest messages into the engine's unexpected store
// (Store), so that messages of collectives we have not started, or cannot
// consume yet, never block those we need. Store entries of a (team, peer) are
// always older than that peer's messages still in the inbox, so searching the
// store first keeps the per-peer order.
//
// Reservations: a collective holds at most one reserved slot per peer, and
// no two collectives of a team reserve towards the same peer at once; it
// commits in the same step it reserved. The last free slot of a peer's
// inbox is kept for our oldest running collective: in a team that posts
// in order, the oldest collective not finished everywhere is the oldest
// running one on every member still in it, so it always finds room and
// finishes, however younger ones fill the inboxes.
//
// All memory is taken in init(); nothing here allocates afterwards.
#pragma once

#include <cstdint>

#include "device/run/links.h"
#include "offload/types.h"
#include "platform/fabric/fabric.h"

namespace ucc::dev {

using off::Status;
using plat::MsgHdr;
using plat::MsgKey;

// kDone: a receiver's answer to a one-sided offer (device/coll/streams.h),
// kept apart from the data messages of the same collective.
enum class MsgKind : uint8_t { kData = 0, kAbort = 1, kStatus = 2, kDone = 3 };

// A key's words: w[0] the sequence number (ordered) or the tag; w[1] 0
// or the active set's start and size; w[2] coll (8 bits) | mode (8 bits)
// | signature (16 bits) | stride (32 bits). Inline: every message sent
// and every one looked at goes through these.
enum : uint64_t { kModeOrdered = 1, kModeTagged = 2 };
inline constexpr uint64_t kSigMask = uint64_t{0xffff} << 32;
inline uint64_t mode_of(const MsgKey& k) { return (k.w[2] >> 48) & 0xff; }

// Key of the seq-th collective of a team that posts in order (seq >= 1).
inline MsgKey key_ordered(uint64_t seq, off::CollType coll) {
  return MsgKey{
      {seq, 0,
       (uint64_t{static_cast<uint8_t>(coll)} << 56) | (kModeOrdered << 48)}};
}
// A collective's signature in its key (what every member must agree on:
// datatype, op, root, count; sig_of in inst.cc), and the key without it.
// Data messages carry it, so that a member that posted the "same"
// collective differently sees a clash instead of silently mixing data;
// status messages (aborts, agreement) carry the key without it, so that
// they reach the members whatever they posted.
inline MsgKey with_sig(MsgKey k, uint16_t sig) {
  k.w[2] = (k.w[2] & ~kSigMask) | (uint64_t{sig} << 32);
  return k;
}
inline MsgKey nosig(MsgKey k) {
  k.w[2] &= ~kSigMask;
  return k;
}
inline uint32_t sig_in(const MsgKey& k) {
  return static_cast<uint32_t>((k.w[2] & kSigMask) >> 32);
}
// Whether two keys name the same collective, whatever their signatures.
inline bool same_coll(const MsgKey& a, const MsgKey& b) {
  return a.w[0] == b.w[0] && a.w[1] == b.w[1] &&
         ((a.w[2] ^ b.w[2]) & ~kSigMask) == 0;
}
// Key of a collective matched by its user tag, on the whole team
// (set_size 0) or an active set.
MsgKey key_tagged(uint16_t tag, off::CollType coll, uint32_t set_start,
                  int32_t set_stride, uint32_t set_size);

// The engine-wide pool of unexpected messages.
class Store {
 public:
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store() { fini(); }

  Status init(uint32_t entries, uint32_t slot_size);
  void fini();

  bool full() const { return used_ == n_; }
  // Copies a message in; false when full.
  bool put(uint32_t team, uint32_t peer, const MsgHdr& h, const void* payload);
  // Oldest entry of (team, peer) with this key and kind, or -1.
  int32_t find(uint32_t team, uint32_t peer, const MsgKey& k,
               MsgKind kind) const;
  const MsgHdr& hdr(int32_t e) const { return ent_[e].hdr; }
  const void* payload(int32_t e) const;
  uint32_t peer(int32_t e) const { return ent_[e].peer; }
  uint32_t team(int32_t e) const { return ent_[e].team; }
  bool used(int32_t e) const { return ent_[e].used; }
  uint32_t capacity() const { return n_; }
  void release(int32_t e);

 private:
  struct Entry {
    MsgHdr hdr;
    uint64_t order;  // arrival order
    uint32_t team;
    uint32_t peer;
    bool used;
  };
  base::Arena mem_;  // the entries, then their payloads
  Entry* ent_ = nullptr;
  char* data_ = nullptr;
  uint32_t n_ = 0;
  uint32_t used_ = 0;
  uint32_t slot_ = 0;
  uint64_t next_order_ = 0;
};

class Port {
 public:
  static constexpr uint32_t kMaxLive = 64;

  Port() = default;
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;
  ~Port() { fini(); }

  // The port's table for a team of `nranks`, from its arena (one owner
  // byte per peer, zeroed), and its links' (Links::take).
  struct Tables {
    uint8_t* owner = nullptr;
    uint64_t* peer_done = nullptr;
    Links::Tables links;
  };
  static Tables take(base::Arena& a, uint32_t nranks);

  // `live` collectives at most (<= kMaxLive), ids 0..live-1; `mem` from
  // take() for nranks (kept for the links' open).
  Status init(uint32_t team_idx, uint32_t nranks, uint32_t live, Store* store,
              const Tables& mem);
  void fini(bool lost = false);  // lost: see ShmFabric::close

  // The team's transports (links.h): opened and connected by the engine.
  Links& links() { return links_; }
  const Links& links() const { return links_; }
  uint32_t slot_size() const { return links_.slot_size(); }

  // --- the running collectives' keys ---------------------------------------
  void set_live(uint32_t id, const MsgKey& k) {
    live_[id] = k;
    live_mask_ |= uint64_t{1} << id;
  }
  // The collective has ended; with `abandoned` (it failed or timed out)
  // its tagged key is remembered so late messages are dropped.
  void end_live(uint32_t id, bool abandoned) {
    live_mask_ &= ~(uint64_t{1} << id);
    if (abandoned) abandon(id);
    if (nregs_[id] != 0) drop_regs(id);
  }
  // Ordered collectives started so far (keys up to this seq are not future).
  void set_started(uint64_t seq) { started_ = seq; }
  // The id of the oldest running collective.
  void set_oldest(uint32_t id) { oldest_ = id; }

  // --- sending (peer = team rank) -------------------------------------------
  void* reserve(uint32_t peer, uint32_t id) {
    const uint8_t held = owner_[peer];
    if (held != 0 && held != id + 1) return nullptr;
    if (id != oldest_ && links_.tx_free(peer) <= 1) return nullptr;
    void* p = links_.tx_reserve(peer);
    if (p != nullptr && held == 0) {
      owner_[peer] = static_cast<uint8_t>(id + 1);
      ++nheld_[id];
    }
    return p;
  }
  // A reservation outside any instance (Engine::send_known, while none
  // runs): nullptr when the peer's inbox has no free slot.
  void* reserve_free(uint32_t peer) {
    return owner_[peer] == 0 ? links_.tx_reserve(peer) : nullptr;
  }
  void commit(uint32_t peer, uint32_t len, const MsgKey& k, MsgKind kind) {
    const uint8_t held = owner_[peer];
    if (held != 0) {
      --nheld_[held - 1];
      owner_[peer] = 0;
    }
    links_.tx_commit(peer, len, k, static_cast<uint8_t>(kind), lag(k));
  }
  // Drops every reservation `id` holds (it ended before committing).
  void drop_reservations(uint32_t id) {
    if (nheld_[id] != 0) drop_held(id);  // usually it committed them all
  }

  // --- registrations of user memory (one-sided streams) ----------------------
  // At most kRegsPerColl per collective at once; those still held when it
  // ends (an error, a timeout) are given back then.
  static constexpr uint32_t kRegsPerColl = 4;
  Status mem_reg(uint32_t id, void* addr, uint64_t len, uint32_t access,
                 plat::RmaReg* reg);
  void mem_dereg(uint32_t id, uint32_t handle);

  // --- receiving -------------------------------------------------------------
  // The oldest message from `peer` with key k and this kind, or nullptr.
  // *len is its length as the sender wrote it (the caller checks it), or
  // UINT32_MAX when the peer's ordered collective in k's place of the
  // sequence is of another type (a program error the caller must fail).
  const void* find(uint32_t peer, const MsgKey& k, MsgKind kind,
                   uint32_t* len) {
    waiting_ = peer;
    // Inline, what a small collective meets on almost every call: nothing
    // in the store, and after the poll nothing pending from the peer (a
    // miss: the caller polls again) or just the message sought. Polling
    // first gives the same answer as find_any's known-first search, as
    // the only pending message is the oldest.
    if (stored_ == 0) {
      const uint32_t m = links_.rx_poll(peer);
      if (m == 0) return nullptr;
      if (m == 1) {
        const MsgHdr* h = links_.rx_hdr(peer, 0);
        if (h != nullptr && h->kind == static_cast<uint8_t>(kind) &&
            h->key == k)
          return found(peer, 0, *h, k, kind, len);
      }
    }
    return find_any(peer, k, kind, len);
  }
  // Releases the message find() returned (same arguments).
  void release(uint32_t peer, const MsgKey& k, MsgKind kind) {
    // Usually the message find() just returned: while the peer's pending
    // messages keep their numbers (epoch), it is still at last_.idx, and
    // no older one has that key (find() returns the oldest; new ones come
    // after it).
    if (stored_ == 0 && last_.peer == peer &&
        last_.epoch == links_.rx_epoch(peer) &&
        last_.kind == static_cast<uint8_t>(kind) && last_.key == k) {
      links_.rx_release(peer, last_.idx);
      last_.peer = UINT32_MAX;
      return;
    }
    release_any(peer, k, kind);
  }

  // Visits every pending abort message from any peer: fn(ctx, key, status)
  // returns true when it consumed it (the message is then released). Stale
  // aborts are dropped; *future_left counts those kept for later.
  // Only worth calling when attention_changed() or after a start while
  // future aborts are pending.
  template <typename Fn>
  void scan_aborts(Fn&& fn, uint32_t* future_left);
  bool attention_changed() {
    uint32_t a = links_.attention();
    if (a == attention_seen_) return false;
    attention_seen_ = a;
    return true;
  }

  // The peer of the last message looked for: when the team is stuck, one
  // it waits on (Links::waiting_on).
  uint32_t waiting() const { return waiting_; }

  // Called when the team made no progress: moves the oldest messages of
  // full inboxes into the store, dropping stale ones. Returns how many
  // messages moved or were dropped.
  uint64_t sweep();

 private:
  enum class Class : uint8_t { kLive, kStale, kFuture };
  Class classify(const MsgKey& k) const;
  // What we have finished, for the peer (heard()): every ordered
  // collective before k.w[0] - lag + 1 has ended here. Ordered
  // collectives start in sequence order, so those before the oldest
  // running one have all ended; with none running, all before k. 0 where
  // it cannot be said (a tagged key, or a tagged oldest).
  uint32_t lag(const MsgKey& k) const {
    if (mode_of(k) != kModeOrdered) return 0;
    if (live_mask_ == 0) return 1;
    const MsgKey& o = live_[oldest_];
    if (mode_of(o) != kModeOrdered || o.w[0] > k.w[0] ||
        k.w[0] - o.w[0] >= (1u << 24) - 1)
      return 0;
    return static_cast<uint32_t>(k.w[0] - o.w[0]) + 1;
  }
  // A message from `peer` was looked at: what its lag says the peer has
  // finished.
  // Only from a message whose key lies within kLagWindow of our own
  // sequence: a key damaged far off would otherwise say the peer has
  // finished collectives it has not even posted.
  static constexpr uint64_t kLagWindow = uint64_t{1} << 20;
  void heard(uint32_t peer, const MsgHdr& h) {
    const uint32_t lag = plat::lag_of(h);
    if (lag != 0 && mode_of(h.key) == kModeOrdered && h.key.w[0] > lag &&
        h.key.w[0] - lag > peer_done_[peer] &&
        h.key.w[0] <= started_ + kLagWindow)
      peer_done_[peer] = h.key.w[0] - lag;
  }
  // find_any found nothing for k: whether nothing can come any more.
  bool never_comes(uint32_t peer, const MsgKey& k, MsgKind kind);
  void drop_held(uint32_t id);
  void drop_regs(uint32_t id);
  void abandon(uint32_t id);
  void release_any(uint32_t peer, const MsgKey& k, MsgKind kind);
  // The inbox message at `idx` (header h) is find()'s answer: its length
  // and payload, remembered for release().
  const void* found(uint32_t peer, uint32_t idx, const MsgHdr& h,
                    const MsgKey& k, MsgKind kind, uint32_t* len) {
    *len = h.len;
    last_ =
        Found{peer, idx, links_.rx_epoch(peer), static_cast<uint8_t>(kind), k};
    return links_.rx_payload(peer, idx);
  }
  // find() in full: the store, then the inbox, stale messages dropped.
  const void* find_any(uint32_t peer, const MsgKey& k, MsgKind kind,
                       uint32_t* len);
  // Ring position of the oldest match, or -1; drops stale messages met.
  int32_t ring_find(uint32_t peer, const MsgKey& k, MsgKind kind, bool* clash);
  int32_t scan(uint32_t peer, uint32_t from, uint32_t n, const MsgKey& k,
               MsgKind kind, bool* clash);

  // The last message find() returned from the inbox, to release it
  // without a second search.
  struct Found {
    uint32_t peer = UINT32_MAX;
    uint32_t idx = 0;
    uint32_t epoch = 0;
    uint8_t kind = 0;
    MsgKey key{};
  };
  Found last_;

  Links links_;
  Store* store_ = nullptr;
  uint32_t team_ = 0;
  uint32_t nranks_ = 0;
  uint32_t nlive_ = 0;
  uint32_t stored_ = 0;  // this team's entries in the store
  uint64_t started_ = 0;
  // Per peer: every ordered collective up to this one had ended there
  // (what its messages said; heard()).
  uint64_t* peer_done_ = nullptr;
  uint32_t oldest_ = 0;
  uint32_t attention_seen_ = 0;
  uint32_t waiting_ = UINT32_MAX;  // find()'s last peer
  uint8_t* owner_ = nullptr;       // per peer: 0, or id + 1 of the reserver
  uint32_t nheld_[kMaxLive] = {};  // per id: peers it holds a slot of
  uint32_t nregs_[kMaxLive] = {};  // per id: registrations it holds
  uint32_t regs_[kMaxLive][kRegsPerColl] = {};
  MsgKey live_[kMaxLive] = {};
  uint64_t live_mask_ = 0;
  static constexpr uint32_t kAbandoned = 16;
  MsgKey abandoned_[kAbandoned] = {};
  uint32_t nabandoned_ = 0;  // written round robin
};

template <typename Fn>
void Port::scan_aborts(Fn&& fn, uint32_t* future_left) {
  uint32_t future = 0;
  const uint8_t kind = static_cast<uint8_t>(MsgKind::kAbort);
  if (stored_ != 0) {
    for (uint32_t e = 0; e < store_->capacity(); ++e) {
      int32_t i = static_cast<int32_t>(e);
      if (!store_->used(i) || store_->team(i) != team_) continue;
      const MsgHdr& h = store_->hdr(i);
      if (h.kind != kind) continue;
      Class c = classify(h.key);
      int32_t st = 0;
      if (h.len == sizeof(st))
        __builtin_memcpy(&st, store_->payload(i), sizeof(st));
      if (c == Class::kStale || (c == Class::kLive && fn(h.key, st))) {
        store_->release(i);
        --stored_;
      } else if (c == Class::kFuture) {
        ++future;
      }
    }
  }
  links_.each_heard([&](uint32_t p) {
    uint32_t n = links_.rx_poll(p);
    for (uint32_t i = 0; i < n; ++i) {
      const MsgHdr* h = links_.rx_hdr(p, i);
      if (h == nullptr || h->kind != kind) continue;
      MsgKey key = h->key;
      int32_t st = 0;
      if (h->len == sizeof(st))
        __builtin_memcpy(&st, links_.rx_payload(p, i), sizeof(st));
      Class c = classify(key);
      if (c == Class::kStale || (c == Class::kLive && fn(key, st)))
        links_.rx_release(p, i);
      else if (c == Class::kFuture)
        ++future;
    }
  });
  *future_left = future;
}

}  // namespace ucc::dev

#include "device/run/port.h"

#include <cstring>
#include <new>

#include "platform/os/log.h"

namespace ucc::dev {
MsgKey key_tagged(uint16_t tag, off::CollType coll, uint32_t set_start,
                  int32_t set_stride, uint32_t set_size) {
  return MsgKey{{tag, (uint64_t{set_start} << 32) | set_size,
                 (uint64_t{static_cast<uint8_t>(coll)} << 56) |
                     (kModeTagged << 48) | static_cast<uint32_t>(set_stride)}};
}

// --- Store
// ---------------------------------------------------------------------

Status Store::init(uint32_t entries, uint32_t slot_size) {
  fini();
  if (entries == 0) return Status::kOk;
  for (int pass = 0; pass < 2; ++pass) {
    ent_ = mem_.take<Entry>(entries);
    data_ = mem_.take<char>(size_t{entries} * slot_size, 64);
    if (pass == 0 && !mem_.commit()) return Status::kNoMemory;
  }
  n_ = entries;
  slot_ = slot_size;
  used_ = 0;
  return Status::kOk;
}

void Store::fini() {
  mem_.release();
  ent_ = nullptr;
  data_ = nullptr;
  n_ = used_ = 0;
}

bool Store::put(uint32_t team, uint32_t peer, const MsgHdr& h,
                const void* payload) {
  if (used_ == n_ || h.len > slot_) return false;
  for (uint32_t e = 0; e < n_; ++e) {
    if (ent_[e].used) continue;
    ent_[e] = Entry{h, next_order_++, team, peer, true};
    memcpy(data_ + size_t{e} * slot_, payload, h.len);
    ++used_;
    return true;
  }
  return false;
}

int32_t Store::find(uint32_t team, uint32_t peer, const MsgKey& k,
                    MsgKind kind) const {
  int32_t best = -1;
  for (uint32_t e = 0; e < n_; ++e) {
    const Entry& x = ent_[e];
    if (!x.used || x.team != team || x.peer != peer ||
        x.hdr.kind != static_cast<uint8_t>(kind) || x.hdr.key != k)
      continue;
    if (best < 0 || x.order < ent_[best].order) best = static_cast<int32_t>(e);
  }
  return best;
}

const void* Store::payload(int32_t e) const {
  return data_ + size_t(e) * slot_;
}

void Store::release(int32_t e) {
  if (ent_[e].used) {
    ent_[e].used = false;
    --used_;
  }
}

// --- Port
// ------------------------------------------------------------------------

Port::Tables Port::take(base::Arena& a, uint32_t nranks) {
  Tables t;
  t.owner = a.take<uint8_t>(nranks);
  t.peer_done = a.take<uint64_t>(nranks);
  t.links = Links::take(a, nranks);
  return t;
}

Status Port::init(uint32_t team_idx, uint32_t nranks, uint32_t live,
                  Store* store, const Tables& mem) {
  if (live == 0 || live > kMaxLive) return Status::kInvalidParam;
  owner_ = mem.owner;
  peer_done_ = mem.peer_done;
  store_ = store;
  team_ = team_idx;
  nranks_ = nranks;
  nlive_ = live;
  stored_ = 0;
  started_ = 0;
  attention_seen_ = 0;
  live_mask_ = 0;
  for (uint32_t& n : nheld_) n = 0;
  for (uint32_t& n : nregs_) n = 0;
  nabandoned_ = 0;
  for (MsgKey& k : abandoned_) k = MsgKey{};
  return Status::kOk;
}

void Port::fini(bool lost) {
  if (store_ != nullptr && stored_ != 0) {
    for (uint32_t e = 0; e < store_->capacity(); ++e) {
      int32_t i = static_cast<int32_t>(e);
      if (store_->used(i) && store_->team(i) == team_) store_->release(i);
    }
  }
  stored_ = 0;
  owner_ = nullptr;  // the team's arena goes after us
  for (uint32_t id = 0; id < kMaxLive; ++id) drop_regs(id);
  links_.close(lost);
}

Status Port::mem_reg(uint32_t id, void* addr, uint64_t len, uint32_t access,
                     plat::RmaReg* reg) {
  if (nregs_[id] == kRegsPerColl) return Status::kNoResource;
  Status st = links_.mem_reg(addr, len, access, reg);
  if (ok(st)) regs_[id][nregs_[id]++] = reg->handle;
  return st;
}

void Port::mem_dereg(uint32_t id, uint32_t handle) {
  for (uint32_t i = 0; i < nregs_[id]; ++i) {
    if (regs_[id][i] != handle) continue;
    regs_[id][i] = regs_[id][--nregs_[id]];
    links_.mem_dereg(handle);
    return;
  }
}

void Port::drop_regs(uint32_t id) {
  while (nregs_[id] != 0) links_.mem_dereg(regs_[id][--nregs_[id]]);
}

bool Port::never_comes(uint32_t peer, const MsgKey& k, MsgKind kind) {
  if (mode_of(k) != kModeOrdered || peer_done_[peer] < k.w[0]) return false;
  // The peer had finished k's collective before it sent a message we
  // have; its messages come in order, so whatever it sent for k is here
  // already, and it is not what we wait for: lost, or damaged on the way
  // (a key or kind changed), or never sent (the peer failed it).
  UCC_ERROR(
      "team %u: rank %u finished collective #%llu without sending the %s "
      "message this rank waits for (lost, damaged, or the peer failed it)",
      team_, peer, static_cast<unsigned long long>(k.w[0]),
      kind == MsgKind::kData     ? "data"
      : kind == MsgKind::kStatus ? "status"
      : kind == MsgKind::kDone   ? "done"
                                 : "abort");
  return true;
}

void Port::abandon(uint32_t id) {
  if (mode_of(live_[id]) == kModeTagged)
    abandoned_[nabandoned_++ % kAbandoned] = live_[id];
}

Port::Class Port::classify(const MsgKey& k) const {
  // By the collective, whatever the signature: a message of a live
  // collective with another signature is a clash for scan() to report,
  // not a stale message to drop.
  const MsgKey kn = nosig(k);
  for (uint64_t m = live_mask_; m != 0; m &= m - 1) {
    if (nosig(live_[__builtin_ctzll(m)]) == kn) return Class::kLive;
  }
  if (mode_of(k) == kModeOrdered) {
    // Every message of an ordered collective that ended normally was
    // consumed; one still around belongs to a collective that failed.
    return k.w[0] <= started_ ? Class::kStale : Class::kFuture;
  }
  for (const MsgKey& a : abandoned_) {
    if (nosig(a) == kn) return Class::kStale;
  }
  return Class::kFuture;
}

void Port::drop_held(uint32_t id) {
  // Stops at the last one it holds: a team of thousands is not walked
  // for the few slots a collective keeps.
  uint32_t left = nheld_[id];
  for (uint32_t p = 0; p < nranks_ && left != 0; ++p) {
    if (owner_[p] == id + 1) {
      owner_[p] = 0;
      --left;
    }
  }
  nheld_[id] = 0;
}

int32_t Port::scan(uint32_t peer, uint32_t from, uint32_t n, const MsgKey& k,
                   MsgKind kind, bool* clash) {
  for (uint32_t s = from; s < n; ++s) {
    const MsgHdr* h = links_.rx_hdr(peer, s);
    if (h == nullptr) continue;
    heard(peer, *h);
    if (same_coll(h->key, k)) {
      if (h->kind != static_cast<uint8_t>(kind))
        continue;  // another kind of the same collective
      if (h->key == k) return static_cast<int32_t>(s);
      // The same collective, but the peer posted it with another
      // datatype, op, root or count (the key's signature): a mismatch
      // that would give wrong data silently.
      *clash = true;
      return static_cast<int32_t>(s);
    }
    if (mode_of(k) == kModeOrdered && mode_of(h->key) == kModeOrdered &&
        h->key.w[0] == k.w[0]) {
      // The peer's collective in this place of the sequence is another.
      *clash = true;
      return static_cast<int32_t>(s);
    }
    if (classify(h->key) == Class::kStale) links_.rx_release(peer, s);
  }
  return -1;
}

int32_t Port::ring_find(uint32_t peer, const MsgKey& k, MsgKind kind,
                        bool* clash) {
  // What we know of first; shared memory only when that has no match.
  uint32_t n = links_.rx_npend(peer);
  // The numbering as we found it: if the poll renumbers, the new messages
  // start from 0.
  const uint32_t epoch = links_.rx_epoch(peer);
  int32_t s = scan(peer, 0, n, k, kind, clash);
  if (s >= 0) return s;
  uint32_t m = links_.rx_poll(peer);
  return scan(peer, links_.rx_epoch(peer) == epoch ? n : 0, m, k, kind, clash);
}

const void* Port::find_any(uint32_t peer, const MsgKey& k, MsgKind kind,
                           uint32_t* len) {
  if (stored_ != 0) {
    int32_t e = store_->find(team_, peer, k, kind);
    if (e >= 0) {
      *len = store_->hdr(e).len;
      return store_->payload(e);
    }
  }
  bool clash = false;
  int32_t s = ring_find(peer, k, kind, &clash);
  if (s < 0) {
    if (!never_comes(peer, k, kind)) return nullptr;
    static const char kNothing = 0;
    *len = UINT32_MAX;  // the caller fails (as for a clash)
    return &kNothing;
  }
  const uint32_t u = static_cast<uint32_t>(s);
  if (!clash) return found(peer, u, *links_.rx_hdr(peer, u), k, kind, len);
  *len = UINT32_MAX;
  return links_.rx_payload(peer, u);
}

void Port::release_any(uint32_t peer, const MsgKey& k, MsgKind kind) {
  if (stored_ != 0) {
    int32_t e = store_->find(team_, peer, k, kind);
    if (e >= 0) {
      store_->release(e);
      --stored_;
      return;
    }
  }
  bool clash = false;
  int32_t s = ring_find(peer, k, kind, &clash);
  if (s >= 0 && !clash) links_.rx_release(peer, static_cast<uint32_t>(s));
}

uint64_t Port::sweep() {
  uint64_t moved = 0;
  links_.each_heard([&](uint32_t p) {
    uint32_t n = links_.rx_poll(p);
    // The sender has room for any collective while two slots are free;
    // the last free one it keeps for its oldest (reserve()), which may
    // not be one we can take messages for yet.
    if (n + 1 < links_.nslots()) return;
    // Move a prefix, oldest first, so that the store keeps holding only
    // messages older than the ones left in the inbox.
    for (uint32_t s = 0; s < n; ++s) {
      const MsgHdr* h = links_.rx_hdr(p, s);
      if (h == nullptr) continue;
      MsgHdr copy = *h;
      heard(p, copy);
      if (classify(copy.key) != Class::kStale) {
        // An overlong message stays for its collective to reject.
        if (copy.len > links_.slot_size() ||
            !store_->put(team_, p, copy, links_.rx_payload(p, s)))
          break;
        ++stored_;
      }
      links_.rx_release(p, s);
      ++moved;
    }
  });
  return moved;
}

}  // namespace ucc::dev

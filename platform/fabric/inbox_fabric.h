// A fabric whose every peer speaks the inbox protocol (inbox.h) through
// one InboxPair: the per-peer sender and receiver calls of fabric.h, the
// same for every transport that moves slots (shared memory, TCP, the
// wire, verbs). A transport derives from it, sets `cfg_`, and at connect
// takes the pairs of the ranks it serves (take_pairs), binds them to its
// memory and implements committing, releasing and everything about its
// peers' state itself.
//
// Pairs are numbered densely, in team-rank order, over the ranks served
// (connect's `mine`, and our own rank where the transport serves it): a
// member of a team of thousands keeps a pair for the ranks its transport
// reaches, not for every rank (shared memory: the ranks of its host). A
// transport's own per-peer tables may use the same numbering (pair_of).
// What a transport sizes by the team it takes from `mem_`, in one block,
// released with the fabric; the pairs come from `pair_mem_`.
// Where the derived class is final (ShmFabric), calls through it are not
// virtual.
#pragma once

#include "platform/base/arena.h"
#include "platform/fabric/inbox.h"

namespace ucc::plat {

class InboxFabric : public Fabric {
 public:
  void* tx_reserve(uint32_t peer) override {
    return pair(peer).tx_reserve(cfg_);
  }
  uint32_t tx_free(uint32_t peer) override { return pair(peer).tx_free(cfg_); }
  // Pairs made so far (tests).
  uint32_t pairs_made() const { return nmade_pairs_; }
  // A pair not made yet has received nothing (lazy pairs: below).
  uint32_t rx_poll(uint32_t peer) override {
    InboxPair* p = made_pair(peer);
    return p != nullptr ? p->rx_poll(cfg_) : 0;
  }
  uint32_t rx_npend(uint32_t peer) const override {
    const InboxPair* p = made_pair(peer);
    return p != nullptr ? p->rx_npend() : 0;
  }
  uint32_t rx_epoch(uint32_t peer) const override {
    const InboxPair* p = made_pair(peer);
    return p != nullptr ? p->rx_epoch() : 0;
  }
  const MsgHdr* rx_hdr(uint32_t peer, uint32_t i) const override {
    const InboxPair* p = made_pair(peer);
    return p != nullptr ? p->rx_hdr(cfg_, i) : nullptr;
  }
  const void* rx_payload(uint32_t peer, uint32_t i) const override {
    const InboxPair* p = made_pair(peer);
    return p != nullptr ? p->rx_payload(cfg_, i) : nullptr;
  }

 protected:
  static constexpr uint32_t kNoPair = UINT32_MAX;
  // idx_ of a pair numbered but not made yet (lazy): its number below.
  static constexpr uint32_t kLazy = 0x80000000u;

  InboxFabric() = default;
  explicit InboxFabric(const FabricConfig& cfg) : cfg_(cfg) {}

  // The pairs of rank r with mine[r], and of our own rank where `self`,
  // numbered in rank order, each bound to its inbox in `seg` (our
  // segment, laid out by team rank): constructed now, or where `lazy`
  // at first use (pair(): a message to send, or the transport making
  // its link, which it does before anything can arrive), its sending
  // side then bound to shadow_of(). A member of a team of thousands then
  // holds pairs (216 bytes each) for the peers it talks to, and a 4-byte
  // index entry for every rank. kNoMemory.
  Status take_pairs(const bool* mine, bool self, char* seg, bool lazy = false);
  // Where a lazy pair sends (its shadow of the peer's inbox).
  virtual InboxView shadow_of(uint32_t r, uint32_t k) {
    (void)r;
    (void)k;
    return InboxView{};
  }
  // Whether rank r has a pair, and its number.
  bool serves(uint32_t r) const {
    return idx_ != nullptr && r < cfg_.nranks && idx_[r] != kNoPair;
  }
  uint32_t pair_of(uint32_t r) const { return idx_[r] & ~kLazy; }
  // Rank r's pair, made now if it is lazy (r must be served: the caller
  // binds each rank to one transport).
  InboxPair& pair(uint32_t r) {
    uint32_t k = idx_[r];
    if (__builtin_expect((k & kLazy) != 0, 0)) k = make_pair(r);
    return pairs_[k];
  }
  // Rank r's pair if it is made (nullptr: lazy, or not served).
  InboxPair* made_pair(uint32_t r) {
    const uint32_t k = r < cfg_.nranks && idx_ != nullptr ? idx_[r] : kNoPair;
    return (k & kLazy) != 0 ? nullptr : &pairs_[k];
  }
  const InboxPair* made_pair(uint32_t r) const {
    return const_cast<InboxFabric*>(this)->made_pair(r);
  }
  // Pair number k (pair_of) of a fabric whose pairs are not lazy: for a
  // transport that also indexes its own tables by it, one lookup per call.
  InboxPair& pair_at(uint32_t k) { return pairs_[k]; }

  uint32_t npairs() const { return npairs_; }
  void release_pairs();

  FabricConfig cfg_{};
  base::Arena mem_;

 private:
  base::Arena pair_mem_;
  uint32_t make_pair(uint32_t r);

  uint32_t* idx_ = nullptr;  // per team rank: its pair (| kLazy), or kNoPair
  InboxPair* pairs_ = nullptr;
  uint32_t npairs_ = 0;
  uint32_t nmade_pairs_ = 0;
  char* pair_seg_ = nullptr;
};

}  // namespace ucc::plat

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
  uint32_t rx_poll(uint32_t peer) override { return pair(peer).rx_poll(cfg_); }
  uint32_t rx_npend(uint32_t peer) const override {
    return pair(peer).rx_npend();
  }
  uint32_t rx_epoch(uint32_t peer) const override {
    return pair(peer).rx_epoch();
  }
  const MsgHdr* rx_hdr(uint32_t peer, uint32_t i) const override {
    return pair(peer).rx_hdr(cfg_, i);
  }
  const void* rx_payload(uint32_t peer, uint32_t i) const override {
    return pair(peer).rx_payload(cfg_, i);
  }

 protected:
  static constexpr uint32_t kNoPair = UINT32_MAX;

  InboxFabric() = default;
  explicit InboxFabric(const FabricConfig& cfg) : cfg_(cfg) {}

  // The pairs of rank r with mine[r], and of our own rank where `self`:
  // constructed, each bound to its inbox in `seg` (our segment, laid out
  // by team rank), numbered in rank order. kNoMemory.
  Status take_pairs(const bool* mine, bool self, char* seg);
  // Whether rank r has a pair, and its number.
  bool serves(uint32_t r) const {
    return idx_ != nullptr && r < cfg_.nranks && idx_[r] != kNoPair;
  }
  uint32_t pair_of(uint32_t r) const { return idx_[r]; }
  // Rank r's pair (r must be served: the caller binds each rank to one
  // transport).
  InboxPair& pair(uint32_t r) { return pairs_[idx_[r]]; }
  const InboxPair& pair(uint32_t r) const { return pairs_[idx_[r]]; }
  // Pair number k (pair_of): for a transport that also indexes its own
  // tables by it, one lookup per call.
  InboxPair& pair_at(uint32_t k) { return pairs_[k]; }
  uint32_t npairs() const { return npairs_; }
  void release_pairs();

  FabricConfig cfg_{};
  base::Arena mem_;

 private:
  base::Arena pair_mem_;
  uint32_t* idx_ = nullptr;  // per team rank: its pair, or kNoPair
  InboxPair* pairs_ = nullptr;
  uint32_t npairs_ = 0;
};

}  // namespace ucc::plat

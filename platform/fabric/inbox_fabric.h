// A fabric whose every peer speaks the inbox protocol (inbox.h) through
// one InboxPair: the per-peer sender and receiver calls of fabric.h, the
// same for every transport that moves slots (shared memory, TCP, the
// wire, verbs). A transport derives from it, owns `peers_` (one pair per
// team rank, bound to its memory) and sets `cfg_`; it implements
// committing, releasing and everything about its peers' state itself.
// What it sizes by the team (peers_, inboxes, per-peer state) it takes
// from `mem_`, in one block, released with the fabric.
// Where the derived class is final (ShmFabric), calls through it are not
// virtual.
#pragma once

#include "platform/base/arena.h"
#include "platform/fabric/inbox.h"

namespace ucc::plat {

class InboxFabric : public Fabric {
 public:
  void* tx_reserve(uint32_t peer) override {
    return peers_[peer].tx_reserve(cfg_);
  }
  uint32_t tx_free(uint32_t peer) override { return peers_[peer].tx_free(cfg_); }
  uint32_t rx_poll(uint32_t peer) override {
    return peers_[peer].rx_poll(cfg_);
  }
  uint32_t rx_npend(uint32_t peer) const override {
    return peers_[peer].rx_npend();
  }
  uint32_t rx_epoch(uint32_t peer) const override {
    return peers_[peer].rx_epoch();
  }
  const MsgHdr* rx_hdr(uint32_t peer, uint32_t i) const override {
    return peers_[peer].rx_hdr(cfg_, i);
  }
  const void* rx_payload(uint32_t peer, uint32_t i) const override {
    return peers_[peer].rx_payload(cfg_, i);
  }

 protected:
  InboxFabric() = default;
  explicit InboxFabric(const FabricConfig& cfg) : cfg_(cfg) {}

  FabricConfig cfg_{};
  base::Arena mem_;
  InboxPair* peers_ = nullptr;  // one per team rank
};

}  // namespace ucc::plat

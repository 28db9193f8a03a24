// The shared-memory fabric between the engines of one team on one host
// (the fabric interface: platform/fabric/fabric.h; the segment and its
// inbox protocol: platform/fabric/inbox.h).
//
// Each member creates one memfd segment holding an inbox per team rank;
// peers on the host map it through /proc/<pid>/fd/<fd> during team
// creation. Its state per peer (the pair and the mapping) is kept for
// the ranks of its host only. An eager send writes straight into the receiver's
// inbox (a put into remote memory); the receiver reads or reduces the payload
// in place and then releases the slot. No system call after connect(). A
// message of nonzero kind also bumps the receiver's attention counter,
// so a receiver can notice control messages without scanning inboxes.
// Inboxes of ranks on other hosts are never touched (the memfd's pages
// for them are never allocated).
//
// Threads: one engine thread drives a ShmFabric.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "platform/fabric/inbox_fabric.h"

namespace ucc::plat::shm {

inline constexpr uint32_t kShmAddrMagic = 0x55435348u;  // "UCSH"

class ShmFabric final : public InboxFabric {
 public:
  ShmFabric() = default;
  ShmFabric(const ShmFabric&) = delete;
  ShmFabric& operator=(const ShmFabric&) = delete;
  ~ShmFabric() override { close(); }

  // Creates this member's segment and fills `out`. kNoMemory when the
  // segment cannot be created, kInvalidParam for a bad configuration.
  Status open(const FabricConfig& cfg, FabricAddr* out);
  // lost: we leave without finishing (our process or client is gone), so
  // peers stuck waiting for us should give up (peer_lost).
  void close(bool lost = false);

  uint32_t slot_size() const { return cfg_.slot_size; }
  uint32_t nslots() const { return cfg_.nslots; }

  // --- Fabric ---------------------------------------------------------------
  // Maps every peer r with mine[r]; our own rank is always reached (into
  // our own segment). Only those ranks may be named in the calls below.
  Status connect(const FabricAddr* addrs, const bool* mine) override;
  void seal() override;
  void tx_commit(uint32_t peer, uint32_t len, const MsgKey& key, uint8_t kind,
                 uint32_t lag = 0) override {
    const uint32_t k = pair_of(peer);
    pair_at(k).tx_commit(cfg_, len, key, kind, lag);
    ++events_;
    // After the publication, so a receiver that sees the count change
    // finds the message.
    if (kind != 0) maps_[k].attention->fetch_add(1, std::memory_order_release);
  }
  void rx_release(uint32_t peer, uint32_t i) override {
    if (pair(peer).rx_release(i)) ++events_;
  }
  bool peer_lost() const override;
  // Our segment says we are lost (as close(true) will): the team's
  // local peers stuck waiting for us give up.
  void fail() override;
  uint32_t attention() const override {
    // (Never opened: a team whose net carries every rank, links.cc.)
    return seg_ == nullptr
               ? 0
               : seg_header(seg_)->attention.load(std::memory_order_acquire);
  }
  uint64_t events() const override { return events_; }
  // The process that created the peer's segment (from its address,
  // checked against the segment's header at connect): the peer rank's own
  // process when its engine runs inline, its firmware_sim otherwise.
  int32_t peer_pid(uint32_t peer) const override {
    return maps_[pair_of(peer)].pid;
  }

 private:
  struct Map {
    char* base = nullptr;  // peer's segment (ours for our rank)
    size_t bytes = 0;      // a separate mapping of that many bytes, or 0
    int32_t pid = 0;       // its creator
    std::atomic<uint32_t>* attention = nullptr;  // in its header
  };

  char* seg_ = nullptr;
  size_t seg_bytes_ = 0;
  int fd_ = -1;
  Map* maps_ = nullptr;  // per pair (pair_of)
  uint64_t events_ = 0;
  bool failed_ = false;  // fail(): closing says lost, whatever the caller
};

}  // namespace ucc::plat::shm

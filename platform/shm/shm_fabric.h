// Shared-memory fabric between the engines of one team on one host.
//
// Words used here:
//   inbox    the part of a rank's segment where one peer writes to it; an
//            SPSC ring of `nslots` slots of `slot_size` bytes each. The
//            sender is the producer, the segment owner the consumer.
//   segment  one memfd per (rank, team) holding one inbox per peer. Peers
//            map it through /proc/<pid>/fd/<fd> during team creation.
//   message  one slot: up to slot_size bytes plus (len, tag).
//
// An eager send writes straight into the receiver's inbox (a "put" into
// remote memory); the receiver reads or reduces the payload in place and
// then releases the slot. No syscalls after connect(). Messages between two
// ranks arrive in the order they were committed.
//
// Threads: one engine thread drives a ShmTeamFabric; reserve/commit and
// peek/release for one peer must not be interleaved by two threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "offload/types.h"

namespace ucc::plat::shm {

using off::Status;

struct FabricConfig {
  uint32_t nranks;
  uint32_t rank;
  uint32_t slot_size;  // bytes; multiple of 64
  uint32_t nslots;     // power of two, >= 2
};

// What a rank publishes (through the user's OOB) so peers can map it.
struct SegAddr {
  uint32_t magic;
  int32_t pid;
  int32_t fd;
  uint32_t slot_size;
  uint32_t nslots;
  uint32_t nranks;
  uint64_t bytes;
};
static_assert(sizeof(SegAddr) == 32);

class ShmTeamFabric {
 public:
  ShmTeamFabric() = default;
  ShmTeamFabric(const ShmTeamFabric&) = delete;
  ShmTeamFabric& operator=(const ShmTeamFabric&) = delete;
  ~ShmTeamFabric() { close(); }

  // Creates this rank's segment and fills `out`. kNoMemory when the segment
  // cannot be created, kInvalidParam for a bad configuration.
  Status open(const FabricConfig& cfg, SegAddr* out);
  // Maps every peer's segment (addrs[i] is rank i's). kError when a peer's
  // segment cannot be mapped or does not match our configuration.
  Status connect(const SegAddr* addrs);
  // All peers have mapped us: the segment's fd is no longer needed.
  void seal();
  void close();

  uint32_t slot_size() const { return cfg_.slot_size; }
  // Messages committed plus released so far: lets a poller tell whether a
  // pass moved anything (for idle back-off).
  uint64_t events() const { return events_; }
  uint32_t rank() const { return cfg_.rank; }
  uint32_t nranks() const { return cfg_.nranks; }

  // Sender: the payload area of the next free slot towards `peer`, or
  // nullptr while all its slots are in use. At most one reservation per
  // peer is outstanding; commit() publishes it.
  void* tx_reserve(uint32_t peer);
  void tx_commit(uint32_t peer, uint32_t len, uint32_t tag);

  // Receiver: the oldest message from `peer` or nullptr. A message whose
  // length exceeds slot_size is reported as such (len > slot_size) so the
  // caller fails the collective instead of reading past the slot.
  const void* rx_peek(uint32_t peer, uint32_t* len, uint32_t* tag);
  void rx_release(uint32_t peer);

 private:
  struct Peer {
    char* base = nullptr;  // peer's segment (ours for peer == rank)
    size_t bytes = 0;
    uint32_t tx_head = 0;  // our next slot in the peer's inbox for us
    uint32_t tx_tail = 0;  // cached consumer index of that inbox
    uint32_t rx_tail = 0;  // our next slot to read in our inbox for peer
    uint32_t rx_head = 0;  // cached producer index of that inbox
  };

  FabricConfig cfg_{};
  char* seg_ = nullptr;
  size_t seg_bytes_ = 0;
  int fd_ = -1;
  Peer* peers_ = nullptr;
  uint64_t events_ = 0;
};

}  // namespace ucc::plat::shm

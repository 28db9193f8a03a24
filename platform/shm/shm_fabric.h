// Shared-memory fabric between the engines of one team on one host.
//
// Words used here:
//   inbox    the part of a rank's segment where one peer writes to it:
//            `nslots` slots of `slot_size` bytes each, used as a pool
//            (see InboxCtl in the .cc). The sender is the producer, the
//            segment owner the consumer.
//   segment  one memfd per (rank, team) holding one inbox per peer. Peers
//            map it through /proc/<pid>/fd/<fd> during team creation.
//   message  one slot: up to slot_size bytes plus a header (MsgHdr) with
//            the length, an opaque 24-byte key and a kind byte that the
//            layer above uses for matching.
//
// An eager send writes straight into the receiver's inbox (a "put" into
// remote memory); the receiver reads or reduces the payload in place and
// then releases the slot. No syscalls after connect(). Messages between two
// ranks arrive in the order they were committed; the receiver may look at
// every pending message of an inbox and release them in any order (a slot
// is reused once all older ones are released too).
//
// A message of nonzero kind also bumps the receiver's attention counter,
// so a receiver can notice control messages without scanning inboxes.
//
// Over the wire (open() with a wire, in firmware_sim started with DPDK
// ports): the segment is private memory of the wire's endpoint instead of
// a memfd, peers' messages arrive in it as frames, and a message for a
// peer is written into a local shadow of its inbox and then framed
// (platform/wire/endpoint.h). Everything else here is the same.
//
// Threads: one engine thread drives a ShmTeamFabric; reserve/commit and
// peek/release for one peer must not be interleaved by two threads. Over
// the wire, that thread is also the wire's.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "offload/types.h"

namespace ucc::plat::wire {
class Wire;
class Endpoint;
}  // namespace ucc::plat::wire

namespace ucc::plat::shm {

using off::Status;

struct FabricConfig {
  uint32_t nranks;
  uint32_t rank;
  uint32_t slot_size;  // bytes; multiple of 64
  uint32_t nslots;     // power of two, 2..64
};

inline constexpr uint32_t kMaxSlots = 64;

// What precedes every payload. The key and kind are the caller's.
struct MsgKey {
  uint64_t w[3];
  bool operator==(const MsgKey& o) const {
    return w[0] == o.w[0] && w[1] == o.w[1] && w[2] == o.w[2];
  }
  bool operator!=(const MsgKey& o) const { return !(*this == o); }
};
struct MsgHdr {
  uint32_t len;
  uint8_t kind;
  uint8_t pad[3];
  MsgKey key;
};
static_assert(sizeof(MsgHdr) == 32);

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

struct InboxCtl;  // seg_layout.h

class ShmTeamFabric {
 public:
  ShmTeamFabric() = default;
  ShmTeamFabric(const ShmTeamFabric&) = delete;
  ShmTeamFabric& operator=(const ShmTeamFabric&) = delete;
  ~ShmTeamFabric() { close(); }

  // Creates this rank's segment and fills `out`. kNoMemory when the segment
  // cannot be created, kInvalidParam for a bad configuration. With a wire,
  // peers are reached through it (their addresses must be wire ones too).
  Status open(const FabricConfig& cfg, SegAddr* out,
              wire::Wire* wire = nullptr);
  // Maps every peer's segment (addrs[i] is rank i's). kError when a peer's
  // segment cannot be mapped or does not match our configuration.
  Status connect(const SegAddr* addrs);
  // All peers have mapped us: the segment's fd is no longer needed.
  void seal();
  // lost: we leave without finishing (our process or client is gone), so
  // peers stuck waiting for us should give up (peer_lost).
  void close(bool lost = false);

  uint32_t slot_size() const { return cfg_.slot_size; }
  uint32_t nslots() const { return cfg_.nslots; }
  // Messages committed plus released so far: lets a poller tell whether a
  // pass moved anything (for idle back-off).
  uint64_t events() const { return events_; }
  uint32_t rank() const { return cfg_.rank; }
  uint32_t nranks() const { return cfg_.nranks; }
  // The process that created peer's segment (from its SegAddr, checked
  // against the segment's header at connect): the peer rank's own process
  // when its engine runs inline, its firmware_sim otherwise; 0 over the
  // wire (another node).
  int32_t peer_pid(uint32_t peer) const { return peers_[peer].pid; }

  // Sender: the payload area of the next free slot towards `peer`, or
  // nullptr while all its slots are in use. At most one reservation per
  // peer is outstanding; commit() publishes it.
  void* tx_reserve(uint32_t peer);
  // Free slots in the peer's inbox for us (looks at the consumer index).
  uint32_t tx_free(uint32_t peer);
  void tx_commit(uint32_t peer, uint32_t len, const MsgKey& key, uint8_t kind);

  // Receiver: rx_poll(peer) looks for new messages from `peer` and
  // returns how many are pending (received, not released); they are
  // numbered 0..n-1 in arrival order until the next rx_poll for that peer.
  // rx_hdr is nullptr for one released since. The header lies in shared
  // memory: a length above slot_size is the sender's bug, which the caller
  // must treat as such before reading the payload.
  uint32_t rx_poll(uint32_t peer);
  // The pending count as of the last poll (no look at shared memory).
  uint32_t rx_npend(uint32_t peer) const { return peers_[peer].npend; }
  // Changes whenever a poll renumbers the pending messages of `peer`.
  uint32_t rx_epoch(uint32_t peer) const { return peers_[peer].epoch; }
  const MsgHdr* rx_hdr(uint32_t peer, uint32_t i) const;
  const void* rx_payload(uint32_t peer, uint32_t i) const;
  void rx_release(uint32_t peer, uint32_t i);
  // Whether a peer has left the team for good (closed with `lost`) or its
  // process has died without leaving it. A system call per peer: for when a
  // team seems stuck.
  bool peer_lost() const;
  // Control messages (nonzero kind) received so far.
  uint32_t attention() const;

 private:
  struct Peer {
    char* base = nullptr;  // peer's segment (ours for peer == rank)
    int32_t pid = 0;       // its creator
    size_t bytes = 0;
    InboxCtl* tx_ctl = nullptr;  // our inbox there (or its shadow)
    char* tx_slots = nullptr;
    InboxCtl* rx_ctl = nullptr;  // its inbox here
    char* rx_slots = nullptr;
    std::atomic<uint32_t>* tx_attention = nullptr;  // there; none: wire
    uint32_t tx_head = 0;  // messages sent into the peer's inbox for us
    int32_t tx_slot = -1;  // slot reserved there, or -1
    uint32_t tx_last = UINT32_MAX;  // slot taken last
    uint8_t sent[kMaxSlots] = {};   // messages put through each slot
    uint32_t rx_head = 0;     // messages seen arriving in our inbox from peer
    uint32_t npend = 0;       // of which not released (as of the last poll)
    uint64_t rx_dead = 0;     // bit i: pend[i] released since the last poll
    uint32_t epoch = 0;       // renumberings so far
    uint8_t pend[kMaxSlots];  // their slots, in arrival order
  };

  Status new_peers();
  Status open_wire(wire::Wire* wire, SegAddr* out);
  void point_tx(uint32_t peer, char* base);      // its segment mapped at base
  char* tx_at(const Peer& p, uint32_t s) const;  // slot s (masked)
  char* rx_at(const Peer& p, uint32_t s) const;

  FabricConfig cfg_{};
  wire::Wire* wire_ = nullptr;
  wire::Endpoint* ep_ = nullptr;
  char* seg_ = nullptr;
  size_t seg_bytes_ = 0;
  int fd_ = -1;
  Peer* peers_ = nullptr;
  uint64_t events_ = 0;
};

}  // namespace ucc::plat::shm

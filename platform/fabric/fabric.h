// The fabric interface: how an engine's team member reaches its peers, the
// same for every transport (platform/shm: shared memory on one host;
// platform/wire: frames between emulated NICs; platform/tcp: TCP between
// hosts; later verbs). It is RDMA-shaped:
//
//   inbox     per peer, `nslots` slots of `slot_size` bytes in the
//             receiver's memory, used as a pool (fabric/inbox.h).
//   message   one slot: a put into a free slot of the peer's inbox (the
//             sender writes the payload in place: tx_reserve gives the
//             address), finished by a publication that carries the
//             header (tx_commit: length, an opaque 24-byte key, a kind),
//             as an RDMA write with immediate would. Messages from one
//             peer are seen in the order they were committed.
//   credits   a slot is free again once the receiver releases it
//             (rx_release, in any order): tx_free / tx_reserve see it.
//   failure   peer_lost(): a peer left the team for good or died.
//   one-sided where the transport moves bytes between members' memory
//             itself (verbs RDMA): registered memory, and get/put into
//             it with completions counted per peer (below), so that a
//             large message goes from the sender's user buffer into the
//             receiver's without a slot (device/coll/streams.h).
//
// Words about peers: a fabric belongs to one team member and names its
// peers by team rank (0..nranks-1, itself included); it serves the ranks
// it was connected to (connect's `mine`), and a team may reach its other
// ranks through another fabric. The engine's Port binds each rank to one
// fabric once, at team creation, and calls the shared-memory fabric
// without a virtual call (ShmFabric is final); network fabrics are
// reached through this interface.
//
// Threads: one engine thread drives a fabric; calls for one peer must not
// be interleaved by two threads. Memory: fabrics take theirs at open and
// connect (team creation); the tx/rx calls never allocate.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/base/status.h"

namespace ucc::plat {

using base::Status;

// A channel to a host's exported memory, and its ends' addresses
// (platform/mem/remote_mem.h), which a net may open.
class RemoteMem;
struct RemoteMemAddr;

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
  // The sender's progress, for its user (the engine's Port): 24 bits,
  // little-endian; 0 says nothing.
  uint8_t lag[3];
  MsgKey key;
};
static_assert(sizeof(MsgHdr) == 32);
inline uint32_t lag_of(const MsgHdr& h) {
  return h.lag[0] | (uint32_t{h.lag[1]} << 8) | (uint32_t{h.lag[2]} << 16);
}
inline void set_lag(MsgHdr* h, uint32_t lag) {
  h->lag[0] = static_cast<uint8_t>(lag);
  h->lag[1] = static_cast<uint8_t>(lag >> 8);
  h->lag[2] = static_cast<uint8_t>(lag >> 16);
}

struct FabricConfig {
  uint32_t nranks;
  uint32_t rank;
  uint32_t slot_size;  // bytes; multiple of 64
  uint32_t nslots;     // power of two, 2..kMaxSlots
  // The member's user buffers are memory of this process (an inline
  // engine), which the fabric may register for one-sided operations.
  bool rma = false;
};

// One-sided operations. A registration names bytes of this process's
// memory to the fabric's device: `lkey` for the fabric's own operations
// on it, `rkey` for peers' (their get's source or put's target), and the
// fabric's handle for mem_dereg. What a registration lets peers do is
// chosen at mem_reg: the fewest rights the use needs.
struct RmaReg {
  uint64_t addr;
  uint64_t len;
  uint32_t lkey;
  uint32_t rkey;
  uint32_t handle;
  uint32_t pad;
};
enum RmaAccess : uint32_t {
  kRmaLocal = 1,        // the fabric writes into it (a get's destination)
  kRmaRemoteRead = 2,   // peers read it (a get's source)
  kRmaRemoteWrite = 4,  // peers write into it (a put's target)
};
// Registrations one fabric holds at once.
inline constexpr uint32_t kMaxRmaRegs = 256;
// A link's one-sided threshold from its two ends' (each published in its
// address): the larger, or 0 (never) where either end says 0. Both ends
// compute the same.
inline uint32_t rma_agree(uint32_t mine, uint32_t theirs) {
  return mine != 0 && theirs != 0 ? (mine > theirs ? mine : theirs) : 0;
}
// Whether [at, at + len) lies inside [base, base + blen), len >= 1,
// without overflow.
inline bool rma_covers(uint64_t base, uint64_t blen, uint64_t at,
                       uint64_t len) {
  return len != 0 && at >= base && len <= blen && at - base <= blen - len;
}
// The longest single get or put (callers split longer transfers: each
// operation stays short beside the peer timeout).
inline constexpr uint32_t kRmaMaxOp = 1u << 22;

// Whether a configuration is one every fabric accepts.
inline bool fabric_config_ok(const FabricConfig& c) {
  return c.nranks != 0 && c.rank < c.nranks && c.slot_size >= 64 &&
         c.slot_size % 64 == 0 && c.nslots >= 2 && c.nslots <= kMaxSlots &&
         (c.nslots & (c.nslots - 1)) == 0;
}

// What a member publishes so that peers can reach it over one transport,
// through the team's OOB: opaque outside its transport, which checks
// every field of a peer's before use (it comes from another process).
// kind 0: none (the member has no such transport).
struct FabricAddr {
  uint32_t kind;  // the transport's magic
  uint32_t pad;
  uint8_t bytes[56];
};
static_assert(sizeof(FabricAddr) == 64);

class Fabric {
 public:
  virtual ~Fabric() = default;

  // Takes the peers' addresses (indexed by team rank) and reaches every
  // rank r with mine[r] (never our own rank). kError when an address is
  // not one of this transport's or its configuration differs from ours.
  virtual Status connect(const FabricAddr* addrs, const bool* mine) = 0;
  // All peers have connected: creation-time resources (fds) can go.
  virtual void seal() = 0;

  // Sender: the payload area of the next free slot towards `peer`, or
  // nullptr while all its slots are in use. At most one reservation per
  // peer is outstanding; tx_commit() publishes it.
  virtual void* tx_reserve(uint32_t peer) = 0;
  // Free slots in the peer's inbox for us.
  virtual uint32_t tx_free(uint32_t peer) = 0;
  // `lag` (24 bits; 0: none) rides in the header for the receiver
  // (MsgHdr::lag).
  virtual void tx_commit(uint32_t peer, uint32_t len, const MsgKey& key,
                         uint8_t kind, uint32_t lag = 0) = 0;

  // Receiver: rx_poll(peer) looks for new messages from `peer` and returns
  // how many are pending (received, not released); they are numbered
  // 0..n-1 in arrival order until the next rx_poll for that peer. rx_hdr
  // is nullptr for one released since. A header's length above
  // slot_size is the sender's bug, which the caller must treat as such
  // before reading the payload.
  virtual uint32_t rx_poll(uint32_t peer) = 0;
  // The pending count as of the last poll (no new look).
  virtual uint32_t rx_npend(uint32_t peer) const = 0;
  // Changes whenever a poll renumbers the pending messages of `peer`.
  virtual uint32_t rx_epoch(uint32_t peer) const = 0;
  virtual const MsgHdr* rx_hdr(uint32_t peer, uint32_t i) const = 0;
  virtual const void* rx_payload(uint32_t peer, uint32_t i) const = 0;
  virtual void rx_release(uint32_t peer, uint32_t i) = 0;

  // Whether a peer has left the team for good (closed with `lost`), died,
  // or gone silent past the transport's timeout. May cost a system call:
  // for when a team seems stuck.
  virtual bool peer_lost() const = 0;
  // A team stuck waiting for a message from `peer`: a transport that
  // makes its connections on demand makes this one now, so that a peer
  // that is gone, or whose own team has failed, is found out (peer_lost).
  virtual void waiting_on(uint32_t peer) { (void)peer; }
  // This member's team has failed (a peer was lost): peers stuck waiting
  // for us should give up too (their peer_lost), while we stay open.
  virtual void fail() {}
  // Control messages (nonzero kind) received so far.
  virtual uint32_t attention() const = 0;
  // The peers anything can have come from, for a transport that makes
  // its links on demand (a link is made by the first frame from a peer,
  // if not before): heard_count() of them, heard_peer(0..count-1), in
  // the order made, so that a poller looks at those and not the team.
  // kAllPeers: every peer it serves may have sent something.
  static constexpr uint32_t kAllPeers = UINT32_MAX;
  virtual uint32_t heard_count() const { return kAllPeers; }
  virtual uint32_t heard_peer(uint32_t i) const { return i; }
  // Messages committed plus released so far: lets a poller tell whether a
  // pass moved anything (for idle back-off).
  virtual uint64_t events() const = 0;
  // The process that owns `peer`'s memory when the engine may read it
  // directly (shared memory on one host: single copy), else 0.
  virtual int32_t peer_pid(uint32_t) const { return 0; }
  // Every message committed has left this process (written to a socket
  // the peer has taken: the kernel delivers it without our help; TCP
  // waits for a new call's answer that the peer took it), or never will
  // (its peer is lost). The engine completes a collective
  // only then, so that a rank which leaves the library after its
  // collective (into MPI, or to compute) leaves no peer waiting for data
  // that only its next call would send. Shared memory: always.
  virtual bool tx_flushed() const { return true; }

  // --- one-sided operations ------------------------------------------------
  // Defaults: none (rma_min 0; then the rest is never called).
  //
  // The smallest message this member and `peer` agreed to move one-sided:
  // both opened with FabricConfig::rma on nets that allow it, and the
  // larger of their nets' thresholds (exchanged in the members'
  // addresses). Known from connect() on and the same at both ends, so
  // that sender and receiver choose alike; 0: never.
  virtual uint64_t rma_min(uint32_t peer) const {
    (void)peer;
    return 0;
  }
  // Registers [addr, addr + len) with the rights `access` (RmaAccess
  // bits); *reg gets its keys and handle. kNoResource when the fabric
  // holds kMaxRmaRegs already or the device refuses (logged once: pinned
  // memory limits, RLIMIT_MEMLOCK).
  virtual Status mem_reg(void* addr, uint64_t len, uint32_t access,
                         RmaReg* reg) {
    (void)addr;
    (void)len;
    (void)access;
    (void)reg;
    return Status::kNotSupported;
  }
  // Gives a registration back. Peers lose their access at once; the
  // fabric's own operations on it still running complete first.
  virtual void mem_dereg(uint32_t handle) { (void)handle; }
  // get: `len` bytes (1..kRmaMaxOp) at raddr under the peer's rkey into
  // `local`, which lies inside `reg` (kRmaLocal). put: the other way,
  // from `local` (any registration) into the peer's memory. Completion:
  // *ticket is the operation's number towards `peer`; it has completed
  // once rma_done(peer) reaches it (operations towards one peer complete
  // in the order posted). kOk posted; kInProgress: the queue is full or
  // the link not connected yet, nothing posted, call again; kError: the
  // link is down (peer_lost() says so). Bounds and keys are checked by
  // the device: an operation outside the peer's registration fails the
  // link, as any error completion does.
  virtual Status get(uint32_t peer, void* local, const RmaReg& reg,
                     uint64_t raddr, uint32_t rkey, uint32_t len,
                     uint64_t* ticket) {
    (void)peer, (void)local, (void)reg, (void)raddr, (void)rkey, (void)len;
    (void)ticket;
    return Status::kNotSupported;
  }
  virtual Status put(uint32_t peer, const void* local, const RmaReg& reg,
                     uint64_t raddr, uint32_t rkey, uint32_t len,
                     uint64_t* ticket) {
    (void)peer, (void)local, (void)reg, (void)raddr, (void)rkey, (void)len;
    (void)ticket;
    return Status::kNotSupported;
  }
  // One-sided operations towards `peer` completed successfully so far.
  virtual uint64_t rma_done(uint32_t peer) const {
    (void)peer;
    return 0;
  }
};

// An engine's way to other hosts: opens one fabric per team member,
// whose peers are the ranks on other hosts. The wire (firmware_sim's
// emulated NICs) and TCP implement it.
class Net {
 public:
  virtual ~Net() = default;
  // A fabric for one team member with this configuration; *addr is what
  // its peers need to reach it. nullptr when out of endpoints or memory.
  virtual Fabric* open(const FabricConfig& cfg, FabricAddr* addr) = 0;
  // The member leaves (lost: it failed): its peers are told, what it
  // still owes them is delivered where the transport can, then the
  // fabric is freed (maybe later: do not touch it again).
  virtual void close(Fabric* f, bool lost) = 0;
  // Moves what is due (receives, sends, acknowledgements, timeouts).
  // Returns how much happened (0: idle pass).
  virtual uint64_t progress() = 0;

  // For the net's owner, which drives it beside the engine:
  // Whether anything uses the net now; false lets an idle owner skip
  // progress() and its system call (TCP: no endpoint, no connection).
  virtual bool in_use() const { return true; }
  // Whether the net also carries the team's ranks on this member's own
  // host, which otherwise meet in shared memory: the simulated network
  // (platform/sim), whose hosts are simulated, not this machine's. The
  // team still knows which ranks share a host (node-aware algorithms).
  virtual bool carries_local() const { return false; }
  // progress() when everything else the owner drives (the engine, shared
  // memory, which nothing here wakes) has been quiet for `quiet` passes
  // in a row: the net may then wait a little for data (TCP: after its
  // spin count, up to its wait).
  virtual uint64_t progress_quiet(uint32_t quiet) {
    (void)quiet;
    return progress();
  }
  // A channel to memory a host process exported to this node's engines
  // (platform/mem/remote_mem.h: the engine's end; *mine is what the
  // host's end needs), for a net that reaches host memory itself (verbs
  // RDMA). nullptr where it cannot (logged); delete it when done, before
  // the net.
  virtual RemoteMem* open_remote_mem(const RemoteMemAddr& host,
                                     RemoteMemAddr* mine) {
    (void)host;
    (void)mine;
    return nullptr;
  }
};

}  // namespace ucc::plat

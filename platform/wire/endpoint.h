// One team member's end of the wire: the reliable transport of its links
// (one per peer) and the memory its fabric (wire_fabric.h) works on.
//
// The fabric sees the same inbox layout as over shared memory. Its own
// segment lives here and receives the peers' puts; for each peer it
// writes messages into a shadow of its inbox in that peer's segment (the
// same control block and slots). kick() tells us a message was published
// in a shadow; we frame it (data frames, in order, at most `window` in
// flight) and the peer's endpoint applies the frames to its segment. Its
// releases come back as done[] snapshots and land in the shadow's control
// block, which is how the fabric's tx_reserve()/tx_free() see free slots.
//
// Reliability, per link and direction:
//   - frames are numbered; the receiver accepts each number once, within
//     a window of kMaxWindow after the oldest it lacks, applies its put at
//     once and publishes messages in frame order (so a message never
//     appears before an earlier one, or before its own bytes);
//   - every frame we send carries our ack (next number expected) and sack
//     (which later ones we have); an ack is sent on its own when frames
//     arrived and none of ours went back in the same progress pass;
//   - the sender keeps what it needs to rebuild each frame in flight (slot,
//     offset, length: the bytes stay in the shadow slot, which is not
//     reused before the receiver releases it) and sends it again after a
//     timeout (RTT-based, doubling per try, within [rto_min, rto_max]) or
//     at once when a later frame is acknowledged before it;
//   - a peer silent for peer_timeout_ms (pings keep a live one talking),
//     or one that says it failed (kBye with kLost), is lost.
//
// Threads: the wire's.
#pragma once

#include <cstdint>

#include "platform/base/arena.h"
#include "platform/fabric/inbox.h"
#include "platform/wire/frame.h"

namespace ucc::plat::wire {

using base::Status;
class Wire;

class Endpoint {
 public:
  // --- for the fabric --------------------------------------------------------
  char* segment() const { return seg_; }
  const FabricConfig& config() const { return cfg_; }
  InboxView shadow(uint32_t peer) const { return links_[peer].shadow; }
  // Takes the peers' addresses (from Wire::open). kError when one is not a
  // wire address or its configuration differs from ours.
  Status connect(const FabricAddr* addrs, const bool* mine);
  // A message was published in shadow(peer): start sending it.
  void kick(uint32_t peer);
  // Whether a peer has failed, or has been silent for too long.
  bool peer_lost() const;

 private:
  friend class Wire;
  enum class State : uint8_t { kFree, kOpen, kConnected, kClosing };
  enum class Peer : uint8_t { kLive, kLeft, kLost };

  struct TxEnt {
    uint64_t sent_ns;
    uint32_t off;
    uint32_t len;
    uint16_t slot;
    uint8_t flags;
    uint8_t tries;  // 0: acknowledged (sacked)
  };
  struct Link {
    uint64_t mac = 0;
    uint32_t ep = 0;
    Peer state = Peer::kLive;
    bool ack_owed = false;
    InboxView shadow;  // our inbox in its segment (our copy)
    // Sending.
    uint32_t una = 0;      // oldest frame not acknowledged
    uint32_t nxt = 0;      // next new frame number
    uint32_t msgs = 0;     // shadow messages completely framed
    uint32_t msg_off = 0;  // bytes of the next one framed so far
    uint64_t srtt = 0, rttvar = 0, rto = 0;  // ns
    uint64_t check_at = 0;                   // next timeout scan
    uint32_t ctl_out = 0;                    // snapshots sent
    uint32_t ctl_need = 0;   // the first one with our latest releases
    uint32_t ctl_acked = 0;  // the newest the peer says it applied
    uint64_t ack_at = 0;     // when we last sent anything to it
    TxEnt win[kMaxWindow];
    // Receiving.
    uint32_t rcv = 0;      // next frame number expected
    uint64_t have = 0;     // bit i: frame rcv + i arrived
    uint64_t last = 0;     // bit i: ... and ends a message
    uint32_t heads = 0;    // messages published in our inbox
    uint32_t ctl_in = 0;   // newest snapshot applied
    bool ctl_any = false;  // one applied yet
    uint8_t rslot[kMaxWindow];
    uint8_t done_sent[kMaxSlots];
    uint64_t heard = 0, pinged = 0;
  };

  Status init(Wire* w, uint32_t id, const FabricConfig& cfg);
  void release();  // frees the memory
  void on_frame(const FrameHdr& h, const uint8_t* payload, uint64_t src_mac);
  void on_data(Link& l, uint32_t peer, const FrameHdr& h, const uint8_t* p);
  void on_acks(Link& l, const FrameHdr& h);
  void publish(uint32_t peer, uint32_t slot);
  // Sends frames owed on every link; returns how many went out.
  uint64_t tick();
  uint32_t pump(uint32_t peer);
  uint32_t resend_due(uint32_t peer, bool holes_only);
  bool send_frame(uint32_t peer, FrameType t, uint8_t flags, uint32_t seq,
                  uint16_t slot, uint32_t off, const void* data, uint32_t len);
  bool done_changed(uint32_t peer) const;
  // Everything we sent has been acknowledged (or its peer is gone).
  bool drained() const;

  Wire* wire_ = nullptr;
  uint32_t id_ = 0;
  State state_ = State::kFree;
  FabricConfig cfg_{};
  base::Arena mem_;  // the segment, the shadows and the links
  char* seg_ = nullptr;
  size_t seg_bytes_ = 0;
  char* shadows_ = nullptr;
  Link* links_ = nullptr;
  uint64_t closed_at_ = 0;
};

}  // namespace ucc::plat::wire

// The wire of one emulated node: its frame ports, the endpoints of the
// team fabrics it hosts, and the reliable transport between endpoints
// (endpoint.h). One per firmware_sim.
//
// Routing: a frame goes to its destination MAC; our own MAC loops back
// inside the node. The port that reaches a MAC is learned from the frames
// that MAC sends us (as a switch learns); until then a frame is sent on
// every port (a full mesh of point-to-point memif links, or one af_packet
// port on a bridge, both work this way).
//
// Fault injection (WireFaults) applies to every frame we send, loopback
// included, after its checksum: drop, duplicate, hold back behind the
// next frame (reorder), flip one byte (corrupt). Seeded, so a run can be
// repeated.
//
// Threads: one thread (the daemon's) calls everything, fabrics included.
// Memory: endpoints take theirs at open (team creation); progress()
// allocates nothing.
#pragma once

#include <cstdint>

#include "platform/base/arena.h"
#include "platform/base/status.h"
#include "platform/fabric/fabric.h"
#include "platform/wire/frame.h"
#include "platform/wire/port.h"

namespace ucc::plat::wire {

using base::Status;
class Endpoint;

struct WireFaults {
  double drop = 0;     // probability per frame, 0..1
  double dup = 0;      // sent twice
  double reorder = 0;  // sent after the next frame
  double corrupt = 0;  // one byte flipped (the checksum must catch it)
  uint64_t seed = 1;
};

struct WireConfig {
  uint32_t window = 64;       // data frames in flight per link, 1..64
  uint32_t rto_min_us = 500;  // retransmission timeout bounds
  uint32_t rto_max_us = 50000;
  uint32_t keepalive_ms = 100;      // ping a silent peer this often
  uint32_t peer_timeout_ms = 2000;  // silent this long: the peer is lost
  uint32_t max_endpoints = 1024;    // team members this node hosts at once
  WireFaults faults;
};

struct WireStats {
  uint64_t tx_frames;    // handed to ports (retransmissions included)
  uint64_t rx_frames;    // received (before any check)
  uint64_t tx_bytes;     // payload bytes of data frames sent
  uint64_t rx_bytes;     // payload bytes of new data frames accepted
  uint64_t retransmits;  // data frames sent again
  uint64_t dup_rx;       // data frames that had already arrived
  uint64_t bad_frames;   // failed the checksum or a header check
  uint64_t no_room;      // sends refused by a full port (tried later)
  uint64_t inj_drop, inj_dup, inj_reorder, inj_corrupt;  // injected
};

class Wire final : public Net {
 public:
  Wire() = default;
  Wire(const Wire&) = delete;
  Wire& operator=(const Wire&) = delete;
  ~Wire() override { fini(); }

  // The ports stay the caller's and must outlive the wire. kInvalidParam
  // for a bad configuration, kNoMemory.
  Status init(const WireConfig& cfg, FramePort* const* ports, uint32_t nports);
  void fini();

  // --- Net (fabric.h)
  // --------------------------------------------------------- A fabric for one
  // team member (wire_fabric.h) over a new endpoint: its own segment
  // (fabric/inbox.h) and a shadow of each peer's inbox for us. `addr` gets what
  // peers need to reach it (kind kWireAddrMagic: our MAC and the endpoint id).
  // nullptr when the endpoint table is full or memory runs out.
  Fabric* open(const FabricConfig& cfg, FabricAddr* addr) override;
  // The member leaves (lost: it failed). Its peers are told; frames it
  // still owes them are delivered first (the endpoint lingers until they
  // are acknowledged, or the peer is lost), then its memory is freed.
  void close(Fabric* f, bool lost) override;
  // Receives, delivers, retransmits, acknowledges. Returns how many frames
  // moved (0: idle pass).
  uint64_t progress() override;

  // The same on bare endpoints (tests, the fabric).
  Endpoint* open_endpoint(const FabricConfig& cfg, FabricAddr* addr);
  void close_endpoint(Endpoint* ep, bool lost);
  // Whether frames are unacknowledged or owed anywhere: a caller should
  // not sleep for long while this is true.
  bool busy() const;

  Mac mac() const { return mac_; }
  const WireConfig& config() const { return cfg_; }
  const WireStats& stats() const { return stats_; }
  // Largest data payload per frame.
  uint32_t max_payload() const { return max_payload_; }

  // --- for endpoints ---------------------------------------------------------
  // Sends one frame: h (its csum is filled in here) and len payload bytes
  // to `dst`. False when no port has room now.
  bool send(const Mac& dst, FrameHdr* h, const void* payload, uint32_t len);
  WireStats& counters() { return stats_; }
  uint64_t now() const { return now_; }

 private:
  static void on_frame(void* ctx, uint32_t port, const uint8_t* f,
                       uint32_t len);
  void receive(uint32_t port, const uint8_t* f, uint32_t len);
  bool emit(const Mac& dst, const uint8_t* f, uint32_t len);
  bool route(const Mac& dst, const uint8_t* f, uint32_t len);
  void learn(const Mac& src, uint32_t port);
  uint64_t rand64();
  bool chance(double p) {
    return p > 0 && static_cast<double>(rand64() >> 11) * 0x1.0p-53 < p;
  }

  WireConfig cfg_{};
  FramePort* const* ports_ = nullptr;
  uint32_t nports_ = 0;
  Mac mac_{};
  uint32_t max_frame_ = 0;
  uint32_t max_payload_ = 0;
  uint64_t now_ = 0;
  uint64_t next_maintain_ = 0;
  uint64_t rng_ = 0;
  WireStats stats_{};

  base::Arena tables_;        // eps_, gen_ and the frame buffers
  Endpoint** eps_ = nullptr;  // max_endpoints slots, nullptr when free
  uint16_t* gen_ = nullptr;   // per slot: bumped at each open
  uint32_t nopen_ = 0;
  // Every open slot lies below top_: progress walks the endpoints open,
  // not the max_endpoints reserved.
  uint32_t top_ = 0;
  void vacate(uint32_t i);  // eps_[i] is gone: nullptr, counts, top_

  static constexpr uint32_t kRoutes = 64;
  struct Route {
    uint64_t mac;
    uint32_t port;
  };
  Route routes_[kRoutes] = {};
  uint32_t nroutes_ = 0;

  uint8_t* stage_ = nullptr;  // one frame being built
  uint8_t* held_ = nullptr;   // a frame held back (reorder)
  uint32_t held_len_ = 0;
  Mac held_dst_{};
  // Frames to ourselves, received at the next progress().
  static constexpr uint32_t kLoop = 64;
  uint8_t* loop_ = nullptr;
  uint32_t loop_len_[kLoop] = {};
  uint32_t loop_head_ = 0, loop_tail_ = 0;
};

}  // namespace ucc::plat::wire

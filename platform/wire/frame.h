// What travels between emulated NICs: Ethernet frames of our own
// EtherType, each carrying one wire header (FrameHdr) and, for data, a
// piece of a message.
//
// Words used here:
//   node      one firmware_sim (one emulated NIC), named by its MAC.
//   endpoint  one team member's fabric inside a node (Endpoint); frames
//             name their source and destination endpoint by id.
//   link      the state one endpoint keeps for one team peer: the reliable
//             stream of frames in each direction.
//   frame n   the n-th data frame of a link (per direction, from 0).
//
// A data frame is a one-sided put: `len` bytes at byte `off` of slot
// `slot` of the receiver's inbox for the sender (the slot's 64-byte
// header area first, then the payload). The last frame of a message
// (kLast) also publishes it, the way an RDMA write with immediate does:
// once every earlier frame of the link has arrived, the receiver appends
// the slot to the inbox order and bumps its head. Every frame, of any
// type, also carries the sender's receive state for the link: the next
// frame number it expects (ack), which later ones it already has (sack),
// and its inbox's release counts (done[]) with a version (ctl), which are
// the sender's credits; ctl_ack echoes the newest version it applied of
// ours, so that a lost credit update is sent again.
//
// Byte order: little-endian hosts only (checked at compile time); the
// emulator connects nodes of one machine or one cluster of x86/arm hosts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "platform/fabric/fabric.h"
#include "platform/os/crc32c.h"

namespace ucc::plat::wire {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the wire format is little-endian");

inline constexpr uint16_t kEtherType = 0x88B5;   // IEEE local experimental
inline constexpr uint16_t kFrameMagic = 0x5557;  // "WU"
inline constexpr uint8_t kFrameVersion = 1;
inline constexpr uint32_t kEthHdr = 14;
// A member's FabricAddr on the wire (kind kWireAddrMagic): its node's MAC
// and endpoint id, and its fabric's geometry.
inline constexpr uint32_t kWireAddrMagic = 0x55435752u;  // "UCWR"
struct WireAddr {
  uint32_t ep;
  uint32_t slot_size;
  uint32_t nslots;
  uint32_t nranks;
  uint64_t mac;
};
static_assert(sizeof(WireAddr) <= sizeof(FabricAddr::bytes));
inline constexpr uint32_t kMaxWindow = 64;  // frames in flight per link

struct Mac {
  uint8_t b[6];
  bool operator==(const Mac& o) const { return memcmp(b, o.b, 6) == 0; }
  bool operator!=(const Mac& o) const { return !(*this == o); }
  uint64_t pack() const {
    uint64_t v = 0;
    memcpy(&v, b, 6);
    return v;
  }
  static Mac unpack(uint64_t v) {
    Mac m;
    memcpy(m.b, &v, 6);
    return m;
  }
};

enum class FrameType : uint8_t {
  kData = 1,  // a put (and maybe the publication of a message)
  kAck = 2,   // receive state only
  kPing = 3,  // receive state, and please answer (keepalive)
  kBye = 4,   // the sender's endpoint leaves the team (kLost: it failed)
};

enum : uint8_t { kLast = 1, kLost = 2 };

struct FrameHdr {
  uint16_t magic;
  uint8_t version;
  FrameType type;
  uint32_t dst_ep;
  uint32_t src_ep;
  uint32_t src_rank;  // the sender's rank in the team
  uint32_t seq;       // kData: its frame number
  uint32_t ack;       // the next frame number the sender expects from us
  uint64_t sack;      // bit i: it already has frame ack + 1 + i
  uint32_t ctl;       // version of done[] (newer wins)
  uint16_t slot;      // kData
  uint8_t flags;      // kLast (kData), kLost (kBye)
  uint8_t pad0;
  uint32_t off;             // kData: byte offset in the slot
  uint32_t len;             // kData: payload bytes after this header
  uint32_t csum;            // CRC32C of this header (csum = 0) and the payload
  uint32_t ctl_ack;         // the newest of our ctl versions the sender applied
  uint8_t done[kMaxSlots];  // the sender's inbox release counts for us
};
static_assert(sizeof(FrameHdr) == 120);
static_assert(kMaxSlots == kMaxWindow);

// The smallest frame we send: Ethernet header plus FrameHdr.
inline constexpr uint32_t kFrameOverhead = kEthHdr + sizeof(FrameHdr);

// The frames' checksum (platform/os/crc32c.h).
using ::ucc::plat::crc32c;

}  // namespace ucc::plat::wire

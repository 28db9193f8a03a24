// What travels over a TCP connection between two engines (tcp_net.h):
// frames, each a 32-byte header and `len` bytes after it.
//
// Words used here:
//   engine    one TcpNet: a listening socket and its connections, named by
//             a random 64-bit instance id.
//   endpoint  one team member's fabric in an engine (TcpFabric); frames
//             name their source and destination endpoint by id.
//   link      the state an endpoint keeps for one remote team peer; its
//             messages travel on the connection to the peer's engine.
//   message n the n-th message of a link in one direction (from 0).
//
// A data frame carries one message: the slot's 64-byte header area
// (MsgHdr first) and the payload, for slot `slot` of the receiver's inbox
// for the sender, as the n-th message of the link (`seq`). The receiver
// takes message n only after n - 1 (TCP keeps the order); one it already
// has (after a reconnection, the sender resends from the last one the
// receiver acknowledged) is read and dropped. Every frame also carries
// `ack`: how many messages the sender has received on the reverse link.
// A credit frame carries the sender's inbox release counts (done[]) for
// the receiver, the receiver's credits. Hello opens a connection (both
// ends send one: the engine's instance id), ping asks for a pong, bye
// says an endpoint left its team (kLost: it failed; `seq`: the
// receiver's team rank), or with dst_ep 0 that the engine is closing for
// good (every endpoint of it that has not said goodbye is gone).
//
// Who may connect: an engine accepts a connection only from an engine
// with a smaller instance id whose hello presents the accepting engine's
// key. The key travels in the members' addresses, which the job's own
// out-of-band exchange carries; a stranger that reaches the port cannot
// present it. (The frames themselves travel in the clear: the network
// between a job's hosts is trusted, as with MPI's TCP transports.) A bye
// is answered by a bye with kAck, from the endpoint or, when it is gone,
// from its engine on its behalf; the leaving endpoint keeps its memory
// until then (TCP order: the answer also says every message before the
// bye arrived), and says it again on a new connection after a break.
//
// Byte order: little-endian hosts only (checked at compile time), like the
// wire between emulated NICs.
#pragma once

#include <cstdint>

#include "platform/fabric/fabric.h"

namespace ucc::plat::tcp {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the TCP framing is little-endian");

inline constexpr uint32_t kTcpAddrMagic = 0x55435443u;  // "UCTC"
inline constexpr uint16_t kFrameMagic = 0x5554;         // "TU"
inline constexpr uint8_t kFrameVersion = 1;

// A member's FabricAddr over TCP (kind kTcpAddrMagic).
struct TcpAddr {
  uint32_t ip;    // IPv4, network byte order
  uint16_t port;  // network byte order
  uint16_t pad;
  uint64_t instance;  // the engine's (never 0)
  uint32_t ep;        // the endpoint's id in that engine
  uint32_t slot_size;
  uint32_t nslots;
  uint32_t nranks;
  uint32_t pad2;
  uint64_t key;  // the engine's secret: a connection must present it
};
static_assert(sizeof(TcpAddr) <= sizeof(FabricAddr::bytes));

enum class Type : uint8_t {
  kHello = 1,   // payload: Hello
  kData = 2,    // payload: a slot's header area and the message
  kCredit = 3,  // payload: nslots release counts
  kPing = 4,
  kPong = 5,
  kBye = 6,
};

enum : uint8_t { kLost = 1, kAck = 2 };  // kBye flags

struct Hdr {
  uint16_t magic;
  uint8_t version;
  Type type;
  uint32_t len;       // bytes after this header
  uint32_t dst_ep;    // the receiver's endpoint (0: the engine)
  uint32_t src_ep;    // the sender's endpoint
  uint32_t src_rank;  // the sender's team rank
  uint32_t seq;       // kData: the message's number on its link; kBye:
                      // the receiver's team rank
  uint32_t ack;       // messages the sender has received on the reverse link
  uint16_t slot;      // kData: the slot in the receiver's inbox
  uint8_t flags;      // kBye: kLost, kAck
  uint8_t nslots;     // kCredit: release counts that follow
};
static_assert(sizeof(Hdr) == 32);

struct Hello {
  uint64_t instance;  // the sender's
  uint64_t key;       // the receiver's, from its address (0: not known)
};

}  // namespace ucc::plat::tcp

// What travels over a TCP connection between two engines (tcp_net.h):
// frames, each a 40-byte header and `len` bytes after it.
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
// Integrity: every header carries its CRC32C (`crc`), checked before any
// other field is believed; with UCC_NET_CHECKSUM=1 every payload too
// (kSummed, `body_crc`), checked before a message is published. TCP's own
// 16-bit checksum misses what these catch (a flipped pair of bits in one
// segment, a middlebox that rewrites bytes); they are no defence against
// someone who writes into the stream on purpose (they compute the CRC
// too). A failure closes the connection for good and says why on it
// (kCorrupt), so the collectives of both ends fail naming the peer.
//
// A data frame carries one message: the slot's 64-byte header area
// (MsgHdr first) and the payload, for slot `slot` of the receiver's inbox
// for the sender, as the n-th message of the link (`seq`). The receiver
// takes message n only after n - 1 (TCP keeps the order); one it already
// has (after a reconnection, the sender resends from the last one the
// receiver acknowledged) is read and dropped. Every frame also carries
// `ack`: how many messages the sender has received on the reverse link.
// A credit frame carries the sender's inbox release counts (done[]) for
// the receiver, the receiver's credits. A data frame may carry them too,
// before its slot's bytes (`nslots` of them; 0: none): credits ride on
// the messages going the other way, and a frame of their own goes out
// only when the peer counts half its window taken (our messages held and
// released without credits), when they have waited kCreditDelayUs (the
// engine's once-a-millisecond pass sends them), or when the peer must
// hear at once (a reconnection, a team stuck on it). Hello opens a
// connection (both
// ends send one: the engine's instance id), ping asks for a pong, bye
// says an endpoint left its team (kLost: it failed; `seq`: the
// receiver's team rank), or with dst_ep 0 that the engine is closing for
// good (every endpoint of it that has not said goodbye is gone).
//
// Who may connect: an engine accepts a connection only from an engine
// with a smaller instance id that proves it holds the accepting engine's
// key, and the accepting engine proves it back, with no key on the wire
// (three hellos, `step`):
//   kOpen    connector -> acceptor: its instance and nonce Nc
//   kAnswer  acceptor -> connector: its instance, nonce Na and
//            HMAC(K, "A" Ic Ia Nc Na), checked by the connector
//   kProve   connector -> acceptor: HMAC(K, "C" Ic Ia Nc Na)
// K is the acceptor's 128-bit key. It travels in the members' addresses,
// which only the teams' own out-of-band exchanges carry (MPI's, a
// store's, the rendezvous'); a stranger that reaches the port cannot
// prove it, and a hello recorded once is worth nothing on a new
// connection (fresh nonces). Until the proof, nothing but hellos is
// read; connections that have not proven themselves are bounded
// (kMaxStrangers per engine, kHelloMs each). After it, the frames travel
// in the clear: an attacker on the path who can inject into an
// established TCP stream is not defended against (docs/network.md). A bye
// is answered by a bye with kAck, from the endpoint or, when it is gone,
// from its engine on its behalf; the leaving endpoint keeps its memory
// until then (TCP order: the answer also says every message before the
// bye arrived), and says it again on a new connection after a break.
//
// One-sided reads (the fabric's get, emulated: tcp_rma.cc): a kGet asks
// for bytes of a registration of the receiving endpoint; that engine's
// progress answers with one kGetData frame written straight from the
// registered memory, and the asker reads it straight into the get's
// destination: no slot and no copy by either side's CPU, only the
// sockets'. After a reconnection the asker asks again for every get not
// answered whole (a read may be repeated); a request outside the
// registration, or for one given back, is answered kRefused, and the
// asker's link fails, as a remote access error fails an RDMA link.
//
// One-sided writes (the fabric's put, emulated the same way): a kPut
// carries its request (RmaReq) and then the bytes, written by the putter
// straight from its registered memory; the receiving engine's progress
// checks the request against its registration (remote-write right,
// bounds, key) as soon as the request is in, and reads the bytes straight
// into the registered memory, then answers kPutAck in the order of the
// requests it answers (gets' data and puts' acknowledgements alike). A
// refused put's bytes are read and dropped, and its kPutAck says
// kRefused: the putter's link fails. The bytes are in place before the
// payload's checksum (UCC_NET_CHECKSUM) is checked, as RDMA places a
// write's bytes before it can fail: a bad checksum breaks the connection,
// the put is sent again on the next one (a write may be repeated), and
// only its kPutAck completes it.
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
// 6: an answerer pongs the call it takes (Conn::confirmed); 7: puts.
inline constexpr uint8_t kFrameVersion = 7;
// Longest that released slots wait for a message to carry their credits
// while the peer still counts more than half its window free (it need not
// wait on them). A shorter delay put a credit frame of its own at the
// start of most bcasts' non-roots (2 hosts x 1 rank, docs/perf/hosts.md).
inline constexpr uint32_t kCreditDelayUs = 1000;
inline constexpr uint32_t kMaxStrangers = 64;  // accepted, not proven yet
inline constexpr uint32_t kHelloMs = 3000;     // to prove itself, at most

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
  uint32_t rma_min;  // one-sided from this many bytes (0: none)
  uint64_t key[2];   // the engine's secret: a connection must prove it
};
static_assert(sizeof(TcpAddr) <= sizeof(FabricAddr::bytes));

enum class Type : uint8_t {
  kHello = 1,   // payload: Hello
  kData = 2,    // payload: nslots release counts (0 or more), then a
                // slot's header area and the message
  kCredit = 3,  // payload: nslots release counts
  kPing = 4,
  kPong = 5,
  kBye = 6,
  kGet = 7,      // payload: RmaReq (a one-sided read of the receiver's memory)
  kGetData = 8,  // payload: the bytes of the link's oldest get (or kRefused)
  kPut = 9,      // payload: RmaReq, then its `len` bytes for the receiver
  kPutAck = 10,  // none: the link's oldest put is in place (or kRefused)
};

// A get's or a put's request: `len` bytes at `addr` under the receiver
// endpoint's registration `rkey` (tcp_rma.cc). The answers come in
// request order.
struct RmaReq {
  uint64_t addr;
  uint32_t rkey;
  uint32_t len;
};
static_assert(sizeof(RmaReq) == 16);

// Hdr::flags. kBye: kLost, kAck, and on the engine's bye (dst_ep 0)
// kCorrupt: we close because a frame of yours failed its checksum. Any
// frame: kSummed, body_crc holds the payload's CRC32C. kGetData,
// kPutAck: kRefused, the get or put named memory its registration does
// not cover (or allow).
enum : uint8_t {
  kLost = 1,
  kAck = 2,
  kSummed = 4,
  kCorrupt = 8,
  kRefused = 16
};

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
  uint8_t flags;      // kLost, kAck, kSummed, kCorrupt
  uint8_t nslots;     // kCredit, kData: release counts that follow
  uint32_t body_crc;  // kSummed: CRC32C of the len bytes after the header
  uint32_t crc;       // CRC32C of the header before this field, always
};
static_assert(sizeof(Hdr) == 40);

// The header's own checksum (crc32c.h), over every field before `crc`.
uint32_t hdr_crc(const Hdr& h);

enum : uint8_t { kOpen = 1, kAnswer = 2, kProve = 3 };  // Hello::step
inline constexpr uint32_t kNonceBytes = 32;

struct Hello {
  uint64_t instance;  // the sender's
  uint8_t step;
  uint8_t pad[7];
  uint8_t nonce[kNonceBytes];  // kOpen, kAnswer: the sender's
  uint8_t mac[32];             // kAnswer, kProve
};
static_assert(sizeof(Hello) == 80);

// The MAC of one side: role 'A' (the acceptor's answer) or 'C' (the
// connector's proof), over both instances and both nonces, under the
// acceptor's key. false: libcrypto is missing (crypto.h). tcp_hello.cc.
bool hello_mac(const uint64_t key[2], char role, uint64_t connector,
               uint64_t acceptor, const uint8_t* nonce_c,
               const uint8_t* nonce_a, uint8_t out[32]);

}  // namespace ucc::plat::tcp

// One connection between two engines (tcp_net.h), internal to
// platform/tcp: its state, the frame being written and the frame being
// read (tcp_conn.cc), and the links of every endpoint that talks to the
// other engine through it.
#pragma once

#include <sys/uio.h>

#include <cstdint>

#include "platform/tcp/tcp_fabric.h"
#include "platform/tcp/tcp_proto.h"

namespace ucc::plat::tcp {

class TcpNet;

inline constexpr uint64_t kMs = 1000000;  // ns

struct Conn {
  enum class State : uint8_t {
    kConnecting,  // our connect() is under way
    kHello,       // socket up, the peer's hello not seen yet
    kReady,
    kBroken,  // lost: made again (by the side that makes it) or timed out
    kDead,    // given up: its links are lost
  };
  static constexpr uint32_t kInBuf = 16384;
  // A credit's or a hello's payload.
  static constexpr uint32_t kSmall = sizeof(Hello) > kMaxSlots ? sizeof(Hello)
                                                               : kMaxSlots;

  TcpNet* net = nullptr;
  Conn* next = nullptr;       // the net's list
  uint64_t instance = 0;      // the peer engine's; 0 until its hello
  uint32_t ip = 0;            // where to connect (network order)
  uint16_t port = 0;
  uint64_t key[2] = {};  // the peer engine's (0: not known)
  // The handshake (tcp_proto.h): the hello we owe next (kOpen, kAnswer,
  // kProve; 0 once proven both ways), the nonces, the MAC we send, and
  // the instance an accepted connection claims until it proves it.
  uint8_t hs_step = 0;
  uint8_t nonce_mine[kNonceBytes] = {};
  uint8_t nonce_peer[kNonceBytes] = {};
  uint8_t mac_out[32] = {};
  uint64_t claimed = 0;
  uint32_t from_ip = 0;       // accepted: the caller's address (network order)
  bool initiator = false;     // we make (and remake) the connection
  // New: not made yet, made by its initiator (accept_all: kHello).
  State state = State::kBroken;
  int fd = -1;
  int probe_fd = -1;          // broken, not ours to make: is it there?
  uint64_t probe_at = 0;
  bool watch_out = false;     // EPOLLOUT wanted
  Link* links = nullptr;
  Link* rr = nullptr;  // where the next pick starts
  uint64_t since = 0;  // entered the current state (kConnecting .. kBroken)
  uint64_t heard = 0;  // last bytes received
  // When a team began waiting on the peer (ping_wanted set): silence is
  // counted from the later of the two, so a connection kept idle across
  // teams is not taken for silent the moment a new team waits on it.
  uint64_t asked = 0;
  uint64_t pinged = 0;
  uint64_t retry_at = 0;
  bool hello_owed = false;
  bool goodbye_owed = false;  // we close for good: say so (dst_ep 0)
  bool peer_gone = false;     // the peer engine said it closes for good
  bool pong_owed = false;
  // kReady and taken by the peer: an accepted connection at once; one we
  // made once a frame after the handshake comes back (the answerer sends
  // a pong when it takes our proof). Until then the answerer may still
  // refuse the call (both engines called), and what we wrote on it is
  // not delivered for sure (TcpFabric::tx_flushed).
  bool confirmed = false;
  bool ping_wanted = false;
  bool credit_pending = false;
  // Goodbyes to endpoints gone since, answered by the engine (the
  // frame's dst_ep, src_ep and src_rank of the answer).
  static constexpr uint32_t kMaxBehalf = 32;
  struct Behalf {
    uint32_t dst_ep, src_ep, src_rank;
  } behalf[kMaxBehalf];
  uint32_t nbehalf = 0;

  // The frame being written: the header, then `pre` bytes at `small`
  // (credits riding on a data frame), then the rest at `data`.
  struct {
    bool active = false;
    Hdr hdr{};
    const char* data = nullptr;
    uint32_t pre = 0;
    uint32_t len = 0;  // whole frame
    uint32_t off = 0;  // written so far
    uint64_t ready_at = 0;
    bool sealed = false;   // checksums in place (just before the first byte)
    Link* link = nullptr;  // a data frame's link
    bool data_frame = false;
    bool answer = false;  // a kGetData or kPutAck: the link's oldest answer
    uint8_t small[kSmall];
  } out;

  // The frame being read: a header, then its payload: the first `pre`
  // bytes (a data frame's credits) into `small`, the rest into `dst`
  // (nullptr: dropped), `at` bytes placed and `need` to come.
  struct {
    uint32_t len = 0, off = 0;  // buffered bytes [off, len)
    bool have_hdr = false;
    Hdr hdr{};
    char* dst = nullptr;
    uint32_t pre = 0, pre_at = 0;
    uint32_t at = 0;
    uint32_t need = 0;
    Link* link = nullptr;
    bool dup = false;
    uint32_t drop_sum = 0;    // a dropped data frame's bytes (take_in)
    uint32_t put_handle = 0;  // kPut: the registration it lands in
    uint8_t small[kSmall];
    alignas(64) unsigned char buf[kInBuf];
  } in;

  // Reads and handles every frame the socket has. false: the connection
  // broke or the peer broke the protocol (the net has been told).
  bool read();
  // Writes what is owed while the socket takes it. false: it broke.
  bool pump();
  // Nothing owed is left to write (frames held by the delay knob too).
  bool flushed() const {
    return !out.active && !goodbye_owed && !hello_owed && !pong_owed &&
           nbehalf == 0;
  }
  void reset_io();  // forget the frames half done (the socket is gone)

 private:
  bool begin_frame();
  bool end_frame();
  bool pick();  // chooses the next frame; false when nothing is owed
  bool pick_link();
  // One-sided frames (tcp_rma.cc): their checks as they begin and their
  // effect when read whole; the link's next answer or request.
  bool begin_rma(const Hdr& h);
  bool end_rma(const Hdr& h);
  // A kPut's request is in: where its bytes go (in.dst; none: dropped).
  void place_put();
  bool pick_rma(Link* l);
  void frame(Type t, Link* l, uint32_t len);
  // Puts the link's release counts in out.small (and done_sent): n of
  // them. Whether credits are due now, ride on a message or wait.
  uint32_t take_credits(Link* l);
  enum class Credit : uint8_t { kNone, kNow, kRide, kWait };
  Credit credit_due(Link* l, bool message_ready) const;
  // The bytes of the frame being written from `off` on: up to three
  // pieces (header, credits, the rest).
  int out_pieces(uint32_t off, iovec* iov) const;
  // The payload's bytes that arrive: the credits first, then dst.
  void take_in(const char* src, uint32_t n);
  // Release counts read into in.small (n of them): the peer's credits
  // for l's messages, where l is live and n counts its slots.
  void take_credits_in(Link* l, uint32_t n);
  Link* own_link(const Hdr& h);
  bool on_bye(const Hdr& h);
  void seal();

 public:
  // Why the last frame was refused (for the log line and the peer).
  const char* bad_why = nullptr;
  bool bad_sum = false;  // a checksum failed
  bool refused = false;  // both engines called: ours does not stand
  // The peer closed for good because of our frames' checksums.
  bool peer_corrupt = false;
  // Finishes the frame under way (briefly), then says on the socket
  // that we close for good and why (flags); best effort.
  void last_word(uint8_t flags);
};

}  // namespace ucc::plat::tcp

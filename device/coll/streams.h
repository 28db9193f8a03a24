// Point-to-point streams: a byte range of a user buffer moved to or from one
// peer as a sequence of slot-sized messages. Both sides derive the message
// count from the byte count (pat::nmsgs), so an empty stream still carries
// one empty message and synchronises.
//
//   SendStream  user bytes -> peer, one reserve/copy/commit per message
//   RecvStream  peer -> user bytes, copied, or reduced into the bytes with
//               the collective's op (user = message op user)
//
// progress() moves as many messages as the fabric allows and returns kOk
// when the stream is complete. A RecvStream may be limited so that it never
// overtakes a SendStream reading the same bytes (exchange in place).
//
// One-sided streams. Where the algorithm says a stream is a plain copy
// into bytes nothing else touches meanwhile (init's `zcopy`: no
// reduction, no exchange in place; the same at both ends) and the link
// agreed on one-sided messages from rma_min(peer) bytes up (verbs RDMA
// between inline engines; fabric.h), the bytes go without a slot:
//
//   sender -> receiver   offer {address, bytes, rkey, ok}: the sender's
//                        bytes, registered for the peer to read
//   receiver             gets them into its own registered bytes, in
//                        pieces of at most kRmaMaxOp, and waits for the
//                        gets to complete
//   receiver -> sender   done (MsgKind::kDone, empty): the sender's bytes
//                        are free again; both give their registrations
//                        back
//
// Each byte crosses the wire once, from user buffer to user buffer, with
// no copy by either CPU. Where a registration fails (pinned-memory
// limits), the stream falls back to slots instead of failing: an offer
// with ok 0 (the sender could not register), or a done of one byte (the
// receiver could not) tells the other end, and both send and receive the
// slot messages as usual. An offer whose length is not the receiver's
// ends the collective with kNoMessage; its address and key are the
// peer's to choose, and the device checks them (a get outside the peer's
// registration fails the link, so the collective, never another
// buffer), while the bytes land only in the receiver's own bounds-checked
// buffer.
#pragma once

#include <cstdint>

#include "device/run/coll_run.h"
#include "device/run/patterns.h"

namespace ucc::dev {

// What a one-sided stream's offer carries.
struct RmaOffer {
  uint64_t addr;
  uint64_t bytes;
  uint32_t rkey;
  uint32_t ok;  // 0: the sender could not register; slots follow
};
static_assert(sizeof(RmaOffer) == 24);

// The receiving steps of the offer protocol, for the streams below and
// for algorithms that take many offers into one registration
// (bcast_tree.cc).
//   take_offer  the offer from `peer`: kOk with *o, kInProgress, or the
//               error of a message that is not one
//   post_gets   gets bytes [*at, len) of the peer's offered range at
//               raddr (key rkey) into local.. (inside reg), in pieces of
//               at most kRmaMaxOp, advancing *at; *ticket is the last
//               one's. kInProgress: the fabric's queue is full, call again
Status take_offer(const CollRun& run, uint32_t peer, RmaOffer* o);
Status post_gets(const CollRun& run, uint32_t peer, const plat::RmaReg& reg,
                 char* local, uint64_t raddr, uint32_t rkey, uint64_t len,
                 uint64_t* at, uint64_t* ticket);

// Whether a stream of `len` bytes towards `peer` goes one-sided.
inline bool one_sided(const CollRun& run, uint32_t peer, uint64_t len,
                      bool zcopy) {
  if (!zcopy) return false;
  const uint64_t min = run.rma_min(peer);
  return min != 0 && len >= min;
}

// A one-sided stream's phases (the slot path is kSlots throughout).
enum class RmaPhase : uint8_t { kSlots, kOffer, kGet, kWait, kDone, kRefuse };

struct SendStream {
  uint32_t peer = 0;
  Buf buf = Buf::kSrc;
  RmaPhase phase = RmaPhase::kSlots;
  uint64_t off = 0;
  uint64_t bytes = 0;
  uint32_t n = 0;     // messages in all
  uint32_t done = 0;  // messages sent
  plat::RmaReg reg{};

  void init(const CollRun& run, uint32_t p, Buf b, uint64_t o, uint64_t len,
            bool zcopy = false) {
    peer = p;
    buf = b;
    off = o;
    bytes = len;
    n = pat::nmsgs(len, run.slot);
    done = 0;
    phase = one_sided(run, p, len, zcopy) ? RmaPhase::kOffer : RmaPhase::kSlots;
  }
  bool finished() const { return done == n; }
  Status progress(const CollRun& run);

 private:
  Status offer(const CollRun& run);
};

struct RecvStream {
  uint32_t peer = 0;
  Buf buf = Buf::kDst;
  bool reduce = false;
  RmaPhase phase = RmaPhase::kSlots;
  uint64_t off = 0;
  uint64_t bytes = 0;
  uint32_t n = 0;
  uint32_t done = 0;
  // One-sided: the offer, the bytes got so far, the last get's ticket.
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  uint64_t posted = 0;
  uint64_t ticket = 0;
  plat::RmaReg reg{};

  // `zcopy` (never with `red`): see one_sided() above.
  void init(const CollRun& run, uint32_t p, Buf b, uint64_t o, uint64_t len,
            bool red, bool zcopy = false) {
    peer = p;
    buf = b;
    off = o;
    bytes = len;
    reduce = red;
    n = pat::nmsgs(len, run.slot);
    done = 0;
    phase = !red && one_sided(run, p, len, zcopy) ? RmaPhase::kOffer
                                                  : RmaPhase::kSlots;
  }
  bool finished() const { return done == n; }
  // Receives messages while done < limit.
  Status progress(const CollRun& run, uint32_t limit = UINT32_MAX);

 private:
  Status one_sided_step(const CollRun& run);
};

// Bytes of message i of a stream of `bytes` split in slot-sized messages.
inline uint32_t msg_len(uint64_t bytes, uint32_t slot, uint32_t i) {
  uint64_t start = static_cast<uint64_t>(i) * slot;
  uint64_t rest = bytes > start ? bytes - start : 0;
  return static_cast<uint32_t>(rest < slot ? rest : slot);
}

}  // namespace ucc::dev

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
#pragma once

#include <cstdint>

#include "device/run/coll_run.h"
#include "device/run/patterns.h"

namespace ucc::dev {

struct SendStream {
  uint32_t peer = 0;
  Buf buf = Buf::kSrc;
  uint64_t off = 0;
  uint64_t bytes = 0;
  uint32_t n = 0;     // messages in all
  uint32_t done = 0;  // messages sent

  void init(const CollRun& run, uint32_t p, Buf b, uint64_t o, uint64_t len) {
    peer = p;
    buf = b;
    off = o;
    bytes = len;
    n = pat::nmsgs(len, run.slot);
    done = 0;
  }
  bool finished() const { return done == n; }
  Status progress(const CollRun& run);
};

struct RecvStream {
  uint32_t peer = 0;
  Buf buf = Buf::kDst;
  bool reduce = false;
  uint64_t off = 0;
  uint64_t bytes = 0;
  uint32_t n = 0;
  uint32_t done = 0;

  void init(const CollRun& run, uint32_t p, Buf b, uint64_t o, uint64_t len,
            bool red) {
    peer = p;
    buf = b;
    off = o;
    bytes = len;
    reduce = red;
    n = pat::nmsgs(len, run.slot);
    done = 0;
  }
  bool finished() const { return done == n; }
  // Receives messages while done < limit.
  Status progress(const CollRun& run, uint32_t limit = UINT32_MAX);
};

// Bytes of message i of a stream of `bytes` split in slot-sized messages.
inline uint32_t msg_len(uint64_t bytes, uint32_t slot, uint32_t i) {
  uint64_t start = static_cast<uint64_t>(i) * slot;
  uint64_t rest = bytes > start ? bytes - start : 0;
  return static_cast<uint32_t>(rest < slot ? rest : slot);
}

}  // namespace ucc::dev

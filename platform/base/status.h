// The outcome of every internal call, in every layer: the base of the
// house, below platform/, offload/, device/ and host/. The host maps it
// 1:1 onto ucc_status_t (`to_ucc`); the engine sends it in completion
// words and protocol replies, so its values never change.
#pragma once

#include <cstdint>

namespace ucc::base {

enum class Status : int8_t {
  kOk = 0,
  kInProgress = 1,
  kNoResource = -2,  // a pool or ring is full; retry later
  kNoMessage = -6,   // peer protocol desync (wrong tag / sequence)
  kInvalidParam = -5,
  kNotSupported = -8,
  kNoMemory = -4,
  kTimedOut = -17,
  kMessageTruncated = -10,
  kError = -1,
};

inline bool ok(Status s) { return s == Status::kOk; }
inline bool failed(Status s) { return static_cast<int>(s) < 0; }

}  // namespace ucc::base

// The control protocol's authentication over a network (dpu mode;
// offload/proto.h, "Over a network"): the proofs of the handshake, the
// session key, and the tag every later message carries. The MACs are
// libcrypto's HMAC-SHA256 (platform/os/crypto.h); nothing here is our own
// cryptography.
//
// Threads: any; pure functions of their arguments.
#pragma once

#include <cstddef>
#include <cstdint>

#include "offload/proto.h"
#include "platform/os/crypto.h"

namespace ucc::off::proto {

// Which end proves, or which end sent a message.
enum class End : uint8_t { kHost = 'H', kEngine = 'E' };

// The proof of `who` over the two nonces (engine's first). false:
// libcrypto is missing (logged).
bool auth_proof(const plat::Secret& k, End who,
                const uint8_t engine_nonce[kNonceBytes],
                const uint8_t host_nonce[kNonceBytes], uint8_t out[32]);

// The key that tags one connection's messages.
struct Session {
  uint8_t key[32];
  bool on = false;
};
bool auth_session(const plat::Secret& k,
                  const uint8_t engine_nonce[kNonceBytes],
                  const uint8_t host_nonce[kNonceBytes], Session* out);

// The tag of a message sent by `from`: its header (len counting the tag)
// and the body before the tag. false: libcrypto is missing, or no memory
// for a large body.
bool message_tag(const Session& s, End from, const MsgHeader& h,
                 const void* body, size_t body_len, uint8_t tag[kTagBytes]);
// Whether the last kTagBytes of body (h.len bytes in all) are the tag.
bool message_ok(const Session& s, End from, const MsgHeader& h,
                const void* body);

}  // namespace ucc::off::proto

#include "offload/control_auth.h"

#include <cstdlib>
#include <cstring>

namespace ucc::off::proto {
namespace {

// MAC(K, label, a, b) over one buffer: label bytes, then a, then b.
bool mac_of(const plat::Secret& k, const char* label, const uint8_t* a,
            const uint8_t* b, uint8_t out[32]) {
  uint8_t buf[16 + 2 * kNonceBytes] = {};
  const size_t ll = strlen(label);
  if (ll > 16 || k.len == 0) return false;
  memcpy(buf, label, ll);
  memcpy(buf + 16, a, kNonceBytes);
  memcpy(buf + 16 + kNonceBytes, b, kNonceBytes);
  return plat::mac(k.bytes, k.len, buf, sizeof(buf), out);
}

}  // namespace

bool auth_proof(const plat::Secret& k, End who,
                const uint8_t engine_nonce[kNonceBytes],
                const uint8_t host_nonce[kNonceBytes], uint8_t out[32]) {
  // Each end's proof covers the nonce the other chose first, so neither
  // can be answered with a proof seen on another connection.
  return who == End::kHost
             ? mac_of(k, "ucc-dpu-host", engine_nonce, host_nonce, out)
             : mac_of(k, "ucc-dpu-engine", host_nonce, engine_nonce, out);
}

bool auth_session(const plat::Secret& k,
                  const uint8_t engine_nonce[kNonceBytes],
                  const uint8_t host_nonce[kNonceBytes], Session* out) {
  out->on = mac_of(k, "ucc-dpu-session", engine_nonce, host_nonce, out->key);
  return out->on;
}

bool message_tag(const Session& s, End from, const MsgHeader& h,
                 const void* body, size_t body_len, uint8_t tag[kTagBytes]) {
  // Control messages only (never a collective's): a copy is fine.
  const size_t n = 1 + sizeof(h) + body_len;
  uint8_t small[512];
  uint8_t* buf = n <= sizeof(small) ? small : static_cast<uint8_t*>(malloc(n));
  if (buf == nullptr) return false;
  buf[0] = static_cast<uint8_t>(from);
  memcpy(buf + 1, &h, sizeof(h));
  if (body_len != 0) memcpy(buf + 1 + sizeof(h), body, body_len);
  uint8_t full[32];
  const bool ok = plat::mac(s.key, sizeof(s.key), buf, n, full);
  if (buf != small) free(buf);
  if (ok) memcpy(tag, full, kTagBytes);
  return ok;
}

bool message_ok(const Session& s, End from, const MsgHeader& h,
                const void* body) {
  if (!s.on || h.len < kTagBytes) return false;
  const size_t blen = h.len - kTagBytes;
  uint8_t want[plat::kMacBytes] = {};
  if (!message_tag(s, from, h, body, blen, want)) return false;
  return plat::tag_equal(want, static_cast<const uint8_t*>(body) + blen,
                         kTagBytes);
}

}  // namespace ucc::off::proto

// Messages through a team's fabrics (platform/fabric/fabric.h), checked
// byte by byte and in order: what the transports' unit tests (TCP,
// verbs) exchange.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "platform/fabric/fabric.h"
#include "platform/os/clock.h"

namespace ucct {

// Message m from s to d: its length (0 and full slots included) and bytes.
inline uint32_t msg_len(uint32_t s, uint32_t d, uint32_t m, uint32_t slot) {
  uint32_t h = (s * 7919u + d * 104729u + m * 2654435761u) >> 7;
  return m % 5 == 0 ? 0 : h % (slot + 1);
}
inline uint8_t msg_byte(uint32_t s, uint32_t d, uint32_t m, uint32_t i) {
  return static_cast<uint8_t>(s * 31 + d * 17 + m * 13 + i * 7 + (i >> 8));
}

// Every rank s sends `msgs` messages to every rank d with pair(s, d) and
// checks what it receives: length, key, kind, every byte, order.
// `progress` moves the transports between passes.
inline bool exchange_messages(
    const std::function<void()>& progress,
    const std::vector<ucc::plat::Fabric*>& fab,
    const std::function<bool(uint32_t, uint32_t)>& pair, uint32_t msgs,
    uint32_t slot, double secs) {
  namespace plat = ucc::plat;
  const uint32_t n = static_cast<uint32_t>(fab.size());
  std::vector<uint32_t> sent(n * n, 0), got(n * n, 0);
  uint64_t want = 0, have = 0;
  for (uint32_t s = 0; s < n; ++s)
    for (uint32_t d = 0; d < n; ++d) want += pair(s, d) ? msgs : 0;
  const uint64_t end = plat::now_ns() + static_cast<uint64_t>(secs * 1e9);
  while (have < want && plat::now_ns() < end) {
    progress();
    for (uint32_t s = 0; s < n; ++s) {
      for (uint32_t d = 0; d < n; ++d) {
        uint32_t& m = sent[s * n + d];
        if (!pair(s, d) || m == msgs) continue;
        auto* p = static_cast<uint8_t*>(fab[s]->tx_reserve(d));
        if (p == nullptr) continue;
        const uint32_t len = msg_len(s, d, m, slot);
        for (uint32_t i = 0; i < len; ++i) p[i] = msg_byte(s, d, m, i);
        fab[s]->tx_commit(d, len, plat::MsgKey{{s, d, m}},
                            static_cast<uint8_t>(m % 3 == 0));
        ++m;
      }
    }
    for (uint32_t d = 0; d < n; ++d) {
      for (uint32_t s = 0; s < n; ++s) {
        if (!pair(s, d)) continue;
        const uint32_t np = fab[d]->rx_poll(s);
        for (uint32_t i = 0; i < np; ++i) {
          const plat::MsgHdr* h = fab[d]->rx_hdr(s, i);
          if (h == nullptr) continue;
          uint32_t& m = got[d * n + s];
          const uint32_t len = msg_len(s, d, m, slot);
          EXPECT_EQ(h->len, len) << s << "->" << d << " msg " << m;
          EXPECT_EQ(h->key, (plat::MsgKey{{s, d, m}})) << s << "->" << d;
          EXPECT_EQ(h->kind, m % 3 == 0 ? 1 : 0);
          if (h->len != len) return false;
          const auto* p =
              static_cast<const uint8_t*>(fab[d]->rx_payload(s, i));
          for (uint32_t b = 0; b < len; ++b) {
            if (p[b] != msg_byte(s, d, m, b)) {
              ADD_FAILURE() << s << "->" << d << " msg " << m << " byte " << b;
              return false;
            }
          }
          fab[d]->rx_release(s, i);
          ++m;
          ++have;
        }
      }
    }
  }
  EXPECT_EQ(have, want);
  return have == want;
}

// --- one-sided operations (fabric.h: registered memory, get, put) ---------

// Runs fn (a get or a put) until the link takes it (5 s at most).
inline ucc::base::Status post_until_taken(
    const std::function<void()>& progress,
    const std::function<ucc::base::Status()>& fn) {
  const uint64_t end = ucc::plat::now_ns() + 5000000000ull;
  for (;;) {
    const ucc::base::Status st = fn();
    if (st != ucc::base::Status::kInProgress || ucc::plat::now_ns() > end)
      return st;
    progress();
  }
}

// Until f's one-sided operations towards `peer` reach `ticket`: false
// when the link fails first, or 5 s pass.
inline bool rma_wait(const std::function<void()>& progress,
                     ucc::plat::Fabric* f, uint32_t peer, uint64_t ticket) {
  const uint64_t end = ucc::plat::now_ns() + 5000000000ull;
  while (f->rma_done(peer) < ticket) {
    if (ucc::plat::now_ns() > end || f->peer_lost()) return false;
    progress();
  }
  return true;
}

inline std::vector<uint8_t> rma_pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + seed);
  return v;
}

}  // namespace ucct

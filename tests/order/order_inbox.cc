// One inbox (platform/fabric/inbox.h) between a sending and an owning
// thread, over memory both see as shared memory would be seen: every
// message's header and payload arrive whole and in order, found by the
// head word (pair kInboxHead) and, with stamps, by the slot's stamp
// (kInboxStamp); slots are reused only after the owner released them
// (kInboxReuse). Both ways of finding messages run, one after the other.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "platform/fabric/inbox.h"
#include "tests/order/order_check.h"

namespace {

using ucc::plat::FabricConfig;
using ucc::plat::InboxPair;
using ucc::plat::InboxView;
using ucc::plat::MsgHdr;
using ucc::plat::MsgKey;

constexpr uint32_t kWords = 8;  // payload: 64 bytes

void run(bool stamped) {
  const FabricConfig c{2, 0, 64, 8};
  const size_t bytes = ucc::plat::shadow_bytes(c);
  void* mem = std::aligned_alloc(64, (bytes + 63) & ~size_t{63});
  std::memset(mem, 0, bytes);
  InboxView v{ucc::plat::inbox_init(mem),
              static_cast<char*>(mem) + sizeof(ucc::plat::InboxCtl)};
  InboxPair tx, rx;
  tx.bind_tx(v);
  rx.bind_rx(v);
  rx.set_stamped(stamped);
  constexpr uint64_t kN = 40000;
  std::thread sender([&] {
    ucct_order::Spin spin;
    for (uint64_t i = 0; i < kN; ++i) {
      void* p;
      while ((p = tx.tx_reserve(c)) == nullptr) spin.pause();
      auto* w = static_cast<uint64_t*>(p);
      for (uint32_t k = 0; k < kWords; ++k) w[k] = i * 31 + k;
      tx.tx_commit(c, kWords * 8, MsgKey{{i, ~i, 7}}, 0, 0);
    }
  });
  ucct_order::Spin spin;
  uint64_t next = 0;
  while (next < kN) {
    const uint32_t n = rx.rx_poll(c);
    if (n == 0) spin.pause();
    for (uint32_t j = 0; j < n; ++j) {
      const MsgHdr* h = rx.rx_hdr(c, j);
      if (h == nullptr) continue;
      if (h->len != kWords * 8 || h->key.w[0] != next || h->key.w[1] != ~next)
        ucct_order::fail("a header arrived torn or out of order", next);
      const auto* w = static_cast<const uint64_t*>(rx.rx_payload(c, j));
      for (uint32_t k = 0; k < kWords; ++k)
        if (w[k] != next * 31 + k)
          ucct_order::fail("a payload arrived torn", next);
      rx.rx_release(j);
      ++next;
    }
  }
  sender.join();
  std::free(mem);
}

}  // namespace

int main() {
  run(false);
  run(true);
  return 0;
}

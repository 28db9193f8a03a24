// dpu mode's pushed descriptors at the verbs level (platform/verbs/
// verbs_channel.h), on tests/verbs_loop's provider: a host's export
// writes bytes of its registered range, then a word, into the range its
// engine's channel exposed. Another host, whose queue pair reaches the
// same engine port, cannot write that range even with its address and
// key: the range lies in the protection domain of the first host's
// channel alone, so the NIC refuses it, nothing lands, and only the
// offender's channel breaks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "platform/mem/remote_mem.h"
#include "platform/net/net.h"
#include "platform/os/clock.h"
#include "platform/tcp/tcp_net.h"
#include "platform/verbs/verbs_net.h"

namespace {

using ucc::base::Status;
namespace plat = ucc::plat;

bool have_provider() { return access(UCCT_VERBS_LOOP_LIB, R_OK) == 0; }

plat::VerbsConfig loop_config() {
  plat::VerbsConfig v;
  v.lib = UCCT_VERBS_LOOP_LIB;
  v.peer_timeout_ms = 2000;
  return v;
}

// A host process's end: its export and its registered "ring".
struct Host {
  plat::MemExport* ex = nullptr;
  plat::RemoteMemAddr addr{};
  std::vector<uint8_t> ring = std::vector<uint8_t>(1024);
  uint32_t slot = 0;
  ~Host() { delete ex; }
};

// The engine's port, with a channel to each host.
struct Engine {
  plat::tcp::TcpNet cm;
  plat::verbs::VerbsNet net;
  bool open() {
    plat::TcpConfig c;
    c.iface = "127.0.0.1";
    return cm.init(c) == Status::kOk &&
           net.init(loop_config(), &cm) == Status::kOk;
  }
  // Connects `h` (whose export is open) to a channel of ours.
  plat::RemoteMem* attach(Host& h) {
    plat::RemoteMemAddr mine{};
    plat::RemoteMem* m = net.open_remote_mem(h.addr, &mine);
    if (m != nullptr && h.ex->connect(mine) != Status::kOk) {
      delete m;
      m = nullptr;
    }
    return m;
  }
};

bool open_host(Host& h, uint8_t fill) {
  if (plat::open_mem_export(loop_config(), 4, &h.addr, &h.ex) != Status::kOk)
    return false;
  for (size_t i = 0; i < h.ring.size(); ++i)
    h.ring[i] = static_cast<uint8_t>(fill + i * 7);
  uint32_t rkey = 0;
  return h.ex->reg(reinterpret_cast<uintptr_t>(h.ring.data()), h.ring.size(),
                   &rkey, &h.slot) == Status::kOk;
}

uint32_t word_at(const std::vector<uint8_t>& inbox) {
  return __atomic_load_n(reinterpret_cast<const uint32_t*>(inbox.data()),
                         __ATOMIC_ACQUIRE);
}

// Waits (1 s at most) until the inbox's word is `want`.
bool word_seen(const std::vector<uint8_t>& inbox, uint32_t want) {
  const uint64_t end = plat::now_ns() + 1000000000u;
  while (word_at(inbox) != want)
    if (plat::now_ns() > end) return false;
  return true;
}

TEST(VerbsChannel, PushedBytesLandInTheExposedRangeOfThatChannelOnly) {
  if (!have_provider()) GTEST_SKIP() << "no " << UCCT_VERBS_LOOP_LIB;
  const std::string fabric =
      "/tmp/ucct-verbs-channel-" + std::to_string(getpid()) + ".fabric";
  setenv("VERBS_LOOP_FABRIC", fabric.c_str(), 1);
  {
    Engine e;
    ASSERT_TRUE(e.open());
    Host a, b;
    ASSERT_TRUE(open_host(a, 1));
    ASSERT_TRUE(open_host(b, 2));
    // a's inbox: a word, then slots.
    std::vector<uint8_t> inbox(4096, 0);
    const uint64_t at = reinterpret_cast<uintptr_t>(inbox.data());
    // Closed before the port and the inbox go.
    std::unique_ptr<plat::RemoteMem> ca(e.attach(a)), cb(e.attach(b));
    ASSERT_NE(ca, nullptr);
    ASSERT_NE(cb, nullptr);
    uint32_t rkey = 0, other = 0;
    ASSERT_TRUE(ca->expose(inbox.data(), inbox.size(), &rkey));
    EXPECT_FALSE(ca->expose(inbox.data(), 64, &other)) << "one range each";
    ASSERT_TRUE(a.ex->can_push());

    // Two pieces (a ring's wrap), then the word.
    const plat::MemExport::Piece p[2] = {{128, 256, at + 64},
                                         {0, 64, at + 64 + 256}};
    ASSERT_TRUE(a.ex->push(a.slot, p, 2, 0xabcd, at, rkey));
    ASSERT_TRUE(word_seen(inbox, 0xabcd));
    EXPECT_EQ(memcmp(inbox.data() + 64, a.ring.data() + 128, 256), 0);
    EXPECT_EQ(memcmp(inbox.data() + 64 + 256, a.ring.data(), 64), 0);
    // A piece outside the registered range is refused before posting.
    const plat::MemExport::Piece out = {1000, 64, at + 64};
    EXPECT_FALSE(a.ex->push(a.slot, &out, 1, 1, at, rkey));

    // b names a's inbox and key: the NIC refuses (b's queue pair is not
    // in the inbox's domain); b's channel breaks at its next push.
    const std::vector<uint8_t> before = inbox;
    const plat::MemExport::Piece q = {0, 256, at + 64};
    bool broke = !b.ex->push(b.slot, &q, 1, 0x6666, at, rkey);
    for (int i = 0; i < 100 && !broke; ++i) {
      broke = !b.ex->push(b.slot, &q, 1, 0x6666, at, rkey);
      usleep(1000);
    }
    EXPECT_TRUE(broke);
    EXPECT_EQ(inbox, before) << "another host's bytes landed in the inbox";

    // a goes on pushing (many more than fit in flight at once).
    for (uint32_t i = 1; i <= 300; ++i) {
      const plat::MemExport::Piece r = {i % 512, 64, at + 64 + (i % 8) * 64};
      ASSERT_TRUE(a.ex->push(a.slot, &r, 1, 0xabcd + i, at, rkey)) << i;
    }
    EXPECT_TRUE(word_seen(inbox, 0xabcd + 300));
    ca.reset();
    cb.reset();
  }
  unlink(fabric.c_str());
}

}  // namespace

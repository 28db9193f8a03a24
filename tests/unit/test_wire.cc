// The wire (platform/wire) without a NIC: nodes joined by in-process
// MemPorts, team fabrics on top, every message checked byte by byte and
// in order, with loss, duplication, reordering and corruption injected.
// Also: a silent peer and a failed one are reported lost, a normal leave
// is not, and frames that name memory outside their slot are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "platform/fabric/inbox.h"
#include "platform/os/clock.h"
#include "platform/wire/endpoint.h"
#include "platform/wire/mem_port.h"
#include "platform/wire/wire.h"
#include "tests/unit/fabric_exchange.h"

namespace {

using ucc::base::Status;
namespace plat = ucc::plat;
namespace wire = ucc::plat::wire;

wire::Mac node_mac(uint32_t n) {
  return wire::Mac{{2, 0, 0, 0, 0x10, uint8_t(n)}};
}

// n nodes, each joined to every other by one MemPort pair (a full mesh,
// as firmware_sim's memif mesh), plus an optional spare port per node.
struct Cluster {
  uint32_t n;
  std::vector<std::unique_ptr<wire::MemPort>> ports;  // [i * n + j]
  std::vector<std::vector<wire::FramePort*>> lists;
  std::vector<std::unique_ptr<wire::Wire>> wires;

  Cluster(uint32_t nodes, const wire::WireConfig& cfg, uint32_t max_frame,
          wire::MemPort* spare = nullptr)
      : n(nodes), ports(nodes * nodes), lists(nodes) {
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t j = 0; j < n; ++j)
        ports[i * n + j] = std::make_unique<wire::MemPort>();
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t j = i + 1; j < n; ++j)
        EXPECT_TRUE(wire::MemPort::join(ports[i * n + j].get(),
                                        ports[j * n + i].get(), node_mac(i),
                                        node_mac(j), max_frame));
    for (uint32_t i = 0; i < n; ++i) {
      // Port 0 of a node must carry its MAC: the peer's port first.
      for (uint32_t j = 0; j < n; ++j)
        if (j != i) lists[i].push_back(ports[i * n + j].get());
      if (i == 0 && spare != nullptr) lists[i].push_back(spare);
      wires.push_back(std::make_unique<wire::Wire>());
      wire::WireConfig c = cfg;
      c.faults.seed = cfg.faults.seed + i;
      EXPECT_EQ(wires[i]->init(c, lists[i].data(),
                               static_cast<uint32_t>(lists[i].size())),
                Status::kOk);
    }
  }
  void progress() {
    for (auto& w : wires) w->progress();
  }
};

// A team whose every rank reaches every other over the wire (rank r on
// node r mod n; ranks of one node through the node's loopback).
struct Team {
  Cluster* c = nullptr;
  std::vector<plat::Fabric*> fab;
  std::vector<plat::FabricAddr> addrs;
  bool open(Cluster& cl, uint32_t ranks, uint32_t slot_size, uint32_t nslots) {
    c = &cl;
    addrs.resize(ranks);
    for (uint32_t r = 0; r < ranks; ++r) {
      plat::FabricConfig fc{ranks, r, slot_size, nslots};
      fab.push_back(c->wires[r % c->n]->open(fc, &addrs[r]));
      if (fab[r] == nullptr) return false;
    }
    std::vector<char> all(ranks, 1);
    for (uint32_t r = 0; r < ranks; ++r)
      if (fab[r]->connect(addrs.data(), reinterpret_cast<const bool*>(
                                            all.data())) != Status::kOk)
        return false;
    return true;
  }
  void close(uint32_t r, bool lost) {
    c->wires[r % c->n]->close(fab[r], lost);
    fab[r] = nullptr;
  }
  ~Team() {
    for (uint32_t r = 0; r < fab.size(); ++r)
      if (fab[r] != nullptr) close(r, false);
  }
  uint32_t ep(uint32_t r) const {
    wire::WireAddr a;
    memcpy(&a, addrs[r].bytes, sizeof(a));
    return a.ep;
  }
};

// Every rank sends `msgs` messages to every other rank (itself included)
// and checks what it receives: length, key, kind, every byte, order.
// Returns true when all arrived within `secs`.
bool exchange(Cluster& c, Team& t, uint32_t msgs, uint32_t slot, double secs) {
  return ucct::exchange_messages(
      [&c] { c.progress(); }, t.fab, [](uint32_t, uint32_t) { return true; },
      msgs, slot, secs);
}

wire::WireConfig quick() {
  wire::WireConfig c;
  c.rto_min_us = 200;
  c.rto_max_us = 5000;
  c.keepalive_ms = 20;
  c.peer_timeout_ms = 1000;
  c.max_endpoints = 16;
  return c;
}

struct Faults {
  const char* name;
  double drop, dup, reorder, corrupt;
};

class WireFaultsTest : public ::testing::TestWithParam<Faults> {};

TEST_P(WireFaultsTest, EveryMessageArrivesWholeAndInOrder) {
  const Faults f = GetParam();
  for (uint64_t seed : {1, 2, 3}) {
    wire::WireConfig cfg = quick();
    cfg.faults = wire::WireFaults{f.drop, f.dup, f.reorder, f.corrupt, seed};
    // 3 nodes, 5 ranks: some pairs share a node (loopback), some do not;
    // 1514-byte frames make a 4 KiB message three frames.
    Cluster c(3, cfg, 1514);
    Team t;
    ASSERT_TRUE(t.open(c, 5, 4096, 4));
    ASSERT_TRUE(exchange(c, t, 60, 4096, 30)) << f.name << " seed " << seed;
    wire::WireStats s{};
    for (auto& w : c.wires) {
      const wire::WireStats& x = w->stats();
      s.retransmits += x.retransmits;
      s.bad_frames += x.bad_frames;
      s.dup_rx += x.dup_rx;
      s.inj_drop += x.inj_drop;
      s.inj_corrupt += x.inj_corrupt;
      s.inj_dup += x.inj_dup;
    }
    if (f.drop > 0) {
      EXPECT_GT(s.inj_drop, 0u);
      EXPECT_GT(s.retransmits, 0u);
    }
    if (f.corrupt > 0) {
      EXPECT_GT(s.inj_corrupt, 0u);
      EXPECT_GT(s.bad_frames, 0u);  // caught by the checksum
    }
    if (f.dup > 0) EXPECT_GT(s.dup_rx, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Wire, WireFaultsTest,
    ::testing::Values(
        Faults{"clean", 0, 0, 0, 0}, Faults{"drop", 0.05, 0, 0, 0},
        Faults{"dup", 0, 0.05, 0, 0}, Faults{"reorder", 0, 0, 0.1, 0},
        Faults{"corrupt", 0, 0, 0, 0.03}, Faults{"all", 0.02, 0.02, 0.05, 0.01},
        Faults{"heavy", 0.2, 0.1, 0.2, 0.05}),
    [](const ::testing::TestParamInfo<Faults>& i) { return i.param.name; });

TEST(Wire, JumboFramesAndBigSlots) {
  Cluster c(2, quick(), 9000);
  Team t;
  ASSERT_TRUE(t.open(c, 2, 64 * 1024, 8));
  EXPECT_TRUE(exchange(c, t, 40, 64 * 1024, 30));
}

TEST(Wire, SilentPeerIsLost) {
  wire::WireConfig cfg = quick();
  cfg.peer_timeout_ms = 100;
  Cluster c(2, cfg, 1514);
  Team t;
  ASSERT_TRUE(t.open(c, 2, 4096, 4));
  ASSERT_TRUE(exchange(c, t, 4, 4096, 10));
  EXPECT_FALSE(t.fab[0]->peer_lost());
  // Node 1 stops (its daemon died): node 0 hears nothing more.
  const uint64_t t0 = ucc::plat::now_ns();
  while (!t.fab[0]->peer_lost() && ucc::plat::now_ns() - t0 < 3000000000ull)
    c.wires[0]->progress();
  EXPECT_TRUE(t.fab[0]->peer_lost());
  EXPECT_LT(ucc::plat::now_ns() - t0, 1000000000ull);
}

TEST(Wire, FailedPeerIsLostAndLeftPeerIsNot) {
  Cluster c(3, quick(), 1514);
  Team t;
  ASSERT_TRUE(t.open(c, 3, 4096, 4));
  ASSERT_TRUE(exchange(c, t, 4, 4096, 10));
  t.close(2, /*lost=*/false);
  for (int i = 0; i < 50; ++i) c.progress();
  EXPECT_FALSE(t.fab[0]->peer_lost());
  EXPECT_FALSE(t.fab[1]->peer_lost());
  t.close(1, /*lost=*/true);
  for (int i = 0; i < 50; ++i) c.progress();
  EXPECT_TRUE(t.fab[0]->peer_lost());
}

// A frame with a valid checksum from the right source that puts outside
// its slot, or names a slot that does not exist, must change nothing (the
// ASan build would see a write out of bounds); the team works on after.
TEST(Wire, ForgedPutsAreRefused) {
  wire::MemPort spare, attacker;
  ASSERT_TRUE(
      wire::MemPort::join(&spare, &attacker, node_mac(9), node_mac(1), 9000));
  Cluster c(2, quick(), 9000, &spare);
  Team t;
  ASSERT_TRUE(t.open(c, 2, 4096, 4));
  struct Bad {
    uint16_t slot;
    uint32_t off, len;
  };
  const Bad bad[] = {{4, 0, 64},      {200, 0, 64}, {0, 4096, 128},
                     {1, 4000, 4000}, {0, 4160, 1}, {3, 0xFFFFFFF0u, 64}};
  std::vector<uint8_t> frame(9000);
  std::vector<uint8_t> payload(4000, 0xEE);
  for (const Bad& b : bad) {
    wire::FrameHdr h{};
    h.magic = wire::kFrameMagic;
    h.version = wire::kFrameVersion;
    h.type = wire::FrameType::kData;
    h.dst_ep = t.ep(0);
    h.src_ep = t.ep(1);  // rank 1, forged
    h.src_rank = 1;
    h.seq = 0;  // the next frame rank 0 expects from rank 1
    h.ctl = 0;
    h.slot = b.slot;
    h.off = b.off;
    h.len = b.len;
    h.flags = wire::kLast;
    const wire::Mac dst = node_mac(0), src = node_mac(1);
    memcpy(frame.data(), dst.b, 6);
    memcpy(frame.data() + 6, src.b, 6);
    frame[12] = wire::kEtherType >> 8;
    frame[13] = wire::kEtherType & 0xff;
    h.csum =
        wire::crc32c(wire::crc32c(0, &h, sizeof(h)), payload.data(), b.len);
    memcpy(frame.data() + wire::kEthHdr, &h, sizeof(h));
    memcpy(frame.data() + wire::kFrameOverhead, payload.data(), b.len);
    ASSERT_TRUE(attacker.tx(frame.data(), wire::kFrameOverhead + b.len));
  }
  const uint64_t before = c.wires[0]->stats().bad_frames;
  c.wires[0]->progress();
  EXPECT_EQ(c.wires[0]->stats().bad_frames - before, std::size(bad));
  EXPECT_EQ(t.fab[0]->rx_poll(1), 0u);  // nothing was published
  EXPECT_TRUE(exchange(c, t, 20, 4096, 20));
}

}  // namespace

namespace {
TEST(Wire, ManyRanksBigSlotsUnderFaults) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    wire::WireConfig cfg = quick();
    cfg.faults = wire::WireFaults{0.01, 0.01, 0.01, 0.001, seed};
    Cluster c(2, cfg, 9000);
    Team t;
    ASSERT_TRUE(t.open(c, 8, 64 * 1024, 8));
    ASSERT_TRUE(exchange(c, t, 30, 64 * 1024, 60)) << "seed " << seed;
  }
}
}  // namespace

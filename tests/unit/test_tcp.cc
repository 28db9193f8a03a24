// The TCP transport (platform/tcp) in one process: several engines (one
// TcpNet each) on loopback, team fabrics over them, every message checked
// byte by byte and in order, with short writes, delays and broken
// connections injected. Also: a member that leaves is not lost, one whose
// engine closes under it is, one whose engine goes silent is lost after
// the timeout, and a connection that breaks the protocol is closed
// without harm.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "platform/os/clock.h"
#include "platform/tcp/tcp_fabric.h"
#include "platform/tcp/tcp_net.h"
#include "tests/unit/fabric_exchange.h"

namespace {

using ucc::base::Status;
namespace plat = ucc::plat;
namespace tcp = ucc::plat::tcp;

plat::TcpConfig quick() {
  plat::TcpConfig c;
  c.iface = "127.0.0.1";
  c.peer_timeout_ms = 2000;
  c.keepalive_ms = 100;
  c.spin = 1000000;  // never wait: several engines share this thread
  return c;
}

struct Engines {
  std::vector<std::unique_ptr<tcp::TcpNet>> nets;
  Engines(uint32_t n, const plat::TcpConfig& cfg) {
    for (uint32_t i = 0; i < n; ++i) {
      nets.push_back(std::make_unique<tcp::TcpNet>());
      plat::TcpConfig c = cfg;
      c.fault_seed = cfg.fault_seed + i;
      EXPECT_EQ(nets[i]->init(c), Status::kOk);
    }
  }
  void progress() {
    for (auto& n : nets) n->progress();
  }
  // Progress until no engine has a closed endpoint waiting for answers to
  // its goodbyes; false when that takes `secs`.
  bool settle(double secs) {
    const uint64_t end = plat::now_ns() + static_cast<uint64_t>(secs * 1e9);
    for (;;) {
      uint32_t n = 0;
      for (auto& net : nets) n += net != nullptr ? net->lingering() : 0;
      if (n == 0) return true;
      if (plat::now_ns() > end) return false;
      for (auto& net : nets)
        if (net != nullptr) net->progress();
    }
  }
  // Engines are processes of their own: they close at once, each
  // waiting for the others to read its last bytes.
  ~Engines() {
    std::vector<std::thread> t;
    for (auto& n : nets) t.emplace_back([&n] { n.reset(); });
    for (auto& x : t) x.join();
  }
};

// A team of `ranks` ranks, rank r in engine r mod n, every rank reaching
// the ranks of other engines over TCP (ranks of one engine would share a
// host, hence memory).
struct Team {
  Engines* e = nullptr;
  std::vector<plat::Fabric*> fab;
  std::vector<plat::FabricAddr> addrs;
  bool open(Engines& en, uint32_t ranks, uint32_t slot, uint32_t nslots) {
    e = &en;
    addrs.resize(ranks);
    const uint32_t n = static_cast<uint32_t>(en.nets.size());
    for (uint32_t r = 0; r < ranks; ++r) {
      fab.push_back(en.nets[r % n]->open(
          plat::FabricConfig{ranks, r, slot, nslots}, &addrs[r]));
      if (fab[r] == nullptr) return false;
    }
    for (uint32_t r = 0; r < ranks; ++r) {
      std::vector<char> mine(ranks, 0);
      for (uint32_t q = 0; q < ranks; ++q) mine[q] = q % n != r % n;
      if (fab[r]->connect(addrs.data(),
                          reinterpret_cast<const bool*>(mine.data())) !=
          Status::kOk)
        return false;
    }
    return true;
  }
  void close(uint32_t r, bool lost) {
    e->nets[r % e->nets.size()]->close(fab[r], lost);
    fab[r] = nullptr;
  }
  ~Team() {
    for (uint32_t r = 0; r < fab.size(); ++r)
      if (fab[r] != nullptr) close(r, false);
    if (e != nullptr) EXPECT_TRUE(e->settle(10));
  }
};

// Every rank sends `msgs` messages to every rank of another engine.
bool exchange(Engines& e, Team& t, uint32_t msgs, uint32_t slot, double secs) {
  const uint32_t ne = static_cast<uint32_t>(e.nets.size());
  return ucct::exchange_messages(
      [&e] { e.progress(); }, t.fab,
      [ne](uint32_t s, uint32_t d) { return s % ne != d % ne; }, msgs, slot,
      secs);
}

struct Faults {
  const char* name;
  uint32_t split, delay_us;
  double drop;
};

class TcpFaultsTest : public ::testing::TestWithParam<Faults> {};

TEST_P(TcpFaultsTest, EveryMessageArrivesWholeAndInOrder) {
  const Faults f = GetParam();
  plat::TcpConfig cfg = quick();
  cfg.fault_split = f.split;
  cfg.fault_delay_us = f.delay_us;
  cfg.fault_drop = f.drop;
  // 3 engines, 5 ranks: some pairs share an engine's connection.
  Engines e(3, cfg);
  {
    Team t;
    ASSERT_TRUE(t.open(e, 5, 4096, 4));
    ASSERT_TRUE(exchange(e, t, 60, 4096, 30)) << f.name;
    // Members leave one by one; the others never take that for a
    // failure, breaks or not (goodbyes are answered, and said again).
    for (uint32_t r = 0; r + 1 < 5; ++r) {
      t.close(r, /*lost=*/false);
      ASSERT_TRUE(e.settle(10)) << "rank " << r << "'s goodbyes unanswered";
      for (uint32_t q = r + 1; q < 5; ++q)
        EXPECT_FALSE(t.fab[q]->peer_lost()) << q << " after " << r << " left";
    }
  }
  uint64_t drops = 0, breaks = 0, dups = 0, connects = 0;
  for (auto& n : e.nets) {
    drops += n->stats().inj_drops;
    breaks += n->stats().breaks;
    dups += n->stats().dup_msgs;
    connects += n->stats().connects;
  }
  if (f.drop > 0) {
    EXPECT_GT(drops, 0u);
    EXPECT_GT(breaks, 0u);
    EXPECT_GT(connects, 6u);  // made again
  }
  (void)dups;
}

INSTANTIATE_TEST_SUITE_P(
    Tcp, TcpFaultsTest,
    ::testing::Values(Faults{"clean", 0, 0, 0}, Faults{"split", 7, 0, 0},
                      Faults{"delay", 0, 200, 0}, Faults{"drop", 0, 0, 0.02},
                      Faults{"all", 13, 50, 0.01}),
    [](const ::testing::TestParamInfo<Faults>& i) { return i.param.name; });

TEST(Tcp, BigSlotsAndManyRanks) {
  Engines e(2, quick());
  Team t;
  ASSERT_TRUE(t.open(e, 6, 64 * 1024, 8));
  EXPECT_TRUE(exchange(e, t, 30, 64 * 1024, 60));
}

TEST(Tcp, LeftPeerIsNotLostClosedEngineIs) {
  Engines e(3, quick());
  Team t;
  ASSERT_TRUE(t.open(e, 3, 4096, 4));
  ASSERT_TRUE(exchange(e, t, 4, 4096, 10));
  t.close(2, /*lost=*/false);
  for (int i = 0; i < 200; ++i) e.progress();
  EXPECT_FALSE(t.fab[0]->peer_lost());
  EXPECT_FALSE(t.fab[1]->peer_lost());
  // Engine 1 closes while its member is still in the team (a process
  // that exits without leaving): its goodbye says that member is gone,
  // and rank 0 takes it for lost at once.
  t.fab[1] = nullptr;  // (its memory goes with its engine)
  std::thread closing([&] { e.nets[1].reset(); });
  const uint64_t t0 = plat::now_ns();
  while (!t.fab[0]->peer_lost() && plat::now_ns() - t0 < 5000000000ull) {
    e.nets[0]->progress();
    e.nets[2]->progress();
  }
  closing.join();
  EXPECT_TRUE(t.fab[0]->peer_lost());
  EXPECT_LT(plat::now_ns() - t0, 1000000000ull);
}

TEST(Tcp, SilentPeerIsLost) {
  plat::TcpConfig cfg = quick();
  cfg.peer_timeout_ms = 500;
  Engines e(2, cfg);
  Team t;
  ASSERT_TRUE(t.open(e, 2, 4096, 4));
  ASSERT_TRUE(exchange(e, t, 4, 4096, 10));
  // Engine 1 stops progressing (a stopped process): its peer, stuck on
  // it (peer_lost asks), pings and gives up after the timeout.
  const uint64_t t0 = plat::now_ns();
  while (!t.fab[0]->peer_lost() && plat::now_ns() - t0 < 3000000000ull)
    e.nets[0]->progress();
  EXPECT_TRUE(t.fab[0]->peer_lost());
  EXPECT_GE(plat::now_ns() - t0, 400000000ull);
}

// A connection that says hello and then sends frames no link accepts, or
// that break the framing, is closed; the team works on.
TEST(Tcp, ForgedFramesCloseTheirConnection) {
  Engines e(2, quick());
  Team t;
  ASSERT_TRUE(t.open(e, 2, 4096, 4));
  ASSERT_TRUE(exchange(e, t, 4, 4096, 10));
  tcp::TcpNet& victim = *e.nets[0];
  auto attack = [&](const tcp::Hdr& h, const void* body, size_t len,
                    uint64_t key) {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = victim.ip();
    sa.sin_port = victim.port();
    EXPECT_EQ(connect(s, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    tcp::Hdr hello{};
    hello.magic = tcp::kFrameMagic;
    hello.version = tcp::kFrameVersion;
    hello.type = tcp::Type::kHello;
    hello.len = sizeof(tcp::Hello);
    const tcp::Hello who{1, key};  // the smallest id: allowed to connect
    std::vector<char> buf(sizeof(hello) + sizeof(who) + sizeof(h) + len);
    memcpy(buf.data(), &hello, sizeof(hello));
    memcpy(buf.data() + sizeof(hello), &who, sizeof(who));
    memcpy(buf.data() + sizeof(hello) + sizeof(who), &h, sizeof(h));
    if (len != 0)
      memcpy(buf.data() + sizeof(hello) + sizeof(who) + sizeof(h), body, len);
    EXPECT_EQ(send(s, buf.data(), buf.size(), 0),
              static_cast<ssize_t>(buf.size()));
    const uint64_t bad = victim.stats().bad_frames;
    for (int i = 0; i < 2000 && victim.stats().bad_frames == bad; ++i)
      e.progress();
    ::close(s);
    return victim.stats().bad_frames - bad;
  };
  tcp::Hdr h{};
  h.magic = tcp::kFrameMagic;
  h.version = tcp::kFrameVersion;
  h.type = tcp::Type::kData;
  // Without the victim's key the hello itself is refused.
  h.len = 0;
  h.type = tcp::Type::kPing;
  EXPECT_EQ(attack(h, nullptr, 0, victim.key() ^ 2), 1u);
  h.type = tcp::Type::kData;
  // For no endpoint of ours: read and dropped, the connection stays.
  h.len = 100;
  std::vector<char> junk(200, 7);
  EXPECT_EQ(attack(h, junk.data(), 100, victim.key()), 0u);
  // Larger than any slot can be: refused before any byte lands.
  h.len = (64u << 20) + 65;
  EXPECT_EQ(attack(h, nullptr, 0, victim.key()), 1u);
  h.magic = 0x1234;  // framing broken
  EXPECT_EQ(attack(h, nullptr, 0, victim.key()), 1u);
  h.magic = tcp::kFrameMagic;
  h.type = tcp::Type::kCredit;
  h.len = 200;
  h.nslots = 200;
  EXPECT_EQ(attack(h, junk.data(), junk.size(), victim.key()), 1u);
  EXPECT_FALSE(t.fab[0]->peer_lost());
  EXPECT_TRUE(exchange(e, t, 10, 4096, 10));
}

}  // namespace

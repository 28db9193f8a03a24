// The verbs transport (platform/verbs) in one process: several engines (a
// VerbsNet each, over a TcpNet of its own for connection setup) on
// tests/verbs_loop's provider, team fabrics over them, every message
// checked byte by byte and in order, many more messages than slots (the
// credits come back as RDMA writes). Also: members that leave one by one
// are never taken for failures; a member that fails is lost to the
// members of the other engines at once, and through them to the whole
// team, not after a timeout. And 3,000 teams made and closed back to back
// with the production linger: creation waits for room, never fails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "platform/os/clock.h"
#include "platform/tcp/tcp_net.h"
#include "platform/verbs/verbs_net.h"
#include "tests/unit/fabric_exchange.h"

namespace {

using ucc::base::Status;
namespace plat = ucc::plat;
namespace tcp = ucc::plat::tcp;
namespace verbs = ucc::plat::verbs;

struct Engines {
  std::vector<std::unique_ptr<tcp::TcpNet>> cms;
  std::vector<std::unique_ptr<verbs::VerbsNet>> nets;
  std::string fabric;
  explicit Engines(uint32_t n, uint32_t linger_ms = 20) {
    // A fabric file of this test's own (the provider reads it at open).
    fabric = "/tmp/ucct-verbs-unit-" + std::to_string(getpid()) + ".fabric";
    setenv("VERBS_LOOP_FABRIC", fabric.c_str(), 1);
    for (uint32_t i = 0; i < n; ++i) {
      plat::TcpConfig c;
      c.iface = "127.0.0.1";
      c.peer_timeout_ms = 2000;
      c.keepalive_ms = 100;
      c.spin = UINT32_MAX;  // never wait: several engines share this thread
      c.wait_us = 0;
      cms.push_back(std::make_unique<tcp::TcpNet>());
      EXPECT_EQ(cms[i]->init(c), Status::kOk);
      plat::VerbsConfig v;
      v.lib = UCCT_VERBS_LOOP_LIB;
      v.peer_timeout_ms = 2000;
      v.linger_ms = linger_ms;
      nets.push_back(std::make_unique<verbs::VerbsNet>());
      EXPECT_EQ(nets[i]->init(v, cms[i].get()), Status::kOk);
    }
  }
  void progress() {
    for (auto& n : nets) n->progress();
  }
  // Progress until no engine holds a member (closed ones linger until
  // their goodbyes are answered); false when that takes `secs`.
  bool settle(double secs) {
    const uint64_t end = plat::now_ns() + static_cast<uint64_t>(secs * 1e9);
    for (;;) {
      bool any = false;
      for (auto& n : nets) any |= n->active();
      if (!any) return true;
      if (plat::now_ns() > end) return false;
      progress();
    }
  }
  ~Engines() {
    EXPECT_TRUE(settle(10));
    for (auto& n : nets) n.reset();  // nothing open: no peer needed
    // The connection managers are processes of their own: they close at
    // once, each waiting for the others to read its last bytes.
    std::vector<std::thread> t;
    for (auto& c : cms) t.emplace_back([&c] { c.reset(); });
    for (auto& x : t) x.join();
    unlink(fabric.c_str());
  }
};

// Rank r in engine r mod n; ranks of other engines over verbs.
struct Team {
  Engines* e = nullptr;
  std::vector<plat::Fabric*> fab;
  std::vector<plat::FabricAddr> addrs;
  uint32_t engine(uint32_t r) const {
    return r % static_cast<uint32_t>(e->nets.size());
  }
  bool open(Engines& en, uint32_t ranks, uint32_t slot, uint32_t nslots) {
    e = &en;
    addrs.resize(ranks);
    for (uint32_t r = 0; r < ranks; ++r) {
      fab.push_back(en.nets[engine(r)]->open(
          plat::FabricConfig{ranks, r, slot, nslots}, &addrs[r]));
      if (fab[r] == nullptr) return false;
    }
    for (uint32_t r = 0; r < ranks; ++r) {
      std::vector<char> mine(ranks, 0);
      for (uint32_t q = 0; q < ranks; ++q) mine[q] = engine(q) != engine(r);
      if (fab[r]->connect(addrs.data(),
                          reinterpret_cast<const bool*>(mine.data())) !=
          Status::kOk)
        return false;
    }
    for (auto* f : fab) f->seal();  // after everyone connected, as a team
    return true;
  }
  void close(uint32_t r, bool lost) {
    e->nets[engine(r)]->close(fab[r], lost);
    fab[r] = nullptr;
  }
  bool exchange(uint32_t msgs, uint32_t slot, double secs) {
    return ucct::exchange_messages(
        [this] { e->progress(); }, fab,
        [this](uint32_t s, uint32_t d) { return engine(s) != engine(d); },
        msgs, slot, secs);
  }
  ~Team() {
    for (uint32_t r = 0; r < fab.size(); ++r)
      if (fab[r] != nullptr) close(r, false);
  }
};

bool have_provider() { return access(UCCT_VERBS_LOOP_LIB, R_OK) == 0; }

TEST(VerbsNet, EveryMessageArrivesWholeAndInOrder) {
  if (!have_provider()) GTEST_SKIP() << "no " << UCCT_VERBS_LOOP_LIB;
  // 3 engines, 5 ranks: 60 messages each way per pair over 4 slots, from
  // empty to full slots (inline and not).
  Engines e(3);
  Team t;
  ASSERT_TRUE(t.open(e, 5, 4096, 4));
  ASSERT_TRUE(t.exchange(60, 4096, 30));
  for (auto* f : t.fab) EXPECT_FALSE(f->peer_lost());
  // Members leave one by one: the others never take that for a failure.
  for (uint32_t r = 0; r + 1 < 5; ++r) {
    t.close(r, /*lost=*/false);
    const uint64_t end = plat::now_ns() + 200000000ull;
    while (plat::now_ns() < end) e.progress();
    for (uint32_t q = r + 1; q < 5; ++q)
      EXPECT_FALSE(t.fab[q]->peer_lost()) << "rank " << q << " after " << r;
  }
}

TEST(VerbsNet, AFailedMemberIsLostToItsPeersAtOnce) {
  if (!have_provider()) GTEST_SKIP() << "no " << UCCT_VERBS_LOOP_LIB;
  Engines e(2);
  Team t;
  ASSERT_TRUE(t.open(e, 4, 256, 4));
  ASSERT_TRUE(t.exchange(10, 256, 30));
  t.close(0, /*lost=*/true);
  // Ranks 1 and 3 (the other engine) reach rank 0 over verbs: its
  // goodbye says it failed, and its queue pairs are in error.
  const uint64_t end = plat::now_ns() + 1500000000ull;
  bool lost1 = false, lost3 = false;
  while (!(lost1 && lost3) && plat::now_ns() < end) {
    e.progress();
    lost1 = lost1 || t.fab[1]->peer_lost();
    lost3 = lost3 || t.fab[3]->peer_lost();
  }
  EXPECT_TRUE(lost1 && lost3) << "not within 1.5 s (peer timeout 2 s)";
  // Rank 2 shares rank 0's engine (no verbs link between them); it learns
  // from ranks 1 and 3, which broke their links on finding rank 0 lost:
  // the whole team fails, nobody waits for the timeout.
  bool lost2 = false;
  while (!lost2 && plat::now_ns() < end + 1500000000ull) {
    e.progress();
    lost2 = t.fab[2]->peer_lost();
  }
  EXPECT_TRUE(lost2);
}

// 3,000 two-engine teams made, used and closed back to back, with the
// production linger (1 s): closed members hold their CQ, queue pairs and
// registrations that long, more than the provider's 1,024 CQs at this
// rate. Creation waits for a lingering member to go instead of failing.
TEST(VerbsNet, TeamChurnWaitsForRoomInsteadOfFailing) {
  if (!have_provider()) GTEST_SKIP() << "no " << UCCT_VERBS_LOOP_LIB;
  Engines e(2, 1000);
  const uint64_t t0 = plat::now_ns();
  int failed = 0;
  for (int i = 0; i < 3000 && failed == 0; ++i) {
    Team t;
    if (!t.open(e, 2, 256, 4) || !t.exchange(1, 256, 10)) ++failed;
    if (failed != 0) ADD_FAILURE() << "cycle " << i;
  }
  const double secs = static_cast<double>(plat::now_ns() - t0) * 1e-9;
  EXPECT_EQ(failed, 0);
  printf("3000 teams in %.2f s; creation waited for room %llu times\n", secs,
         static_cast<unsigned long long>(e.nets[0]->room_waits() +
                                         e.nets[1]->room_waits()));
}

}  // namespace

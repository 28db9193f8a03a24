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
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "platform/os/clock.h"
#include "platform/tcp/tcp_net.h"
#include "platform/verbs/verbs_fabric.h"
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
  // zcopy[i]: engine i's UCC_NET_ZCOPY_MIN (default: the production one).
  // cq_links: VerbsConfig::cq_links (the first CQ's links).
  explicit Engines(uint32_t n, uint32_t linger_ms = 20,
                   std::vector<uint32_t> zcopy = {}, uint32_t cq_links = 16) {
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
      if (i < zcopy.size()) v.zcopy_min = zcopy[i];
      v.cq_links = cq_links;
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
  // rma: which ranks may move one-sided (FabricConfig::rma); none if empty.
  bool open(Engines& en, uint32_t ranks, uint32_t slot, uint32_t nslots,
            std::vector<bool> rma = {}) {
    e = &en;
    addrs.resize(ranks);
    for (uint32_t r = 0; r < ranks; ++r) {
      const bool one_sided = r < rma.size() && rma[r];
      fab.push_back(en.nets[engine(r)]->open(
          plat::FabricConfig{ranks, r, slot, nslots, one_sided}, &addrs[r]));
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

// Queue pairs on demand: none at team creation; after recursive
// doubling's exchanges among 8 engines (partners r^1, r^2, r^4, both ends
// sending first at once) each member has 3, and its connection manager 3
// TCP connections; after all pairs, 7. Every message checked.
// Queue pairs, completion queue entries and registered inbox memory
// grow with the peers a member exchanges with, not with the team: 8
// single-rank engines, first the 3 peers of a hypercube, then all 7.
TEST(VerbsNet, QueuePairsOnlyForThePeersTalkedTo) {
  if (!have_provider()) GTEST_SKIP() << "no " << UCCT_VERBS_LOOP_LIB;
  Engines e(8, 20, {}, 2);  // CQs for 2 links, then 4, then what is left
  Team t;
  const uint32_t slot = 1024, nslots = 4;
  ASSERT_TRUE(t.open(e, 8, slot, nslots));
  // A CQ for k links: (max_send 2 * nslots + 8, plus nslots receives)
  // entries per link, and 64.
  auto cq = [&](uint64_t k) { return k * (3 * nslots + 8) + 64; };
  const plat::FabricConfig fc{8, 0, slot, nslots, false};
  const uint64_t link = plat::slot_stride(slot) * nslots +
                        plat::shadow_bytes(fc) + plat::kMaxSlots;
  for (int i = 0; i < 100; ++i) e.progress();
  // Links are made for the peers talked to, not for the team.
  // (And their inbox pairs: the same number.)
  auto links = [&t](uint32_t r) {
    auto* f = static_cast<verbs::VerbsFabric*>(t.fab[r]);
    return f->pairs_made() == f->links_made() ? f->links_made() : 1000u;
  };
  for (uint32_t r = 0; r < 8; ++r) EXPECT_EQ(links(r), 0u) << "rank " << r;
  for (auto& n : e.nets) {
    EXPECT_EQ(n->counters().qps, 0u);
    EXPECT_EQ(n->counters().cqes, cq(2));
    EXPECT_EQ(n->counters().fabric_regs, 0u);
  }
  ASSERT_TRUE(ucct::exchange_messages([&e] { e.progress(); }, t.fab,
                                      [](uint32_t s, uint32_t d) {
                                        const uint32_t x = s ^ d;
                                        return x != 0 && (x & (x - 1)) == 0;
                                      },
                                      6, 1024, 30));
  for (uint32_t i = 0; i < 8; ++i) {
    EXPECT_EQ(e.nets[i]->counters().qps, 3u) << "engine " << i;
    EXPECT_EQ(e.cms[i]->connections(), 3u) << "engine " << i;
    EXPECT_EQ(e.nets[i]->counters().cqes, cq(2) + cq(4)) << "engine " << i;
    EXPECT_EQ(e.nets[i]->counters().fabric_regs, 3 * link) << "engine " << i;
    EXPECT_EQ(links(i), 3u) << "rank " << i;
  }
  ASSERT_TRUE(t.exchange(3, 1024, 30));
  for (auto& n : e.nets) {
    EXPECT_EQ(n->counters().qps, 7u);
    EXPECT_EQ(n->counters().cqes, cq(2) + cq(4) + cq(1));
    EXPECT_EQ(n->counters().fabric_regs, 7 * link);
  }
  for (uint32_t r = 0; r < 8; ++r) EXPECT_EQ(links(r), 7u) << "rank " << r;
  for (auto* f : t.fab) EXPECT_FALSE(f->peer_lost());
}

// A member whose team failed before a peer ever reached it answers that
// peer's first hello with a goodbye that says so: the peer, stuck waiting
// on it, is told at once rather than after the timeout.
TEST(VerbsNet, FailedMemberTellsAPeerThatReachesItLater) {
  if (!have_provider()) GTEST_SKIP() << "no " << UCCT_VERBS_LOOP_LIB;
  Engines e(2);
  Team t;
  ASSERT_TRUE(t.open(e, 2, 256, 4));
  t.fab[1]->fail();
  t.fab[0]->waiting_on(1);
  const uint64_t t0 = plat::now_ns();
  bool lost = false;
  while (!lost && plat::now_ns() - t0 < 1500000000ull) {
    e.progress();
    lost = t.fab[0]->peer_lost();
  }
  EXPECT_TRUE(lost) << "not within 1.5 s (peer timeout 2 s)";
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

// --- one-sided operations (fabric.h: registered memory, get and put) -------

Status post_until_taken(Engines& e, const std::function<Status()>& fn) {
  return ucct::post_until_taken([&e] { e.progress(); }, fn);
}
bool wait_done(Engines& e, plat::Fabric* f, uint32_t peer, uint64_t ticket) {
  return ucct::rma_wait([&e] { e.progress(); }, f, peer, ticket);
}

uint32_t regs_of(plat::Fabric* f) {
  return static_cast<verbs::VerbsFabric*>(f)->rma_regs();
}

// Rank 0 reads rank 1's registered bytes in two gets, and writes into
// rank 1's memory with a put; every byte checked, the bytes around the
// target untouched; the registrations all go back.
TEST(VerbsNet, OneSidedGetAndPutMoveRegisteredBytes) {
  if (!have_provider()) GTEST_SKIP() << "no " << UCCT_VERBS_LOOP_LIB;
  Engines e(2, 20, {4096, 4096});
  Team t;
  ASSERT_TRUE(t.open(e, 2, 4096, 4, {true, true}));
  EXPECT_EQ(t.fab[0]->rma_min(1), 4096u);
  EXPECT_EQ(t.fab[1]->rma_min(0), 4096u);
  const size_t n = (size_t{3} << 20) + 5;
  std::vector<uint8_t> src = ucct::rma_pattern(n, 1), dst(n + 2, 0xee);
  plat::RmaReg rs{}, rd{};
  ASSERT_EQ(t.fab[1]->mem_reg(src.data(), n, plat::kRmaRemoteRead, &rs),
            Status::kOk);
  ASSERT_EQ(t.fab[0]->mem_reg(dst.data() + 1, n, plat::kRmaLocal, &rd),
            Status::kOk);
  uint64_t ticket = 0;
  const size_t half = n / 2;
  for (size_t at : {size_t{0}, half}) {
    const uint32_t len = static_cast<uint32_t>(at == 0 ? half : n - half);
    ASSERT_EQ(post_until_taken(e,
                               [&] {
                                 return t.fab[0]->get(1, dst.data() + 1 + at,
                                                      rd, rs.addr + at, rs.rkey,
                                                      len, &ticket);
                               }),
              Status::kOk);
  }
  ASSERT_TRUE(wait_done(e, t.fab[0], 1, ticket));
  EXPECT_EQ(ticket, 2u);
  EXPECT_EQ(dst[0], 0xee);
  EXPECT_EQ(dst[n + 1], 0xee);
  EXPECT_EQ(memcmp(dst.data() + 1, src.data(), n), 0);
  // A put from the same local registration into rank 1's target.
  std::vector<uint8_t> target(n, 0x11);
  plat::RmaReg rt{};
  ASSERT_EQ(t.fab[1]->mem_reg(target.data(), n, plat::kRmaRemoteWrite, &rt),
            Status::kOk);
  ASSERT_EQ(post_until_taken(e,
                             [&] {
                               return t.fab[0]->put(
                                   1, dst.data() + 1, rd, rt.addr, rt.rkey,
                                   static_cast<uint32_t>(n), &ticket);
                             }),
            Status::kOk);
  ASSERT_TRUE(wait_done(e, t.fab[0], 1, ticket));
  EXPECT_EQ(memcmp(target.data(), src.data(), n), 0);
  // The local bytes must lie in the registration named: refused before
  // anything is posted.
  EXPECT_EQ(t.fab[0]->get(1, dst.data(), rd, rs.addr, rs.rkey, 8, &ticket),
            Status::kInvalidParam);
  EXPECT_FALSE(t.fab[0]->peer_lost());
  EXPECT_EQ(regs_of(t.fab[0]), 1u);
  EXPECT_EQ(regs_of(t.fab[1]), 2u);
  t.fab[0]->mem_dereg(rd.handle);
  t.fab[1]->mem_dereg(rs.handle);
  t.fab[1]->mem_dereg(rt.handle);
  EXPECT_EQ(regs_of(t.fab[0]), 0u);
  EXPECT_EQ(regs_of(t.fab[1]), 0u);
}

// Both ends move one-sided from the larger threshold, and not at all
// where either end does not.
TEST(VerbsNet, OneSidedNeedsBothEnds) {
  if (!have_provider()) GTEST_SKIP() << "no " << UCCT_VERBS_LOOP_LIB;
  Engines e(3, 20, {4096, 65536, 0});
  {
    Team t;
    ASSERT_TRUE(t.open(e, 3, 4096, 4, {true, true, true}));
    EXPECT_EQ(t.fab[0]->rma_min(1), 65536u);
    EXPECT_EQ(t.fab[1]->rma_min(0), 65536u);
    EXPECT_EQ(t.fab[0]->rma_min(2), 0u);  // engine 2: UCC_NET_ZCOPY_MIN=0
    EXPECT_EQ(t.fab[2]->rma_min(0), 0u);
    ASSERT_TRUE(t.exchange(2, 4096, 30));
  }
  Team t;
  ASSERT_TRUE(t.open(e, 2, 4096, 4, {true, false}));  // rank 1: not inline
  EXPECT_EQ(t.fab[0]->rma_min(1), 0u);
  EXPECT_EQ(t.fab[1]->rma_min(0), 0u);
}

// What a peer's registration does not allow fails the link (the device's
// check), never touches memory outside it: a get past its end, a put into
// bytes registered for reading only, a get with a key given back.
TEST(VerbsNet, OneSidedOutsideARegistrationFailsTheLink) {
  if (!have_provider()) GTEST_SKIP() << "no " << UCCT_VERBS_LOOP_LIB;
  Engines e(2, 20, {4096, 4096});
  const size_t n = 8192;
  for (int c = 0; c < 3; ++c) {
    Team t;
    ASSERT_TRUE(t.open(e, 2, 4096, 4, {true, true}));
    std::vector<uint8_t> theirs = ucct::rma_pattern(n + 64, 3), mine(n + 64, 0);
    const std::vector<uint8_t> before = theirs;
    plat::RmaReg rr{}, rl{};
    ASSERT_EQ(t.fab[1]->mem_reg(theirs.data(), n, plat::kRmaRemoteRead, &rr),
              Status::kOk);
    ASSERT_EQ(t.fab[0]->mem_reg(mine.data(), n + 64, plat::kRmaLocal, &rl),
              Status::kOk);
    if (c == 2) t.fab[1]->mem_dereg(rr.handle);
    uint64_t ticket = 0;
    const Status st = post_until_taken(e, [&] {
      if (c == 1)
        return t.fab[0]->put(1, mine.data(), rl, rr.addr, rr.rkey, 64, &ticket);
      // c 0: 64 bytes past the end; c 2: inside, but the key is gone.
      return t.fab[0]->get(1, mine.data(), rl, rr.addr + (c == 0 ? n : 0),
                           rr.rkey, 64, &ticket);
    });
    ASSERT_EQ(st, Status::kOk) << "case " << c;
    EXPECT_FALSE(wait_done(e, t.fab[0], 1, ticket)) << "case " << c;
    EXPECT_TRUE(t.fab[0]->peer_lost()) << "case " << c;
    EXPECT_EQ(theirs, before) << "case " << c;
    for (size_t i = 0; i < 64; ++i) ASSERT_EQ(mine[i], 0) << "case " << c;
  }
}

// The fabric holds kMaxRmaRegs registrations at most: then kNoResource
// (the streams fall back to slots), and room again once one goes.
TEST(VerbsNet, RegistrationsAreBounded) {
  if (!have_provider()) GTEST_SKIP() << "no " << UCCT_VERBS_LOOP_LIB;
  Engines e(2, 20, {4096, 4096});
  Team t;
  ASSERT_TRUE(t.open(e, 2, 4096, 4, {true, true}));
  std::vector<uint8_t> buf(4096);
  std::vector<plat::RmaReg> regs(plat::kMaxRmaRegs);
  for (auto& r : regs)
    ASSERT_EQ(t.fab[0]->mem_reg(buf.data(), buf.size(), plat::kRmaLocal, &r),
              Status::kOk);
  plat::RmaReg more{};
  EXPECT_EQ(t.fab[0]->mem_reg(buf.data(), buf.size(), plat::kRmaLocal, &more),
            Status::kNoResource);
  t.fab[0]->mem_dereg(regs[7].handle);
  EXPECT_EQ(t.fab[0]->mem_reg(buf.data(), buf.size(), plat::kRmaLocal, &more),
            Status::kOk);
  EXPECT_EQ(more.handle, regs[7].handle);
  for (auto& r : regs) t.fab[0]->mem_dereg(r.handle);
  EXPECT_EQ(regs_of(t.fab[0]), 0u);
}

}  // namespace

namespace {

// RDMA READs in flight per queue pair: as many as the device allows and
// the peer takes (its address says so), and one towards a peer that does
// not say. One at a time would serialize a link's one-sided blocks on
// their round trips.
TEST(VerbsNet, ReadDepthIsTheDevicesAndThePeers) {
  if (!have_provider()) GTEST_SKIP() << "no " << UCCT_VERBS_LOOP_LIB;
  const std::string fabric =
      "/tmp/ucct-verbs-depth-" + std::to_string(getpid()) + ".fabric";
  setenv("VERBS_LOOP_FABRIC", fabric.c_str(), 1);
  {
    verbs::VerbsNet net;
    plat::VerbsConfig v;
    v.lib = UCCT_VERBS_LOOP_LIB;
    ASSERT_EQ(net.init_device(v), Status::kOk);
    // The provider's max_qp_init_rd_atom and max_qp_rd_atom.
    EXPECT_EQ(net.rd_init_depth(), 16);
    EXPECT_EQ(net.rd_resp_depth(), 16);
    const verbs::Api& api = net.api();
    ibv_cq* cq = api.create_cq(net.ctx(), 16, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    ibv_qp_init_attr ia{};
    ia.send_cq = ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    ibv_qp* q[3];
    verbs::QpAddr a[3];
    for (int i = 0; i < 3; ++i) {
      q[i] = api.create_qp(net.pd(), &ia);
      ASSERT_NE(q[i], nullptr);
      ASSERT_TRUE(net.qp_init(q[i], IBV_ACCESS_REMOTE_READ));
      a[i] = net.qp_addr(q[i], static_cast<uint32_t>(i + 1));
      EXPECT_EQ(a[i].rd_depth, 16);
    }
    verbs::QpAddr takes4 = a[1], silent = a[0];
    takes4.rd_depth = 4;
    silent.rd_depth = 0;  // an address from before the field
    ASSERT_TRUE(net.qp_connect(q[0], takes4, 1));
    ASSERT_TRUE(net.qp_connect(q[1], a[0], 2));
    ASSERT_TRUE(net.qp_connect(q[2], silent, 3));
    const int want[3] = {4, 16, 1};
    for (int i = 0; i < 3; ++i) {
      ibv_qp_attr got{};
      ibv_qp_init_attr init{};
      ASSERT_EQ(api.query_qp(q[i], &got, IBV_QP_MAX_QP_RD_ATOMIC, &init), 0);
      EXPECT_EQ(got.max_rd_atomic, want[i]) << "queue pair " << i;
      EXPECT_EQ(got.max_dest_rd_atomic, 16) << "queue pair " << i;
      api.destroy_qp(q[i]);
    }
    api.destroy_cq(cq);
    net.fini();
  }
  unlink(fabric.c_str());
}

}  // namespace

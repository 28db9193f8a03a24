// TCP's emulated one-sided reads and writes (platform/tcp/tcp_rma.cc)
// between engines in one process: every byte of a get or a put lands
// where it should, moved from and into the registered memory itself, and
// gets and puts complete in the order posted; both ends agree on the
// threshold; what a registration does not allow is refused and fails the
// link, reading and writing nothing else; a put's own registration given
// back under it fails the link too.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "tests/unit/tcp_engines.h"

namespace {

using ucct::Engines;
using ucct::Status;
using ucct::Team;
namespace plat = ucc::plat;
namespace tcp = ucc::plat::tcp;

// A team of two, rank r in engine r, both moving one-sided from `zcopy`.
struct Pair {
  Engines e;
  Team t;
  explicit Pair(uint32_t zcopy0 = 4096, uint32_t zcopy1 = 4096,
                bool rma1 = true, plat::TcpConfig base = ucct::quick())
      : e(0, base) {
    for (uint32_t zcopy : {zcopy0, zcopy1}) {
      plat::TcpConfig c = base;
      c.zcopy_min = zcopy;
      e.nets.push_back(std::make_unique<tcp::TcpNet>());
      EXPECT_EQ(e.nets.back()->init(c), Status::kOk);
    }
    t.e = &e;
    t.addrs.resize(2);
    for (uint32_t r = 0; r < 2; ++r)
      t.fab.push_back(e.nets[r]->open(
          plat::FabricConfig{2, r, 4096, 4, r == 0 || rma1}, &t.addrs[r]));
    const bool mine0[2] = {false, true}, mine1[2] = {true, false};
    EXPECT_EQ(t.fab[0]->connect(t.addrs.data(), mine0), Status::kOk);
    EXPECT_EQ(t.fab[1]->connect(t.addrs.data(), mine1), Status::kOk);
  }
  std::function<void()> progress() {
    return [this] { e.progress(); };
  }
};

uint32_t regs_of(plat::Fabric* f) {
  return static_cast<tcp::TcpFabric*>(f)->rma_regs();
}

TEST(TcpRma, GetsReadRegisteredBytes) {
  Pair p;
  EXPECT_EQ(p.t.fab[0]->rma_min(1), 4096u);
  EXPECT_EQ(p.t.fab[1]->rma_min(0), 4096u);
  const size_t n = (size_t{3} << 20) + 5;
  std::vector<uint8_t> src = ucct::rma_pattern(n, 1), dst(n + 2, 0xee);
  plat::RmaReg rs{}, rd{};
  ASSERT_EQ(p.t.fab[1]->mem_reg(src.data(), n, plat::kRmaRemoteRead, &rs),
            Status::kOk);
  ASSERT_EQ(p.t.fab[0]->mem_reg(dst.data() + 1, n, plat::kRmaLocal, &rd),
            Status::kOk);
  // Pieces of every size up to the most a get takes, more at once than
  // a link keeps outstanding.
  uint64_t ticket = 0;
  size_t at = 0;
  for (uint32_t k = 1; at < n; ++k) {
    const size_t want = (size_t{k} * 65537) % plat::kRmaMaxOp + 1;
    const uint32_t len = static_cast<uint32_t>(want < n - at ? want : n - at);
    ASSERT_EQ(ucct::post_until_taken(p.progress(),
                                     [&] {
                                       return p.t.fab[0]->get(
                                           1, dst.data() + 1 + at, rd,
                                           rs.addr + at, rs.rkey, len, &ticket);
                                     }),
              Status::kOk);
    at += len;
  }
  ASSERT_TRUE(ucct::rma_wait(p.progress(), p.t.fab[0], 1, ticket));
  EXPECT_EQ(dst[0], 0xee);
  EXPECT_EQ(dst[n + 1], 0xee);
  EXPECT_EQ(memcmp(dst.data() + 1, src.data(), n), 0);
  // Local bytes outside the registration named: refused at once.
  EXPECT_EQ(p.t.fab[0]->get(1, dst.data(), rd, rs.addr, rs.rkey, 8, &ticket),
            Status::kInvalidParam);
  EXPECT_EQ(p.t.fab[0]->put(1, dst.data(), rd, rs.addr, rs.rkey, 8, &ticket),
            Status::kInvalidParam);
  EXPECT_FALSE(p.t.fab[0]->peer_lost());
  p.t.fab[0]->mem_dereg(rd.handle);
  p.t.fab[1]->mem_dereg(rs.handle);
  EXPECT_EQ(regs_of(p.t.fab[0]), 0u);
  EXPECT_EQ(regs_of(p.t.fab[1]), 0u);
}

// Puts of every size up to the most one takes, more at once than a link
// keeps outstanding, interleaved with gets: the target holds exactly the
// bytes put, its guards untouched, each ticket completes in order, and
// the counts say the bytes went one-sided.
TEST(TcpRma, PutsWriteRegisteredBytesInOrderWithGets) {
  Pair p;
  const size_t n = (size_t{3} << 20) + 5;
  std::vector<uint8_t> src = ucct::rma_pattern(n, 2), target(n + 2, 0xee);
  std::vector<uint8_t> theirs = ucct::rma_pattern(4096, 4), back(4096, 0);
  plat::RmaReg rs{}, rt{}, rth{}, rb{};
  ASSERT_EQ(p.t.fab[0]->mem_reg(src.data(), n, plat::kRmaLocal, &rs),
            Status::kOk);
  ASSERT_EQ(
      p.t.fab[1]->mem_reg(target.data() + 1, n, plat::kRmaRemoteWrite, &rt),
      Status::kOk);
  ASSERT_EQ(p.t.fab[1]->mem_reg(theirs.data(), theirs.size(),
                                plat::kRmaRemoteRead, &rth),
            Status::kOk);
  ASSERT_EQ(p.t.fab[0]->mem_reg(back.data(), back.size(), plat::kRmaLocal, &rb),
            Status::kOk);
  uint64_t ticket = 0, last_get = 0, nputs = 0;
  size_t at = 0;
  for (uint32_t k = 1; at < n; ++k, ++nputs) {
    const size_t want = (size_t{k} * 77777) % plat::kRmaMaxOp + 1;
    const uint32_t len = static_cast<uint32_t>(want < n - at ? want : n - at);
    ASSERT_EQ(ucct::post_until_taken(p.progress(),
                                     [&] {
                                       return p.t.fab[0]->put(
                                           1, src.data() + at, rs, rt.addr + at,
                                           rt.rkey, len, &ticket);
                                     }),
              Status::kOk);
    at += len;
    if (k % 2 == 0) {  // a get between puts: one ticket sequence
      const uint64_t before = ticket;
      ASSERT_EQ(ucct::post_until_taken(p.progress(),
                                       [&] {
                                         return p.t.fab[0]->get(
                                             1, back.data(), rb, rth.addr,
                                             rth.rkey, 4096, &last_get);
                                       }),
                Status::kOk);
      EXPECT_EQ(last_get, before + 1);
      ticket = last_get;
    }
  }
  ASSERT_TRUE(ucct::rma_wait(p.progress(), p.t.fab[0], 1, ticket));
  EXPECT_EQ(p.t.fab[0]->rma_done(1), ticket);
  EXPECT_EQ(target[0], 0xee);
  EXPECT_EQ(target[n + 1], 0xee);
  EXPECT_EQ(memcmp(target.data() + 1, src.data(), n), 0);
  EXPECT_EQ(back, theirs);
  EXPECT_FALSE(p.t.fab[0]->peer_lost());
  EXPECT_FALSE(p.t.fab[1]->peer_lost());
  const tcp::TcpStats& s0 = p.e.nets[0]->stats();
  const tcp::TcpStats& s1 = p.e.nets[1]->stats();
  EXPECT_EQ(s0.put_bytes, n);
  EXPECT_EQ(s1.put_in_bytes, n);
  EXPECT_EQ(s0.puts, nputs);
  EXPECT_EQ(s0.puts, s1.puts_in);
  for (auto [f, r] : {std::pair{0, rs}, {1, rt}, {1, rth}, {0, rb}})
    p.t.fab[f]->mem_dereg(r.handle);
  EXPECT_EQ(regs_of(p.t.fab[0]), 0u);
  EXPECT_EQ(regs_of(p.t.fab[1]), 0u);
}

// Puts while a third of them break their connection once written, every
// write is cut short and payloads carry checksums: each put not
// acknowledged is sent again on the next connection, and the target ends
// with exactly the bytes put. The draws are seeded by the engine's random
// instance, so the run is not repeatable: 64 puts or more leave a chance
// of 0.7^64 (1e-10) that none breaks, where 16 left 0.3%.
TEST(TcpRma, PutsSurviveBrokenConnections) {
  plat::TcpConfig c = ucct::quick();
  c.fault_drop = 0.3;
  c.fault_split = 3000;
  c.checksum = true;
  c.fault_seed = 7;
  Pair p(4096, 4096, true, c);
  const size_t n = size_t{1} << 20;
  std::vector<uint8_t> src = ucct::rma_pattern(n, 6), target(n, 0);
  plat::RmaReg rs{}, rt{};
  ASSERT_EQ(p.t.fab[0]->mem_reg(src.data(), n, plat::kRmaLocal, &rs),
            Status::kOk);
  ASSERT_EQ(p.t.fab[1]->mem_reg(target.data(), n, plat::kRmaRemoteWrite, &rt),
            Status::kOk);
  uint64_t ticket = 0;
  const uint32_t piece = 16384;
  for (size_t at = 0; at < n; at += piece)
    ASSERT_EQ(ucct::post_until_taken(p.progress(),
                                     [&] {
                                       return p.t.fab[0]->put(
                                           1, src.data() + at, rs, rt.addr + at,
                                           rt.rkey, piece, &ticket);
                                     }),
              Status::kOk);
  ASSERT_TRUE(ucct::rma_wait(p.progress(), p.t.fab[0], 1, ticket));
  EXPECT_EQ(target, src);
  EXPECT_GT(p.e.nets[0]->stats().inj_drops, 0u);
  EXPECT_FALSE(p.t.fab[0]->peer_lost());
  p.t.fab[0]->mem_dereg(rs.handle);
  p.t.fab[1]->mem_dereg(rt.handle);
}

// A put whose own registration is given back before it is acknowledged:
// the link fails (its bytes cannot be sent again from memory that is no
// longer the fabric's), and the collective above learns of it.
TEST(TcpRma, PutFromARegistrationGivenBackFailsTheLink) {
  Pair p;
  std::vector<uint8_t> src = ucct::rma_pattern(65536, 5), target(65536, 0);
  plat::RmaReg rs{}, rt{};
  ASSERT_EQ(p.t.fab[0]->mem_reg(src.data(), src.size(), plat::kRmaLocal, &rs),
            Status::kOk);
  ASSERT_EQ(p.t.fab[1]->mem_reg(target.data(), target.size(),
                                plat::kRmaRemoteWrite, &rt),
            Status::kOk);
  uint64_t ticket = 0;
  ASSERT_EQ(ucct::post_until_taken(p.progress(),
                                   [&] {
                                     return p.t.fab[0]->put(1, src.data(), rs,
                                                            rt.addr, rt.rkey,
                                                            65536, &ticket);
                                   }),
            Status::kOk);
  p.t.fab[0]->mem_dereg(rs.handle);
  EXPECT_TRUE(p.t.fab[0]->peer_lost());
  EXPECT_FALSE(ucct::rma_wait(p.progress(), p.t.fab[0], 1, ticket));
  p.t.fab[1]->mem_dereg(rt.handle);
}

TEST(TcpRma, BothEndsMustAgree) {
  {
    Pair p(4096, 65536);
    EXPECT_EQ(p.t.fab[0]->rma_min(1), 65536u);
    EXPECT_EQ(p.t.fab[1]->rma_min(0), 65536u);
  }
  {
    Pair p(4096, 0);  // UCC_NET_ZCOPY_MIN=0 at one end
    EXPECT_EQ(p.t.fab[0]->rma_min(1), 0u);
    EXPECT_EQ(p.t.fab[1]->rma_min(0), 0u);
  }
  Pair p(4096, 4096, false);  // rank 1's engine is not in its process
  EXPECT_EQ(p.t.fab[0]->rma_min(1), 0u);
  EXPECT_EQ(p.t.fab[1]->rma_min(0), 0u);
}

// Past the registration's end, without the right (to be read, to be
// written), with a key given back, with a made-up key: each answered
// kRefused, the asker's link lost, nothing read or written elsewhere.
// Gets, then puts.
TEST(TcpRma, WhatARegistrationDoesNotAllowIsRefused) {
  const size_t n = 8192;
  for (int put = 0; put < 2; ++put) {
    for (int c = 0; c < 4; ++c) {
      Pair p;
      std::vector<uint8_t> theirs = ucct::rma_pattern(n + 64, 3);
      std::vector<uint8_t> mine =
          put ? ucct::rma_pattern(n + 64, 9) : std::vector<uint8_t>(n + 64, 0);
      const std::vector<uint8_t> before = theirs, mine_before = mine;
      // The right the other one: a get's target may be written, a put's
      // read.
      const uint32_t right = put ? plat::kRmaRemoteWrite : plat::kRmaRemoteRead;
      const uint32_t wrong = put ? plat::kRmaRemoteRead : plat::kRmaLocal;
      plat::RmaReg rr{}, rl{};
      ASSERT_EQ(
          p.t.fab[1]->mem_reg(theirs.data(), n, c == 1 ? wrong : right, &rr),
          Status::kOk);
      ASSERT_EQ(p.t.fab[0]->mem_reg(mine.data(), n + 64, plat::kRmaLocal, &rl),
                Status::kOk);
      if (c == 2) p.t.fab[1]->mem_dereg(rr.handle);
      const uint32_t key = c == 3 ? rr.rkey ^ 0x5a5a5a00u : rr.rkey;
      const uint64_t addr = rr.addr + (c == 0 ? n - 32 : 0);
      uint64_t ticket = 0;
      ASSERT_EQ(ucct::post_until_taken(
                    p.progress(),
                    [&] {
                      return put ? p.t.fab[0]->put(1, mine.data(), rl, addr,
                                                   key, 64, &ticket)
                                 : p.t.fab[0]->get(1, mine.data(), rl, addr,
                                                   key, 64, &ticket);
                    }),
                Status::kOk);
      EXPECT_FALSE(ucct::rma_wait(p.progress(), p.t.fab[0], 1, ticket))
          << "put " << put << " case " << c;
      EXPECT_TRUE(p.t.fab[0]->peer_lost()) << "put " << put << " case " << c;
      EXPECT_EQ(theirs, before) << "put " << put << " case " << c;
      EXPECT_EQ(mine, mine_before) << "put " << put << " case " << c;
    }
  }
}

}  // namespace

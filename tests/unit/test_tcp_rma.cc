// TCP's emulated one-sided reads (platform/tcp/tcp_rma.cc) between engines
// in one process: every byte of a get lands where it should, answered
// from the registered memory itself; both ends agree on the threshold;
// what a registration does not allow is refused and fails the link,
// reading and writing nothing else.
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
                bool rma1 = true)
      : e(0, ucct::quick()) {
    for (uint32_t zcopy : {zcopy0, zcopy1}) {
      plat::TcpConfig c = ucct::quick();
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
  // Local bytes outside the registration named: refused at once. Puts
  // are not emulated.
  EXPECT_EQ(p.t.fab[0]->get(1, dst.data(), rd, rs.addr, rs.rkey, 8, &ticket),
            Status::kInvalidParam);
  EXPECT_EQ(
      p.t.fab[0]->put(1, dst.data() + 1, rd, rs.addr, rs.rkey, 8, &ticket),
      Status::kNotSupported);
  EXPECT_FALSE(p.t.fab[0]->peer_lost());
  p.t.fab[0]->mem_dereg(rd.handle);
  p.t.fab[1]->mem_dereg(rs.handle);
  EXPECT_EQ(regs_of(p.t.fab[0]), 0u);
  EXPECT_EQ(regs_of(p.t.fab[1]), 0u);
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

// Past the registration's end, without the right to be read, with a key
// given back, with a made-up key: each answered kRefused, the asker's
// link lost, nothing read or written elsewhere.
TEST(TcpRma, WhatARegistrationDoesNotAllowIsRefused) {
  const size_t n = 8192;
  for (int c = 0; c < 4; ++c) {
    Pair p;
    std::vector<uint8_t> theirs = ucct::rma_pattern(n + 64, 3), mine(n + 64, 0);
    const std::vector<uint8_t> before = theirs;
    plat::RmaReg rr{}, rl{};
    ASSERT_EQ(p.t.fab[1]->mem_reg(
                  theirs.data(), n,
                  c == 1 ? plat::kRmaLocal : plat::kRmaRemoteRead, &rr),
              Status::kOk);
    ASSERT_EQ(p.t.fab[0]->mem_reg(mine.data(), n + 64, plat::kRmaLocal, &rl),
              Status::kOk);
    if (c == 2) p.t.fab[1]->mem_dereg(rr.handle);
    const uint32_t key = c == 3 ? rr.rkey ^ 0x5a5a5a00u : rr.rkey;
    const uint64_t addr = rr.addr + (c == 0 ? n - 32 : 0);
    uint64_t ticket = 0;
    ASSERT_EQ(ucct::post_until_taken(p.progress(),
                                     [&] {
                                       return p.t.fab[0]->get(1, mine.data(),
                                                              rl, addr, key, 64,
                                                              &ticket);
                                     }),
              Status::kOk);
    EXPECT_FALSE(ucct::rma_wait(p.progress(), p.t.fab[0], 1, ticket))
        << "case " << c;
    EXPECT_TRUE(p.t.fab[0]->peer_lost()) << "case " << c;
    EXPECT_EQ(theirs, before) << "case " << c;
    for (size_t i = 0; i < mine.size(); ++i)
      ASSERT_EQ(mine[i], 0) << "case " << c;
  }
}

}  // namespace

// dpu mode's TCP fallback memory channel (platform/mem/tcp_mem.h), both
// ends in one process over a socket pair: what the host registered is
// read and written byte for byte, in pieces where large; everything else
// (a wrong key, a range past the end, a dropped or released range, memory
// unmapped since) is refused without harm to the channel or the host;
// and a request that is forged, replayed or malformed closes it.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "platform/mem/tcp_mem.h"
#include "platform/os/crypto.h"
#include "platform/os/sock.h"
#include "tests/unit/cma_probe.h"

namespace {

using ucc::plat::TcpMemClient;
using ucc::plat::TcpMemFrame;
using ucc::plat::TcpMemServer;

constexpr uint8_t kKey[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

#define NEEDS_CRYPTO()                                                    \
  do {                                                                    \
    if (!ucc::plat::crypto_available())                                   \
      GTEST_SKIP() << "needs libcrypto (libssl3) for the channel's tags"; \
  } while (0)

// A host end serving `stable` (the channel block) and an engine end,
// joined by a socket pair.
struct Pair {
  TcpMemServer host;
  TcpMemClient engine;
  std::vector<uint64_t> stable = std::vector<uint64_t>(512);
  int raw = -1;  // the engine's socket, where a test speaks for it
  bool open(bool raw_engine = false) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      return false;
    if (host.open(8, reinterpret_cast<uintptr_t>(stable.data()),
                  stable.size() * 8) != ucc::base::Status::kOk)
      return false;
    if (host.start(sv[0], kKey, 5000) != ucc::base::Status::kOk) return false;
    if (raw_engine) {
      raw = sv[1];
      return true;
    }
    return engine.init(sv[1], kKey, 5000);
  }
  ~Pair() {
    if (raw >= 0) close(raw);
  }
  uint32_t reg(const void* p, size_t n, uint32_t* slot = nullptr) {
    uint32_t rkey = 0, s = 0;
    EXPECT_EQ(host.reg(reinterpret_cast<uintptr_t>(p), n, &rkey, &s),
              ucc::base::Status::kOk);
    if (slot != nullptr) *slot = s;
    return rkey;
  }
};

uint64_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(TcpMem, RegisteredRangesMoveWhole) {
  NEEDS_CRYPTO();
  SKIP_WITHOUT_CMA_HERE();  // the host end copies by CMA on itself
  Pair p;
  ASSERT_TRUE(p.open());
  std::vector<uint8_t> buf(700 * 1024);  // more than two requests' worth
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 7);
  const uint32_t k = p.reg(buf.data(), buf.size());
  const uint32_t ck = p.reg(p.stable.data(), p.stable.size() * 8);
  for (size_t n : {size_t{1}, size_t{4}, size_t{8}, size_t{4097},
                   size_t{256 * 1024}, buf.size()}) {
    std::vector<uint8_t> got(n, 0xee);
    ASSERT_TRUE(p.engine.read(addr(buf.data()), k, got.data(), n)) << n;
    EXPECT_EQ(memcmp(got.data(), buf.data(), n), 0) << n;
  }
  std::vector<uint8_t> in(300 * 1024);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<uint8_t>(i * 13 + 5);
  ASSERT_TRUE(p.engine.write(addr(buf.data() + 3), k, in.data(), in.size()));
  EXPECT_EQ(memcmp(buf.data() + 3, in.data(), in.size()), 0);
  EXPECT_EQ(buf[2], static_cast<uint8_t>(2 * 7));  // nothing before it
  // The channel's words: whole, by atomic loads and stores.
  const uint64_t w = 0x1122334455667788ull;
  ASSERT_TRUE(p.engine.write(addr(&p.stable[5]), ck, &w, 8));
  EXPECT_EQ(__atomic_load_n(&p.stable[5], __ATOMIC_ACQUIRE), w);
  uint32_t half = 0;
  p.stable[9] = 0xabcdef0102030405ull;
  ASSERT_TRUE(p.engine.read(addr(&p.stable[9]), ck, &half, 4));
  EXPECT_EQ(half, 0x02030405u);
  EXPECT_GT(p.host.served(), 8u);
}

TEST(TcpMem, WhatWasNotRegisteredIsRefusedAndTheChannelLives) {
  NEEDS_CRYPTO();
  SKIP_WITHOUT_CMA_HERE();  // the host end copies by CMA on itself
  Pair p;
  ASSERT_TRUE(p.open());
  std::vector<uint8_t> a(4096, 1), b(4096, 2);
  uint32_t sa = 0;
  const uint32_t ka = p.reg(a.data(), a.size(), &sa);
  const uint32_t kb = p.reg(b.data(), b.size());
  p.host.bind(sa, 77);
  uint8_t x[16] = {};
  auto refused = [&](uint64_t at, uint32_t key, size_t n) {
    errno = 0;
    return !p.engine.read(at, key, x, n) && errno == EFAULT &&
           !p.engine.broken();
  };
  EXPECT_TRUE(refused(addr(a.data()), ka ^ 1, 8));      // a wrong key
  EXPECT_TRUE(refused(addr(b.data()), ka, 8));          // another's range
  EXPECT_TRUE(refused(addr(a.data()) + 4090, ka, 16));  // past its end
  EXPECT_TRUE(refused(addr(a.data()) - 1, ka, 2));      // before it
  EXPECT_TRUE(refused(UINT64_MAX - 4, ka, 16));         // wraps around
  EXPECT_TRUE(!p.engine.write(addr(b.data()), ka, x, 8) && errno == EFAULT);
  EXPECT_EQ(b[0], 2);
  p.host.release(77);  // the daemon let go of a's registration
  EXPECT_TRUE(refused(addr(a.data()), ka, 8));
  ASSERT_TRUE(p.engine.read(addr(b.data()), kb, x, 8));  // still serving
  EXPECT_EQ(x[7], 2);
  // Memory unmapped since it was registered: refused, no fault here.
  const long pg = sysconf(_SC_PAGESIZE);
  void* m = mmap(nullptr, 2 * pg, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  uint32_t sm = 0;
  const uint32_t km = p.reg(m, 2 * pg, &sm);
  munmap(m, 2 * pg);
  EXPECT_TRUE(refused(addr(m), km, 8));
  EXPECT_TRUE(!p.engine.write(addr(m), km, x, 8) && errno == EFAULT);
  p.host.drop(sm);
  ASSERT_TRUE(p.engine.read(addr(b.data()), kb, x, 16));
  // GPU memory does not go over a socket: the caller stages it.
  uint32_t rk, sl;
  EXPECT_EQ(p.host.reg(addr(b.data()), 8, &rk, &sl, true, -1),
            ucc::base::Status::kNotSupported);
}

// The engine's side spoken by hand: frames with a bad tag, an old seq,
// a length past the limit or the wrong sender end the connection.
TEST(TcpMem, ForgedOrMalformedRequestsCloseTheChannel) {
  NEEDS_CRYPTO();
  SKIP_WITHOUT_CMA_HERE();  // the host end copies by CMA on itself
  std::vector<uint8_t> buf(4096, 9);
  for (int how = 0; how < 5; ++how) {
    Pair p;
    ASSERT_TRUE(p.open(/*raw_engine=*/true));
    const uint32_t k = p.reg(buf.data(), buf.size());
    auto send = [&](uint64_t seq, uint32_t count, char from, bool forge) {
      std::vector<uint8_t> b(sizeof(TcpMemFrame) + 32);
      TcpMemFrame f{ucc::plat::kTcpMemMagic,
                    static_cast<uint8_t>(from),
                    ucc::plat::kTcpMemRead,
                    0,
                    0,
                    count,
                    seq,
                    addr(buf.data()),
                    k,
                    0};
      memcpy(b.data(), &f, sizeof(f));
      uint8_t full[32];
      ucc::plat::mac(kKey, 32, b.data(), sizeof(f), full);
      memcpy(b.data() + sizeof(f), full, 16);
      if (forge) b[sizeof(f)] ^= 1;
      return ucc::plat::sock::send_all(p.raw, b.data(), sizeof(f) + 16, nullptr,
                                       0);
    };
    auto answered = [&](uint32_t count) {
      std::vector<uint8_t> a(sizeof(TcpMemFrame) + count + 16);
      return ucc::plat::sock::recv_all(p.raw, a.data(), a.size(), 5000) == 1;
    };
    auto closed = [&]() {
      uint8_t c;
      return ucc::plat::sock::recv_all(p.raw, &c, 1, 5000) == 0;
    };
    ASSERT_TRUE(send(1, 8, 'E', false));
    ASSERT_TRUE(answered(8));  // an honest request is answered
    switch (how) {
      case 0:
        ASSERT_TRUE(send(2, 8, 'E', true));  // a forged tag
        break;
      case 1:
        ASSERT_TRUE(send(1, 8, 'E', false));  // a replay
        break;
      case 2:
        ASSERT_TRUE(send(2, ucc::plat::kTcpMemMaxOp + 1, 'E', false));
        break;
      case 3:
        ASSERT_TRUE(send(2, 8, 'H', false));  // its own answer reflected
        break;
      case 4:
        ASSERT_TRUE(send(3, 8, 'E', false));  // a skipped seq
        break;
    }
    EXPECT_TRUE(closed()) << "case " << how;
    for (int i = 0; i < 500 && !p.host.stopped(); ++i) usleep(1000);
    EXPECT_TRUE(p.host.stopped()) << "case " << how;
  }
}

// The host registers and drops ranges while the engine reads through
// the thread (the table is shared between them): a range always there is
// always read whole and right, one that comes and goes is read right or
// refused, never half. Run under ThreadSanitizer by tests/sanitize.sh.
TEST(TcpMem, RangesComeAndGoWhileServed) {
  NEEDS_CRYPTO();
  SKIP_WITHOUT_CMA_HERE();  // the host end copies by CMA on itself
  Pair p;
  ASSERT_TRUE(p.open());
  std::vector<uint8_t> a(8192), b(8192);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<uint8_t>(i);
    b[i] = static_cast<uint8_t>(i * 5 + 1);
  }
  const uint32_t ka = p.reg(a.data(), a.size());
  std::atomic<uint32_t> kb{0};
  std::atomic<bool> stop{false};
  int wrong = 0, read_b = 0;
  std::thread engine([&] {
    std::vector<uint8_t> x(8192);
    for (int i = 0; i < 400 && wrong == 0; ++i) {
      if (!p.engine.read(addr(a.data()), ka, x.data(), x.size()) ||
          memcmp(x.data(), a.data(), x.size()) != 0)
        ++wrong;
      const uint32_t k = kb.load();
      if (p.engine.read(addr(b.data()), k, x.data(), x.size())) {
        ++read_b;
        if (memcmp(x.data(), b.data(), x.size()) != 0) ++wrong;
      } else if (errno != EFAULT || p.engine.broken()) {
        ++wrong;
      }
    }
    stop = true;
  });
  while (!stop) {
    uint32_t slot = 0;
    kb = p.reg(b.data(), b.size(), &slot);
    std::this_thread::yield();
    p.host.drop(slot);
  }
  engine.join();
  EXPECT_EQ(wrong, 0);
  // The thread counts a request after sending its answer: the engine may
  // have the last answer before the count moves.
  for (int i = 0; i < 2000 && p.host.served() < 800u; ++i) usleep(1000);
  EXPECT_GE(p.host.served(), 800u);
}

// Half a request, then silence: the server gives up on it after its
// timeout instead of waiting forever.
TEST(TcpMem, HalfARequestThenSilenceClosesTheChannel) {
  NEEDS_CRYPTO();
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  std::vector<uint64_t> stable(8);
  TcpMemServer host;
  ASSERT_EQ(host.open(2, addr(stable.data()), 64), ucc::base::Status::kOk);
  ASSERT_EQ(host.start(sv[0], kKey, 300), ucc::base::Status::kOk);
  const uint8_t half[20] = {0x4d, 0x4d, 0x43, 0x55};
  ASSERT_TRUE(ucc::plat::sock::send_all(sv[1], half, sizeof(half), nullptr, 0));
  uint8_t c;
  EXPECT_EQ(ucc::plat::sock::recv_all(sv[1], &c, 1, 5000), 0);
  // The thread closes the socket, then says it stopped: under load the
  // test may see the first before the second.
  for (int i = 0; i < 2000 && !host.stopped(); ++i) usleep(1000);
  EXPECT_TRUE(host.stopped());
  close(sv[1]);
}

// The host's side spoken by hand: an answer with a bad tag breaks the
// engine's end for good.
TEST(TcpMem, ForgedAnswersBreakTheEngineEnd) {
  NEEDS_CRYPTO();
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  TcpMemClient engine;
  ASSERT_TRUE(engine.init(sv[1], kKey, 2000));
  std::thread fake([&] {
    std::vector<uint8_t> q(sizeof(TcpMemFrame) + 16);
    if (ucc::plat::sock::recv_all(sv[0], q.data(), q.size(), 5000) != 1) return;
    TcpMemFrame f;
    memcpy(&f, q.data(), sizeof(f));
    TcpMemFrame a{ucc::plat::kTcpMemMagic,
                  'H',
                  ucc::plat::kTcpMemAnswer,
                  0,
                  0,
                  8,
                  f.seq,
                  f.addr,
                  f.rkey,
                  8};
    std::vector<uint8_t> b(sizeof(a) + 8 + 16, 0x5a);
    memcpy(b.data(), &a, sizeof(a));  // and a tag that is not one
    ucc::plat::sock::send_all(sv[0], b.data(), b.size(), nullptr, 0);
  });
  uint8_t x[8];
  EXPECT_FALSE(engine.read(0x1000, 1, x, 8));
  EXPECT_TRUE(engine.broken());
  fake.join();
  close(sv[0]);
}

}  // namespace

// The TCP transport's port against strangers (platform/tcp/tcp_hello.cc):
// a caller that cannot prove the engine's key, or replays a proof it saw,
// never gets past the hellos; the engine proves its own key back; silent
// connections are bounded in number and time; and a caller that does
// prove the key (a member gone rogue) still cannot land a forged frame.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "platform/os/clock.h"
#include "platform/os/crc32c.h"
#include "platform/os/crypto.h"
#include "tests/unit/tcp_engines.h"

namespace {

using ucct::Engines;
using ucct::exchange;
using ucct::quick;
using ucct::Status;
using ucct::Team;
namespace plat = ucc::plat;
namespace tcp = ucc::plat::tcp;

int dial(const tcp::TcpNet& victim) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = victim.ip();
  sa.sin_port = victim.port();
  if (connect(s, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(s);
    return -1;
  }
  return s;
}

tcp::Hdr hello_hdr() {
  tcp::Hdr h{};
  h.magic = tcp::kFrameMagic;
  h.version = tcp::kFrameVersion;
  h.type = tcp::Type::kHello;
  h.len = sizeof(tcp::Hello);
  return h;
}

// `summed`: with its payload's checksum, as UCC_NET_CHECKSUM=1 sends it.
// `instance`: the engine it claims to be (any id may call; the smallest
// wins a double call).
std::vector<char> hello_frame(uint8_t step, const uint8_t* nonce,
                              const uint8_t* mac, bool summed = false,
                              uint64_t instance = 1) {
  tcp::Hello who{};
  who.instance = instance;
  who.step = step;
  if (nonce != nullptr) memcpy(who.nonce, nonce, tcp::kNonceBytes);
  if (mac != nullptr) memcpy(who.mac, mac, 32);
  tcp::Hdr h = hello_hdr();
  if (summed) {
    h.flags |= tcp::kSummed;
    h.body_crc = plat::crc32c(0, &who, sizeof(who));
  }
  h.crc = tcp::hdr_crc(h);
  std::vector<char> f(sizeof(h) + sizeof(who));
  memcpy(f.data(), &h, sizeof(h));
  memcpy(f.data() + sizeof(h), &who, sizeof(who));
  return f;
}

// A raw connection playing a connecting engine (instance 1) towards
// `victim`, progressing the engines while it waits.
struct Caller {
  Engines& e;
  tcp::TcpNet& victim;
  int fd;
  uint8_t nonce[tcp::kNonceBytes];
  std::vector<char> opened, proved;  // the bytes it sent, for replays
  bool summed = false;               // hellos with payload checksums

  Caller(Engines& en, tcp::TcpNet& v) : e(en), victim(v), fd(dial(v)) {
    plat::random_bytes(nonce, sizeof(nonce));
  }
  ~Caller() {
    if (fd >= 0) close(fd);
  }
  void put(const std::vector<char>& b) {
    EXPECT_EQ(send(fd, b.data(), b.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(b.size()));
  }
  // The engine's answer; false on EOF or after 2 s.
  bool answer(tcp::Hello* out) {
    char buf[sizeof(tcp::Hdr) + sizeof(tcp::Hello)];
    size_t got = 0;
    const uint64_t end = plat::now_ns() + 2000000000ull;
    while (got < sizeof(buf) && plat::now_ns() < end) {
      e.progress();
      const ssize_t r = recv(fd, buf + got, sizeof(buf) - got, MSG_DONTWAIT);
      if (r == 0) return false;
      if (r > 0) got += static_cast<size_t>(r);
    }
    if (got < sizeof(buf)) return false;
    memcpy(out, buf + sizeof(tcp::Hdr), sizeof(*out));
    return true;
  }
  // Opens; true when the engine answered with a proof of `key`.
  bool open(const uint64_t key[2], tcp::Hello* ans) {
    opened = hello_frame(tcp::kOpen, nonce, nullptr, summed);
    put(opened);
    if (!answer(ans) || ans->step != tcp::kAnswer) return false;
    uint8_t want[32];
    return tcp::hello_mac(key, 'A', 1, ans->instance, nonce, ans->nonce,
                          want) &&
           plat::mac_equal(want, ans->mac);
  }
  // The proof of `key` for that answer.
  void prove(const uint64_t key[2], const tcp::Hello& ans) {
    uint8_t m[32];
    ASSERT_TRUE(tcp::hello_mac(key, 'C', 1, ans.instance, nonce, ans.nonce, m));
    proved = hello_frame(tcp::kProve, nullptr, m, summed);
    put(proved);
  }
  // Progress until the engine counts a bad frame (true) or `secs` pass.
  bool refused(uint64_t bad_before, double secs = 2) {
    const uint64_t end = plat::now_ns() + static_cast<uint64_t>(secs * 1e9);
    while (victim.stats().bad_frames == bad_before && plat::now_ns() < end)
      e.progress();
    return victim.stats().bad_frames > bad_before;
  }
};

TEST(TcpAuth, EngineProvesItsKeyStrangersCannot) {
  Engines e(2, quick());
  Team t;
  ASSERT_TRUE(t.open(e, 2, 4096, 4));
  ASSERT_TRUE(exchange(e, t, 4, 4096, 10));
  tcp::TcpNet& victim = *e.nets[0];
  const uint64_t* key = victim.key();
  const uint64_t wrong[2] = {key[0] ^ 2, key[1]};
  // The engine proves its key, and a proof of it is not one of another.
  {
    Caller c(e, victim);
    tcp::Hello ans{};
    ASSERT_TRUE(c.open(key, &ans));
    uint8_t other[32];
    ASSERT_TRUE(
        tcp::hello_mac(wrong, 'A', 1, ans.instance, c.nonce, ans.nonce, other));
    EXPECT_FALSE(plat::mac_equal(other, ans.mac));
    // A made-up proof: refused.
    const uint64_t bad = victim.stats().bad_frames;
    c.prove(wrong, ans);
    EXPECT_TRUE(c.refused(bad));
  }
  // A proof recorded from a real handshake, replayed on a new connection
  // with the same opening: the engine's nonce is new, so it fails.
  std::vector<char> opened, proved;
  {
    Caller c(e, victim);
    tcp::Hello ans{};
    ASSERT_TRUE(c.open(key, &ans));
    c.prove(key, ans);
    for (int i = 0; i < 200; ++i) e.progress();
    opened = c.opened;
    proved = c.proved;
  }
  {
    Caller c(e, victim);
    const uint64_t bad = victim.stats().bad_frames;
    c.put(opened);
    tcp::Hello ans{};
    ASSERT_TRUE(c.answer(&ans));
    c.put(proved);
    EXPECT_TRUE(c.refused(bad));
  }
  // A proof with no opening, and the hello of version 1 (the key in
  // clear): refused.
  {
    Caller c(e, victim);
    const uint64_t bad = victim.stats().bad_frames;
    uint8_t m[32] = {};
    c.put(hello_frame(tcp::kProve, nullptr, m));
    EXPECT_TRUE(c.refused(bad));
  }
  {
    Caller c(e, victim);
    const uint64_t bad = victim.stats().bad_frames;
    std::vector<char> old = hello_frame(tcp::kOpen, nullptr, nullptr);
    old[2] = 1;  // version 1
    memcpy(old.data() + sizeof(tcp::Hdr) + 8, key, 8);
    c.put(old);
    EXPECT_TRUE(c.refused(bad));
  }
  EXPECT_FALSE(t.fab[0]->peer_lost());
  EXPECT_TRUE(exchange(e, t, 10, 4096, 10));
}

// A stranger calls engine S in the name of engine L, from L's address
// (this machine's), and gets S's answer. A member on S then needs L: it
// waits on that call (an answered call is not matched by a call of our
// own, test_tcp.cc) until the caller proves the key. The stranger never
// does: it sends a bad proof, closes, or says nothing; S then calls L
// itself, at once or after kHelloMs, and the message arrives.
void squat_answered_call(int how) {
  Engines e(2, quick());
  Team t;
  ASSERT_TRUE(t.open(e, 2, 4096, 4));
  tcp::TcpNet& s = *e.nets[0];
  Caller c(e, s);
  c.put(
      hello_frame(tcp::kOpen, c.nonce, nullptr, false, e.nets[1]->instance()));
  tcp::Hello ans{};
  ASSERT_TRUE(c.answer(&ans));
  ASSERT_EQ(ans.step, tcp::kAnswer);
  ASSERT_TRUE(ucct::send_one(e, t, 0, 1, 7));
  for (int i = 0; i < 100; ++i) e.progress();
  EXPECT_EQ(s.stats().calls, 0u) << "S called L beside the answered call";
  if (how == 0) {
    uint8_t m[32] = {};
    c.put(hello_frame(tcp::kProve, nullptr, m, false, e.nets[1]->instance()));
  } else if (how == 1) {
    close(c.fd);
    c.fd = -1;
  }
  const double took = ucct::until(
      [&t] { return t.fab[1]->rx_poll(0) != 0 || t.fab[0]->peer_lost(); },
      [&e] { e.progress(); }, 6);
  ASSERT_FALSE(t.fab[0]->peer_lost());
  ASSERT_EQ(t.fab[1]->rx_poll(0), 1u);
  ASSERT_TRUE(ucct::take_one(e, t, 0, 1, 7));
  EXPECT_EQ(s.stats().calls, 1u);
  EXPECT_LT(took, how == 2 ? tcp::kHelloMs / 1000.0 + 1.5 : 1.0);
  EXPECT_TRUE(exchange(e, t, 4, 4096, 10));
}

TEST(TcpAuth, AnsweredCallNeverProvenBadProof) { squat_answered_call(0); }
TEST(TcpAuth, AnsweredCallNeverProvenClosed) { squat_answered_call(1); }
TEST(TcpAuth, AnsweredCallNeverProvenSilent) { squat_answered_call(2); }

// 1,000 connections that say nothing: the engine keeps at most
// kMaxStrangers of them, closes the rest, and after kHelloMs closes those
// too; the team's traffic goes on throughout.
TEST(TcpAuth, SilentConnectionsAreBounded) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < 2048 && rl.rlim_max >= 2048) {
    rl.rlim_cur = 2048;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur < 1500) GTEST_SKIP() << "needs 1500 file descriptors";
  Engines e(2, quick());
  Team t;
  ASSERT_TRUE(t.open(e, 2, 4096, 4));
  ASSERT_TRUE(exchange(e, t, 4, 4096, 10));
  tcp::TcpNet& victim = *e.nets[0];
  std::vector<int> silent;
  uint32_t most = 0;
  for (int i = 0; i < 1000; ++i) {
    const int fd = dial(victim);
    if (fd >= 0) silent.push_back(fd);
    if (i % 16 == 0) {
      e.progress();
      most = std::max(most, victim.strangers());
    }
  }
  for (int i = 0; i < 100; ++i) e.progress();
  most = std::max(most, victim.strangers());
  EXPECT_LE(most, tcp::kMaxStrangers);
  EXPECT_GE(victim.stats().strangers_dropped, 900u);
  EXPECT_TRUE(exchange(e, t, 10, 4096, 10));
  const uint64_t end = plat::now_ns() + (tcp::kHelloMs + 1000) * 1000000ull;
  while (victim.strangers() != 0 && plat::now_ns() < end) e.progress();
  EXPECT_EQ(victim.strangers(), 0u);
  for (int fd : silent) close(fd);
  EXPECT_FALSE(t.fab[0]->peer_lost());
}

// A caller that proves the key (a member of some team gone rogue) sends
// one frame: how many frames the victim refused for it (the connection
// then closed) within `secs`. The header's checksum is made right unless
// `keep_crc`.
uint64_t forged_frame(Engines& e, tcp::TcpNet& victim, tcp::Hdr h,
                      const void* body, size_t len, double secs = 2,
                      bool keep_crc = false) {
  if (!keep_crc) h.crc = tcp::hdr_crc(h);
  Caller c(e, victim);
  tcp::Hello ans{};
  EXPECT_TRUE(c.open(victim.key(), &ans));
  c.prove(victim.key(), ans);
  std::vector<char> buf(sizeof(h) + len);
  memcpy(buf.data(), &h, sizeof(h));
  if (len != 0) memcpy(buf.data() + sizeof(h), body, len);
  const uint64_t bad = victim.stats().bad_frames;
  c.put(buf);
  c.refused(bad, secs);
  return victim.stats().bad_frames - bad;
}

// A connection that proves the key and then sends frames no link
// accepts, or that break the framing, is closed; the team works on.
TEST(TcpAuth, ForgedFramesCloseTheirConnection) {
  Engines e(2, quick());
  Team t;
  ASSERT_TRUE(t.open(e, 2, 4096, 4));
  ASSERT_TRUE(exchange(e, t, 4, 4096, 10));
  tcp::TcpNet& victim = *e.nets[0];
  auto attack = [&](tcp::Hdr h, const void* body, size_t len, double secs = 2,
                    bool keep_crc = false) {
    return forged_frame(e, victim, h, body, len, secs, keep_crc);
  };
  tcp::Hdr h{};
  h.magic = tcp::kFrameMagic;
  h.version = tcp::kFrameVersion;
  h.type = tcp::Type::kData;
  // For no endpoint of ours: read and dropped, the connection stays.
  h.len = 100;
  std::vector<char> junk(200, 7);
  EXPECT_EQ(attack(h, junk.data(), 100, 0.2), 0u);
  // Larger than any slot can be: refused before any byte lands.
  h.len = (64u << 20) + 65;
  EXPECT_EQ(attack(h, nullptr, 0), 1u);
  // Credits riding on a data frame: more release counts than an inbox
  // has slots, or than the frame has bytes: refused before any lands.
  h.len = 300;
  h.nslots = 255;
  EXPECT_EQ(attack(h, junk.data(), junk.size()), 1u);
  h.len = 4;
  h.nslots = 8;
  EXPECT_EQ(attack(h, junk.data(), 4), 1u);
  h.nslots = 0;
  // A header damaged after its checksum: refused for that, and the
  // engine says so on the connection before it closes it.
  {
    tcp::Hdr d{};
    d.magic = tcp::kFrameMagic;
    d.version = tcp::kFrameVersion;
    d.type = tcp::Type::kPing;
    d.crc = tcp::hdr_crc(d);
    d.seq ^= 1;
    const uint64_t sums = victim.stats().bad_sums;
    EXPECT_EQ(attack(d, nullptr, 0, 2, true), 1u);
    EXPECT_EQ(victim.stats().bad_sums, sums + 1);
  }
  h.magic = 0x1234;  // framing broken
  EXPECT_EQ(attack(h, nullptr, 0), 1u);
  h.magic = tcp::kFrameMagic;
  h.type = tcp::Type::kCredit;
  h.len = 200;
  h.nslots = 200;
  EXPECT_EQ(attack(h, junk.data(), junk.size()), 1u);
  EXPECT_FALSE(t.fab[0]->peer_lost());
  EXPECT_TRUE(exchange(e, t, 10, 4096, 10));
}

// One-sided frames (tcp_rma.cc) from a connection that proved the key
// but holds no link of ours: a request of the wrong size and an answer
// longer than any get are refused before a byte lands; a well-formed
// request names no link of this connection, so it reads nothing and is
// answered with nothing; an answer to a get it never saw is dropped.
// The team's own one-sided reads go on.
TEST(TcpAuth, ForgedOneSidedFramesAreRefused) {
  plat::TcpConfig cfg = quick();
  cfg.zcopy_min = 4096;
  Engines e(2, cfg);
  Team t;
  ASSERT_TRUE(t.open(e, 2, 4096, 4));
  ASSERT_TRUE(exchange(e, t, 4, 4096, 10));
  tcp::TcpNet& victim = *e.nets[0];
  tcp::Hdr h{};
  h.magic = tcp::kFrameMagic;
  h.version = tcp::kFrameVersion;
  h.type = tcp::Type::kGet;
  h.len = sizeof(tcp::RmaReq) + 8;
  std::vector<char> junk(64, 7);
  EXPECT_EQ(forged_frame(e, victim, h, junk.data(), h.len), 1u);
  // Aimed at the team's endpoint and rank, over the attacker's own
  // connection: no link of that connection, nothing read or sent.
  const uint64_t frames = victim.stats().tx_frames;
  h.len = sizeof(tcp::RmaReq);
  h.dst_ep = 1;
  h.src_rank = 1;
  const tcp::RmaReq q{reinterpret_cast<uintptr_t>(junk.data()), 0, 64};
  EXPECT_EQ(forged_frame(e, victim, h, &q, sizeof(q), 0.2), 0u);
  EXPECT_LE(victim.stats().tx_frames - frames, 8u);  // pings, goodbyes
  h.type = tcp::Type::kGetData;
  h.len = plat::kRmaMaxOp + 1;
  EXPECT_EQ(forged_frame(e, victim, h, nullptr, 0), 1u);
  h.len = 64;
  EXPECT_EQ(forged_frame(e, victim, h, junk.data(), 64, 0.2), 0u);
  EXPECT_FALSE(t.fab[0]->peer_lost());
  EXPECT_TRUE(exchange(e, t, 10, 4096, 10));
}

// One-sided writes (kPut) from a connection that proved the key but
// holds no link of ours, naming a registration it learnt (its address
// and key, as a member of the team would know them): a request with no
// bytes, or more than any put carries, is refused before a byte lands; a
// well-formed put aimed at the team's endpoint and rank is read and
// dropped, the memory untouched and nothing answered; an acknowledgement
// it was never owed is dropped, one with a payload refused. The team's
// own puts into the same registration go on.
TEST(TcpAuth, ForgedOneSidedWritesAreRefused) {
  plat::TcpConfig cfg = quick();
  cfg.zcopy_min = 4096;
  Engines e(2, cfg);
  Team t;
  ASSERT_TRUE(t.open(e, 2, 4096, 4, /*rma=*/true));
  ASSERT_TRUE(exchange(e, t, 4, 4096, 10));
  tcp::TcpNet& victim = *e.nets[0];
  const size_t n = 8192;
  std::vector<uint8_t> target(n, 0x11), src = ucct::rma_pattern(n, 3);
  plat::RmaReg rt{}, rs{};
  ASSERT_EQ(t.fab[0]->mem_reg(target.data(), n, plat::kRmaRemoteWrite, &rt),
            Status::kOk);
  ASSERT_EQ(t.fab[1]->mem_reg(src.data(), n, plat::kRmaLocal, &rs),
            Status::kOk);
  tcp::Hdr h{};
  h.magic = tcp::kFrameMagic;
  h.version = tcp::kFrameVersion;
  h.type = tcp::Type::kPut;
  h.dst_ep = 1;  // the team's endpoint and a member's rank
  h.src_rank = 1;
  tcp::RmaReq q{rt.addr, rt.rkey, 64};
  std::vector<char> body(sizeof(q) + 64, 0x66);
  memcpy(body.data(), &q, sizeof(q));
  h.len = sizeof(q);  // a request and no bytes
  EXPECT_EQ(forged_frame(e, victim, h, body.data(), h.len), 1u);
  h.len = sizeof(q) + plat::kRmaMaxOp + 1;  // more than a put carries
  EXPECT_EQ(forged_frame(e, victim, h, nullptr, 0), 1u);
  const uint64_t frames = victim.stats().tx_frames;
  const uint64_t in = victim.stats().puts_in;
  h.len = static_cast<uint32_t>(body.size());
  EXPECT_EQ(forged_frame(e, victim, h, body.data(), body.size(), 0.2), 0u);
  EXPECT_EQ(target, std::vector<uint8_t>(n, 0x11));
  EXPECT_EQ(victim.stats().puts_in, in);
  EXPECT_LE(victim.stats().tx_frames - frames, 8u);  // pings, goodbyes
  h.type = tcp::Type::kPutAck;
  h.len = 0;
  EXPECT_EQ(forged_frame(e, victim, h, nullptr, 0, 0.2), 0u);
  h.len = 8;
  EXPECT_EQ(forged_frame(e, victim, h, body.data(), 8), 1u);
  EXPECT_FALSE(t.fab[0]->peer_lost());
  EXPECT_FALSE(t.fab[1]->peer_lost());
  uint64_t ticket = 0;
  ASSERT_EQ(ucct::post_until_taken([&] { e.progress(); },
                                   [&] {
                                     return t.fab[1]->put(0, src.data(), rs,
                                                          rt.addr, rt.rkey, n,
                                                          &ticket);
                                   }),
            Status::kOk);
  EXPECT_TRUE(ucct::rma_wait([&] { e.progress(); }, t.fab[1], 0, ticket));
  EXPECT_EQ(target, src);
  EXPECT_TRUE(exchange(e, t, 10, 4096, 10));
  t.fab[0]->mem_dereg(rt.handle);
  t.fab[1]->mem_dereg(rs.handle);
}

}  // namespace

namespace {

// Reads frames from `c` until EOF (2 s at most), progressing the
// engines; true when one was the engine's bye with kCorrupt.
bool heard_corrupt_bye(Caller& c) {
  std::vector<char> got;
  char buf[4096];
  const uint64_t end = plat::now_ns() + 2000000000ull;
  while (plat::now_ns() < end) {
    c.e.progress();
    const ssize_t r = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (r == 0) break;
    if (r > 0) got.insert(got.end(), buf, buf + r);
  }
  for (size_t off = 0; off + sizeof(tcp::Hdr) <= got.size();) {
    tcp::Hdr h;
    memcpy(&h, got.data() + off, sizeof(h));
    if (h.type == tcp::Type::kBye && h.dst_ep == 0 &&
        (h.flags & tcp::kCorrupt) != 0 && tcp::hdr_crc(h) == h.crc)
      return true;
    off += sizeof(h) + h.len;
  }
  return false;
}

// With UCC_NET_CHECKSUM=1: a header damaged after its checksum, a
// payload that does not match its checksum, and a payload sent without
// one are refused; for the damaged ones the engine tells the peer why
// (its bye with kCorrupt) before it closes.
TEST(TcpAuth, ChecksumsCatchDamage) {
  plat::TcpConfig cfg = quick();
  cfg.checksum = true;
  Engines e(2, cfg);
  Team t;
  ASSERT_TRUE(t.open(e, 2, 4096, 4));
  ASSERT_TRUE(exchange(e, t, 4, 4096, 10));
  tcp::TcpNet& victim = *e.nets[0];
  struct Case {
    const char* name;
    bool damage_hdr, damage_body, summed, corrupt;
  } cases[] = {{"header", true, false, true, true},
               {"payload", false, true, true, true},
               {"no payload checksum", false, false, false, false}};
  for (const Case& k : cases) {
    Caller c(e, victim);
    c.summed = true;  // the hellos carry checksums too
    tcp::Hello ans{};
    ASSERT_TRUE(c.open(victim.key(), &ans)) << k.name;
    c.prove(victim.key(), ans);
    // A credit frame for no link: 4 release counts.
    tcp::Hdr h{};
    h.magic = tcp::kFrameMagic;
    h.version = tcp::kFrameVersion;
    h.type = tcp::Type::kCredit;
    h.len = 4;
    h.nslots = 4;
    const uint8_t counts[4] = {1, 2, 3, 4};
    if (k.summed) {
      h.flags |= tcp::kSummed;
      h.body_crc = plat::crc32c(0, counts, 4) ^ (k.damage_body ? 1 : 0);
    }
    h.crc = tcp::hdr_crc(h);
    if (k.damage_hdr) h.ack ^= 4;
    std::vector<char> f(sizeof(h) + 4);
    memcpy(f.data(), &h, sizeof(h));
    memcpy(f.data() + sizeof(h), counts, 4);
    const uint64_t bad = victim.stats().bad_frames;
    const uint64_t sums = victim.stats().bad_sums;
    c.put(f);
    EXPECT_TRUE(c.refused(bad)) << k.name;
    EXPECT_EQ(victim.stats().bad_sums - sums, k.corrupt ? 1u : 0u) << k.name;
    EXPECT_EQ(heard_corrupt_bye(c), k.corrupt) << k.name;
  }
  EXPECT_FALSE(t.fab[0]->peer_lost());
  EXPECT_TRUE(exchange(e, t, 10, 4096, 10));
}

}  // namespace

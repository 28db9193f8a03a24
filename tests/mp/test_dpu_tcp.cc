// dpu mode's TCP fallback (UCC_DPU_MEM=tcp, docs/dpu.md): a daemon
// without RDMA serves hosts whose memory its engines reach over a second
// authenticated connection (platform/mem/tcp_mem.h). Collectives are
// right; the fallback is never taken where verbs was asked for; the
// memory connection must prove the key and name a waiting client. The
// faults (daemon or host killed) run beside the verbs ones in
// test_dpu.cc, and the collectives matrix under tests/dpu/run_dpu.sh
// (ctest dpu_ns_tcp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "offload/control_auth.h"
#include "offload/proto.h"
#include "platform/os/crypto.h"
#include "platform/os/sock.h"
#include "tests/common/harness.h"
#include "tests/mp/dpu_daemon.h"

namespace {

namespace proto = ucc::off::proto;
using ucct::allreduce_i32;
using ucct::closed;
using ucct::DpuDaemon;
using ucct::Raw;

TEST(DpuTcp, CollectivesServedOverTheFallback) {
  NEEDS_DPU_TCP();
  DpuDaemon dd;
  dd.tcp = true;
  ASSERT_TRUE(dd.start("tcpserve"));
  EXPECT_TRUE(ucct::allreduce_served(dd));
  proto::StatsReply st{};
  ASSERT_TRUE(dd.d.stats(&st));
  EXPECT_GE(st.registered, 2u);
  EXPECT_GT(st.tcp_mem_requests, 0u);
  EXPECT_EQ(st.tcp_mem_clients, 0u);  // both gone
  EXPECT_EQ(st.foreign_reaches, 0u);
  EXPECT_TRUE(ucct::steps_counted(st));
}

// Verbs asked for (the default) where the daemon has no RDMA, or where
// this host has none: an error at context creation, never the fallback.
TEST(DpuTcp, VerbsAskedForIsNeverReplaced) {
  NEEDS_DPU_TCP();
  DpuDaemon dd;
  dd.tcp = true;
  ASSERT_TRUE(dd.start("tcpnever"));
  for (const char* lib : {ucct::kLoopLib, "/nonexistent/libibverbs.so.1"}) {
    if (*lib == 0) continue;  // no provider in this build
    bool ok = ucct::run_ranks(1, [&](ucct::Rank& r) {
      ucct::World w;
      w.env = dd.env(dd.key);
      for (auto& e : w.env) {
        if (e.first == "UCC_DPU_MEM") e.second = "verbs";
        if (e.first == "UCC_VERBS_LIB") e.second = lib;
      }
      return w.init(r) != UCC_OK ? 0 : 1;
    });
    EXPECT_TRUE(ok) << lib;
  }
  proto::StatsReply st{};
  ASSERT_TRUE(dd.d.stats(&st));
  EXPECT_EQ(st.tcp_mem_requests, 0u);
  EXPECT_EQ(st.registered, 0u);
}

// One tagged request on a raw connection that proved the key, and its
// reply's body (out_len bytes).
bool tagged_call(Raw& c, const proto::Session& s, uint16_t type, uint32_t seq,
                 const void* body, uint32_t len, void* out, uint32_t out_len) {
  std::vector<uint8_t> b(len + proto::kTagBytes);
  proto::MsgHeader h{proto::kMagic, proto::kVersion, type,
                     static_cast<uint32_t>(b.size()), seq};
  if (len != 0) memcpy(b.data(), body, len);
  if (!proto::message_tag(s, proto::End::kHost, h, b.data(), len,
                          b.data() + len) ||
      !ucc::plat::sock::send_all(c.s, &h, sizeof(h), b.data(), b.size()))
    return false;
  std::vector<uint8_t> r(out_len + proto::kTagBytes);
  proto::MsgHeader rh{};
  if (!ucct::recv_msg(c.s, &rh, r.data(), r.size()) ||
      !proto::message_ok(s, proto::End::kEngine, rh, r.data()))
    return false;
  memcpy(out, r.data(), out_len);
  return true;
}

// The memory connection: only one that proved the key, naming the token
// of a client still waiting for its channel, once.
TEST(DpuTcp, MemoryConnectionNeedsTheKeyAndAWaitingToken) {
  NEEDS_DPU_TCP();
  DpuDaemon dd;
  dd.tcp = true;
  ASSERT_TRUE(dd.start("tcptoken"));
  const ucc::plat::Secret k = ucct::secret_of(dd.key);
  ASSERT_NE(k.len, 0u);
  auto proved = [&](Raw& c, proto::Session* s) {
    return c.hello(dd.addr, k) && c.reply.status == 0 &&
           proto::auth_session(k, c.ch.nonce, c.proof.nonce, s);
  };
  // The client: a token for its second connection.
  Raw owner;
  proto::Session os{};
  ASSERT_TRUE(proved(owner, &os));
  proto::TcpMemConnectReply tr{};
  ASSERT_TRUE(tagged_call(owner, os, proto::kTcpMemConnect, 2, nullptr, 0, &tr,
                          sizeof(tr)));
  ASSERT_EQ(tr.status, 0);
  proto::TcpMemAttach a{};
  proto::Reply r{};
  // A token nobody was given: refused, and the connection ends.
  {
    Raw c;
    proto::Session s{};
    ASSERT_TRUE(proved(c, &s));
    ucc::plat::random_bytes(a.token, sizeof(a.token));
    ASSERT_TRUE(tagged_call(c, s, proto::kTcpMemAttach, 2, &a, sizeof(a), &r,
                            sizeof(r)));
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(closed(c.s));
  }
  // The right token, before proving the key: the connection ends unheard.
  memcpy(a.token, tr.token, sizeof(a.token));
  {
    Raw c;
    c.s = ucc::plat::sock::tcp_connect(dd.addr.c_str(), 2000);
    ASSERT_GE(c.s, 0);
    proto::MsgHeader h{proto::kMagic, proto::kVersion, proto::kTcpMemAttach,
                       sizeof(a), 1};
    ASSERT_TRUE(ucc::plat::sock::send_all(c.s, &h, sizeof(h), &a, sizeof(a)));
    proto::MsgHeader ch{};
    proto::AuthChallenge challenge{};
    ASSERT_TRUE(ucct::recv_msg(c.s, &ch, &challenge, sizeof(challenge)));
    EXPECT_TRUE(closed(c.s));
  }
  // The right token after the key: taken, once.
  Raw mem;
  proto::Session ms{};
  ASSERT_TRUE(proved(mem, &ms));
  ASSERT_TRUE(tagged_call(mem, ms, proto::kTcpMemAttach, 2, &a, sizeof(a), &r,
                          sizeof(r)));
  EXPECT_EQ(r.status, 0);
  {
    Raw again;
    proto::Session s{};
    ASSERT_TRUE(proved(again, &s));
    ASSERT_TRUE(tagged_call(again, s, proto::kTcpMemAttach, 2, &a, sizeof(a),
                            &r, sizeof(r)));
    EXPECT_NE(r.status, 0);
  }
  // The owner may not ask for RDMA as well, nor for a second token.
  proto::RdmaConnectReply rr{};
  proto::RdmaAddr ra{};
  ASSERT_TRUE(tagged_call(owner, os, proto::kRdmaConnect, 3, &ra, sizeof(ra),
                          &rr, sizeof(rr)));
  EXPECT_NE(rr.status, 0);
  ASSERT_TRUE(tagged_call(owner, os, proto::kTcpMemConnect, 4, nullptr, 0, &tr,
                          sizeof(tr)));
  EXPECT_NE(tr.status, 0);
}

}  // namespace

// Tests of the verbs_loop provider through the plain verbs API, as the
// transport uses it: the header's inline wrappers reach the provider's
// ops, the rest are the exported functions.
//
// Two-process tests: the test process is side A, a forked child is side
// B; they swap PeerInfo over a socketpair. B's gtest failures print in B
// and turn into its exit status, which A checks. Loopback tests connect
// two endpoints (two contexts) inside the test process. Every test gets
// its own fabric file (the VerbsLoop fixture). dma-buf MRs are tested in
// test_verbs_loop_dmabuf.cc.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "verbs_loop_test_util.h"

namespace {

using namespace verbs_loop_test;

TEST_F(VerbsLoop, DeviceAndPortAttributes) {
  Endpoint a;
  ASSERT_NO_FATAL_FAILURE(a.Open());
  EXPECT_STREQ(ibv_get_device_name(a.ctx->device), "loop0");
  EXPECT_NE(ibv_get_device_guid(a.ctx->device), 0u);
  ibv_port_attr pa;
  ASSERT_EQ(ibv_query_port(a.ctx, 1, &pa), 0);
  EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(pa.active_mtu, IBV_MTU_4096);
  EXPECT_EQ(pa.max_msg_sz, 1u << 30);
  EXPECT_EQ(pa.gid_tbl_len, 4);
  EXPECT_EQ(pa.link_layer, IBV_LINK_LAYER_INFINIBAND);
  EXPECT_EQ(pa.lid, 1);
  EXPECT_EQ(a.gid.raw[0], 0xfe);
  EXPECT_EQ(a.gid.raw[1], 0x80);
  EXPECT_NE(ibv_query_port(a.ctx, 2, &pa), 0);
  ibv_device_attr da;
  ASSERT_EQ(ibv_query_device(a.ctx, &da), 0);
  EXPECT_EQ(da.phys_port_cnt, 1);
  EXPECT_GE(da.max_qp_wr, 1024);
  EXPECT_STREQ(ibv_wc_status_str(IBV_WC_SUCCESS), "success");
  EXPECT_STREQ(ibv_port_state_str(IBV_PORT_ACTIVE), "PORT_ACTIVE");
  // Registration checks, as rdma-core's.
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(a.pd, a.buf.data(), 64, IBV_ACCESS_REMOTE_WRITE),
            nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(ibv_reg_mr(a.pd, nullptr, 64, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(ibv_dealloc_pd(a.pd), EBUSY);
}

TEST_F(VerbsLoop, WriteAndWriteImmIntoSrq) {
  Peer b([](int fd) {
    Options o;
    o.use_srq = true;
    Endpoint ep(o);
    ASSERT_NO_FATAL_FAILURE(ep.Open());
    ASSERT_EQ(ep.PostRecv(100, 0, 0), 0);  // num_sge 0
    ASSERT_EQ(ep.PostRecv(101, 0, 0), 0);
    PeerInfo a;
    ASSERT_NO_FATAL_FAILURE(Handshake(fd, ep, &a));
    Signal(fd);
    ibv_wc wc[2];
    ASSERT_EQ(PollN(ep.rcq, wc, 1), 1);
    EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(wc[0].wr_id, 100u);
    EXPECT_TRUE(wc[0].wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(ntohl(wc[0].imm_data), 0xabcdu);
    EXPECT_EQ(wc[0].byte_len, 1000u);
    EXPECT_EQ(wc[0].qp_num, ep.qp->qp_num);
    EXPECT_EQ(wc[0].src_qp, a.qpn);
    // Both writes are in place once the immediate is seen.
    for (size_t i = 0; i < 1000; ++i) {
      ASSERT_EQ(ep.buf[2000 + i], Pattern(i)) << i;
      ASSERT_EQ(ep.buf[i], Pattern(1000 + i)) << i;
    }
    EXPECT_EQ(ep.buf[1000], 0);
    Signal(fd);
  });
  Endpoint a;
  ASSERT_NO_FATAL_FAILURE(a.Open());
  for (size_t i = 0; i < a.buf.size(); ++i) a.buf[i] = Pattern(i);
  PeerInfo p;
  ASSERT_NO_FATAL_FAILURE(Handshake(b.fd(), a, &p));
  ASSERT_NO_FATAL_FAILURE(Wait(b.fd()));
  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, 1, 0, 1000, p.addr + 2000, p.rkey), 0);
  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE_WITH_IMM, 2, 1000, 1000, p.addr, p.rkey,
                   IBV_SEND_SIGNALED, htonl(0xabcd)),
            0);
  ibv_wc wc[2];
  ASSERT_EQ(PollN(a.scq, wc, 2), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc[i].opcode, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(wc[i].wr_id, uint64_t(i + 1));
    EXPECT_EQ(wc[i].qp_num, a.qp->qp_num);
  }
  ASSERT_NO_FATAL_FAILURE(Wait(b.fd()));
  EXPECT_EQ(b.Join(), 0);
}

TEST_F(VerbsLoop, InlineSendAndSendIntoPostedRecv) {
  Peer b([](int fd) {
    Endpoint ep;
    ASSERT_NO_FATAL_FAILURE(ep.Open());
    PeerInfo a;
    ASSERT_NO_FATAL_FAILURE(Handshake(fd, ep, &a, [&] {
      ASSERT_EQ(ep.PostRecv(7, 0, 512), 0);
      ASSERT_EQ(ep.PostRecv(8, 512, 1024), 0);
    }));
    ibv_wc wc[2];
    ASSERT_EQ(PollN(ep.rcq, wc, 2), 2);
    EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc[0].opcode, IBV_WC_RECV);
    EXPECT_EQ(wc[0].wr_id, 7u);
    EXPECT_EQ(wc[0].byte_len, 40u);
    EXPECT_FALSE(wc[0].wc_flags & IBV_WC_WITH_IMM);
    for (size_t i = 0; i < 40; ++i) ASSERT_EQ(ep.buf[i], uint8_t(0x5a)) << i;
    EXPECT_EQ(wc[1].wr_id, 8u);
    EXPECT_EQ(wc[1].byte_len, 300u);
    EXPECT_EQ(ntohl(wc[1].imm_data), 42u);
    for (size_t i = 0; i < 300; ++i) ASSERT_EQ(ep.buf[512 + i], Pattern(i));
    Signal(fd);
  });
  Endpoint a;
  ASSERT_NO_FATAL_FAILURE(a.Open());
  for (size_t i = 0; i < a.buf.size(); ++i) a.buf[i] = Pattern(i);
  PeerInfo p;
  ASSERT_NO_FATAL_FAILURE(Handshake(b.fd(), a, &p));
  // Inline: from unregistered memory, reusable as soon as post returns.
  uint8_t stack[40];
  memset(stack, 0x5a, sizeof(stack));
  ibv_sge sge = {reinterpret_cast<uint64_t>(stack), sizeof(stack), 0};
  ibv_send_wr wr = {};
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
  memset(stack, 0, sizeof(stack));
  ASSERT_EQ(a.Post(IBV_WR_SEND_WITH_IMM, 2, 0, 300, 0, 0, IBV_SEND_SIGNALED,
                   htonl(42)),
            0);
  ibv_wc wc[2];
  ASSERT_EQ(PollN(a.scq, wc, 2), 2);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[0].opcode, IBV_WC_SEND);
  EXPECT_EQ(wc[1].wr_id, 2u);
  // Inline beyond the granted max_inline_data is refused at post.
  sge.length = 65;
  uint8_t big[65] = {};
  sge.addr = reinterpret_cast<uint64_t>(big);
  EXPECT_EQ(ibv_post_send(a.qp, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  ASSERT_NO_FATAL_FAILURE(Wait(b.fd()));
  EXPECT_EQ(b.Join(), 0);
}

TEST_F(VerbsLoop, RdmaRead) {
  Peer b([](int fd) {
    Endpoint ep;
    ASSERT_NO_FATAL_FAILURE(ep.Open());
    for (size_t i = 0; i < ep.buf.size(); ++i) ep.buf[i] = Pattern(i);
    PeerInfo a;
    ASSERT_NO_FATAL_FAILURE(Handshake(fd, ep, &a));
    Wait(fd);  // stay alive while A reads
  });
  Endpoint a;
  ASSERT_NO_FATAL_FAILURE(a.Open());
  PeerInfo p;
  ASSERT_NO_FATAL_FAILURE(Handshake(b.fd(), a, &p));
  ASSERT_EQ(a.Post(IBV_WR_RDMA_READ, 9, 0, 2048, p.addr + 100, p.rkey), 0);
  ibv_wc wc;
  ASSERT_EQ(PollN(a.scq, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
  for (size_t i = 0; i < 2048; ++i) ASSERT_EQ(a.buf[i], Pattern(100 + i));
  Signal(b.fd());
  EXPECT_EQ(b.Join(), 0);
}

// A bad rkey: A's WR fails with a remote access error, both QPs go to
// ERR, and everything after is flushed on both sides.
TEST_F(VerbsLoop, BadRkeyErrsBothQps) {
  Peer b([](int fd) {
    Endpoint ep;
    ASSERT_NO_FATAL_FAILURE(ep.Open());
    PeerInfo a;
    ASSERT_NO_FATAL_FAILURE(
        Handshake(fd, ep, &a, [&] { ASSERT_EQ(ep.PostRecv(5, 0, 64), 0); }));
    Wait(fd);
    EXPECT_EQ(ep.State(), IBV_QPS_ERR);
    ibv_wc wc;
    ASSERT_EQ(PollN(ep.rcq, &wc, 1), 1);
    EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(wc.wr_id, 5u);
    Signal(fd);
  });
  Endpoint a;
  ASSERT_NO_FATAL_FAILURE(a.Open());
  PeerInfo p;
  ASSERT_NO_FATAL_FAILURE(Handshake(b.fd(), a, &p));
  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, 1, 0, 64, p.addr, p.rkey ^ 0x40000), 0);
  ibv_wc wc[2];
  ASSERT_EQ(PollN(a.scq, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(a.State(), IBV_QPS_ERR);
  // Later WRs still post, and complete flushed, signaled or not.
  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, 2, 0, 64, p.addr, p.rkey, 0), 0);
  ASSERT_EQ(a.PostRecv(3, 0, 64), 0);
  ASSERT_EQ(PollN(a.scq, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wc[0].wr_id, 2u);
  ASSERT_EQ(PollN(a.rcq, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wc[0].wr_id, 3u);
  Signal(b.fd());
  ASSERT_NO_FATAL_FAILURE(Wait(b.fd()));
  EXPECT_EQ(b.Join(), 0);
}

TEST_F(VerbsLoop, OutOfBoundsWriteIsRemoteAccessError) {
  Peer b([](int fd) {
    Endpoint ep;
    ASSERT_NO_FATAL_FAILURE(ep.Open());
    PeerInfo a;
    ASSERT_NO_FATAL_FAILURE(Handshake(fd, ep, &a));
    Wait(fd);
    EXPECT_EQ(ep.State(), IBV_QPS_ERR);
  });
  Endpoint a;
  ASSERT_NO_FATAL_FAILURE(a.Open());
  PeerInfo p;
  ASSERT_NO_FATAL_FAILURE(Handshake(b.fd(), a, &p));
  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, 1, 0, 64, p.addr + p.len - 32, p.rkey),
            0);
  ibv_wc wc;
  ASSERT_EQ(PollN(a.scq, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
  Signal(b.fd());
  EXPECT_EQ(b.Join(), 0);
}

TEST_F(VerbsLoop, ModifyQpChecksMasksAndPath) {
  Endpoint a, b;
  ASSERT_NO_FATAL_FAILURE(a.Open());
  ASSERT_NO_FATAL_FAILURE(b.Open());
  PeerInfo p = b.Info();
  EXPECT_EQ(a.ToRtr(p), EINVAL);  // RESET -> RTR
  ASSERT_EQ(a.ToInit(), 0);
  EXPECT_EQ(a.State(), IBV_QPS_INIT);
  for (int bit = 0; bit < 26; ++bit) {
    int m = 1 << bit;
    if (!(Endpoint::kRtrMask & m) || m == IBV_QP_STATE) continue;
    ibv_qp_attr at = Endpoint::RtrAttr(p, false);
    EXPECT_EQ(ibv_modify_qp(a.qp, &at, Endpoint::kRtrMask & ~m), EINVAL)
        << "mask bit " << bit;
  }
  ibv_qp_attr at = Endpoint::RtrAttr(p, false);
  EXPECT_EQ(ibv_modify_qp(a.qp, &at, Endpoint::kRtrMask | IBV_QP_QKEY),
            EINVAL);  // a bit RC's RTR does not take
  at.ah_attr.dlid = uint16_t(p.lid + 1);
  EXPECT_EQ(ibv_modify_qp(a.qp, &at, Endpoint::kRtrMask), EINVAL);
  PeerInfo ghost = p;
  ghost.qpn ^= 0x1000;  // same slot, other generation: no such QP
  EXPECT_EQ(a.ToRtr(ghost), EINVAL);
  ASSERT_EQ(a.ToRtr(p), 0);
  ibv_qp_attr rts = {};
  rts.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(ibv_modify_qp(a.qp, &rts, Endpoint::kRtsMask & ~IBV_QP_SQ_PSN),
            EINVAL);
  ASSERT_EQ(a.ToRts(), 0);
  EXPECT_EQ(a.State(), IBV_QPS_RTS);
  ibv_qp_attr err = {};
  err.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(a.qp, &err, IBV_QP_STATE), 0);
  EXPECT_EQ(a.State(), IBV_QPS_ERR);
  err.qp_state = IBV_QPS_RESET;
  ASSERT_EQ(ibv_modify_qp(a.qp, &err, IBV_QP_STATE), 0);
  EXPECT_EQ(a.State(), IBV_QPS_RESET);
  EXPECT_EQ(a.ToInit(), 0);
}

TEST_F(VerbsLoop, RoceNeedsGrhWithPeerGid) {
  setenv("VERBS_LOOP_LINK", "eth", 1);
  Endpoint a, b;
  ASSERT_NO_FATAL_FAILURE(a.Open());
  ASSERT_NO_FATAL_FAILURE(b.Open());
  ibv_port_attr pa;
  ASSERT_EQ(ibv_query_port(a.ctx, 1, &pa), 0);
  EXPECT_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(pa.lid, 0);
  PeerInfo p = b.Info();
  ASSERT_EQ(a.ToInit(), 0);
  EXPECT_EQ(a.ToRtr(p, false), EINVAL);  // no GRH
  PeerInfo wrong = p;
  wrong.gid.raw[15] ^= 1;
  EXPECT_EQ(a.ToRtr(wrong, true), EINVAL);
  EXPECT_EQ(a.ToRtr(p, true), 0);
}

// Two emulated hosts (B in its own UTS namespace): different LIDs, and
// the LID must be the peer's.
TEST_F(VerbsLoop, TwoHostsHaveTheirOwnLids) {
  Peer b([](int fd) {
    if (unshare(CLONE_NEWUTS) != 0 || sethostname("vl-host-b", 9) != 0)
      _exit(kSkipExit);
    Endpoint ep;
    ASSERT_NO_FATAL_FAILURE(ep.Open());
    PeerInfo a;
    ASSERT_NO_FATAL_FAILURE(Handshake(fd, ep, &a));
    EXPECT_NE(ep.lid, a.lid);
    Wait(fd);
  });
  Endpoint a;
  ASSERT_NO_FATAL_FAILURE(a.Open());
  PeerInfo p = {};
  Put(b.fd(), a.Info());
  if (read(b.fd(), &p, sizeof(p)) != ssize_t(sizeof(p))) {
    ASSERT_EQ(b.Join(), kSkipExit);
    GTEST_SKIP() << "no UTS namespace";
  }
  ASSERT_EQ(a.ToInit(), 0);
  PeerInfo wrong = p;
  wrong.lid = a.lid;
  EXPECT_EQ(a.ToRtr(wrong), EINVAL);
  ASSERT_EQ(a.ToRtr(p), 0);
  ASSERT_EQ(a.ToRts(), 0);
  Signal(b.fd());  // the end of B's handshake
  Wait(b.fd());
  Signal(b.fd());
  EXPECT_EQ(b.Join(), 0);
}

TEST_F(VerbsLoop, RnrInjectionExhaustsRnrRetry) {
  Peer b([](int fd) {
    Endpoint ep;
    ASSERT_NO_FATAL_FAILURE(ep.Open());
    PeerInfo a;
    ASSERT_NO_FATAL_FAILURE(Handshake(fd, ep, &a, [&] {
      ASSERT_EQ(ep.PostRecv(1, 0, 64), 0);  // present, but never found
    }));
    Wait(fd);
  });
  setenv("VERBS_LOOP_FAULTS", "rnr=1", 1);
  Options o;
  o.rnr_retry = 1;
  Endpoint a(o);
  ASSERT_NO_FATAL_FAILURE(a.Open());
  PeerInfo p;
  ASSERT_NO_FATAL_FAILURE(Handshake(b.fd(), a, &p));
  uint64_t t0 = NowMs();
  ASSERT_EQ(a.Post(IBV_WR_SEND, 1, 0, 16), 0);
  ibv_wc wc;
  ASSERT_EQ(PollN(a.scq, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
  EXPECT_GE(NowMs() - t0, 19u);
  EXPECT_EQ(a.State(), IBV_QPS_ERR);
  Signal(b.fd());
  EXPECT_EQ(b.Join(), 0);
}

// With rnr_retry 7 a SEND waits for a receive for ever, and the WR
// behind it waits too.
TEST_F(VerbsLoop, RnrWaitsUntilReceivePosted) {
  Endpoint a, b;
  ASSERT_NO_FATAL_FAILURE(Loopback(a, b));
  ASSERT_EQ(a.Post(IBV_WR_SEND, 1, 0, 8), 0);
  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, 2, 0, 8, b.Info().addr, b.mr->rkey), 0);
  ibv_wc wc[2];
  EXPECT_EQ(PollN(a.scq, wc, 1, 30), 0);
  ASSERT_EQ(b.PostRecv(77, 0, 64), 0);
  ASSERT_EQ(PollN(a.scq, wc, 2), 2);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(wc[1].status, IBV_WC_SUCCESS);
  ASSERT_EQ(PollN(b.rcq, wc, 1), 1);
  EXPECT_EQ(wc[0].wr_id, 77u);
}

// A responder still in INIT is retried for (retry_cnt + 1) * 5 ms.
TEST_F(VerbsLoop, SlowPeerStillConnects) {
  Endpoint a, b;
  ASSERT_NO_FATAL_FAILURE(a.Open());
  ASSERT_NO_FATAL_FAILURE(b.Open());
  ASSERT_NO_FATAL_FAILURE(a.Connect(b.Info()));
  ASSERT_EQ(b.ToInit(), 0);
  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, 1, 0, 8, b.Info().addr, b.mr->rkey), 0);
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(a.scq, 1, &wc), 0);
  ASSERT_EQ(b.ToRtr(a.Info()), 0);
  ASSERT_EQ(PollN(a.scq, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
}

TEST_F(VerbsLoop, CqOverflowFailsPoll) {
  setenv("VERBS_LOOP_FAULTS", "cqovf=2", 1);
  Endpoint a, b;
  ASSERT_NO_FATAL_FAILURE(Loopback(a, b));
  EXPECT_EQ(a.scq->cqe, 2);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, i, 0, 8, b.Info().addr, b.mr->rkey), 0);
  ibv_wc wc;
  EXPECT_LT(ibv_poll_cq(a.scq, 1, &wc), 0);
  EXPECT_EQ(a.State(), IBV_QPS_ERR);
}

TEST_F(VerbsLoop, DeadPeerIsRetryExceeded) {
  Peer b([](int fd) {
    Endpoint ep;
    ASSERT_NO_FATAL_FAILURE(ep.Open());
    PeerInfo a;
    ASSERT_NO_FATAL_FAILURE(Handshake(fd, ep, &a));
    _exit(0);  // dies without cleaning up
  });
  Endpoint a;
  ASSERT_NO_FATAL_FAILURE(a.Open());
  PeerInfo p;
  ASSERT_NO_FATAL_FAILURE(Handshake(b.fd(), a, &p));
  ASSERT_EQ(b.Join(), 0);
  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, 1, 0, 8, p.addr, p.rkey), 0);
  // Failed at once, within the post: no retry budget for the dead.
  ibv_wc wc;
  ASSERT_EQ(ibv_poll_cq(a.scq, 1, &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(a.State(), IBV_QPS_ERR);
}

TEST_F(VerbsLoop, SendQueueFullIsEnomem) {
  Options o;
  o.max_send_wr = 4;
  Endpoint a(o), b;
  ASSERT_NO_FATAL_FAILURE(Loopback(a, b));
  uint64_t raddr = b.Info().addr;
  uint32_t rkey = b.mr->rkey;
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, i, 0, 8, raddr, rkey, 0), 0);
  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, 3, 0, 8, raddr, rkey), 0);
  EXPECT_EQ(a.Post(IBV_WR_RDMA_WRITE, 4, 0, 8, raddr, rkey), ENOMEM);
  ibv_wc wc;
  ASSERT_EQ(PollN(a.scq, &wc, 1), 1);  // retires all four
  EXPECT_EQ(wc.wr_id, 3u);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(a.Post(IBV_WR_RDMA_WRITE, 5, 0, 8, raddr, rkey, 0), 0);
  EXPECT_EQ(a.Post(IBV_WR_RDMA_WRITE, 6, 0, 8, raddr, rkey), ENOMEM);
}

TEST_F(VerbsLoop, QpErrInjectionFlushesFromNthWr) {
  setenv("VERBS_LOOP_FAULTS", "qperr=3", 1);
  Endpoint a, b;
  ASSERT_NO_FATAL_FAILURE(Loopback(a, b));
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, i, 0, 8, b.Info().addr, b.mr->rkey), 0);
  ibv_wc wc[4];
  ASSERT_EQ(PollN(a.scq, wc, 4), 4);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[1].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[2].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wc[3].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(a.State(), IBV_QPS_ERR);
  EXPECT_EQ(b.State(), IBV_QPS_RTS);  // a local error: the peer is fine
}

TEST_F(VerbsLoop, RaeInjectionAndAccessGates) {
  setenv("VERBS_LOOP_FAULTS", "rae=2", 1);
  Endpoint a, b;
  ASSERT_NO_FATAL_FAILURE(Loopback(a, b));
  uint64_t raddr = b.Info().addr;
  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, 1, 0, 8, raddr, b.mr->rkey), 0);
  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, 2, 0, 8, raddr, b.mr->rkey), 0);
  ibv_wc wc[2];
  ASSERT_EQ(PollN(a.scq, wc, 2), 2);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[1].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(b.State(), IBV_QPS_ERR);

  // The responder QP's access flags gate reads; a deregistered rkey is
  // dead at once.
  Options ro;
  ro.qp_access = IBV_ACCESS_REMOTE_WRITE;
  Endpoint c, d(ro);
  ASSERT_NO_FATAL_FAILURE(Loopback(c, d));
  ASSERT_EQ(c.Post(IBV_WR_RDMA_READ, 1, 0, 8, d.Info().addr, d.mr->rkey), 0);
  ASSERT_EQ(PollN(c.scq, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
  Endpoint e, f;
  ASSERT_NO_FATAL_FAILURE(Loopback(e, f));
  PeerInfo fi = f.Info();
  ASSERT_EQ(ibv_dereg_mr(f.mr), 0);
  f.mr = nullptr;
  ASSERT_EQ(e.Post(IBV_WR_RDMA_WRITE, 1, 0, 8, fi.addr, fi.rkey), 0);
  ASSERT_EQ(PollN(e.scq, wc, 1), 1);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
}

TEST_F(VerbsLoop, BadLkeyIsLocalProtectionError) {
  Endpoint a, b;
  ASSERT_NO_FATAL_FAILURE(Loopback(a, b));
  // In bounds of nothing: one byte past the MR.
  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, 1, a.buf.size() - 4, 8, b.Info().addr,
                   b.mr->rkey),
            0);
  ibv_wc wc;
  ASSERT_EQ(PollN(a.scq, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
  EXPECT_EQ(a.State(), IBV_QPS_ERR);
  EXPECT_EQ(b.State(), IBV_QPS_RTS);
}

// Enough traffic to wrap the send queue, the RQ and both CQ rings, with
// sizes 0 and odd; every message lands where its receive says.
TEST_F(VerbsLoop, RingsWrapInOrder) {
  Options o;
  o.max_send_wr = 8;
  o.max_recv_wr = 8;
  o.cqe = 8;
  Endpoint a(o), b(o);
  ASSERT_NO_FATAL_FAILURE(Loopback(a, b));
  for (size_t i = 0; i < a.buf.size(); ++i) a.buf[i] = Pattern(i);
  ibv_wc wc;
  for (uint32_t i = 0; i < 100; ++i) {
    uint32_t len = (i % 3 == 0) ? 0 : 1 + (i * 37) % 200;
    ASSERT_EQ(b.PostRecv(1000 + i, 256, 256), 0);
    ASSERT_EQ(a.Post(IBV_WR_SEND, i, i % 50, len), 0);
    ASSERT_EQ(PollN(a.scq, &wc, 1), 1);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(wc.wr_id, i);
    ASSERT_EQ(PollN(b.rcq, &wc, 1), 1);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(wc.wr_id, 1000u + i);
    ASSERT_EQ(wc.byte_len, len);
    for (uint32_t k = 0; k < len; ++k)
      ASSERT_EQ(b.buf[256 + k], Pattern(i % 50 + k)) << i << " " << k;
  }
}

}  // namespace

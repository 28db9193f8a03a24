// Helpers of the verbs_loop provider's tests (test_verbs_loop*.cc): the
// fixture, an endpoint with every verbs object one side needs, a forked
// peer process, and the PeerInfo exchange between the two.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace verbs_loop_test {

inline constexpr int kSkipExit = 77;

inline uint8_t Pattern(size_t i) { return uint8_t(i * 7 + 3); }

inline uint64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}

struct PeerInfo {
  uint32_t qpn;
  uint16_t lid;
  uint16_t pad;
  ibv_gid gid;
  uint64_t addr;
  uint32_t rkey;
  uint32_t len;
};

struct Options {
  bool use_srq = false;
  uint32_t max_send_wr = 16;
  uint32_t max_recv_wr = 16;
  uint32_t max_inline = 64;
  int cqe = 64;
  size_t buf_len = 4096;
  int mr_access =
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  unsigned qp_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
};

// One side: context, PD, CQs, optional SRQ, an RC QP and a registered
// buffer. Fatal failures are recorded by gtest; use
// ASSERT_NO_FATAL_FAILURE around the calls that can fail.
class Endpoint {
 public:
  explicit Endpoint(const Options& o = Options()) : o_(o), buf(o.buf_len) {}
  ~Endpoint() {
    if (qp != nullptr) ibv_destroy_qp(qp);
    if (srq != nullptr) ibv_destroy_srq(srq);
    if (scq != nullptr) ibv_destroy_cq(scq);
    if (rcq != nullptr) ibv_destroy_cq(rcq);
    if (mr != nullptr) ibv_dereg_mr(mr);
    if (pd != nullptr) ibv_dealloc_pd(pd);
    if (ctx != nullptr) ibv_close_device(ctx);
  }

  void Open() {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    ASSERT_NE(list, nullptr);
    ASSERT_EQ(n, 1);
    ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    ASSERT_NE(ctx, nullptr) << strerror(errno);
    ibv_port_attr pa;
    ASSERT_EQ(ibv_query_port(ctx, 1, &pa), 0);
    lid = pa.lid;
    ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
    ASSERT_NE(pd = ibv_alloc_pd(ctx), nullptr);
    ASSERT_NE(mr = ibv_reg_mr(pd, buf.data(), buf.size(), o_.mr_access),
              nullptr);
    ASSERT_NE(scq = ibv_create_cq(ctx, o_.cqe, nullptr, nullptr, 0), nullptr);
    ASSERT_NE(rcq = ibv_create_cq(ctx, o_.cqe, nullptr, nullptr, 0), nullptr);
    if (o_.use_srq) {
      ibv_srq_init_attr sa = {};
      sa.attr.max_wr = 64;
      sa.attr.max_sge = 2;
      ASSERT_NE(srq = ibv_create_srq(pd, &sa), nullptr);
    }
    ibv_qp_init_attr qa = {};
    qa.send_cq = scq;
    qa.recv_cq = rcq;
    qa.srq = srq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = o_.max_send_wr;
    qa.cap.max_recv_wr = o_.max_recv_wr;
    qa.cap.max_send_sge = 2;
    qa.cap.max_recv_sge = 2;
    qa.cap.max_inline_data = o_.max_inline;
    ASSERT_NE(qp = ibv_create_qp(pd, &qa), nullptr) << strerror(errno);
    EXPECT_EQ(qa.cap.max_inline_data, o_.max_inline);
  }

  PeerInfo Info() const {
    PeerInfo p = {};
    p.qpn = qp->qp_num;
    p.lid = lid;
    p.gid = gid;
    p.addr = reinterpret_cast<uint64_t>(buf.data());
    p.rkey = mr->rkey;
    p.len = uint32_t(buf.size());
    return p;
  }

  int ToInit() {
    ibv_qp_attr a = {};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = o_.qp_access;
    return ibv_modify_qp(
        qp, &a,
        IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  }

  static ibv_qp_attr RtrAttr(const PeerInfo& p, bool global) {
    ibv_qp_attr a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = p.qpn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    a.ah_attr.dlid = p.lid;
    a.ah_attr.port_num = 1;
    a.ah_attr.is_global = global;
    a.ah_attr.grh.dgid = p.gid;
    a.ah_attr.grh.hop_limit = 1;
    return a;
  }
  static constexpr int kRtrMask =
      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  static constexpr int kRtsMask = IBV_QP_STATE | IBV_QP_TIMEOUT |
                                  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

  int ToRtr(const PeerInfo& p, bool global = false) {
    ibv_qp_attr a = RtrAttr(p, global);
    return ibv_modify_qp(qp, &a, kRtrMask);
  }

  int ToRts() {
    ibv_qp_attr a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = o_.retry_cnt;
    a.rnr_retry = o_.rnr_retry;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a, kRtsMask);
  }

  void Connect(const PeerInfo& p) {
    ASSERT_EQ(ToInit(), 0);
    ASSERT_EQ(ToRtr(p), 0);
    ASSERT_EQ(ToRts(), 0);
  }

  ibv_qp_state State() {
    ibv_qp_attr a = {};
    ibv_qp_init_attr ia = {};
    EXPECT_EQ(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
    EXPECT_EQ(a.qp_state, a.cur_qp_state);
    return a.qp_state;
  }

  // One-SGE WR from buf[off, off+len) (no SGE if len is 0).
  int Post(ibv_wr_opcode op, uint64_t wr_id, size_t off, uint32_t len,
           uint64_t raddr = 0, uint32_t rkey = 0,
           unsigned flags = IBV_SEND_SIGNALED, uint32_t imm = 0) {
    ibv_sge sge = {reinterpret_cast<uint64_t>(buf.data() + off), len, mr->lkey};
    ibv_send_wr wr = {};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = len > 0 ? 1 : 0;
    wr.opcode = op;
    wr.send_flags = flags;
    wr.imm_data = imm;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
  }

  int PostRecv(uint64_t wr_id, size_t off, uint32_t len) {
    ibv_sge sge = {reinterpret_cast<uint64_t>(buf.data() + off), len, mr->lkey};
    ibv_recv_wr wr = {};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = len > 0 ? 1 : 0;
    ibv_recv_wr* bad = nullptr;
    if (srq != nullptr) return ibv_post_srq_recv(srq, &wr, &bad);
    return ibv_post_recv(qp, &wr, &bad);
  }

  Options o_;
  std::vector<uint8_t> buf;
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_mr* mr = nullptr;
  ibv_cq* scq = nullptr;
  ibv_cq* rcq = nullptr;
  ibv_srq* srq = nullptr;
  ibv_qp* qp = nullptr;
  uint16_t lid = 0;
  ibv_gid gid = {};
};

// Polls until `n` completions arrived, the CQ fails (returns -1) or a
// second passed. Returns the number polled or -1.
inline int PollN(ibv_cq* cq, ibv_wc* wc, int n, int timeout_ms = 1000) {
  int got = 0;
  uint64_t end = NowMs() + uint64_t(timeout_ms);
  while (got < n && NowMs() < end) {
    int r = ibv_poll_cq(cq, n - got, wc + got);
    if (r < 0) return -1;
    got += r;
    if (r == 0) sched_yield();
  }
  return got;
}

// Side B runs in a child with a 10 s alarm; its exit status is 0 when it
// recorded no gtest failure.
class Peer {
 public:
  template <typename Body>
  explicit Peer(Body body) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pid_ = fork();
    if (pid_ == 0) {
      close(sv[0]);
      alarm(10);
      body(sv[1]);
      _exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    close(sv[1]);
    fd_ = sv[0];
  }
  ~Peer() { Join(); }
  int fd() const { return fd_; }
  // Reaps B (a dead peer must be reaped to look dead). Returns its exit
  // status.
  int Join() {
    if (pid_ <= 0) return status_;
    close(fd_);
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = 0;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return status_;
  }

 private:
  pid_t pid_ = 0;
  int fd_ = -1;
  int status_ = -1;
};

template <typename T>
void Put(int fd, const T& v) {
  ASSERT_EQ(send(fd, &v, sizeof(v), MSG_NOSIGNAL), ssize_t(sizeof(v)));
}

template <typename T>
void Get(int fd, T* v) {
  size_t got = 0;
  while (got < sizeof(T)) {
    ssize_t r = read(fd, reinterpret_cast<char*>(v) + got, sizeof(T) - got);
    ASSERT_GT(r, 0) << "peer gone";
    got += size_t(r);
  }
}

inline void Signal(int fd) { Put(fd, char(1)); }
inline void Wait(int fd) {
  char c;
  Get(fd, &c);
}

inline void NoOp() {}

// Swaps PeerInfo and connects; both sides call it. `at_init` runs in INIT,
// where receives may first be posted.
template <typename AtInit = void (*)()>
void Handshake(int fd, Endpoint& ep, PeerInfo* peer, AtInit at_init = NoOp) {
  ASSERT_NO_FATAL_FAILURE(Put(fd, ep.Info()));
  ASSERT_NO_FATAL_FAILURE(Get(fd, peer));
  ASSERT_EQ(ep.ToInit(), 0);
  ASSERT_NO_FATAL_FAILURE(at_init());
  // Both QPs exist once both infos are swapped; RTR checks the peer's.
  ASSERT_EQ(ep.ToRtr(*peer), 0);
  ASSERT_EQ(ep.ToRts(), 0);
  // Neither side posts before the other is in RTS.
  ASSERT_NO_FATAL_FAILURE(Signal(fd));
  ASSERT_NO_FATAL_FAILURE(Wait(fd));
}

// Each test gets its own fabric file, and no fault or link knob.
class VerbsLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/verbs_loop_test.XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = path;
    setenv("VERBS_LOOP_FABRIC", path, 1);
    unsetenv("VERBS_LOOP_FAULTS");
    unsetenv("VERBS_LOOP_LINK");
  }
  void TearDown() override { unlink(path_.c_str()); }

  // Two endpoints of this process, a's QP connected to b's and back.
  void Loopback(Endpoint& a, Endpoint& b) {
    ASSERT_NO_FATAL_FAILURE(a.Open());
    ASSERT_NO_FATAL_FAILURE(b.Open());
    ASSERT_NO_FATAL_FAILURE(a.Connect(b.Info()));
    ASSERT_NO_FATAL_FAILURE(b.Connect(a.Info()));
  }

  std::string path_;
};

}  // namespace verbs_loop_test

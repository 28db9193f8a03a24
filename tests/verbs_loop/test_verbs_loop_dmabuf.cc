// Tests of the verbs_loop provider's dma-buf MRs (ibv_reg_dmabuf_mr), on
// fake device memory as tests/cuda_loop makes it: a memfd mapped
// PROT_NONE where the process sees it, with a read-write alias the test
// checks the bytes through. It is exported as a dma-buf fd by the
// convention of the two providers: a fresh open of the memfd whose file
// position is where the dma-buf begins (here not at 0), reaching to the
// file's end.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "verbs_loop_test_util.h"

extern "C" unsigned long long verbs_loop_dmabuf_mrs(void);

namespace {

using namespace verbs_loop_test;

constexpr size_t kPage = 4096;
// Where the dma-buf begins in its file: the bytes before it belong to
// other allocations.
constexpr off_t kLead = 2 * kPage;
constexpr size_t kDevLen = size_t(1) << 18;
// The MR's offset in the dma-buf: not page aligned, so iova (dev + kOff)
// shares its page offset, as registration requires.
constexpr uint64_t kOff = kPage + 256;
constexpr int kAllAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

class DevMem {
 public:
  explicit DevMem(size_t len = kDevLen) : len(len) {
    memfd = memfd_create("verbs_loop_dev", MFD_CLOEXEC);
    EXPECT_GE(memfd, 0);
    EXPECT_EQ(ftruncate(memfd, kLead + off_t(len)), 0);
    void* d = mmap(nullptr, len, PROT_NONE, MAP_SHARED, memfd, kLead);
    void* a =
        mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, kLead);
    EXPECT_NE(d, MAP_FAILED);
    EXPECT_NE(a, MAP_FAILED);
    dev = static_cast<uint8_t*>(d);
    alias = static_cast<uint8_t*>(a);
  }
  ~DevMem() {
    munmap(dev, len);
    munmap(alias, len);
    close(memfd);
  }

  // A dma-buf fd by the convention: its own open file, positioned at the
  // dma-buf's start. -1 on failure.
  int Export() const {
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd >= 0 && lseek(fd, kLead, SEEK_SET) != kLead) {
      close(fd);
      return -1;
    }
    return fd;
  }

  uint64_t Iova(uint64_t off) const {
    return reinterpret_cast<uint64_t>(dev) + off;
  }

  // Registers [off, off + n) of the dma-buf at iova dev + off, and closes
  // the exported fd at once, as a caller of the real thing may.
  ibv_mr* Reg(ibv_pd* pd, uint64_t off, size_t n, int access = kAllAccess) {
    int fd = Export();
    EXPECT_GE(fd, 0);
    ibv_mr* mr = ibv_reg_dmabuf_mr(pd, off, n, Iova(off), fd, access);
    int err = errno;
    close(fd);
    errno = err;
    return mr;
  }

  int memfd = -1;
  size_t len;
  uint8_t* dev = nullptr;
  uint8_t* alias = nullptr;
};

int OpenFds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

int PostSge(ibv_qp* qp, ibv_wr_opcode op, uint64_t wr_id, const ibv_sge* sge,
            int nsge, uint64_t raddr = 0, uint32_t rkey = 0, uint32_t imm = 0) {
  ibv_send_wr wr = {};
  wr.wr_id = wr_id;
  wr.sg_list = const_cast<ibv_sge*>(sge);
  wr.num_sge = nsge;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = imm;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp, &wr, &bad);
}

int PostRecvSge(ibv_qp* qp, uint64_t wr_id, ibv_sge sge) {
  ibv_recv_wr wr = {};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(qp, &wr, &bad);
}

// Polls `n` send completions and expects each to succeed.
void ExpectDone(ibv_cq* cq, int n) {
  ibv_wc wc[8];
  ASSERT_EQ(PollN(cq, wc, n), n);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS) << "wr_id " << wc[i].wr_id;
}

TEST_F(VerbsLoop, DmabufRegistrationChecks) {
  Endpoint a;
  ASSERT_NO_FATAL_FAILURE(a.Open());
  DevMem dm;
  uint64_t before = verbs_loop_dmabuf_mrs();
  // Memory the CPU cannot read cannot be pinned: as GPU memory without
  // peer-memory support, also where only one page in the middle is so.
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(a.pd, dm.dev, kPage, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EFAULT);
  ibv_mr* alias = ibv_reg_mr(a.pd, dm.alias, dm.len, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(alias, nullptr);
  EXPECT_EQ(ibv_dereg_mr(alias), 0);
  void* three = mmap(nullptr, 3 * kPage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(three, MAP_FAILED);
  uint8_t* p = static_cast<uint8_t*>(three);
  ASSERT_EQ(mprotect(p + kPage, kPage, PROT_NONE), 0);
  EXPECT_EQ(ibv_reg_mr(a.pd, p, 3 * kPage, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(ibv_reg_mr(a.pd, p + kPage - 1, 2, IBV_ACCESS_LOCAL_WRITE),
            nullptr);
  EXPECT_EQ(errno, EFAULT);
  ibv_mr* first = ibv_reg_mr(a.pd, p, kPage, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(ibv_dereg_mr(first), 0);
  munmap(three, 3 * kPage);

  // Refused as the kernel refuses them.
  size_t n = dm.len - kOff;  // to the dma-buf's (and the file's) end
  int fd = dm.Export();
  ASSERT_GE(fd, 0);
  struct Case {
    uint64_t off;
    size_t len;
    uint64_t iova;
    int fd;
    int access;
    int err;
  } cases[] = {
      {kOff, 0, dm.Iova(kOff), fd, kAllAccess, EINVAL},
      {kOff, n + 1, dm.Iova(kOff), fd, kAllAccess, EINVAL},  // past the end
      {0, dm.len + 1, dm.Iova(0), fd, kAllAccess, EINVAL},
      {kOff, n, dm.Iova(kOff) + 8, fd, kAllAccess, EINVAL},  // page offset
      {kOff, n, dm.Iova(kOff), fd, IBV_ACCESS_REMOTE_WRITE, EINVAL},
      {kOff, n, dm.Iova(kOff), -1, kAllAccess, EBADF},
      {kOff, n, dm.Iova(kOff), 1000, kAllAccess, EBADF},  // not open
  };
  for (const Case& c : cases) {
    errno = 0;
    EXPECT_EQ(ibv_reg_dmabuf_mr(a.pd, c.off, c.len, c.iova, c.fd, c.access),
              nullptr)
        << c.off << " " << c.len << " " << c.fd;
    EXPECT_EQ(errno, c.err) << c.off << " " << c.len << " " << c.fd;
  }
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);  // open, but no dma-buf
  EXPECT_EQ(ibv_reg_dmabuf_mr(a.pd, 0, 64, 0, pipefd[0], kAllAccess), nullptr);
  EXPECT_EQ(errno, EINVAL);
  close(pipefd[0]);
  close(pipefd[1]);
  close(fd);
  EXPECT_EQ(verbs_loop_dmabuf_mrs(), before);

  // Accepted up to the last byte, filled as rdma-core fills a dma-buf MR,
  // and holding one fd of its own until deregistered.
  int fds = OpenFds();
  ibv_mr* mr = dm.Reg(a.pd, kOff, n);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  EXPECT_EQ(verbs_loop_dmabuf_mrs(), before + 1);
  EXPECT_EQ(mr->addr, reinterpret_cast<void*>(kOff));
  EXPECT_EQ(mr->length, n);
  EXPECT_EQ(mr->pd, a.pd);
  EXPECT_EQ(mr->context, a.ctx);
  EXPECT_NE(mr->lkey, mr->rkey);
  EXPECT_EQ(OpenFds(), fds + 1);
  EXPECT_EQ(ibv_dealloc_pd(a.pd), EBUSY);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  EXPECT_EQ(OpenFds(), fds);
}

// A kernel or NIC without dma-buf support: registration fails with
// EOPNOTSUPP (the library then falls back), everything else works.
TEST_F(VerbsLoop, DmabufRefusedWithNodmabufFault) {
  setenv("VERBS_LOOP_FAULTS", "nodmabuf=1", 1);
  Endpoint a;
  ASSERT_NO_FATAL_FAILURE(a.Open());
  DevMem dm;
  uint64_t before = verbs_loop_dmabuf_mrs();
  errno = 0;
  EXPECT_EQ(dm.Reg(a.pd, kOff, kPage), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(verbs_loop_dmabuf_mrs(), before);
  ibv_mr* mr = ibv_reg_mr(a.pd, dm.alias, kPage, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

// B owns a dma-buf MR (its fd closed right after registering) and A
// reaches it: RDMA_WRITE, RDMA_WRITE_WITH_IMM, SEND into a receive on it,
// RDMA_READ out of it. Then B uses it as the local side of RDMA_WRITE,
// SEND and RDMA_READ (over 64 KiB: several staged pieces). Last, a write
// past its end is a remote access error.
TEST_F(VerbsLoop, DmabufReachedByPeerAndUsedLocally) {
  constexpr size_t kN = kDevLen - kOff;
  Peer b([](int fd) {
    Endpoint ep;
    ASSERT_NO_FATAL_FAILURE(ep.Open());
    DevMem dm;
    ibv_mr* mr = dm.Reg(ep.pd, kOff, kN);
    ASSERT_NE(mr, nullptr) << strerror(errno);
    uint8_t* at = dm.alias + kOff;  // at[x] is the byte at iova + x
    PeerInfo a;
    ASSERT_NO_FATAL_FAILURE(Handshake(fd, ep, &a, [&] {
      ASSERT_EQ(ep.PostRecv(10, 0, 0), 0);  // for the WRITE_WITH_IMM
      ASSERT_EQ(
          PostRecvSge(ep.qp, 11, {dm.Iova(kOff + 120000), 1024, mr->lkey}), 0);
    }));
    PeerInfo d = {};
    d.addr = dm.Iova(kOff);
    d.rkey = mr->rkey;
    d.len = uint32_t(kN);
    Put(fd, d);

    Wait(fd);  // A's writes and SEND are done
    ibv_wc wc[2];
    ASSERT_EQ(PollN(ep.rcq, wc, 2), 2);
    EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc[0].wr_id, 10u);
    EXPECT_EQ(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(ntohl(wc[0].imm_data), 77u);
    EXPECT_EQ(wc[1].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc[1].wr_id, 11u);
    EXPECT_EQ(wc[1].byte_len, 300u);
    EXPECT_EQ(at[99], 0);
    for (size_t i = 0; i < 100000; ++i) ASSERT_EQ(at[100 + i], Pattern(i)) << i;
    EXPECT_EQ(at[100100], 0);
    for (size_t i = 0; i < 500; ++i)
      ASSERT_EQ(at[kN - 500 + i], Pattern(100000 + i)) << i;
    for (size_t i = 0; i < 300; ++i)
      ASSERT_EQ(at[120000 + i], Pattern(110000 + i)) << i;
    EXPECT_EQ(at[120300], 0);

    for (size_t i = 0; i < 100000; ++i) at[130000 + i] = Pattern(i + 5);
    Signal(fd);
    Wait(fd);  // A read them and posted a receive

    ibv_sge w = {dm.Iova(kOff + 130000), 100000, mr->lkey};
    ASSERT_EQ(
        PostSge(ep.qp, IBV_WR_RDMA_WRITE, 1, &w, 1, a.addr + 120000, a.rkey),
        0);
    ibv_sge s = {dm.Iova(kOff + 130000), 512, mr->lkey};
    ASSERT_EQ(PostSge(ep.qp, IBV_WR_SEND, 2, &s, 1), 0);
    ibv_sge r = {dm.Iova(kOff + 240000), 10000, mr->lkey};
    ASSERT_EQ(
        PostSge(ep.qp, IBV_WR_RDMA_READ, 3, &r, 1, a.addr + 100000, a.rkey), 0);
    ASSERT_NO_FATAL_FAILURE(ExpectDone(ep.scq, 3));
    for (size_t i = 0; i < 10000; ++i)
      ASSERT_EQ(at[240000 + i], Pattern(100000 + i)) << i;
    Signal(fd);

    Wait(fd);  // A's out-of-bounds write failed
    EXPECT_EQ(ep.State(), IBV_QPS_ERR);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
  });
  Options o;
  o.buf_len = 1 << 18;
  Endpoint a(o);
  ASSERT_NO_FATAL_FAILURE(a.Open());
  for (size_t i = 0; i < a.buf.size(); ++i) a.buf[i] = Pattern(i);
  PeerInfo p, d;
  ASSERT_NO_FATAL_FAILURE(Handshake(b.fd(), a, &p));
  ASSERT_NO_FATAL_FAILURE(Get(b.fd(), &d));

  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, 1, 0, 100000, d.addr + 100, d.rkey), 0);
  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE_WITH_IMM, 2, 100000, 500,
                   d.addr + d.len - 500, d.rkey, IBV_SEND_SIGNALED, htonl(77)),
            0);
  ASSERT_EQ(a.Post(IBV_WR_SEND, 3, 110000, 300), 0);
  ASSERT_NO_FATAL_FAILURE(ExpectDone(a.scq, 3));
  Signal(b.fd());

  Wait(b.fd());  // B filled [130000, 230000)
  ASSERT_EQ(a.Post(IBV_WR_RDMA_READ, 4, 0, 100000, d.addr + 130000, d.rkey), 0);
  ASSERT_NO_FATAL_FAILURE(ExpectDone(a.scq, 1));
  for (size_t i = 0; i < 100000; ++i) ASSERT_EQ(a.buf[i], Pattern(i + 5)) << i;
  ASSERT_EQ(a.PostRecv(50, 230000, 1024), 0);
  Signal(b.fd());

  Wait(b.fd());  // B's writes, SEND and read are done
  ibv_wc wc;
  ASSERT_EQ(PollN(a.rcq, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, 512u);
  for (size_t i = 0; i < 100000; ++i)
    ASSERT_EQ(a.buf[120000 + i], Pattern(i + 5)) << i;
  for (size_t i = 0; i < 512; ++i)
    ASSERT_EQ(a.buf[230000 + i], Pattern(i + 5)) << i;

  ASSERT_EQ(a.Post(IBV_WR_RDMA_WRITE, 5, 0, 64, d.addr + d.len - 32, d.rkey),
            0);
  ASSERT_EQ(PollN(a.scq, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(a.State(), IBV_QPS_ERR);
  Signal(b.fd());
  EXPECT_EQ(b.Join(), 0);
}

// Two dma-buf MRs of one process, one per endpoint: file to file in both
// directions (the owner's own dups, no /proc), a SEND gathering memory
// and dma-buf into a receive on a dma-buf, and a bad local range.
TEST_F(VerbsLoop, DmabufToDmabufInOneProcess) {
  Endpoint a, b;
  ASSERT_NO_FATAL_FAILURE(Loopback(a, b));
  for (size_t i = 0; i < a.buf.size(); ++i) a.buf[i] = Pattern(i + 9);
  DevMem da, db;
  uint64_t before = verbs_loop_dmabuf_mrs();
  size_t n = kDevLen - kOff;
  ibv_mr* ma = da.Reg(a.pd, kOff, n);
  ibv_mr* mb = db.Reg(b.pd, kOff, n);
  ASSERT_NE(ma, nullptr);
  ASSERT_NE(mb, nullptr);
  EXPECT_EQ(verbs_loop_dmabuf_mrs(), before + 2);
  uint8_t* at_a = da.alias + kOff;
  uint8_t* at_b = db.alias + kOff;
  for (size_t i = 0; i < n; ++i) at_a[i] = Pattern(i);

  ibv_sge w = {da.Iova(kOff + 1000), 70000, ma->lkey};
  ASSERT_EQ(
      PostSge(a.qp, IBV_WR_RDMA_WRITE, 1, &w, 1, db.Iova(kOff + 3), mb->rkey),
      0);
  ibv_sge r = {da.Iova(kOff + 100000), 70000, ma->lkey};
  ASSERT_EQ(
      PostSge(a.qp, IBV_WR_RDMA_READ, 2, &r, 1, db.Iova(kOff + 3), mb->rkey),
      0);
  ASSERT_NO_FATAL_FAILURE(ExpectDone(a.scq, 2));
  EXPECT_EQ(at_b[2], 0);
  EXPECT_EQ(at_b[70003], 0);
  for (size_t i = 0; i < 70000; ++i) {
    ASSERT_EQ(at_b[3 + i], Pattern(1000 + i)) << i;
    ASSERT_EQ(at_a[100000 + i], Pattern(1000 + i)) << i;
  }

  ASSERT_EQ(PostRecvSge(b.qp, 7, {db.Iova(kOff + 200000), 4096, mb->lkey}), 0);
  ibv_sge g[2] = {{reinterpret_cast<uint64_t>(a.buf.data()), 100, a.mr->lkey},
                  {da.Iova(kOff + 50), 200, ma->lkey}};
  ASSERT_EQ(PostSge(a.qp, IBV_WR_SEND, 3, g, 2), 0);
  ASSERT_NO_FATAL_FAILURE(ExpectDone(a.scq, 1));
  ibv_wc wc;
  ASSERT_EQ(PollN(b.rcq, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, 300u);
  for (size_t i = 0; i < 100; ++i)
    ASSERT_EQ(at_b[200000 + i], Pattern(i + 9)) << i;
  for (size_t i = 0; i < 200; ++i)
    ASSERT_EQ(at_b[200100 + i], Pattern(50 + i)) << i;

  // One byte past the local MR: the sender's protection error.
  ibv_sge bad = {da.Iova(kOff + n - 4), 8, ma->lkey};
  ASSERT_EQ(
      PostSge(a.qp, IBV_WR_RDMA_WRITE, 4, &bad, 1, db.Iova(kOff), mb->rkey), 0);
  ASSERT_EQ(PollN(a.scq, &wc, 1), 1);
  EXPECT_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
  EXPECT_EQ(a.State(), IBV_QPS_ERR);
  EXPECT_EQ(ibv_dereg_mr(ma), 0);
  EXPECT_EQ(ibv_dereg_mr(mb), 0);
}

}  // namespace

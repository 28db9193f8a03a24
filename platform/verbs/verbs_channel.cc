#include "platform/verbs/verbs_channel.h"

#include <sched.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "platform/os/clock.h"
#include "platform/os/log.h"

namespace ucc::plat::verbs {

Status VerbsChannel::open(VerbsNet* dev, size_t staging, uint32_t timeout_ms,
                          QpAddr* mine, uint32_t push_depth) {
  dev_ = dev;
  timeout_ms_ = timeout_ms;
  push_depth_ = push_depth;
  const Api& api = dev->api();
  // The engine side's own domain: what it exposes is for this queue
  // pair's host alone.
  ibv_pd* pd = dev->pd();
  if (staging != 0) {
    own_pd_ = api.alloc_pd(dev->ctx());
    pd = own_pd_;
  }
  if (pd != nullptr)
    cq_ = api.create_cq(dev->ctx(), static_cast<int>(16 + push_depth), nullptr,
                        nullptr, 0);
  ibv_qp_init_attr a{};
  a.send_cq = cq_;
  a.recv_cq = cq_;
  a.qp_type = IBV_QPT_RC;
  // One transfer in flight and room to spare, and the pushes.
  a.cap.max_send_wr = 4 + push_depth;
  a.cap.max_recv_wr = 1;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  if (cq_ != nullptr) qp_ = api.create_qp(pd, &a);
  if (qp_ == nullptr ||
      !dev->qp_init(qp_, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)) {
    UCC_ERROR("verbs channel: cannot make a queue pair: %s", strerror(errno));
    close();
    return Status::kNoResource;
  }
  if (staging != 0) {
    void* p = mmap(nullptr, staging, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    staging_ = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
    staging_bytes_ = staging;
    if (staging_ != nullptr)
      staging_mr_ = api.reg_mr(pd, staging_, staging, IBV_ACCESS_LOCAL_WRITE);
    if (staging_mr_ == nullptr) {
      close();
      return Status::kNoMemory;
    }
  }
  if (push_depth != 0) {
    // The pushed words, one per push in flight at most (see push()).
    void* p = mmap(nullptr, push_depth * sizeof(uint32_t),
                   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    words_ = p == MAP_FAILED ? nullptr : static_cast<uint32_t*>(p);
    if (words_ != nullptr)
      words_mr_ = api.reg_mr(pd, words_, push_depth * sizeof(uint32_t),
                             IBV_ACCESS_LOCAL_WRITE);
    if (words_mr_ == nullptr) {
      close();
      return Status::kNoMemory;
    }
  }
  psn_ = static_cast<uint32_t>(dev->rand64()) & 0xffffffu;
  *mine = dev->qp_addr(qp_, psn_);
  return Status::kOk;
}

Status VerbsChannel::connect(const QpAddr& peer) {
  if (qp_ == nullptr || !qp_addr_ok(peer)) return Status::kInvalidParam;
  if (!dev_->qp_connect(qp_, peer, psn_)) {
    UCC_ERROR("verbs channel: cannot connect its queue pair");
    return Status::kError;
  }
  connected_ = true;
  return Status::kOk;
}

void VerbsChannel::close() {
  if (dev_ == nullptr) return;
  if (staging_ != nullptr)
    UCC_INFO("verbs channel: %llu bytes read, %llu written by RDMA",
             static_cast<unsigned long long>(bytes_read_),
             static_cast<unsigned long long>(bytes_written_));
  const Api& api = dev_->api();
  if (qp_ != nullptr) api.destroy_qp(qp_);
  if (cq_ != nullptr) api.destroy_cq(cq_);
  if (staging_mr_ != nullptr) api.dereg_mr(staging_mr_);
  if (staging_ != nullptr) munmap(staging_, staging_bytes_);
  if (exposed_mr_ != nullptr) api.dereg_mr(exposed_mr_);
  if (words_mr_ != nullptr) api.dereg_mr(words_mr_);
  if (words_ != nullptr) munmap(words_, push_depth_ * sizeof(uint32_t));
  if (own_pd_ != nullptr) api.dealloc_pd(own_pd_);
  qp_ = nullptr;
  cq_ = nullptr;
  staging_mr_ = nullptr;
  staging_ = nullptr;
  exposed_mr_ = nullptr;
  words_mr_ = nullptr;
  words_ = nullptr;
  own_pd_ = nullptr;
  in_flight_ = 0;
  connected_ = false;
  dev_ = nullptr;
}

ibv_mr* VerbsChannel::reg(void* addr, size_t len) {
  return dev_->api().reg_mr(dev_->pd(), addr, len,
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                                IBV_ACCESS_REMOTE_WRITE);
}

ibv_mr* VerbsChannel::reg_dmabuf(uint64_t offset, size_t len, uint64_t iova,
                                 int fd) {
  const Api& api = dev_->api();
  if (api.reg_dmabuf_mr == nullptr) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  return api.reg_dmabuf_mr(dev_->pd(), offset, len, iova, fd,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                               IBV_ACCESS_REMOTE_WRITE);
}

void VerbsChannel::dereg(ibv_mr* mr) {
  if (mr != nullptr) dev_->api().dereg_mr(mr);
}

bool VerbsChannel::expose(void* addr, uint64_t len, uint32_t* rkey) {
  if (own_pd_ == nullptr || exposed_mr_ != nullptr) return false;
  exposed_mr_ = dev_->api().reg_mr(
      own_pd_, addr, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (exposed_mr_ == nullptr) return false;
  *rkey = exposed_mr_->rkey;
  return true;
}

bool VerbsChannel::bad_completion(int n, const ibv_wc& wc) {
  if (n >= 0 && (n == 0 || wc.status == IBV_WC_SUCCESS)) return false;
  UCC_ERROR("verbs channel: %s", n < 0 ? "completion queue error"
                                       : dev_->api().wc_status_str(wc.status));
  broken_ = true;
  errno = EIO;
  return true;
}

bool VerbsChannel::transfer(bool to_host, uint64_t addr, uint32_t rkey,
                            char* local, uint64_t len) {
  if (!connected_ || broken_ || staging_ == nullptr) {
    errno = EIO;
    return false;
  }
  for (uint64_t done = 0; done < len;) {
    const uint64_t n =
        len - done < staging_bytes_ ? len - done : staging_bytes_;
    if (to_host) memcpy(staging_, local + done, n);
    ibv_sge sge{reinterpret_cast<uintptr_t>(staging_),
                static_cast<uint32_t>(n), staging_mr_->lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = to_host ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = addr + done;
    wr.wr.rdma.rkey = rkey;
    const int rc = ibv_post_send(qp_, &wr, &bad);
    if (rc != 0) {
      UCC_ERROR("verbs channel: post: %s", strerror(rc));
      broken_ = true;
      errno = EIO;
      return false;
    }
    ++in_flight_;
    if (!reap(0)) return false;
    if (!to_host) memcpy(local + done, staging_, n);
    done += n;
    (to_host ? bytes_written_ : bytes_read_) += n;
  }
  return true;
}

bool VerbsChannel::reap(uint32_t room) {
  // Bounded spin, then yield; the other side's memory is a PCIe hop
  // away, so a completion comes in microseconds unless its port or its
  // process is gone.
  uint64_t end = 0;
  for (uint32_t spins = 0;; ++spins) {
    ibv_wc wc[16];
    const int n = ibv_poll_cq(cq_, 16, wc);
    if (n < 0 && bad_completion(n, wc[0])) return false;
    for (int i = 0; i < n; ++i)
      if (bad_completion(1, wc[i])) return false;
    in_flight_ -= static_cast<uint32_t>(n) < in_flight_
                      ? static_cast<uint32_t>(n)
                      : in_flight_;
    if (in_flight_ <= room) return true;
    if (n != 0 || spins < 64) continue;
    if (end == 0) end = now_ns() + uint64_t{timeout_ms_} * 1000000u;
    if (now_ns() > end) {
      UCC_ERROR("verbs channel: no completion in %u ms", timeout_ms_);
      broken_ = true;  // a late completion would land in freed state
      errno = ETIMEDOUT;
      return false;
    }
    sched_yield();
  }
}

bool VerbsChannel::push(const ibv_mr* mr, const MemExport::Piece* p, uint32_t n,
                        uint32_t word, uint64_t waddr, uint32_t rkey) {
  if (!connected_ || broken_ || words_ == nullptr || n > 2 ||
      push_depth_ < n + 1) {
    errno = EIO;
    return false;
  }
  if (!reap(push_depth_ - (n + 1))) return false;
  // A word is written again push_depth_ pushes later, when at most half
  // of that many can be in flight (each has two WRs or more) and the
  // queue pair completes in order: its last write has been done.
  uint32_t* w = &words_[next_word_++ % push_depth_];
  *w = word;
  ibv_sge sge[3];
  ibv_send_wr wr[3] = {};
  for (uint32_t i = 0; i <= n; ++i) {
    if (i < n) {
      if (p[i].off > mr->length || p[i].len > mr->length - p[i].off) {
        errno = EINVAL;
        return false;
      }
      sge[i] = {reinterpret_cast<uintptr_t>(mr->addr) + p[i].off,
                static_cast<uint32_t>(p[i].len), mr->lkey};
      wr[i].wr.rdma.remote_addr = p[i].raddr;
    } else {
      sge[i] = {reinterpret_cast<uintptr_t>(w), sizeof(*w), words_mr_->lkey};
      wr[i].wr.rdma.remote_addr = waddr;
    }
    wr[i].sg_list = &sge[i];
    wr[i].num_sge = 1;
    wr[i].opcode = IBV_WR_RDMA_WRITE;
    wr[i].send_flags = IBV_SEND_SIGNALED;
    wr[i].wr.rdma.rkey = rkey;
    wr[i].next = i < n ? &wr[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(qp_, wr, &bad);
  if (rc != 0) {
    UCC_ERROR("verbs channel: push: %s", strerror(rc));
    broken_ = true;
    errno = EIO;
    return false;
  }
  in_flight_ += n + 1;
  bytes_written_ += sizeof(*w);
  for (uint32_t i = 0; i < n; ++i) bytes_written_ += p[i].len;
  return true;
}

bool VerbsChannel::read(uint64_t addr, uint32_t rkey, void* dst,
                        uint64_t len) {
  return transfer(false, addr, rkey, static_cast<char*>(dst), len);
}

bool VerbsChannel::write(uint64_t addr, uint32_t rkey, const void* src,
                         uint64_t len) {
  return transfer(true, addr, rkey,
                  const_cast<char*>(static_cast<const char*>(src)), len);
}

}  // namespace ucc::plat::verbs

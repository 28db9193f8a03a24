#include "platform/verbs/verbs_channel.h"

#include <sched.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "platform/os/clock.h"
#include "platform/os/log.h"

namespace ucc::plat::verbs {

Status VerbsChannel::open(VerbsNet* dev, size_t staging, uint32_t timeout_ms,
                          QpAddr* mine) {
  dev_ = dev;
  timeout_ms_ = timeout_ms;
  const Api& api = dev->api();
  cq_ = api.create_cq(dev->ctx(), 16, nullptr, nullptr, 0);
  ibv_qp_init_attr a{};
  a.send_cq = cq_;
  a.recv_cq = cq_;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = 4;  // one transfer in flight, and room to spare
  a.cap.max_recv_wr = 1;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  if (cq_ != nullptr) qp_ = api.create_qp(dev->pd(), &a);
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
      staging_mr_ = api.reg_mr(dev->pd(), staging_, staging,
                               IBV_ACCESS_LOCAL_WRITE);
    if (staging_mr_ == nullptr) {
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
  qp_ = nullptr;
  cq_ = nullptr;
  staging_mr_ = nullptr;
  staging_ = nullptr;
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

bool VerbsChannel::wait_one() {
  // Bounded spin, then yield; the host's memory is on this node, so a
  // completion comes in microseconds unless the port or the host is gone.
  const uint64_t end = now_ns() + uint64_t{timeout_ms_} * 1000000u;
  for (uint32_t spins = 0;; ++spins) {
    ibv_wc wc;
    const int n = ibv_poll_cq(cq_, 1, &wc);
    if (n < 0 || (n == 1 && wc.status != IBV_WC_SUCCESS)) {
      UCC_ERROR("verbs channel: %s",
                n < 0 ? "completion queue error"
                      : dev_->api().wc_status_str(wc.status));
      broken_ = true;
      errno = EIO;
      return false;
    }
    if (n == 1) return true;
    if (spins >= 64) {
      if (now_ns() > end) {
        UCC_ERROR("verbs channel: no completion in %u ms", timeout_ms_);
        broken_ = true;  // a late completion would land in freed state
        errno = ETIMEDOUT;
        return false;
      }
      sched_yield();
    }
  }
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
    if (!wait_one()) return false;
    if (!to_host) memcpy(local + done, staging_, n);
    done += n;
    (to_host ? bytes_written_ : bytes_read_) += n;
  }
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

// One-sided operations of a verbs fabric (verbs_fabric.h, fabric.h):
// user memory registered with the rights its use needs, RDMA_READ and
// RDMA_WRITE on the link's queue pair, and a registration's device
// registration kept until the operations on it have completed.
#include <cstring>

#include "platform/os/log.h"
#include "platform/verbs/verbs_fabric.h"
#include "platform/verbs/verbs_net.h"

namespace ucc::plat::verbs {

Status VerbsFabric::mem_reg(void* addr, uint64_t len, uint32_t access,
                            RmaReg* reg) {
  uint32_t h = 0;
  while (h < kMaxRmaRegs && regs_[h].mr != nullptr) ++h;
  if (h == kMaxRmaRegs || len == 0) return Status::kNoResource;
  int acc = 0;
  if (access & kRmaLocal) acc |= IBV_ACCESS_LOCAL_WRITE;
  if (access & kRmaRemoteRead) acc |= IBV_ACCESS_REMOTE_READ;
  // Remote writes need local write rights too (the verbs rule).
  if (access & kRmaRemoteWrite)
    acc |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  ibv_mr* mr = net_->api().reg_mr(net_->pd(), addr, len, acc);
  if (mr == nullptr) {
    if (!reg_warned_)
      UCC_WARN(
          "verbs: cannot register %llu bytes of user memory (%s; see "
          "RLIMIT_MEMLOCK): those messages go through slots",
          static_cast<unsigned long long>(len), strerror(errno));
    reg_warned_ = true;
    return Status::kNoResource;
  }
  regs_[h] = RegEnt{mr, 0, false};
  ++net_->counters().regs;
  *reg =
      RmaReg{reinterpret_cast<uintptr_t>(addr), len, mr->lkey, mr->rkey, h, 0};
  return Status::kOk;
}

void VerbsFabric::mem_dereg(uint32_t handle) {
  if (handle >= kMaxRmaRegs || regs_[handle].mr == nullptr) return;
  RegEnt& e = regs_[handle];
  if (e.inflight != 0) {
    e.dying = true;  // rma_completed finishes it
    return;
  }
  net_->api().dereg_mr(e.mr);
  e = RegEnt{nullptr, 0, false};
}

uint32_t VerbsFabric::rma_regs() const {
  uint32_t n = 0;
  for (uint32_t h = 0; h < kMaxRmaRegs; ++h) n += regs_[h].mr != nullptr;
  return n;
}

Status VerbsFabric::post_rma(uint32_t r, ibv_wr_opcode op, void* local,
                             const RmaReg& reg, uint64_t raddr, uint32_t rkey,
                             uint32_t len, uint64_t* ticket) {
  if (r >= cfg_.nranks || r == cfg_.rank) return Status::kInvalidParam;
  start(r);                             // the first: connect now
  if (!made(r)) return Status::kError;  // not a peer of this fabric
  VLink& l = links_[r];
  if (l.state == VLink::State::kConnecting) return Status::kInProgress;
  if (l.state != VLink::State::kReady) return Status::kError;
  // The caller's registration must hold the local bytes: the device would
  // refuse them anyway, but as a failed link.
  const auto at = reinterpret_cast<uintptr_t>(local);
  if (reg.handle >= kMaxRmaRegs || regs_[reg.handle].mr == nullptr ||
      regs_[reg.handle].dying || len > kRmaMaxOp ||
      !rma_covers(reg.addr, reg.len, at, len))
    return Status::kInvalidParam;
  if (l.outstanding >= max_send_) return Status::kInProgress;
  ibv_sge sge{};
  sge.addr = at;
  sge.length = len;
  sge.lkey = reg.lkey;
  ibv_send_wr wr{};
  wr.wr_id = (uint64_t{reg.handle + 1} << 32) | (uint64_t{r} << 8) | kRmaWrKind;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  if (!post_wr(l, r, wr)) return Status::kError;
  ++regs_[reg.handle].inflight;
  *ticket = ++l.rma_posted;
  VerbsStats& s = net_->counters();
  ++s.rma_ops;
  s.rma_bytes += len;
  return Status::kOk;
}

void VerbsFabric::rma_completed(uint64_t wr_id, VLink& l, bool ok) {
  if (ok) ++l.rma_done;
  const uint64_t h = (wr_id >> 32) - 1;
  if (h >= kMaxRmaRegs) return;
  RegEnt& e = regs_[h];
  if (e.mr == nullptr || e.inflight == 0) return;
  if (--e.inflight == 0 && e.dying) {
    net_->api().dereg_mr(e.mr);
    e = RegEnt{nullptr, 0, false};
  }
}

}  // namespace ucc::plat::verbs

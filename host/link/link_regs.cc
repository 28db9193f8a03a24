// The registrations an emu or dpu engine holds for this process
// (daemon_link.h): a cache of page-rounded ranges of host memory covering
// the collectives' buffers, exact pins for ucc_mem_map, and GPU
// allocations registered for GPUDirect RDMA (host/exec/gpu_rdma.h). With
// UCC_OFFLOAD_MEM=verbs every one is registered with our RDMA port first,
// and the engine gets its remote key.
#include <unistd.h>

#include "host/link/daemon_link.h"
#include "offload/proto.h"
#include "platform/os/log.h"

namespace ucc::host {

namespace proto = off::proto;
void DaemonLink::drop_reg(uint32_t i) {
  deregister(regs_[i].key);
  regs_[i] = regs_[--nregs_];
}

uint32_t DaemonLink::room() {
  if (nregs_ == kRegs) {  // evict the least recently used
    uint32_t v = 0;
    for (uint32_t i = 1; i < nregs_; ++i)
      if (regs_[i].used < regs_[v].used) v = i;
    drop_reg(v);
  }
  return nregs_;
}

Status DaemonLink::cover_range(uint64_t addr, uint64_t len, bool quiet) {
  if (len == 0) return Status::kOk;
  uint64_t end;
  if (__builtin_add_overflow(addr, len, &end)) return Status::kInvalidParam;
  const uint64_t base = addr & ~uint64_t{4095};
  end = (end + 4095) & ~uint64_t{4095};
  ++tick_;
  for (uint32_t i = 0; i < nregs_;) {
    Reg& g = regs_[i];
    if (g.gpu_id != 0) {
      // Host memory where a GPU allocation was (freed, its addresses
      // given out again): that registration names other memory now.
      if (g.base < end && base < g.end)
        drop_reg(i);
      else
        ++i;
      continue;
    }
    if (g.base <= base && end <= g.end) {
      g.used = tick_;
      return Status::kOk;
    }
    ++i;
  }
  room();
  uint32_t key = 0;
  Status st = register_range(base, end - base, &key);
  if (failed(st)) {
    if (!quiet)
      UCC_ERROR("%s: the daemon refused to register [%#llx, %#llx)", what_,
                static_cast<unsigned long long>(base),
                static_cast<unsigned long long>(end));
    return st;
  }
  regs_[nregs_++] = Reg{base, end, key, tick_, 0};
  return Status::kOk;
}

Status DaemonLink::cover_gpu(uint64_t addr, uint64_t len, uint64_t id,
                             DmaBufFn make_fd, void* arg, uint32_t* key) {
  *key = 0;
  if (rdma_ == nullptr) return Status::kNotSupported;
  uint64_t end;
  if (len == 0 || id == 0 || __builtin_add_overflow(addr, len, &end))
    return Status::kInvalidParam;
  const uint64_t base = addr & ~uint64_t{4095};
  end = (end + 4095) & ~uint64_t{4095};
  ++tick_;
  for (uint32_t i = 0; i < nregs_;) {
    Reg& g = regs_[i];
    if (!(g.base < end && base < g.end)) {
      ++i;
      continue;
    }
    if (g.gpu_id == id && g.base <= base && end <= g.end) {
      g.used = tick_;
      *key = g.key;
      return Status::kOk;
    }
    // Another allocation (or host memory) was here and is gone: its
    // registration still holds what it named, not this buffer.
    drop_reg(i);
  }
  room();
  const int fd = make_fd != nullptr ? make_fd(arg, base, end - base) : -1;
  const Status st = register_range(base, end - base, key, true, fd);
  if (fd >= 0) close(fd);  // the registration holds the dma-buf
  if (failed(st)) {
    if (st != Status::kNotSupported)
      UCC_ERROR("%s: the daemon refused to register GPU memory [%#llx, %#llx)",
                what_, static_cast<unsigned long long>(base),
                static_cast<unsigned long long>(end));
    return st;
  }
  regs_[nregs_++] = Reg{base, end, *key, tick_, id};
  return Status::kOk;
}

// A side's buffer as a whole; where that is refused and the side's own
// displacements place its blocks (they may be separate allocations
// named from a NULL base: PyTorch's allgather over a list of tensors),
// each non-empty block. The arrays are the request's 64-bit copies
// (coll_lower.cc), in this process.
Status DaemonLink::cover_side(const off::BufRef& b, uint64_t counts,
                              uint64_t displs, uint32_t n, uint32_t esize) {
  if (b.key != 0) return Status::kOk;  // inside a ucc_mem_map pin
  const bool blocks = counts != 0 && displs != 0;
  Status st = cover_range(b.addr, b.bytes, blocks);
  if (st != Status::kInvalidParam || !blocks) return st;
  const auto* cnt = reinterpret_cast<const uint64_t*>(counts);
  const auto* dsp = reinterpret_cast<const uint64_t*>(displs);
  uint32_t used = 0;
  for (uint32_t i = 0; i < n; ++i) used += cnt[i] != 0 ? 1 : 0;
  if (used > kRegs / 2) {
    UCC_ERROR(
        "%s: %u separate blocks are more than the registration cache "
        "holds for one buffer (%u); map the memory with ucc_mem_map",
        what_, used, kRegs / 2);
    return Status::kNoResource;
  }
  st = Status::kOk;
  for (uint32_t i = 0; i < n && ok(st); ++i)
    if (cnt[i] != 0) st = cover_range(b.addr + dsp[i] * esize, cnt[i] * esize);
  return st;
}

Status DaemonLink::cover(const off::CollDesc& d, uint32_t n) {
  const bool wide =
      (d.flags & off::kDescCount64) && (d.flags & off::kDescDispl64);
  const uint32_t es = off::elem_size(d);
  Status st = Status::kOk;
  if (d.flags & off::kDescInPlace) {
    // One buffer under both names: cover it once, by the arrays that
    // describe it.
    const bool by_dst = d.dst_displs != 0;
    st = cover_side(d.dst, wide ? (by_dst ? d.dst_counts : d.src_counts) : 0,
                    by_dst ? d.dst_displs : d.src_displs, n, es);
  } else {
    st = cover_side(d.src, wide ? d.src_counts : 0, d.src_displs, n, es);
    if (ok(st))
      st = cover_side(d.dst, wide ? d.dst_counts : 0, d.dst_displs, n, es);
  }
  const uint64_t cw = (d.flags & off::kDescCount64) ? 8 : 4;
  const uint64_t dw = (d.flags & off::kDescDispl64) ? 8 : 4;
  if (ok(st) && d.src_counts != 0) st = cover_range(d.src_counts, cw * n);
  if (ok(st) && d.dst_counts != 0) st = cover_range(d.dst_counts, cw * n);
  if (ok(st) && d.src_displs != 0) st = cover_range(d.src_displs, dw * n);
  if (ok(st) && d.dst_displs != 0) st = cover_range(d.dst_displs, dw * n);
  return st;
}

Status DaemonLink::pin(uint64_t addr, uint64_t len, uint32_t* key) {
  *key = 0;
  uint64_t end;
  if (len == 0 || __builtin_add_overflow(addr, len, &end))
    return Status::kInvalidParam;
  return register_range(addr, len, key);
}

void DaemonLink::unpin(uint32_t key) {
  if (key == 0) return;
  deregister(key);
}

Status DaemonLink::register_range(uint64_t addr, uint64_t len, uint32_t* key,
                                  bool gpu, int dmabuf_fd) {
  proto::Register rq{addr, len, 0, gpu ? proto::kRegGpu : 0u};
  uint32_t slot = 0;
  if (rdma_ != nullptr) {  // the device's key first, for the engine
    Status rs = rdma_->reg(addr, len, &rq.rkey, &slot, gpu, dmabuf_fd);
    if (failed(rs)) return rs;
  }
  proto::RegisterReply r{};
  Status st = call(proto::kRegister, &rq, sizeof(rq), &r, sizeof(r));
  if (ok(st)) st = static_cast<Status>(r.status);
  if (ok(st) && r.key == 0) st = Status::kError;  // keys are never 0
  if (ok(st)) *key = r.key;
  if (rdma_ != nullptr) {
    if (ok(st))
      rdma_->bind(slot, r.key);
    else
      rdma_->drop(slot);
  }
  return st;
}

void DaemonLink::deregister(uint32_t key) {
  proto::Deregister dr{key, 0};
  proto::Reply r{};
  call(proto::kDeregister, &dr, sizeof(dr), &r, sizeof(r));
  if (rdma_ != nullptr) rdma_->release(key);  // the engine has let go
}

}  // namespace ucc::host

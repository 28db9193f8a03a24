#include "platform/mem/mem_access.h"

#include <cerrno>
#include <cstring>

#include "platform/mem/cma.h"
#include "platform/os/clock.h"

namespace ucc::plat {

bool MemAccess::check(const base::BufRef& ref, uint64_t off,
                      uint64_t len) const {
  if (!in_ref(ref, off, len)) return false;
  if (mode_ == Mode::kDirect) return true;
  uint64_t addr;
  if (ref.mem_type != 0 || regs_ == nullptr ||
      __builtin_add_overflow(ref.addr, off, &addr))
    return false;
  return regs_->contains(ref.key, addr, len);
}

bool MemAccess::transfer(bool to_host, const base::BufRef& ref, uint64_t addr,
                         void* local, uint64_t len) const {
  RemoteMem* rm = remote_ != nullptr ? remote_->mem : nullptr;
  if (rm == nullptr) {
    if (pid_ <= 0) {  // an engine that may reach its host by RDMA only
      errno = EPERM;
      return false;
    }
    return cma_transfer(pid_, to_host, addr, local, len);
  }
  uint32_t rkey = 0;
  if (!regs_->lookup(ref.key, addr, len, &rkey)) {  // check() passed
    errno = EFAULT;
    return false;
  }
  return remote_->transfer(to_host ? MemStep::kBufWrite : MemStep::kBufRead,
                           to_host, addr, rkey, local, len);
}

bool RemoteMemSlot::transfer(MemStep step, bool to_host, uint64_t addr,
                             uint32_t rkey, void* local, uint64_t len) const {
  const uint64_t t0 = now_ns();
  const bool ok = to_host ? mem->write(addr, rkey, local, len)
                          : mem->read(addr, rkey, local, len);
  steps.add(step, len, now_ns() - t0);
  return ok;
}

bool MemAccess::read(const base::BufRef& ref, uint64_t off, void* dst,
                     uint64_t len) const {
  if (len == 0) return true;
  if (!check(ref, off, len)) {
    errno = EFAULT;
    return false;
  }
  if (mode_ == Mode::kDirect) {
    memcpy(dst, map(ref, off, len), len);
    return true;
  }
  return transfer(false, ref, ref.addr + off, dst, len);
}

bool MemAccess::write(const base::BufRef& ref, uint64_t off, const void* src,
                      uint64_t len) const {
  if (len == 0) return true;
  if (!check(ref, off, len)) {
    errno = EFAULT;
    return false;
  }
  if (mode_ == Mode::kDirect) {
    memcpy(map(ref, off, len), src, len);
    return true;
  }
  return transfer(true, ref, ref.addr + off, const_cast<void*>(src), len);
}

}  // namespace ucc::plat

#include "platform/mem/mem_access.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

namespace ucc::plat {

bool MemAccess::check(const off::BufRef& ref, uint64_t off,
                      uint64_t len) const {
  if (!in_ref(ref, off, len)) return false;
  if (mode_ == Mode::kDirect) return true;
  uint64_t addr;
  if (ref.mem_type != 0 || regs_ == nullptr ||
      __builtin_add_overflow(ref.addr, off, &addr))
    return false;
  return regs_->contains(ref.key, addr, len);
}

bool MemAccess::transfer(bool to_host, uint64_t addr, void* local,
                         uint64_t len) const {
  // The kernel moves at most about 2 GiB per call and stops early at a
  // page it cannot reach: loop, and let the next call report the error.
  constexpr uint64_t kMaxCall = uint64_t{1} << 30;
  uint64_t done = 0;
  while (done < len) {
    uint64_t n = len - done < kMaxCall ? len - done : kMaxCall;
    iovec loc{static_cast<char*>(local) + done, static_cast<size_t>(n)};
    iovec rem{reinterpret_cast<void*>(static_cast<uintptr_t>(addr + done)),
              static_cast<size_t>(n)};
    ssize_t got = to_host ? process_vm_writev(pid_, &loc, 1, &rem, 1, 0)
                          : process_vm_readv(pid_, &loc, 1, &rem, 1, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (got == 0) {
      errno = EFAULT;
      return false;
    }
    done += static_cast<uint64_t>(got);
  }
  return true;
}

bool MemAccess::read(const off::BufRef& ref, uint64_t off, void* dst,
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
  return transfer(false, ref.addr + off, dst, len);
}

bool MemAccess::write(const off::BufRef& ref, uint64_t off, const void* src,
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
  return transfer(true, ref.addr + off, const_cast<void*>(src), len);
}

}  // namespace ucc::plat

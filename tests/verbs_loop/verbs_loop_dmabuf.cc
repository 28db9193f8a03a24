// dma-buf MRs of the verbs_loop provider (ibv_reg_dmabuf_mr), and the
// copies that move a WR's bytes, into or out of memory and dma-bufs.
//
// A dma-buf here is a regular file (tests/cuda_loop hands out memfds for
// its fake device memory): the fd's current file position is where the
// dma-buf begins in the file, and it extends to the file's end. The
// registering process may close its fd at once, as with a kernel
// dma-buf: the MR keeps its own dup until ibv_dereg_mr. The MR entry
// records that dup's number and the file offset of the MR's iova, so a
// peer opens /proc/<owner>/fd/<dup> and uses pread/pwrite there, where a
// memory MR is reached with process_vm_readv/writev. The device memory
// such a file backs is PROT_NONE to the CPU, so it can be reached only
// through the file.
//
// Errors of ibv_reg_dmabuf_mr follow the kernel (uverbs, ib_umem_dmabuf,
// mlx5): EINVAL for a NULL PD, bad access flags, offset and iova not
// equal within a 4 KiB page, length 0, or a range past the dma-buf's end
// (or overflowing), and for an fd that is no dma-buf (not a regular file
// here); EBADF for an fd that is not open; EOPNOTSUPP with the fault
// nodmabuf=1 (a kernel or NIC without dma-buf support).
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>

#include "verbs_loop_internal.h"
#include "verbs_loop_nic.h"

namespace verbs_loop {
namespace {

constexpr uint64_t kPageMask = 4095;

std::atomic<unsigned long long> g_dmabuf_mrs{0};

// Moves `len` bytes between local and remote iovecs of process `pid`,
// resuming after partial transfers. Returns 0 or an errno value.
int CopyRemote(int32_t pid, iovec* local, int nlocal, iovec* remote,
               int nremote, uint64_t len, bool write) {
  if (nic::Enabled())  // the NIC process moves them (verbs_loop_nic.h)
    return nic::Copy(pid, local, nlocal, remote, nremote, len, write);
  while (len > 0) {
    ssize_t n = write
                    ? process_vm_writev(pid, local, nlocal, remote, nremote, 0)
                    : process_vm_readv(pid, local, nlocal, remote, nremote, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EFAULT;
    len -= uint64_t(n);
    AdvanceIov(&local, &nlocal, size_t(n));
    AdvanceIov(&remote, &nremote, size_t(n));
  }
  return 0;
}

// pread/pwrite of `n` bytes at `off` of `fd`, resuming after partial
// transfers. Returns 0 or an errno value (EFAULT: past the file's end).
int FileIo(int fd, uint8_t* buf, uint64_t n, uint64_t off, bool write) {
  while (n > 0) {
    ssize_t r =
        write ? pwrite(fd, buf, n, off_t(off)) : pread(fd, buf, n, off_t(off));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) return EFAULT;
    buf += r;
    off += uint64_t(r);
    n -= uint64_t(r);
  }
  return 0;
}

// One piece, `n` bytes, between local `l` and remote `r` (both already
// advanced to the piece). A local file stages through `bounce`.
int MovePiece(int32_t pid, const Seg& l, const Seg& r, uint64_t n, bool write,
              uint8_t* bounce) {
  uint8_t* buf = l.fd < 0 ? reinterpret_cast<uint8_t*>(l.addr) : bounce;
  int err = 0;
  if (write && l.fd >= 0) err = FileIo(l.fd, buf, n, l.addr, false);
  if (err == 0 && r.fd >= 0) err = FileIo(r.fd, buf, n, r.addr, write);
  if (err == 0 && r.fd < 0) {
    iovec lv = {buf, size_t(n)};
    iovec rv = {reinterpret_cast<void*>(r.addr), size_t(n)};
    err = CopyRemote(pid, &lv, 1, &rv, 1, n, write);
  }
  if (err == 0 && !write && l.fd >= 0) err = FileIo(l.fd, buf, n, l.addr, true);
  return err;
}

}  // namespace

PeerFiles::~PeerFiles() {
  for (int i = 0; i < n_; ++i) close(fds_[i]);
}

bool PeerFiles::Add(const MrEntry& mr, uint64_t at, uint64_t len, Seg* out) {
  *out = Seg{at, len, -1};
  if (mr.kind != kMrDmabuf) return true;
  if (mr.fd < 0 || n_ == int(kMaxSge)) return false;
  int fd;
  if (mr.owner == self_) {
    // Another context of this process owns it and may deregister it (and
    // close its dup) without our mu: a dup of our own keeps the file.
    fd = fcntl(mr.fd, F_DUPFD_CLOEXEC, 0);
  } else if (nic::Enabled()) {
    fd = nic::OpenPeerFile(mr.owner, mr.fd);
  } else {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", int(mr.owner), int(mr.fd));
    fd = open(path, O_RDWR | O_CLOEXEC);
  }
  if (fd < 0) return false;
  fds_[n_++] = fd;
  out->fd = fd;
  return true;
}

int MoveBytes(int32_t pid, const Seg* local, int nlocal, const Seg* remote,
              int nremote, uint64_t len, bool write, uint8_t* bounce) {
  bool files = false;
  for (int i = 0; i < nlocal; ++i) files = files || local[i].fd >= 0;
  for (int i = 0; i < nremote; ++i) files = files || remote[i].fd >= 0;
  if (!files) {
    // Memory on both sides: one vectored call (or a few, if partial).
    iovec lv[kMaxSge], rv[kMaxSge];
    for (int i = 0; i < nlocal; ++i)
      lv[i] = {reinterpret_cast<void*>(local[i].addr), size_t(local[i].len)};
    for (int i = 0; i < nremote; ++i)
      rv[i] = {reinterpret_cast<void*>(remote[i].addr), size_t(remote[i].len)};
    return CopyRemote(pid, lv, nlocal, rv, nremote, len, write);
  }
  // Walk both lists at once; each step moves the largest piece that is
  // contiguous on both sides (and fits `bounce` when the local side is a
  // file).
  int li = 0, ri = 0;
  uint64_t lo = 0, ro = 0;  // bytes of local[li] and remote[ri] done
  while (len > 0) {
    while (li < nlocal && lo == local[li].len) {
      ++li;
      lo = 0;
    }
    while (ri < nremote && ro == remote[ri].len) {
      ++ri;
      ro = 0;
    }
    if (li == nlocal || ri == nremote) return EFAULT;
    uint64_t n = len;
    if (local[li].len - lo < n) n = local[li].len - lo;
    if (remote[ri].len - ro < n) n = remote[ri].len - ro;
    if (local[li].fd >= 0 && n > kBounce) n = kBounce;
    Seg l = local[li], r = remote[ri];
    l.addr += lo;
    r.addr += ro;
    int err = MovePiece(pid, l, r, n, write, bounce);
    if (err != 0) return err;
    lo += n;
    ro += n;
    len -= n;
  }
  return 0;
}

}  // namespace verbs_loop

using namespace verbs_loop;

extern "C" {

ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length,
                          uint64_t iova, int fd, int access) {
  if (pd == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  if (DmabufRefused()) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  uint64_t end;
  if (!AccessOk(unsigned(access)) || length == 0 ||
      ((offset ^ iova) & kPageMask) != 0 ||
      __builtin_add_overflow(offset, uint64_t(length), &end)) {
    errno = EINVAL;
    return nullptr;
  }
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    errno = EBADF;
    return nullptr;
  }
  off_t begin = S_ISREG(st.st_mode) ? lseek(fd, 0, SEEK_CUR) : -1;
  if (begin < 0 || begin > st.st_size || end > uint64_t(st.st_size - begin)) {
    errno = EINVAL;
    return nullptr;
  }
  int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return nullptr;  // errno from fcntl (EMFILE)
  MrEntry e{};
  e.kind = kMrDmabuf;
  e.fd = dup;
  e.access = unsigned(access);
  e.addr = uint64_t(begin) + offset;
  e.iova = iova;
  e.length = length;
  // As rdma-core fills a dma-buf MR: addr is the offset, not an address.
  ibv_mr* mr = InstallMr(pd, e, reinterpret_cast<void*>(offset), length, dup);
  if (mr == nullptr) {
    int err = errno;
    close(dup);
    errno = err;
    return nullptr;
  }
  g_dmabuf_mrs.fetch_add(1, std::memory_order_relaxed);
  return mr;
}

// Test hook: dma-buf MRs this process registered so far.
unsigned long long verbs_loop_dmabuf_mrs(void) {
  return g_dmabuf_mrs.load(std::memory_order_relaxed);
}

}  // extern "C"

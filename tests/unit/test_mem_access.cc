// Memory access (platform/mem/mem_access.h). Direct mode: bounds against
// the BufRef. Cross-process mode against a forked child that holds a
// buffer: reads and writes through process_vm_readv/writev inside the
// registrations and across pages, refusals outside them that leave the
// child's memory as it was, registered but unmapped memory, and a dead
// process, which fail cleanly.
//
// Cross-memory attach needs ptrace access to the target. A parent may
// always reach its own child unless Yama's ptrace_scope is 2 or 3, or a
// seccomp filter forbids process_vm_readv; then these tests skip and say
// so (allow it with `echo 1 > /proc/sys/kernel/yama/ptrace_scope`, or run
// the container with --cap-add SYS_PTRACE).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "platform/mem/mem_access.h"
#include "tests/unit/cma_probe.h"

namespace {

using ucc::base::BufRef;
using ucc::base::Status;
using ucc::plat::MemAccess;
using ucc::plat::RegTable;

BufRef ref_of(const void* p, uint64_t bytes, uint32_t key = 0) {
  return BufRef{reinterpret_cast<uintptr_t>(p), bytes, key, 0, {0, 0, 0}};
}

TEST(MemAccess, DirectMapsInsideTheReferenceOnly) {
  char buf[64];
  MemAccess m;  // direct by default
  EXPECT_EQ(m.mode(), MemAccess::Mode::kDirect);
  EXPECT_FALSE(m.needs_bounce());
  BufRef r = ref_of(buf, sizeof(buf));
  EXPECT_EQ(m.map(r, 0, 64), buf);
  EXPECT_EQ(m.map(r, 10, 54), buf + 10);
  EXPECT_EQ(m.map(r, 64, 0), buf + 64);
  EXPECT_EQ(m.map(r, 10, 55), nullptr);
  EXPECT_EQ(m.map(r, 65, 0), nullptr);
  EXPECT_EQ(m.map(r, 1, UINT64_MAX), nullptr);  // off + len wraps
  char out[8];
  memcpy(buf, "abcdefgh", 8);
  ASSERT_TRUE(m.read(r, 2, out, 4));
  EXPECT_EQ(memcmp(out, "cdef", 4), 0);
  ASSERT_TRUE(m.write(r, 60, "WXYZ", 4));
  EXPECT_EQ(memcmp(buf + 60, "WXYZ", 4), 0);
  errno = 0;
  EXPECT_FALSE(m.write(r, 61, "WXYZ", 4));
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(memcmp(buf + 60, "WXYZ", 4), 0);
  EXPECT_TRUE(m.read(r, 1000, out, 0));  // empty: nothing to do
}

TEST(MemAccess, CrossProcessWithoutRegistrationsRefusesEverything) {
  char buf[16] = "untouched";
  MemAccess m = MemAccess::cross_process(getpid(), nullptr);
  EXPECT_TRUE(m.needs_bounce());
  BufRef r = ref_of(buf, sizeof(buf));
  EXPECT_EQ(m.map(r, 0, 1), nullptr);
  EXPECT_FALSE(m.check(r, 0, 1));
  EXPECT_FALSE(m.write(r, 0, "X", 1));
  EXPECT_STREQ(buf, "untouched");
}

TEST(MemAccess, CrossProcessOnSelfChecksKeysAndMemType) {
  SKIP_WITHOUT_CMA_HERE();
  static char buf[256];
  RegTable regs;
  ASSERT_EQ(regs.init(8), Status::kOk);
  uint32_t k = regs.insert(reinterpret_cast<uintptr_t>(buf + 64), 128);
  ASSERT_NE(k, 0u);
  MemAccess m = MemAccess::cross_process(getpid(), &regs);
  memset(buf, 'a', sizeof(buf));
  EXPECT_TRUE(m.write(ref_of(buf + 64, 128, k), 0, "hello", 5));
  EXPECT_EQ(memcmp(buf + 64, "hello", 5), 0);
  EXPECT_TRUE(m.write(ref_of(buf + 100, 10, 0), 0, "implicit", 8));
  EXPECT_EQ(memcmp(buf + 100, "implicit", 8), 0);
  // Partly outside the registration, a wrong key, GPU memory.
  EXPECT_FALSE(m.write(ref_of(buf + 60, 16, k), 0, "XXXXXXXX", 8));
  EXPECT_FALSE(m.write(ref_of(buf + 64, 16, k + 1), 0, "XXXXXXXX", 8));
  BufRef gpu = ref_of(buf + 64, 16, k);
  gpu.mem_type = 1;
  EXPECT_FALSE(m.write(gpu, 0, "XXXXXXXX", 8));
  EXPECT_EQ(buf[60], 'a');
  EXPECT_EQ(memcmp(buf + 64, "hello", 5), 0);
  // The reference's own bounds still hold inside a registration.
  EXPECT_FALSE(m.check(ref_of(buf + 64, 8, k), 4, 5));
  EXPECT_TRUE(m.check(ref_of(buf + 64, 8, k), 4, 4));
}

// A remote-memory transport that records what it is asked (the
// interface's other implementation is verbs RDMA: verbs_channel.h) and
// moves the bytes itself, as a NIC would.
struct RecordingRemote final : ucc::plat::RemoteMem {
  uint64_t addr = 0, len = 0;
  uint32_t rkey = 0, calls = 0;
  bool read(uint64_t a, uint32_t k, void* dst, uint64_t n) override {
    addr = a, rkey = k, len = n, ++calls;
    memcpy(dst, reinterpret_cast<const void*>(a), n);
    return true;
  }
  bool write(uint64_t a, uint32_t k, const void* src, uint64_t n) override {
    addr = a, rkey = k, len = n, ++calls;
    memcpy(reinterpret_cast<void*>(a), src, n);
    return true;
  }
};

// Once the client's remote-memory slot is filled, transfers go through it
// with the key of the registration that holds them (keyed or implicit),
// after the same checks; before, cross-memory attach does them.
TEST(MemAccess, RemoteMemoryTakesTheRegistrationsKey) {
  SKIP_WITHOUT_CMA_HERE();
  static char buf[512];
  RegTable regs;
  ASSERT_EQ(regs.init(8), Status::kOk);
  uint32_t k = regs.insert(reinterpret_cast<uintptr_t>(buf + 64), 256, 0x77);
  ASSERT_NE(k, 0u);
  ucc::plat::RemoteMemSlot slot;
  RecordingRemote rm;
  MemAccess m = MemAccess::cross_process(getpid(), &regs, &slot);
  EXPECT_TRUE(m.write(ref_of(buf + 64, 8, k), 0, "by cma", 6));
  EXPECT_EQ(rm.calls, 0u);
  slot.mem = &rm;
  EXPECT_TRUE(m.write(ref_of(buf + 80, 16, k), 2, "by rdma", 7));
  EXPECT_EQ(rm.calls, 1u);
  EXPECT_EQ(rm.addr, reinterpret_cast<uintptr_t>(buf + 82));
  EXPECT_EQ(rm.rkey, 0x77u);
  EXPECT_EQ(memcmp(buf + 82, "by rdma", 7), 0);
  char back[7];
  EXPECT_TRUE(m.read(ref_of(buf + 82, 7, 0), 0, back, 7));  // implicit
  EXPECT_EQ(rm.rkey, 0x77u);
  EXPECT_EQ(memcmp(back, "by rdma", 7), 0);
  // Outside the registrations: refused before the transport is asked.
  EXPECT_FALSE(m.write(ref_of(buf + 316, 64, 0), 0, "XXXXXXXX", 8));
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(rm.calls, 2u);
}

// A child that holds `bytes` bytes at the same address as the parent's
// copy (fork), filled with its own pattern. Commands over a pipe:
// 'r' sends the buffer back, 'q' exits.
class Child {
 public:
  explicit Child(size_t bytes) : bytes_(bytes) {
    buf_ = static_cast<unsigned char*>(malloc(bytes));
    memset(buf_, 0x11, bytes);  // the parent's copy
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0) abort();
    pid_ = fork();
    if (pid_ == 0) {
      close(up[0]);
      close(down[1]);
      for (size_t i = 0; i < bytes; ++i)
        buf_[i] = static_cast<unsigned char>(i * 7 + 3);
      char c = 'y';
      if (::write(up[1], &c, 1) != 1) _exit(1);
      while (::read(down[0], &c, 1) == 1 && c == 'r') {
        size_t done = 0;
        while (done < bytes) {
          ssize_t n = ::write(up[1], buf_ + done, bytes - done);
          if (n <= 0) _exit(1);
          done += static_cast<size_t>(n);
        }
      }
      _exit(0);
    }
    close(up[1]);
    close(down[0]);
    from_ = up[0];
    to_ = down[1];
    char c = 0;
    ready_ = ::read(from_, &c, 1) == 1 && c == 'y';
  }
  ~Child() {
    stop();
    close(from_);
    close(to_);
    free(buf_);
  }
  bool ready() const { return ready_; }
  pid_t pid() const { return pid_; }
  unsigned char* addr() const { return buf_; }
  // The child's buffer as it is now.
  std::vector<unsigned char> contents() {
    std::vector<unsigned char> v(bytes_);
    char c = 'r';
    if (::write(to_, &c, 1) != 1) return {};
    size_t done = 0;
    while (done < bytes_) {
      ssize_t n = ::read(from_, v.data() + done, bytes_ - done);
      if (n <= 0) return {};
      done += static_cast<size_t>(n);
    }
    return v;
  }
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  size_t bytes_;
  unsigned char* buf_ = nullptr;
  pid_t pid_ = -1;
  int from_ = -1, to_ = -1;
  bool ready_ = false;
};

// Skips the calling test when the kernel refuses cross-memory attach.
#define SKIP_WITHOUT_CMA(child)                                           \
  do {                                                                    \
    unsigned char probe;                                                  \
    iovec l{&probe, 1}, r{(child).addr(), 1};                             \
    if (process_vm_readv((child).pid(), &l, 1, &r, 1, 0) != 1) {          \
      if (errno == EPERM || errno == ENOSYS)                              \
        GTEST_SKIP() << "process_vm_readv refused (" << strerror(errno)   \
                     << "): allow ptrace of children (Yama ptrace_scope " \
                        "<= 1) or CAP_SYS_PTRACE";                        \
      FAIL() << "process_vm_readv: " << strerror(errno);                  \
    }                                                                     \
  } while (0)

TEST(MemAccessCross, ReadsAndWritesAChildInsideItsRegistrations) {
  constexpr size_t kBytes = 3 * 4096 + 100;  // spans pages
  Child child(kBytes);
  ASSERT_TRUE(child.ready());
  SKIP_WITHOUT_CMA(child);
  const uint64_t base = reinterpret_cast<uintptr_t>(child.addr());
  RegTable regs;
  ASSERT_EQ(regs.init(), Status::kOk);
  // Registered: the first 8 KiB (by key) and the tail from 10000 (implicit
  // lookups); bytes [8192, 10000) are not.
  uint32_t head = regs.insert(base, 8192);
  uint32_t tail = regs.insert(base + 10000, kBytes - 10000);
  ASSERT_NE(head, 0u);
  ASSERT_NE(tail, 0u);
  MemAccess m = MemAccess::cross_process(child.pid(), &regs);
  EXPECT_EQ(m.map(ref_of(child.addr(), 8192, head), 0, 1), nullptr);

  // Read the child's pattern (our own copy is all 0x11).
  std::vector<unsigned char> got(8192);
  ASSERT_TRUE(m.read(ref_of(child.addr(), 8192, head), 0, got.data(), 8192));
  for (size_t i = 0; i < 8192; ++i)
    ASSERT_EQ(got[i], static_cast<unsigned char>(i * 7 + 3)) << i;
  std::vector<unsigned char> t(kBytes - 10000);
  ASSERT_TRUE(
      m.read(ref_of(child.addr() + 10000, t.size(), 0), 0, t.data(), t.size()));
  EXPECT_EQ(t[0], static_cast<unsigned char>(10000 * 7 + 3));

  // Write across a page boundary inside the head registration.
  std::vector<unsigned char> w(5000, 0xab);
  ASSERT_TRUE(m.write(ref_of(child.addr(), 8192, head), 1000, w.data(), 5000));
  // Refused: straddling the unregistered gap, inside the gap, a wrong key,
  // and beyond the reference's own length.
  errno = 0;
  EXPECT_FALSE(
      m.write(ref_of(child.addr(), kBytes, head), 8000, w.data(), 500));
  EXPECT_EQ(errno, EFAULT);
  EXPECT_FALSE(m.write(ref_of(child.addr() + 8192, 100, 0), 0, w.data(), 100));
  EXPECT_FALSE(
      m.write(ref_of(child.addr() + 10000, 100, head), 0, w.data(), 100));
  EXPECT_FALSE(m.write(ref_of(child.addr(), 100, head), 50, w.data(), 51));
  EXPECT_FALSE(m.read(ref_of(child.addr() + 8192, 16, 0), 0, got.data(), 16));

  std::vector<unsigned char> now = child.contents();
  ASSERT_EQ(now.size(), kBytes);
  for (size_t i = 0; i < kBytes; ++i) {
    unsigned char want =
        i >= 1000 && i < 6000 ? 0xab : static_cast<unsigned char>(i * 7 + 3);
    ASSERT_EQ(now[i], want) << "byte " << i;
  }
  // Our own copy was never the target.
  for (size_t i = 0; i < kBytes; ++i) ASSERT_EQ(child.addr()[i], 0x11);
}

TEST(MemAccessCross, RegisteredButUnmappedMemoryFailsCleanly) {
  Child child(4096);
  ASSERT_TRUE(child.ready());
  SKIP_WITHOUT_CMA(child);
  RegTable regs;
  ASSERT_EQ(regs.init(4), Status::kOk);
  // Page 0 is never mapped; a lying registration does not make it so.
  ASSERT_NE(regs.insert(4096, 4096), 0u);
  MemAccess m = MemAccess::cross_process(child.pid(), &regs);
  BufRef r{4096, 4096, 0, 0, {0, 0, 0}};
  char buf[64];
  errno = 0;
  EXPECT_FALSE(m.read(r, 0, buf, sizeof(buf)));
  EXPECT_EQ(errno, EFAULT);
  EXPECT_FALSE(m.write(r, 0, buf, sizeof(buf)));
}

TEST(MemAccessCross, ADeadProcessFailsCleanly) {
  Child child(4096);
  ASSERT_TRUE(child.ready());
  SKIP_WITHOUT_CMA(child);
  pid_t pid = child.pid();
  RegTable regs;
  ASSERT_EQ(regs.init(4), Status::kOk);
  ASSERT_NE(regs.insert(reinterpret_cast<uintptr_t>(child.addr()), 4096), 0u);
  MemAccess m = MemAccess::cross_process(pid, &regs);
  child.stop();  // killed and reaped: the pid names nobody
  char buf[64];
  errno = 0;
  EXPECT_FALSE(m.read(ref_of(child.addr(), 4096), 0, buf, sizeof(buf)));
  EXPECT_EQ(errno, ESRCH);
  errno = 0;
  EXPECT_FALSE(m.write(ref_of(child.addr(), 4096), 0, buf, sizeof(buf)));
  EXPECT_EQ(errno, ESRCH);
}

}  // namespace

#include "platform/mem/tcp_mem.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "platform/mem/cma.h"
#include "platform/os/crypto.h"
#include "platform/os/log.h"
#include "platform/os/sock.h"

namespace ucc::plat {
namespace {

constexpr size_t kFrame = sizeof(TcpMemFrame);
constexpr size_t kStage = kFrame + kTcpMemMaxOp + kTcpMemTagBytes;

// The tag of frame and payload (n bytes at b), written at b + n.
bool put_tag(const uint8_t key[32], uint8_t* b, size_t n) {
  uint8_t full[kMacBytes];
  if (!mac(key, 32, b, n, full)) return false;
  memcpy(b + n, full, kTcpMemTagBytes);
  return true;
}

// Whether the kTcpMemTagBytes at b + n are the tag of b[0, n).
bool tag_ok(const uint8_t key[32], const uint8_t* b, size_t n) {
  uint8_t want[kMacBytes];
  return mac(key, 32, b, n, want) && tag_equal(want, b + n, kTcpMemTagBytes);
}

// A connected socket, blocking, its sends bounded by timeout_ms.
void blocking(int fd, int timeout_ms) {
  const int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// One aligned word of the channel, whole: a release store, or an acquire
// load.
template <typename W>
void word(void* p, uint8_t* data, bool wr) {
  auto* w = static_cast<W*>(p);
  W v;
  if (wr) {
    memcpy(&v, data, sizeof(v));
    __atomic_store_n(w, v, __ATOMIC_RELEASE);
  } else {
    v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    memcpy(data, &v, sizeof(v));
  }
}

}  // namespace

// --- the engine's end --------------------------------------------------------

TcpMemClient::~TcpMemClient() {
  if (fd_ >= 0) close(fd_);
}

bool TcpMemClient::init(int fd, const uint8_t key[32], uint32_t timeout_ms) {
  if (!stage_.init(kStage, 8)) {
    close(fd);
    return false;
  }
  fd_ = fd;
  memcpy(key_, key, sizeof(key_));
  timeout_ms_ = static_cast<int>(timeout_ms);
  blocking(fd_, timeout_ms_);
  return true;
}

void TcpMemClient::fail(int err) {
  if (fd_ >= 0) {
    UCC_INFO("dpu (TCP fallback): the memory channel to the host broke (%s)",
             strerror(err));
    close(fd_);
    fd_ = -1;
  }
  errno = err;
}

bool TcpMemClient::call(uint8_t op, uint64_t addr, uint32_t rkey,
                        uint32_t count, const void* src, void* dst) {
  if (fd_ < 0) {
    errno = EIO;
    return false;
  }
  TcpMemFrame f{
      kTcpMemMagic, 'E',    op,   0,    0,
      count,        ++seq_, addr, rkey, op == kTcpMemWrite ? count : 0};
  uint8_t* b = stage_.data();
  memcpy(b, &f, kFrame);
  if (f.len != 0) memcpy(b + kFrame, src, f.len);
  const size_t n = kFrame + f.len;
  if (!put_tag(key_, b, n) ||
      !sock::send_all(fd_, b, n + kTcpMemTagBytes, nullptr, 0)) {
    fail(errno == EAGAIN ? ETIMEDOUT : EIO);
    return false;
  }
  TcpMemFrame a;
  const int r = sock::recv_all(fd_, &a, kFrame, timeout_ms_);
  if (r != 1) {
    fail(r < 0 ? ETIMEDOUT : EIO);
    return false;
  }
  const uint32_t want = op == kTcpMemRead && a.status == 0 ? count : 0;
  if (a.magic != kTcpMemMagic || a.from != 'H' || a.op != kTcpMemAnswer ||
      a.seq != f.seq || a.len != want) {
    UCC_ERROR("dpu (TCP fallback): a malformed answer from the host");
    fail(EIO);
    return false;
  }
  memcpy(b, &a, kFrame);
  if (sock::recv_all(fd_, b + kFrame, a.len + kTcpMemTagBytes, timeout_ms_) !=
          1 ||
      !tag_ok(key_, b, kFrame + a.len)) {
    UCC_ERROR("dpu (TCP fallback): an answer from the host failed its tag");
    fail(EIO);
    return false;
  }
  if (a.status != 0) {
    errno = EFAULT;  // the host refused the range; the channel still works
    return false;
  }
  if (want != 0) memcpy(dst, b + kFrame, want);
  return true;
}

bool TcpMemClient::read(uint64_t addr, uint32_t rkey, void* dst, uint64_t len) {
  auto* d = static_cast<uint8_t*>(dst);
  for (uint64_t done = 0; done < len;) {
    const uint64_t n = len - done < kTcpMemMaxOp ? len - done : kTcpMemMaxOp;
    if (!call(kTcpMemRead, addr + done, rkey, static_cast<uint32_t>(n), nullptr,
              d + done))
      return false;
    done += n;
  }
  return true;
}

bool TcpMemClient::write(uint64_t addr, uint32_t rkey, const void* src,
                         uint64_t len) {
  const auto* s = static_cast<const uint8_t*>(src);
  for (uint64_t done = 0; done < len;) {
    const uint64_t n = len - done < kTcpMemMaxOp ? len - done : kTcpMemMaxOp;
    if (!call(kTcpMemWrite, addr + done, rkey, static_cast<uint32_t>(n),
              s + done, nullptr))
      return false;
    done += n;
  }
  return true;
}

// --- the host's end ----------------------------------------------------------

TcpMemServer::~TcpMemServer() {
  if (running_) {
    // The thread may sit in recv(): this wakes it with end-of-file.
    shutdown(fd_, SHUT_RDWR);
    pthread_join(thread_, nullptr);
  }
  if (fd_ >= 0) close(fd_);
}

Status TcpMemServer::open(uint32_t nregs, uint64_t stable,
                          uint64_t stable_len) {
  if (!ranges_.init(nregs) || !stage_.init(kStage, 8)) return Status::kNoMemory;
  stable_ = stable;
  stable_len_ = stable_len;
  return Status::kOk;
}

Status TcpMemServer::start(int fd, const uint8_t key[32], uint32_t timeout_ms) {
  fd_ = fd;
  memcpy(key_, key, sizeof(key_));
  timeout_ms_ = static_cast<int>(timeout_ms);
  blocking(fd_, timeout_ms_);
  // The thread takes no signals: the application's handlers run on its
  // own threads, as they would without this one.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = pthread_create(&thread_, nullptr, &TcpMemServer::main, this);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    UCC_ERROR("dpu (TCP fallback): cannot start the memory thread: %s",
              strerror(rc));
    return Status::kError;  // the destructor closes fd
  }
  running_ = true;
  return Status::kOk;
}

void* TcpMemServer::main(void* self) {
  static_cast<TcpMemServer*>(self)->serve();
  return nullptr;
}

void TcpMemServer::serve() {
  uint8_t* b = stage_.data();
  uint64_t next = 1;
  for (;;) {
    TcpMemFrame f;
    // Idle: blocked here, costing nothing, until the engine asks; the
    // rest of the frame must follow within the timeout.
    auto* fb = reinterpret_cast<uint8_t*>(&f);
    if (sock::recv_all(fd_, fb, 1, -1) != 1 ||
        sock::recv_all(fd_, fb + 1, kFrame - 1, timeout_ms_) != 1)
      break;
    const bool shape = f.magic == kTcpMemMagic && f.from == 'E' &&
                       (f.op == kTcpMemRead || f.op == kTcpMemWrite) &&
                       f.seq == next && f.count <= kTcpMemMaxOp &&
                       f.len == (f.op == kTcpMemWrite ? f.count : 0);
    if (!shape) {
      UCC_ERROR(
          "dpu (TCP fallback): a malformed memory request from the engine; "
          "closing the channel");
      break;
    }
    memcpy(b, &f, kFrame);
    if (sock::recv_all(fd_, b + kFrame, f.len + kTcpMemTagBytes, timeout_ms_) !=
        1)
      break;
    if (!tag_ok(key_, b, kFrame + f.len)) {
      UCC_ERROR(
          "dpu (TCP fallback): a memory request failed its tag (forged or "
          "corrupted); closing the channel");
      break;
    }
    ++next;
    TcpMemFrame a{kTcpMemMagic, 'H',   kTcpMemAnswer, 0,      0,
                  f.count,      f.seq, f.addr,        f.rkey, 0};
    a.status = access(f, b + kFrame);
    if (a.status == 0 && f.op == kTcpMemRead) a.len = f.count;
    memcpy(b, &a, kFrame);
    const size_t n = kFrame + a.len;
    if (!put_tag(key_, b, n) ||
        !sock::send_all(fd_, b, n + kTcpMemTagBytes, nullptr, 0))
      break;
    served_.fetch_add(1, std::memory_order_relaxed);
  }
  // The engine hears of it at once (end-of-file); the descriptor itself
  // stays until the destructor, so its number cannot be reused under us.
  shutdown(fd_, SHUT_RDWR);
  done_.store(true, std::memory_order_release);
}

int32_t TcpMemServer::access(const TcpMemFrame& f, uint8_t* data) {
  uint64_t end = 0;
  if (__builtin_add_overflow(f.addr, uint64_t{f.count}, &end)) return EFAULT;
  std::lock_guard<std::mutex> g(mu_);
  bool found = false;
  for (size_t i = 0; i < ranges_.size() && !found; ++i) {
    const Range& r = ranges_[i];
    found = r.rkey != 0 && r.rkey == f.rkey && f.addr >= r.addr &&
            end <= r.addr + r.len;
  }
  if (!found) return EFAULT;
  const bool wr = f.op == kTcpMemWrite;
  if (f.addr < stable_ || end > stable_ + stable_len_) {
    // A user range: it may have been unmapped since it was registered
    // (the link caches registrations), so the kernel copies, and says
    // EFAULT instead of faulting this thread.
    return cma_transfer(getpid(), wr, f.addr, data, f.count) ? 0 : EFAULT;
  }
  // The channel: ours for as long as we live. Its words (ring indices,
  // completion words, the idle flag) move whole, ordered as on RDMA: a
  // completion word written after the data releases it.
  void* p = reinterpret_cast<void*>(static_cast<uintptr_t>(f.addr));
  if (f.count == 8 && f.addr % 8 == 0) {
    word<uint64_t>(p, data, wr);
  } else if (f.count == 4 && f.addr % 4 == 0) {
    word<uint32_t>(p, data, wr);
  } else if (wr) {
    memcpy(p, data, f.count);
  } else {
    memcpy(data, p, f.count);
  }
  return 0;
}

// --- registrations -----------------------------------------------------------

Status TcpMemServer::connect(const RemoteMemAddr&) { return Status::kOk; }

Status TcpMemServer::reg(uint64_t addr, uint64_t len, uint32_t* rkey,
                         uint32_t* slot, bool gpu, int) {
  if (gpu) return Status::kNotSupported;
  uint64_t end = 0;
  if (len == 0 || __builtin_add_overflow(addr, len, &end))
    return Status::kInvalidParam;
  // A fresh random key per range, as a device gives: the engine cannot
  // name a range it was not told of.
  uint32_t k = 0;
  while (k == 0)
    if (!random_bytes(&k, sizeof(k))) return Status::kError;
  std::lock_guard<std::mutex> g(mu_);
  for (uint32_t i = 0; i < ranges_.size(); ++i) {
    Range& r = ranges_[i];
    if (r.rkey != 0) continue;
    r = Range{addr, len, k, 0};
    *rkey = k;
    *slot = i;
    return Status::kOk;
  }
  return Status::kNoResource;
}

void TcpMemServer::bind(uint32_t slot, uint32_t key) {
  std::lock_guard<std::mutex> g(mu_);
  ranges_[slot].key = key;
}

void TcpMemServer::drop(uint32_t slot) {
  std::lock_guard<std::mutex> g(mu_);
  ranges_[slot] = Range{};
}

void TcpMemServer::release(uint32_t key) {
  std::lock_guard<std::mutex> g(mu_);
  for (uint32_t i = 0; i < ranges_.size(); ++i)
    if (ranges_[i].rkey != 0 && ranges_[i].key == key) {
      ranges_[i] = Range{};
      return;
    }
}

}  // namespace ucc::plat

#include "firmware_sim/client_io.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ucc::fw {

namespace proto = off::proto;

void ClientIo::init(int fd) {
  fini();
  fd_ = fd;
}

void ClientIo::fini() {
  reset_in();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  ohead_ = olen_ = 0;
}

int ClientIo::release() {
  reset_in();
  const int fd = fd_;
  fd_ = -1;
  ohead_ = olen_ = 0;
  return fd;
}

void ClientIo::reset_in() {
  if (body_ != nullptr && body_ != small_) free(body_);
  body_ = nullptr;
  if (pass_fd_ >= 0) close(pass_fd_);
  pass_fd_ = -1;
  hgot_ = bgot_ = 0;
}

// recvmsg without waiting; descriptors that come along: the first kept
// for the request being read, every other closed. >0 bytes, 0 at the end
// of the stream, -EAGAIN when the socket has nothing now, other -errno.
ssize_t ClientIo::recv_some(void* buf, size_t len) {
  iovec iov{buf, len};
  alignas(cmsghdr) char ctl[CMSG_SPACE(4 * sizeof(int))];
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof(ctl);
  ssize_t n;
  do {
    n = recvmsg(fd_, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < nfds; ++i) {
      int f;
      memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (pass_fd_ < 0)
        pass_fd_ = f;
      else
        close(f);
    }
  }
  return n;
}

ClientIo::In ClientIo::read(Msg* m, uint64_t now_ms) {
  for (;;) {
    const bool in_header = hgot_ < sizeof(h_);
    if (!in_header && bgot_ == h_.len) {
      // A whole request: hand it over (with its descriptor).
      m->h = h_;
      m->fd = pass_fd_;
      m->body = body_;
      pass_fd_ = -1;
      hgot_ = bgot_ = 0;
      return In::kMessage;
    }
    unsigned char* at = in_header ? reinterpret_cast<unsigned char*>(&h_) + hgot_
                                  : body_ + bgot_;
    const size_t want = in_header ? sizeof(h_) - hgot_ : h_.len - bgot_;
    const ssize_t n = recv_some(at, want);
    if (n == -EAGAIN || n == -EWOULDBLOCK) return In::kMore;
    if (n <= 0) return In::kBroken;
    if (hgot_ == 0 && bgot_ == 0) in_since_ = now_ms;
    if (!in_header) {
      bgot_ += static_cast<size_t>(n);
      continue;
    }
    hgot_ += static_cast<size_t>(n);
    if (hgot_ < sizeof(h_)) continue;
    // The header is in: check the framing before taking a body.
    if (h_.magic != proto::kMagic || h_.version != proto::kVersion ||
        h_.len > proto::kMaxBody)
      return In::kBroken;
    if (body_ != nullptr && body_ != small_) free(body_);
    body_ = small_;
    if (h_.len > kSmall) {
      body_ = static_cast<unsigned char*>(malloc(h_.len));
      if (body_ == nullptr) return In::kBroken;
    }
    bgot_ = 0;
  }
}

bool ClientIo::send(const void* hdr, size_t hlen, const void* body,
                    size_t blen, uint64_t now_ms) {
  if (olen_ + hlen + blen > kOutCap) return false;
  if (olen_ == 0) out_since_ = now_ms;
  // Into the queue behind what is waiting, then as much out as goes.
  const auto put = [&](const void* p, size_t n) {
    for (size_t done = 0; done < n;) {
      const size_t at = (ohead_ + olen_) % kOutCap;
      const size_t run = n - done < kOutCap - at ? n - done : kOutCap - at;
      memcpy(out_ + at, static_cast<const unsigned char*>(p) + done, run);
      olen_ += run;
      done += run;
    }
  };
  put(hdr, hlen);
  if (blen != 0) put(body, blen);
  return flush();
}

bool ClientIo::flush() {
  while (olen_ != 0) {
    const size_t run = olen_ < kOutCap - ohead_ ? olen_ : kOutCap - ohead_;
    ssize_t n;
    do {
      n = ::send(fd_, out_ + ohead_, run, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    ohead_ = (ohead_ + static_cast<size_t>(n)) % kOutCap;
    olen_ -= static_cast<size_t>(n);
  }
  ohead_ = 0;
  return true;
}

bool ClientIo::overdue(uint64_t now_ms, uint64_t limit_ms) const {
  const bool half_in = hgot_ != 0 || bgot_ != 0;
  return (half_in && now_ms - in_since_ > limit_ms) ||
         (olen_ != 0 && now_ms - out_since_ > limit_ms);
}

}  // namespace ucc::fw

#include "platform/os/sock.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "platform/os/log.h"

namespace ucc::plat::sock {
namespace {

bool fill_addr(const char* path, sockaddr_un* a) {
  memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof(a->sun_path)) return false;
  memcpy(a->sun_path, path, n);
  return true;
}

}  // namespace

namespace {

// Binds with a umask that leaves the socket file to its owner alone,
// whatever umask the process inherited (an auto-started daemon inherits
// its first client's).
int bind_private(int s, const sockaddr_un& a) {
  const mode_t old = umask(077);
  const int r = bind(s, reinterpret_cast<const sockaddr*>(&a), sizeof(a));
  const int e = errno;
  umask(old);
  errno = e;
  return r;
}

// A directory only this user can use: a real directory (not a link),
// owned by us, with no group or other permissions.
bool private_dir(const char* dir) {
  struct stat sb;
  return lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) &&
         sb.st_uid == geteuid() && (sb.st_mode & 077) == 0;
}

}  // namespace

int private_socket_path(char* buf, size_t n, const char* name) {
  const char* xdg = getenv("XDG_RUNTIME_DIR");
  char dir[200];
  if (xdg != nullptr && xdg[0] == '/') {
    if (!private_dir(xdg)) {
      UCC_ERROR(
          "XDG_RUNTIME_DIR=%s is not a directory of this user's alone "
          "(owner uid %u, mode 0700): refusing to put a socket there",
          xdg, static_cast<unsigned>(geteuid()));
      return -EPERM;
    }
    snprintf(dir, sizeof(dir), "%s", xdg);
  } else {
    snprintf(dir, sizeof(dir), "/tmp/ucc-%u", static_cast<unsigned>(geteuid()));
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
      UCC_ERROR("cannot make %s: %s", dir, strerror(errno));
      return -errno;
    }
    if (!private_dir(dir)) {
      UCC_ERROR(
          "%s is not a directory of this user's alone (owner uid %u, mode "
          "0700): another user may be squatting it; refusing to use it",
          dir, static_cast<unsigned>(geteuid()));
      return -EPERM;
    }
  }
  if (snprintf(buf, n, "%s/%s", dir, name) >= static_cast<int>(n))
    return -ENAMETOOLONG;
  return 0;
}

int listen_at(const char* path, bool any_user) {
  sockaddr_un a;
  if (!fill_addr(path, &a)) return -ENAMETOOLONG;
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -errno;
  if (bind_private(s, a) != 0) {
    int e = errno;
    if (e == EADDRINUSE) {
      // Someone listening there? Then it is theirs; else the file is stale.
      int c = connect_to(path);
      if (c >= 0) {
        close(c);
        close(s);
        return -EADDRINUSE;
      }
      unlink(path);
      if (bind_private(s, a) == 0)
        e = 0;
      else
        e = errno;
    }
    if (e != 0) {
      close(s);
      return -e;
    }
  }
  if ((any_user && chmod(path, 0666) != 0) || listen(s, 64) != 0) {
    int e = errno;
    close(s);
    if (any_user) unlink(path);
    return -e;
  }
  return s;
}

int connect_to(const char* path) {
  sockaddr_un a;
  if (!fill_addr(path, &a)) return -ENAMETOOLONG;
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -errno;
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    int e = errno;
    close(s);
    return -e;
  }
  return s;
}

// "host:port" into an IPv4 address; false when it is not one.
bool parse_tcp(const char* addr, sockaddr_in* out) {
  const char* colon = addr != nullptr ? strrchr(addr, ':') : nullptr;
  if (colon == nullptr || colon == addr) return false;
  char host[256];
  const size_t hl = static_cast<size_t>(colon - addr);
  if (hl >= sizeof(host)) return false;
  memcpy(host, addr, hl);
  host[hl] = 0;
  char* end = nullptr;
  const long port = strtol(colon + 1, &end, 10);
  if (end == colon + 1 || *end != 0 || port < 1 || port > 65535) return false;
  memset(out, 0, sizeof(*out));
  out->sin_family = AF_INET;
  out->sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host, &out->sin_addr) == 1) return true;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host, nullptr, &hints, &res) != 0 || res == nullptr)
    return false;
  out->sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return true;
}

int tcp_listen(const char* addr) {
  sockaddr_in a;
  if (!parse_tcp(addr, &a)) return -EINVAL;
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return -errno;
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(s, 256) != 0) {
    const int e = errno;
    close(s);
    return -e;
  }
  return s;
}

int tcp_connect(const char* addr, int timeout_ms) {
  sockaddr_in a;
  if (!parse_tcp(addr, &a)) return -EINVAL;
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return -errno;
  int r = connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  if (r != 0 && errno == EINPROGRESS) {
    pollfd pf{s, POLLOUT, 0};
    int e = 0;
    socklen_t el = sizeof(e);
    r = poll(&pf, 1, timeout_ms);
    if (r == 1 && getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0)
      r = 0;
    else
      errno = r == 0 ? ETIMEDOUT : (e != 0 ? e : errno);
  }
  if (r != 0) {
    const int e = errno;
    close(s);
    return -e;
  }
  // Blocking from now on: the callers' reads and writes wait with poll.
  fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK);
  return s;
}

void tcp_tune(int s, uint32_t timeout_ms) {
  int one = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  const int idle =
      static_cast<int>(timeout_ms / 4000 > 0 ? timeout_ms / 4000 : 1);
  const int cnt = 3;
  setsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(s, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
  setsockopt(s, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
  const unsigned user = timeout_ms;
  setsockopt(s, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof(user));
}

bool send_all(int s, const void* hdr, size_t hlen, const void* body,
              size_t blen, int fd) {
  iovec iov[2];
  int n = 0;
  if (hlen != 0) iov[n++] = iovec{const_cast<void*>(hdr), hlen};
  if (blen != 0) iov[n++] = iovec{const_cast<void*>(body), blen};
  int first = 0;
  bool fd_sent = fd < 0;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))];
  while (first < n) {
    msghdr m{};
    m.msg_iov = iov + first;
    m.msg_iovlen = static_cast<size_t>(n - first);
    if (!fd_sent) {
      memset(ctl, 0, sizeof(ctl));
      m.msg_control = ctl;
      m.msg_controllen = sizeof(ctl);
      cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    ssize_t k = sendmsg(s, &m, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    fd_sent = true;
    size_t left = static_cast<size_t>(k);
    while (first < n && left >= iov[first].iov_len)
      left -= iov[first++].iov_len;
    if (first < n) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return true;
}

int recv_all(int s, void* buf, size_t len, int timeout_ms, int* fd) {
  if (fd != nullptr) *fd = -1;
  size_t got = 0;
  auto* p = static_cast<char*>(buf);
  while (got < len) {
    pollfd pf{s, POLLIN, 0};
    int r = poll(&pf, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    iovec iov{p + got, len - got};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))];
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof(ctl);
    ssize_t n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    // Every descriptor that came along is ours now: keep the first one
    // asked for and close the rest (a peer may send several in one
    // message; what did not fit the buffer the kernel has dropped).
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < nfds; ++i) {
        int got_fd;
        memcpy(&got_fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        if (fd != nullptr && *fd < 0)
          *fd = got_fd;
        else
          close(got_fd);
      }
    }
    if (n == 0) return got == 0 ? 0 : -1;
    got += static_cast<size_t>(n);
  }
  return 1;
}

int peer_pid(int s) {
  ucred c{};
  socklen_t l = sizeof(c);
  if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &c, &l) != 0) return -1;
  return c.pid;
}

bool peer_cred(int s, int* pid, int64_t* uid) {
  ucred c{};
  socklen_t l = sizeof(c);
  if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &c, &l) != 0) return false;
  *pid = c.pid;
  *uid = c.uid;
  return true;
}

}  // namespace ucc::plat::sock

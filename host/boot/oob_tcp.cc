// ucc_ext_oob_tcp_create / _destroy (ucc_ext.h): the TCP rendezvous that
// makes an OobStar's sockets. oob_ep 0 listens on the server address and
// takes one connection per other ep; each connection opens with a hello
// {magic, version, n_oob_eps, oob_ep, key} that must match ours, name an
// ep in range and one not taken yet. ep 0 refuses one that does not at
// once ({magic, 1}) and answers the others ({magic, 0}) when all are in,
// so that every ep's create returns OK only for a job that formed.
// Connections that say nothing within a few seconds, or something else,
// are closed, and ep 0 waits on for the real ones: a stranger cannot take
// an ep without the key.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "host/boot/oob_star.h"
#include "platform/os/clock.h"
#include "platform/os/log.h"

namespace {

using ucc::host::OobStar;

constexpr uint32_t kMagic = 0x43544f55;  // "UOTC"
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHelloNs = 5000000000ull;  // a connection's hello, at most
constexpr uint32_t kMaxPending = 64;          // hellos awaited at once

struct Hello {
  uint32_t magic;
  uint32_t version;
  uint32_t n;
  uint32_t ep;
  uint64_t key;
};
static_assert(sizeof(Hello) == 24);
struct Answer {
  uint32_t magic;
  uint32_t refused;
};

// "HOST:PORT" into an IPv4 address; false when it is not one.
bool parse_server(const char* s, sockaddr_in* out) {
  const char* colon = s != nullptr ? strrchr(s, ':') : nullptr;
  if (colon == nullptr || colon == s || colon - s >= 256) return false;
  char host[256];
  memcpy(host, s, static_cast<size_t>(colon - s));
  host[colon - s] = '\0';
  char* end = nullptr;
  const unsigned long port = strtoul(colon + 1, &end, 10);
  if (colon[1] == '\0' || *end != '\0' || port == 0 || port > 65535)
    return false;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host, nullptr, &hints, &res) != 0 || res == nullptr)
    return false;
  *out = *reinterpret_cast<sockaddr_in*>(res->ai_addr);
  out->sin_port = htons(static_cast<uint16_t>(port));
  freeaddrinfo(res);
  return true;
}

void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Reads or writes all `len` bytes by `deadline` (ns); false on EOF, an
// error or the deadline.
bool move_all(int fd, void* buf, size_t len, bool out, uint64_t deadline) {
  auto* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < len) {
    const ssize_t r =
        out ? send(fd, p + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL)
            : recv(fd, p + done, len - done, MSG_DONTWAIT);
    if (r > 0) {
      done += static_cast<size_t>(r);
      continue;
    }
    if (r == 0 || (errno != EAGAIN && errno != EINTR)) return false;
    const uint64_t now = ucc::plat::now_ns();
    if (now >= deadline) return false;
    pollfd pf{fd, static_cast<short>(out ? POLLOUT : POLLIN), 0};
    poll(&pf, 1, static_cast<int>((deadline - now) / 1000000 + 1));
  }
  return true;
}

struct Pending {
  int fd;
  uint32_t got;
  uint64_t since;
  Hello h;
};

// ep 0: accepts until every other ep is in; fds[ep] are theirs.
ucc_status_t serve(const ucc_ext_oob_tcp_params_t& p, const sockaddr_in& at,
                   uint64_t deadline, int* fds) {
  const int lfd =
      socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (lfd < 0) return UCC_ERR_NO_RESOURCE;
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a = at;
  int rc = bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  if (rc != 0 && errno == EADDRNOTAVAIL) {
    // The name is how the others reach us, not an address of ours (NAT):
    // listen on every address.
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    rc = bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  if (rc != 0 || listen(lfd, 128) != 0) {
    UCC_ERROR("ucc_ext_oob_tcp_create: cannot listen on %s: %s", p.server,
              strerror(errno));
    close(lfd);
    return UCC_ERR_NO_RESOURCE;
  }
  Pending pend[kMaxPending];
  uint32_t npend = 0;
  uint32_t joined = 1;
  ucc_status_t st = UCC_OK;
  while (joined < p.n_oob_eps) {
    const uint64_t now = ucc::plat::now_ns();
    if (now >= deadline) {
      UCC_ERROR("ucc_ext_oob_tcp_create: %u of %u eps came within the timeout",
                joined, p.n_oob_eps);
      st = UCC_ERR_TIMED_OUT;
      break;
    }
    pollfd pf[kMaxPending + 1];
    pf[0] = pollfd{lfd, POLLIN, 0};
    for (uint32_t i = 0; i < npend; ++i)
      pf[i + 1] = pollfd{pend[i].fd, POLLIN, 0};
    poll(pf, npend + 1, 20);
    // Hellos: one whole and right takes its ep; anything else is closed.
    for (uint32_t i = 0; i < npend;) {
      Pending& c = pend[i];
      const ssize_t r = recv(c.fd, reinterpret_cast<char*>(&c.h) + c.got,
                             sizeof(Hello) - c.got, MSG_DONTWAIT);
      if (r > 0) c.got += static_cast<uint32_t>(r);
      const bool gone = r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR);
      const bool late = ucc::plat::now_ns() - c.since > kHelloNs;
      if (c.got < sizeof(Hello) && !gone && !late) {
        ++i;
        continue;
      }
      bool take = false;
      if (c.got == sizeof(Hello)) {
        const Hello& h = c.h;
        take = h.magic == kMagic && h.version == kVersion &&
               h.n == p.n_oob_eps && h.key == p.key && h.ep != 0 &&
               h.ep < p.n_oob_eps && fds[h.ep] < 0;
        if (!take)
          UCC_WARN(
              "ucc_ext_oob_tcp_create: refused a connection (ep %u of %u, "
              "or another key, or a taken ep)",
              h.ep, h.n);
        if (!take) {
          Answer no{kMagic, 1};
          move_all(c.fd, &no, sizeof(no), true,
                   ucc::plat::now_ns() + 100000000);
        }
      }
      if (take) {
        fds[c.h.ep] = c.fd;
        ++joined;
      } else {
        close(c.fd);
      }
      pend[i] = pend[--npend];
    }
    // An ep that hangs up while the others come frees its place (it may
    // come again).
    for (uint32_t e = 1; e < p.n_oob_eps; ++e) {
      char b;
      if (fds[e] < 0 || recv(fds[e], &b, 1, MSG_DONTWAIT | MSG_PEEK) != 0)
        continue;
      close(fds[e]);
      fds[e] = -1;
      --joined;
    }
    while (npend < kMaxPending) {
      const int fd =
          accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      tune(fd);
      pend[npend++] = Pending{fd, 0, ucc::plat::now_ns(), Hello{}};
    }
  }
  for (uint32_t i = 0; i < npend; ++i) close(pend[i].fd);
  close(lfd);
  // Everyone is in: say so (until then each waits, so that no ep starts
  // a job that does not form).
  for (uint32_t e = 1; st == UCC_OK && e < p.n_oob_eps; ++e) {
    Answer yes{kMagic, 0};
    if (!move_all(fds[e], &yes, sizeof(yes), true, deadline)) {
      UCC_ERROR("ucc_ext_oob_tcp_create: ep %u went away", e);
      st = UCC_ERR_NO_MESSAGE;
    }
  }
  return st;
}

// Another ep: connects (again while ep 0 is not listening yet), says
// hello, waits for the answer.
ucc_status_t join(const ucc_ext_oob_tcp_params_t& p, const sockaddr_in& at,
                  uint64_t deadline, int* fd_out) {
  for (;;) {
    const int fd =
        socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return UCC_ERR_NO_RESOURCE;
    int rc = connect(fd, reinterpret_cast<const sockaddr*>(&at), sizeof(at));
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd pf{fd, POLLOUT, 0};
      const uint64_t now = ucc::plat::now_ns();
      poll(&pf, 1,
           now < deadline ? static_cast<int>((deadline - now) / 1000000 + 1)
                          : 0);
      int err = ETIMEDOUT;
      socklen_t len = sizeof(err);
      if (pf.revents != 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
    }
    if (rc == 0) {
      tune(fd);
      Hello h{kMagic, kVersion, p.n_oob_eps, p.oob_ep, p.key};
      Answer ans{};
      if (move_all(fd, &h, sizeof(h), true, deadline) &&
          move_all(fd, &ans, sizeof(ans), false, deadline)) {
        if (ans.magic == kMagic && ans.refused == 0) {
          *fd_out = fd;
          return UCC_OK;
        }
        close(fd);
        UCC_ERROR(
            "ucc_ext_oob_tcp_create: ep 0 at %s refused ep %u (another "
            "n_oob_eps or key, or ep %u joined already)",
            p.server, p.oob_ep, p.oob_ep);
        return UCC_ERR_NO_MESSAGE;
      }
    }
    close(fd);
    if (ucc::plat::now_ns() >= deadline) {
      UCC_ERROR("ucc_ext_oob_tcp_create: no answer from ep 0 at %s", p.server);
      return UCC_ERR_TIMED_OUT;
    }
    usleep(50000);  // not listening yet
  }
}

}  // namespace

extern "C" ucc_status_t ucc_ext_oob_tcp_create(
    const ucc_ext_oob_tcp_params_t* params, ucc_oob_coll_t* oob) {
  sockaddr_in at{};
  if (params == nullptr || oob == nullptr || params->n_oob_eps == 0 ||
      params->oob_ep >= params->n_oob_eps ||
      !parse_server(params->server, &at)) {
    UCC_ERROR(
        "ucc_ext_oob_tcp_create: invalid parameters (server '%s' must be "
        "HOST:PORT, oob_ep < n_oob_eps)",
        params != nullptr && params->server != nullptr ? params->server : "");
    return UCC_ERR_INVALID_PARAM;
  }
  const ucc_ext_oob_tcp_params_t& p = *params;
  const double secs = p.timeout > 0 ? p.timeout : 60;
  const uint64_t deadline =
      ucc::plat::now_ns() + static_cast<uint64_t>(secs * 1e9);
  const uint32_t nfd = p.oob_ep == 0 ? p.n_oob_eps : 1;
  int* fds = static_cast<int*>(malloc(sizeof(int) * nfd));
  if (fds == nullptr) return UCC_ERR_NO_MEMORY;
  for (uint32_t i = 0; i < nfd; ++i) fds[i] = -1;
  ucc_status_t st = p.n_oob_eps == 1 ? UCC_OK  // alone: no sockets
                    : p.oob_ep == 0  ? serve(p, at, deadline, fds)
                                     : join(p, at, deadline, fds);
  OobStar* star = nullptr;
  if (st == UCC_OK) {
    star = OobStar::create(p.oob_ep, p.n_oob_eps, fds);  // takes the fds
    if (star == nullptr) st = UCC_ERR_NO_MEMORY;
  } else {
    for (uint32_t i = 0; i < nfd; ++i)
      if (fds[i] >= 0) close(fds[i]);
  }
  free(fds);
  if (st == UCC_OK) *oob = star->coll();
  return st;
}

extern "C" ucc_status_t ucc_ext_oob_tcp_destroy(ucc_oob_coll_t* oob) {
  OobStar* star = oob != nullptr ? OobStar::from(*oob) : nullptr;
  if (star == nullptr) {
    UCC_ERROR("ucc_ext_oob_tcp_destroy: not an OOB of ucc_ext_oob_tcp_create");
    return UCC_ERR_INVALID_PARAM;
  }
  delete star;
  *oob = ucc_oob_coll_t{};
  return UCC_OK;
}

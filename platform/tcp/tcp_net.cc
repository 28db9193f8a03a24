#include "platform/tcp/tcp_net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "platform/os/clock.h"
#include "platform/os/log.h"
#include "platform/tcp/tcp_conn.h"

namespace ucc::plat::tcp {
namespace {

constexpr uint32_t kIdxBits = 16;
constexpr uint32_t kIdxMask = (1u << kIdxBits) - 1;

// The IPv4 address to listen on: `iface` names an interface or is an
// address; empty: the first interface up that is not loopback, else
// loopback. 0 when nothing matches.
uint32_t pick_address(const char* iface) {
  in_addr a{};
  if (iface != nullptr && *iface != 0 && inet_pton(AF_INET, iface, &a) == 1)
    return a.s_addr;
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return 0;
  uint32_t pick = 0;
  for (ifaddrs* i = all; i != nullptr && pick == 0; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET ||
        (i->ifa_flags & IFF_UP) == 0)
      continue;
    const bool named = iface != nullptr && *iface != 0;
    if (named ? strcmp(i->ifa_name, iface) != 0
              : (i->ifa_flags & IFF_LOOPBACK) != 0)
      continue;
    pick = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
  }
  freeifaddrs(all);
  if (pick == 0 && (iface == nullptr || *iface == 0))
    pick = htonl(INADDR_LOOPBACK);
  return pick;
}

}  // namespace

void tune_socket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
}

Status TcpNet::init(const TcpConfig& cfg) {
  cfg_ = cfg;
  if (cfg.max_endpoints == 0 || cfg.max_endpoints > kIdxMask + 1 ||
      cfg.peer_timeout_ms == 0 || cfg.max_peers == 0 ||
      cfg.max_peers > kMaxNetPeers)
    return Status::kInvalidParam;
  ip_ = pick_address(cfg.iface);
  if (ip_ == 0) {
    UCC_ERROR("tcp: no IPv4 interface or address '%s'", cfg.iface);
    return Status::kInvalidParam;
  }
  lfd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = ip_;
  socklen_t sl = sizeof(sa);
  if (lfd_ < 0 || ::bind(lfd_, reinterpret_cast<sockaddr*>(&sa), sl) != 0 ||
      listen(lfd_, 128) != 0 ||
      getsockname(lfd_, reinterpret_cast<sockaddr*>(&sa), &sl) != 0) {
    UCC_ERROR("tcp: cannot listen: %s", strerror(errno));
    fini();
    return Status::kError;
  }
  port_ = sa.sin_port;
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the listening socket
  for (int pass = 0; pass < 2; ++pass) {
    eps_ = tables_.take<TcpFabric*>(cfg.max_endpoints);
    gen_ = tables_.take<uint16_t>(cfg.max_endpoints);
    pool_ = tables_.take<Conn>(size_t{cfg.max_peers} + kMaxStrangers, 64);
    if (pass == 0 && !tables_.commit()) break;
  }
  pool_used_ = 0;
  pool_free_ = nullptr;
  if (ep_ < 0 || epoll_ctl(ep_, EPOLL_CTL_ADD, lfd_, &ev) != 0 ||
      eps_ == nullptr || gen_ == nullptr || pool_ == nullptr) {
    fini();
    return Status::kNoMemory;
  }
  // The key must not be guessed: no fallback when the kernel has no
  // randomness to give.
  if (getrandom(&instance_, sizeof(instance_), 0) != sizeof(instance_) ||
      getrandom(key_, sizeof(key_), 0) != sizeof(key_)) {
    UCC_ERROR("tcp: no random numbers: %s", strerror(errno));
    fini();
    return Status::kError;
  }
  instance_ |= 1;  // never 0
  rng_ = cfg.fault_seed ^ instance_;
  now_ = now_ns();
  return Status::kOk;
}

uint32_t TcpNet::lingering() const {
  uint32_t n = 0;
  for (uint32_t i = 0; i < top_; ++i)  // top_ is 0 without a table
    n += eps_[i] != nullptr && eps_[i]->leaving();
  return n;
}

void TcpNet::fini() {
  // What the endpoints still owe their peers goes out first.
  const uint64_t limit =
      (cfg_.peer_timeout_ms < 10000 ? cfg_.peer_timeout_ms : 10000) * kMs;
  const uint64_t t0 = now_ns();
  while (lingering() != 0 && now_ns() - t0 < limit) {
    progress();
    usleep(200);
  }
  if (eps_ != nullptr) {
    for (uint32_t i = 0; i < top_; ++i) {
      delete eps_[i];
      eps_[i] = nullptr;
    }
  }
  // Tell every engine we are gone for good, after whatever frames are
  // still owed (answers to goodbyes among them), then close cleanly.
  for (Conn* c = conns_; c != nullptr; c = c->next)
    c->goodbye_owed = c->state == Conn::State::kReady;
  auto unflushed = [&] {
    for (Conn* c = conns_; c != nullptr; c = c->next)
      if (c->state == Conn::State::kReady && !c->flushed()) return true;
    return false;
  };
  const uint64_t t1 = now_ns();
  while (unflushed() && now_ns() - t1 < limit) {
    progress();
    usleep(50);
  }
  close_gracefully(limit);
  while (conns_ != nullptr) free_conn(conns_);
  if (stats_.connects != 0)
    UCC_INFO(
        "tcp: connected to %u engines at most at once; %llu frames out, "
        "%llu in, %llu one-sided reads (%llu bytes), %llu writes (%llu "
        "bytes), %llu connections lost",
        stats_.peak_conns, static_cast<unsigned long long>(stats_.tx_frames),
        static_cast<unsigned long long>(stats_.rx_frames),
        static_cast<unsigned long long>(stats_.gets),
        static_cast<unsigned long long>(stats_.get_bytes),
        static_cast<unsigned long long>(stats_.puts),
        static_cast<unsigned long long>(stats_.put_bytes),
        static_cast<unsigned long long>(stats_.breaks));
  tables_.release();
  eps_ = nullptr;
  gen_ = nullptr;
  pool_ = nullptr;
  pool_used_ = 0;
  pool_free_ = nullptr;
  nopen_ = top_ = 0;
  if (ep_ >= 0) ::close(ep_);
  if (lfd_ >= 0) ::close(lfd_);
  ep_ = lfd_ = -1;
}

// Closing a socket that still holds data from the peer sends a reset,
// which may make the peer drop what we sent it last. So: finish sending
// (FIN after the last byte), read until the peer closes too (it does when
// it reads our FIN), then close; at most `limit` ns for all of them.
void TcpNet::close_gracefully(uint64_t limit) {
  uint32_t open = 0;
  for (Conn* c = conns_; c != nullptr; c = c->next) {
    if (c->fd < 0) continue;
    shutdown(c->fd, SHUT_WR);
    ++open;
  }
  char sink[4096];
  const uint64_t t0 = now_ns();
  while (open != 0 && now_ns() - t0 < limit) {
    open = 0;
    for (Conn* c = conns_; c != nullptr; c = c->next) {
      if (c->fd < 0) continue;
      ssize_t r;
      while ((r = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0) {
      }
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        epoll_ctl(ep_, EPOLL_CTL_DEL, c->fd, nullptr);
        ::close(c->fd);
        c->fd = -1;
      } else {
        ++open;
      }
    }
    if (open != 0) usleep(200);
  }
}

// --- endpoints -------------------------------------------------------------------

Fabric* TcpNet::open(const FabricConfig& cfg, FabricAddr* addr) {
  if (!fabric_config_ok(cfg) || eps_ == nullptr) return nullptr;
  uint32_t i = 0;
  while (i < cfg_.max_endpoints && eps_[i] != nullptr) ++i;
  if (i == cfg_.max_endpoints) {
    UCC_ERROR("tcp: all %u endpoints are in use", cfg_.max_endpoints);
    return nullptr;
  }
  const uint32_t id = (uint32_t{++gen_[i]} << kIdxBits) | i;
  auto* f = new (std::nothrow) TcpFabric(this, id, cfg);
  if (f == nullptr || !f->memory_ok()) {
    delete f;
    return nullptr;
  }
  eps_[i] = f;
  ++nopen_;
  if (i >= top_) top_ = i + 1;
  *addr = FabricAddr{};
  addr->kind = kTcpAddrMagic;
  const uint32_t rma = cfg.rma ? cfg_.zcopy_min : 0;
  TcpAddr a{ip_,           port_,      0,          instance_, id,
            cfg.slot_size, cfg.nslots, cfg.nranks, rma,       {}};
  memcpy(a.key, key_, sizeof(a.key));
  memcpy(addr->bytes, &a, sizeof(a));
  return f;
}

void TcpNet::close(Fabric* fab, bool lost) {
  auto* f = static_cast<TcpFabric*>(fab);
  if (f == nullptr) return;
  f->leave(lost);  // lingers until drained (reap_endpoints)
  reap_endpoints();
}

TcpFabric* TcpNet::endpoint(uint32_t id) const {
  const uint32_t i = id & kIdxMask;
  if (eps_ == nullptr || i >= cfg_.max_endpoints || eps_[i] == nullptr ||
      gen_[i] != (id >> kIdxBits))
    return nullptr;
  return eps_[i];
}

void TcpNet::reap_endpoints() {
  for (uint32_t i = 0; i < top_; ++i) {
    TcpFabric* f = eps_[i];
    if (f == nullptr || !f->leaving() || !f->drained()) continue;
    eps_[i] = nullptr;
    --nopen_;
    delete f;  // detaches its links
  }
  while (top_ != 0 && eps_[top_ - 1] == nullptr) --top_;
}

// --- progress ----------------------------------------------------------------------

uint64_t TcpNet::maintain() {
  const uint64_t timeout = uint64_t{cfg_.peer_timeout_ms} * kMs;
  const uint64_t keep = uint64_t{cfg_.keepalive_ms} * kMs;
  // How long our links wait on a call we answered for its proof.
  const uint64_t proof_wait = std::min(timeout / 2, uint64_t{kHelloMs} * kMs);
  uint64_t n = 0;
  for (Conn* c = conns_; c != nullptr;) {
    Conn* nx = c->next;
    using S = Conn::State;
    // Nobody waits on it: a dead or broken one, or an accepted one that
    // never said who it is.
    // A broken one we make is made again all the same: the peer engine
    // may still wait there for the answer to a goodbye.
    if (waits_on_answered(c) && now_ - c->since > proof_wait) {
      call_instead(c, "no proof in time");  // its caller never proved it
    } else if (c->links == nullptr &&
               (c->state == S::kDead ||
                (c->state == S::kBroken && !c->initiator) ||
                (c->state == S::kHello && now_ - c->since > timeout) ||
                (c->state == S::kHello && !c->initiator &&
                 now_ - c->since > uint64_t{kHelloMs} * kMs))) {
      free_conn(c);
    } else if (c->state == S::kReady) {
      if (c->ping_wanted) {
        const uint64_t from = c->heard > c->asked ? c->heard : c->asked;
        if (now_ > from && now_ - from > timeout) {
          dead(c, "silent past UCC_NET_PEER_TIMEOUT");
        } else if (now_ - c->heard <= keep) {
          c->ping_wanted = false;  // it talks
        }
      }
      if (c->state == S::kReady) {
        const uint64_t before = stats_.tx_frames;
        c->pump();
        n += stats_.tx_frames - before;
      }
    } else if (c->state != S::kDead) {
      if (now_ - c->since > timeout) {
        dead(c, "no connection within UCC_NET_PEER_TIMEOUT");
      } else if (c->state == S::kBroken && c->initiator &&
                 now_ >= c->retry_at) {
        start_connect(c);
        ++n;
      } else if (c->state == S::kBroken && !c->initiator) {
        probe(c);
      }
    }
    c = nx;
  }
  reap_endpoints();
  return n;
}

uint64_t TcpNet::poll(bool may_wait) {
  if (!active()) return 0;
  now_ = now_ns();
  if (may_wait && idle_ >= cfg_.spin && cfg_.wait_us != 0) {
    // Idle for a while: sleep until data comes, briefly.
    pollfd pf{ep_, POLLIN, 0};
    const timespec ts{0, static_cast<long>(cfg_.wait_us) * 1000};
    ppoll(&pf, 1, &ts, nullptr);
    now_ = now_ns();
  }
  const uint64_t before = stats_.rx_frames + stats_.tx_frames;
  epoll_event evs[32];
  const int ne = epoll_wait(ep_, evs, 32, 0);
  for (int i = 0; i < ne; ++i) {
    auto* c = static_cast<Conn*>(evs[i].data.ptr);
    if (c == nullptr) {
      accept_all();
      continue;
    }
    if (c->state == Conn::State::kConnecting) {
      finish_connect(c);
      continue;
    }
    if ((evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && !c->read())
      continue;
    if (evs[i].events & EPOLLOUT) c->pump();
  }
  // Credits owed, delayed frames: due now; the rest every millisecond.
  for (Conn* c = conns_; c != nullptr; c = c->next) {
    const bool delayed = c->out.active && c->out.ready_at != 0;
    if ((c->credit_pending || delayed) &&
        (c->state == Conn::State::kReady ||
         (delayed && c->state == Conn::State::kHello))) {
      c->credit_pending = false;
      c->pump();
    }
  }
  uint64_t events = stats_.rx_frames + stats_.tx_frames - before;
  if (now_ >= next_maintain_) {
    next_maintain_ = now_ + kMs;
    events += maintain();
  }
  idle_ = events == 0 ? idle_ + 1 : 0;
  return events;
}

}  // namespace ucc::plat::tcp

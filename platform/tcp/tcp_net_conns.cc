// The net's connections to other engines (tcp_net.h): found or made for
// the links that need them, made again after a break by the side that
// made them, probed by the side that waits, given up after the peer
// timeout, and the links told; the random numbers the handshakes and the
// fault knobs draw.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <type_traits>

#include "platform/os/clock.h"
#include "platform/os/log.h"
#include "platform/tcp/tcp_conn.h"
#include "platform/tcp/tcp_net.h"

namespace ucc::plat::tcp {

// --- connections
// -----------------------------------------------------------------

Conn* TcpNet::find_conn(uint64_t instance) const {
  for (Conn* c = conns_; c != nullptr; c = c->next)
    if (c->instance == instance && c->state != Conn::State::kDead) return c;
  return nullptr;
}

Conn* TcpNet::answered_call(uint64_t instance, uint32_t ip) const {
  for (Conn* c = conns_; c != nullptr; c = c->next)
    if (c->state == Conn::State::kHello && !c->initiator &&
        c->claimed == instance && c->from_ip == ip)
      return c;
  return nullptr;
}

bool TcpNet::waits_on_answered(const Conn* c) {
  return c->state == Conn::State::kHello && !c->initiator &&
         c->links != nullptr;
}

void TcpNet::call_instead(Conn* c, const char* why) {
  UCC_DEBUG(
      "tcp: the call engine %llx made failed before its proof (%s): "
      "calling it",
      static_cast<unsigned long long>(c->claimed), why);
  drop_socket(c);  // (and the handshake's state)
  c->refused = false;
  c->bad_why = nullptr;
  c->bad_sum = false;
  c->initiator = true;  // ip, port and key: attach() set them
  c->instance = c->links->instance;
  c->state = Conn::State::kBroken;
  c->since = c->retry_at = now_;
}

void TcpNet::drop_socket(Conn* c) {
  if (c->fd >= 0) {
    epoll_ctl(ep_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    c->fd = -1;
  }
  c->reset_io();
  c->watch_out = false;
}

uint32_t TcpNet::connections() const {
  uint32_t n = 0;
  for (const Conn* c = conns_; c != nullptr; c = c->next)
    n += c->state == Conn::State::kReady;
  return n;
}

uint32_t TcpNet::peers_in_use() const {
  uint32_t n = 0;
  for (const Conn* c = conns_; c != nullptr; c = c->next)
    n += c->instance != 0 && c->state != Conn::State::kDead;
  return n;
}

bool TcpNet::peer_room() {
  if (peers_in_use() < cfg_.max_peers) return true;
  if (!pool_said_)
    UCC_ERROR(
        "tcp: connected to %u other engines, the most at once: no more "
        "(UCC_NET_MAX_PEERS)",
        cfg_.max_peers);
  pool_said_ = true;
  return false;
}

Conn* TcpNet::new_conn(uint64_t instance) {
  // Ours count against max_peers; accepted ones when they prove who they
  // are (on_hello), strangers until then against kMaxStrangers.
  if (instance != 0 && !peer_room()) return nullptr;
  void* at = nullptr;
  if (pool_free_ != nullptr) {
    at = pool_free_;
    pool_free_ = pool_free_->next;
  } else if (pool_ != nullptr && pool_used_ < cfg_.max_peers + kMaxStrangers) {
    at = &pool_[pool_used_++];
  } else {  // those given up still hold theirs, until their teams close
    if (!pool_said_)
      UCC_ERROR(
          "tcp: %u connections held, also failed ones: no more "
          "(UCC_NET_MAX_PEERS)",
          cfg_.max_peers + kMaxStrangers);
    pool_said_ = true;
    return nullptr;
  }
  auto* c = new (at) Conn;
  c->net = this;
  c->instance = instance;
  c->since = c->heard = now_;
  c->next = conns_;
  conns_ = c;
  return c;
}

void TcpNet::free_conn(Conn* c) {
  for (Conn** p = &conns_; *p != nullptr; p = &(*p)->next) {
    if (*p != c) continue;
    *p = c->next;
    break;
  }
  for (Link* l = c->links; l != nullptr; l = l->next) l->conn = nullptr;
  end_probe(c);
  if (c->fd >= 0) {
    epoll_ctl(ep_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
  }
  static_assert(std::is_trivially_destructible_v<Conn>);
  c->next = pool_free_;
  pool_free_ = c;
}

void TcpNet::watch(Conn* c, bool out) {
  epoll_event ev{};
  ev.events = EPOLLIN | (out ? EPOLLOUT : 0u);
  ev.data.ptr = c;
  epoll_ctl(ep_, EPOLL_CTL_MOD, c->fd, &ev);
  c->watch_out = out;
}

Status TcpNet::attach(Link* l) {
  Conn* c = find_conn(l->instance);
  // A call from that engine that we answered, its proof on the way: the
  // link waits for it there. Calling too would leave two calls, each
  // answered; at the proofs each end took the other's and closed its
  // own, and neither made the connection again (hosts_tcp_faults).
  if (c == nullptr) c = answered_call(l->instance, l->peer_ip);
  if (c == nullptr) {
    // Whichever engine needs the connection first makes it; when both
    // call at once, the call of the one with the smaller id stands
    // (on_hello).
    c = new_conn(l->instance);
    if (c == nullptr) return Status::kNoMemory;
    c->ip = l->peer_ip;
    c->port = l->peer_port;
    memcpy(c->key, l->peer_key, sizeof(c->key));
    c->initiator = true;  // (kBroken: made from here on)
    start_connect(c);
  } else if (c->ip == 0) {
    c->ip = l->peer_ip;  // an engine that connected to us before
    c->port = l->peer_port;
    memcpy(c->key, l->peer_key, sizeof(c->key));
  }
  bind(l, c);
  if (c->state == Conn::State::kReady) c->pump();
  return Status::kOk;
}

void TcpNet::bind(Link* l, Conn* c) {
  l->conn = c;
  l->next = c->links;
  c->links = l;
}

void TcpNet::detach(Link* l) {
  Conn* c = l->conn;
  if (c == nullptr) return;
  for (Link** p = &c->links; *p != nullptr; p = &(*p)->next) {
    if (*p != l) continue;
    *p = l->next;
    break;
  }
  if (c->rr == l) c->rr = nullptr;
  if (c->out.active && c->out.link == l) {
    // A frame of its own under way: one that carries no memory of the
    // link goes out all the same; a message (only when time ran out)
    // cannot, and half of one breaks the stream.
    if (!c->out.data_frame) {
      c->out.link = nullptr;
    } else if (c->out.off == 0) {
      c->out.active = false;
    } else {
      c->out.active = false;
      c->out.link = nullptr;
      broken(c, "an endpoint left in the middle of a message");
    }
  }
  l->conn = nullptr;
  l->next = nullptr;
}

void TcpNet::kick(Link* l) {
  Conn* c = l->conn;
  if (c != nullptr && c->state == Conn::State::kReady) c->pump();
}

void TcpNet::owe_credit(Link* l, bool urgent) {
  if (!l->credit_owed) l->credit_since = now_;
  l->credit_owed = true;
  l->credit_urgent |= urgent;
  if (l->conn != nullptr) l->conn->credit_pending = true;
}

void TcpNet::want_ping(Link* l) {
  Conn* c = l->conn;
  if (c == nullptr || c->ping_wanted) return;
  c->ping_wanted = true;
  c->asked = now_ns();  // now_ may be old here: no team polled us
}

void TcpNet::start_connect(Conn* c) {
  c->retry_at = now_ + 50 * kMs;
  ++stats_.calls;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;  // tried again later
  tune_socket(fd);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = c->ip;
  sa.sin_port = c->port;
  const int r = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  if (r != 0 && errno != EINPROGRESS) {
    const int e = errno;
    ::close(fd);
    if (e == ECONNREFUSED) dead(c, "connection refused");
    return;
  }
  c->fd = fd;
  c->state = Conn::State::kConnecting;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT;
  ev.data.ptr = c;
  epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
  c->watch_out = true;
}

void TcpNet::finish_connect(Conn* c) {
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err == EINPROGRESS || err == EALREADY) return;
  if (err != 0) {
    epoll_ctl(ep_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    c->fd = -1;
    c->state = Conn::State::kBroken;
    if (err == ECONNREFUSED) dead(c, "connection refused");
    return;
  }
  c->state = Conn::State::kHello;
  open_handshake(c);
  c->pump();
}

void TcpNet::established(Conn* c) {
  end_probe(c);
  c->state = Conn::State::kReady;
  c->since = c->heard = now_;
  // Our call's messages count as delivered once the answerer says it took
  // the call (Conn::confirmed); we say so to a caller at once.
  c->confirmed = !c->initiator;
  if (!c->initiator) c->pong_owed = true;
  ++stats_.connects;
  const uint32_t up = connections();
  if (up > stats_.peak_conns) stats_.peak_conns = up;
  // Each link resends what its peer has not acknowledged, its credits,
  // and its goodbye if it is leaving and has no answer yet (a second one
  // does no harm: the answer comes again).
  for (Link* l = c->links; l != nullptr; l = l->next) {
    l->msgs = l->acked;
    l->credit_owed = l->credit_urgent = true;
    // Gets not answered whole are asked again; the peer, which forgot
    // its answers, answers them anew.
    l->get_asked = l->get_head;
    l->ans_head = l->ans_tail;
    if (l->fab->leaving() && l->state == Link::State::kLive && !l->bye_acked)
      l->bye_owed = true;
  }
  c->pump();
}

void TcpNet::broken(Conn* c, const char* why) {
  if (waits_on_answered(c)) {
    call_instead(c, why);
    return;
  }
  if (c->peer_gone) {  // it said so: nothing to make again
    dead(c, c->peer_corrupt
                ? "it received a frame of ours that failed its checksum"
                : "it closed");
    return;
  }
  if (c->state == Conn::State::kReady) {
    UCC_INFO("tcp: connection to engine %llx lost: %s",
             static_cast<unsigned long long>(c->instance), why);
    ++stats_.breaks;
  } else {  // a call not taken (both called: theirs stands), or cut short
    UCC_DEBUG("tcp: call to engine %llx ended before it was up: %s",
              static_cast<unsigned long long>(c->instance), why);
  }
  drop_socket(c);
  if (c->state == Conn::State::kDead) return;
  // The side that makes it makes it again: at once after a break; after
  // a pause when it broke before it was up (our call refused: the
  // peer's own call is under way).
  c->retry_at = c->state == Conn::State::kReady ? now_ : now_ + 50 * kMs;
  c->state = Conn::State::kBroken;
  c->since = now_;
}

void TcpNet::dead(Conn* c, const char* why) {
  uint32_t live = 0;
  for (Link* l = c->links; l != nullptr; l = l->next) {
    if (l->state != Link::State::kLive) continue;
    l->state = Link::State::kLost;
    // A member that left its team first needs no goodbye from peers that
    // had its own (they leave without one).
    live += l->fab->leaving() ? 0 : 1;
  }
  // Teams that still count on that engine hear of it; a connection no
  // team needs any more ends quietly.
  char at[32] = "";
  if (c->ip != 0) {
    const auto* b = reinterpret_cast<const uint8_t*>(&c->ip);
    snprintf(at, sizeof(at), " at %u.%u.%u.%u:%u", b[0], b[1], b[2], b[3],
             static_cast<unsigned>(ntohs(c->port)));
  }
  if (live != 0)
    UCC_ERROR("tcp: engine %llx%s unreachable (%s): %u team members lost",
              static_cast<unsigned long long>(c->instance), at, why, live);
  else
    UCC_DEBUG("tcp: engine %llx unreachable (%s)",
              static_cast<unsigned long long>(c->instance), why);
  drop_socket(c);
  end_probe(c);
  c->state = Conn::State::kDead;
}

// A broken connection the peer engine makes again: a crashed engine never
// does, and its host refuses connections to its port. We knock every
// 100 ms so that its ranks' teams hear of it at once, not after the
// timeout (a host that is gone, or cut off, answers nothing: the timeout
// tells).
void TcpNet::probe(Conn* c) {
  if (c->probe_fd >= 0) {
    pollfd pf{c->probe_fd, POLLOUT, 0};
    if (::poll(&pf, 1, 0) <= 0) return;  // no answer yet
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(c->probe_fd, SOL_SOCKET, SO_ERROR, &err, &len);
    end_probe(c);
    if (err == ECONNREFUSED) dead(c, "its port is closed");
    return;
  }
  if (now_ < c->probe_at || c->ip == 0) return;
  c->probe_at = now_ + 100 * kMs;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = c->ip;
  sa.sin_port = c->port;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0 ||
      errno != EINPROGRESS) {
    const int e = errno;
    ::close(fd);
    if (e == ECONNREFUSED) dead(c, "its port is closed");
    return;
  }
  c->probe_fd = fd;
}

void TcpNet::end_probe(Conn* c) {
  if (c->probe_fd < 0) return;
  ::close(c->probe_fd);
  c->probe_fd = -1;
}

void TcpNet::protocol_error(Conn* c) {
  if (waits_on_answered(c)) {  // not the engine it claimed, say
    ++stats_.bad_frames;
    call_instead(c, c->bad_why != nullptr ? c->bad_why : "a bad hello");
    return;
  }
  if (c->refused) {  // no error: the other call stands (on_hello)
    dead(c, c->bad_why);
    return;
  }
  ++stats_.bad_frames;
  const char* why =
      c->bad_why != nullptr ? c->bad_why : "it broke the protocol";
  if (c->bad_sum) {
    ++stats_.bad_sums;
    // Its frames are damaged: closed for good both ways, and said so,
    // so that its collectives fail too instead of waiting on us.
    if (c->state == Conn::State::kReady) c->last_word(kCorrupt);
  }
  dead(c, why);
}

uint64_t TcpNet::rand64() {
  uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);  // splitmix64
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool TcpNet::chance(double p) {
  return p > 0 && static_cast<double>(rand64() >> 11) * 0x1.0p-53 < p;
}

}  // namespace ucc::plat::tcp

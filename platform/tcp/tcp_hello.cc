// Who may connect to an engine (tcp_proto.h, "Who may connect"):
// connections accepted and bounded until they prove themselves, and the
// three hellos that prove each side to the other.
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "platform/os/crypto.h"
#include "platform/os/log.h"
#include "platform/tcp/tcp_conn.h"
#include "platform/tcp/tcp_net.h"

namespace ucc::plat::tcp {

bool hello_mac(const uint64_t key[2], char role, uint64_t connector,
               uint64_t acceptor, const uint8_t* nonce_c,
               const uint8_t* nonce_a, uint8_t out[32]) {
  struct {
    char role;
    uint8_t pad[7];
    uint64_t connector, acceptor;
    uint8_t nonce_c[kNonceBytes], nonce_a[kNonceBytes];
  } m{};
  m.role = role;
  m.connector = connector;
  m.acceptor = acceptor;
  memcpy(m.nonce_c, nonce_c, kNonceBytes);
  memcpy(m.nonce_a, nonce_a, kNonceBytes);
  return mac(key, 2 * sizeof(uint64_t), &m, sizeof(m), out);
}

uint32_t TcpNet::strangers(Conn** oldest) const {
  uint32_t n = 0;
  for (Conn* c = conns_; c != nullptr; c = c->next) {
    // (One our links wait on is not: it is given up after kHelloMs.)
    if (c->initiator || c->instance != 0 || c->state != Conn::State::kHello ||
        c->links != nullptr)
      continue;
    ++n;
    if (oldest != nullptr &&
        (*oldest == nullptr || c->since < (*oldest)->since))
      *oldest = c;
  }
  return n;
}

void TcpNet::accept_all() {
  for (;;) {
    sockaddr_in from{};
    socklen_t flen = sizeof(from);
    const int fd = accept4(lfd_, reinterpret_cast<sockaddr*>(&from), &flen,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    // Full: the stranger that came first gives its place up (a real
    // engine proves itself within a round trip or two, and connects
    // again if it was the one).
    Conn* oldest = nullptr;
    if (strangers(&oldest) >= kMaxStrangers) {
      free_conn(oldest);
      ++stats_.strangers_dropped;
    }
    tune_socket(fd);
    Conn* c = new_conn(0);  // who it is, its proof says
    if (c == nullptr) {
      ::close(fd);
      continue;
    }
    c->fd = fd;
    c->from_ip = from.sin_addr.s_addr;
    c->state = Conn::State::kHello;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
  }
}

void TcpNet::open_handshake(Conn* c) {
  if (!random_bytes(c->nonce_mine, kNonceBytes)) {
    dead(c, "no random numbers for its hello");
    return;
  }
  c->hs_step = kOpen;
  c->hello_owed = true;
}

bool TcpNet::our_call_stands(uint64_t instance, const Conn* c) const {
  const Conn* e = find_conn(instance);
  return e != nullptr && e != c && e->initiator && instance_ < instance;
}

bool TcpNet::on_hello(Conn* c, const Hello& hello) {
  const uint64_t instance = hello.instance;
  if (instance == 0 || instance == instance_ || c->state != Conn::State::kHello)
    return false;  // one handshake per connection
  if (c->initiator) {
    // Ours: the engine we called must answer, and prove it holds the key
    // its address gave us.
    uint8_t want[32];
    if (hello.step != kAnswer || instance != c->instance) return false;
    if (!hello_mac(c->key, 'A', instance_, instance, c->nonce_mine, hello.nonce,
                   want) ||
        !mac_equal(want, hello.mac)) {
      UCC_ERROR(
          "tcp: engine %llx did not prove its key: not the engine of "
          "its address",
          static_cast<unsigned long long>(instance));
      return false;
    }
    memcpy(c->nonce_peer, hello.nonce, kNonceBytes);
    if (!hello_mac(c->key, 'C', instance_, instance, c->nonce_mine,
                   c->nonce_peer, c->mac_out))
      return false;
    c->hs_step = kProve;  // goes out first, before any frame of ours
    c->hello_owed = true;
    established(c);
    return true;
  }
  // Accepted: the caller must prove it holds our key. When we call it
  // too, the call of the engine with the smaller id stands: the other is
  // refused (the caller then waits a little before calling again, and
  // takes our call meanwhile). That is decided at the call's first hello
  // only: a call we answered before calling ourselves stands, as its
  // caller counts it made once it sends its proof (it writes its messages
  // at once; it counts them delivered once our pong says we took the
  // call, Conn::confirmed), and our own call gives way to it below.
  if (hello.step == kOpen && our_call_stands(instance, c)) {
    c->refused = true;
    c->bad_why = "both engines called: ours stands";
    return false;
  }
  if (hello.step == kOpen && c->claimed == 0) {
    if (!random_bytes(c->nonce_mine, kNonceBytes)) return false;
    c->claimed = instance;
    memcpy(c->nonce_peer, hello.nonce, kNonceBytes);
    if (!hello_mac(key_, 'A', instance, instance_, c->nonce_peer, c->nonce_mine,
                   c->mac_out))
      return false;
    c->hs_step = kAnswer;
    c->hello_owed = true;
    c->pump();
    return true;
  }
  uint8_t want[32];
  if (hello.step != kProve || c->claimed != instance ||
      !hello_mac(key_, 'C', instance, instance_, c->nonce_peer, c->nonce_mine,
                 want) ||
      !mac_equal(want, hello.mac)) {
    UCC_WARN("tcp: a connection that claims engine %llx did not prove our key",
             static_cast<unsigned long long>(instance));
    return false;
  }
  Conn* e = find_conn(instance);
  if (e == nullptr && !peer_room()) return false;  // a new peer: room?
  if (e != nullptr && e != c && e->initiator &&
      e->state == Conn::State::kReady && instance_ < instance) {
    // Both calls answered (an engine that called before it heard ours,
    // from an address other than the one it gave): the one of the
    // smaller id stands at both ends; the other end gives its own up
    // for it, below.
    c->refused = true;
    c->bad_why = "both calls answered: ours stands";
    return false;
  }
  if (e != nullptr && e != c) {
    // The record our links wait on (a broken connection it made, or our
    // own call, which gives way to the smaller id's): they move to this
    // socket, and resend what was not acknowledged.
    c->links = e->links;
    e->links = nullptr;
    for (Link* l = c->links; l != nullptr; l = l->next) l->conn = c;
    c->ip = e->ip;
    c->port = e->port;
    memcpy(c->key, e->key, sizeof(c->key));
    e->state = Conn::State::kDead;  // freed by maintain (no links)
    drop_socket(e);
  }
  c->instance = instance;
  established(c);
  return true;
}

}  // namespace ucc::plat::tcp

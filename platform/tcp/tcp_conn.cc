#include "platform/tcp/tcp_conn.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "platform/os/clock.h"
#include "platform/os/crc32c.h"
#include "platform/os/log.h"
#include "platform/tcp/tcp_net.h"

namespace ucc::plat::tcp {

uint32_t hdr_crc(const Hdr& h) { return crc32c(0, &h, offsetof(Hdr, crc)); }

void Conn::reset_io() {
  out.active = false;
  out.link = nullptr;
  in.len = in.off = 0;
  in.have_hdr = false;
  in.need = 0;
  in.link = nullptr;
  hello_owed = pong_owed = false;
  hs_step = 0;
  claimed = 0;
  nbehalf = 0;  // asked again on the next connection
}

// --- reading -------------------------------------------------------------------

// The link of our endpoint that a frame names, when the frame really comes
// from that link's peer over this connection; nullptr otherwise (an
// endpoint gone since, or a frame no link of ours accepts).
// A link not made yet is made now, bound to this connection: the peer
// talks to us first.
Link* Conn::own_link(const Hdr& h) {
  TcpFabric* f = net->endpoint(h.dst_ep);
  if (f == nullptr || instance == 0) return nullptr;
  Link* l = f->link_from(h.src_rank, instance, h.src_ep);
  if (l == nullptr) return nullptr;
  if (l->conn == nullptr) net->bind(l, this);
  return l->conn == this ? l : nullptr;
}

bool Conn::begin_frame() {
  const Hdr& h = in.hdr;
  bad_why = nullptr;
  if (h.magic != kFrameMagic || h.version != kFrameVersion) return false;
  if (hdr_crc(h) != h.crc) {
    bad_why = "a frame header failed its checksum";
    bad_sum = true;
    return false;
  }
  if (net->config().checksum && h.len != 0 && (h.flags & kSummed) == 0) {
    bad_why =
        "its frames carry no payload checksum (UCC_NET_CHECKSUM must "
        "be the same on every rank)";
    return false;
  }
  in.dst = nullptr;
  in.at = 0;
  in.pre = in.pre_at = 0;
  in.link = nullptr;
  in.dup = false;
  in.drop_sum = 0;
  in.need = h.len;
  if (state != State::kReady && h.type != Type::kHello) return false;
  // (kReady from here on, but for hellos.) The answerer writes nothing but
  // its hello until it takes our proof.
  if (h.type != Type::kHello) confirmed = true;
  switch (h.type) {
    case Type::kHello:
      if (h.len != sizeof(Hello)) return false;
      in.dst = reinterpret_cast<char*>(in.small);
      return true;
    case Type::kPing:
    case Type::kPong:
    case Type::kBye:
      return h.len == 0;
    case Type::kCredit:
      if (h.len != h.nslots || h.nslots > kMaxSlots || h.nslots < 2)
        return false;
      in.link = own_link(h);
      in.dst = reinterpret_cast<char*>(in.small);
      return true;
    case Type::kGet:
    case Type::kGetData:
    case Type::kPut:
    case Type::kPutAck:
      return begin_rma(h);
    case Type::kData: {
      // Credits first, if any (read into `small`), then the slot's bytes.
      if (h.nslots > kMaxSlots || h.len < h.nslots) return false;
      in.pre = h.nslots;
      in.link = own_link(h);
      if (in.link == nullptr) return h.len - h.nslots <= kSlotHdr + (64u << 20);
      const FabricConfig& c = in.link->fab->config();
      // The message must fit its slot, and come in order; credits count
      // every slot of the inbox.
      const uint32_t body = h.len - h.nslots;
      if ((h.nslots != 0 && h.nslots != c.nslots) || body < kSlotHdr ||
          body > kSlotHdr + c.slot_size || h.slot >= c.nslots)
        return false;
      const uint32_t d = h.seq - in.link->heads;
      if (d == 0) {
        in.dst = in.link->rx.slot(c, h.slot);
      } else if (static_cast<int32_t>(d) < 0) {
        in.dup = true;  // resent after a break: we have it
        ++net->counters().dup_msgs;
      } else {
        return false;  // a message skipped
      }
      return true;
    }
  }
  return false;
}

bool Conn::end_frame() {
  const Hdr& h = in.hdr;
  TcpStats& s = net->counters();
  ++s.rx_frames;
  Link* l = in.link;
  // The payload is checked before anything in it is used; a data frame
  // dropped whole (a resend we have) by the sum of the bytes that went by
  // (take_in), since its credits are believed: the sender counts them
  // given, and may owe no other frame.
  if ((h.flags & kSummed) != 0 &&
      (in.dst != nullptr || h.type == Type::kData) &&
      (in.dst != nullptr
           ? crc32c(crc32c(0, in.small, in.pre), in.dst, h.len - in.pre)
           : in.drop_sum) != h.body_crc) {
    bad_why = "a frame's payload failed its checksum";
    bad_sum = true;
    return false;
  }
  if (l != nullptr && h.ack - l->acked <= l->msgs - l->acked) l->acked = h.ack;
  switch (h.type) {
    case Type::kHello: {
      Hello hello;
      memcpy(&hello, in.small, sizeof(hello));
      return net->on_hello(this, hello);
    }
    case Type::kPing:
      pong_owed = true;
      return true;
    case Type::kPong:
      return true;
    case Type::kBye:
      return on_bye(h);
    case Type::kCredit:
      take_credits_in(l, h.nslots);
      return true;
    case Type::kGet:
    case Type::kGetData:
    case Type::kPut:
    case Type::kPutAck:
      return end_rma(h);
    case Type::kData: {
      take_credits_in(l, h.nslots);
      if (in.dst == nullptr) return true;  // dropped
      const auto* mh = reinterpret_cast<const MsgHdr*>(in.dst);
      // The header inside must say what the frame carries.
      if (mh->len != h.len - h.nslots - kSlotHdr) return false;
      s.rx_bytes += mh->len;
      l->fab->publish(*l, h.slot);
      return true;
    }
  }
  return false;
}

bool Conn::on_bye(const Hdr& h) {
  if (h.dst_ep == 0) {
    peer_gone = true;  // its end comes next: no reconnecting
    peer_corrupt = (h.flags & kCorrupt) != 0;
    return true;
  }
  Link* l = own_link(h);
  if (h.flags & kAck) {
    if (l != nullptr) l->bye_acked = true;
    return true;
  }
  if (l != nullptr) {
    if (l->state == Link::State::kLive) {
      l->state = (h.flags & kLost) ? Link::State::kLost : Link::State::kLeft;
      if (l->state == Link::State::kLost)
        UCC_INFO("tcp: team rank %u reports it failed", l->rank);
    }
    l->byeack_owed = true;
    return true;
  }
  // Our endpoint is gone (its answer went down with a broken connection):
  // the engine answers. Not ours at all: nothing to say.
  if (net->endpoint(h.dst_ep) != nullptr) return true;
  if (nbehalf == kMaxBehalf) {
    net->broken(this, "too many goodbyes to answer");  // asked again
    return true;  // (read() sees the state)
  }
  behalf[nbehalf++] = Behalf{h.src_ep, h.dst_ep, h.seq};
  return true;
}

void Conn::take_in(const char* src, uint32_t n) {
  // A data frame dropped (a resend we have): summed as it goes by, so
  // that the credits riding on it may be believed (end_frame).
  if (in.dst == nullptr && in.hdr.type == Type::kData &&
      (in.hdr.flags & kSummed) != 0)
    in.drop_sum = crc32c(in.drop_sum, src, n);
  if (in.pre_at < in.pre) {
    const uint32_t k = n < in.pre - in.pre_at ? n : in.pre - in.pre_at;
    memcpy(in.small + in.pre_at, src, k);
    in.pre_at += k;
    src += k;
    n -= k;
    if (in.pre_at == in.pre && in.hdr.type == Type::kPut) place_put();
  }
  if (n != 0 && in.dst != nullptr) {
    memcpy(in.dst + in.at, src, n);
    in.at += n;
  }
}

void Conn::take_credits_in(Link* l, uint32_t n) {
  if (n == 0 || l == nullptr || l->state != Link::State::kLive ||
      n != l->fab->config().nslots)
    return;
  // C1 (fabric/inbox.h) reads these with acquire.
  for (uint32_t k = 0; k < n; ++k)
    l->shadow.ctl->done[k].store(in.small[k], std::memory_order_release);
}

bool Conn::read() {
  // A recv that returns less than it asked for emptied the socket: the
  // next one would only say EAGAIN, a system call per message for
  // nothing. Stop there; epoll (level-triggered) calls again for more.
  bool drained = false;
  for (;;) {
    if (!in.have_hdr) {
      if (in.len - in.off < sizeof(Hdr)) {
        if (drained) return true;
        memmove(in.buf, in.buf + in.off, in.len - in.off);
        in.len -= in.off;
        in.off = 0;
        const size_t want = kInBuf - in.len;
        const ssize_t r = recv(fd, in.buf + in.len, want, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
          net->broken(this, r == 0 ? "closed by the peer" : strerror(errno));
          return false;
        }
        if (r < 0) return true;
        in.len += static_cast<uint32_t>(r);
        drained = static_cast<size_t>(r) < want;
        heard = net->now();
        continue;
      }
      memcpy(&in.hdr, in.buf + in.off, sizeof(Hdr));
      in.off += sizeof(Hdr);
      in.have_hdr = true;
      if (!begin_frame()) {
        net->protocol_error(this);
        return false;
      }
    }
    while (in.need != 0) {
      const uint32_t avail = in.len - in.off;
      if (avail != 0) {
        const uint32_t n = avail < in.need ? avail : in.need;
        take_in(reinterpret_cast<const char*>(in.buf) + in.off, n);
        in.off += n;
        in.need -= n;
        continue;
      }
      if (drained) return true;
      // Large payloads straight into the inbox slot; the rest through
      // the buffer, with whatever follows.
      ssize_t r;
      size_t want;
      if (in.dst != nullptr && in.pre_at == in.pre && in.need >= kInBuf / 4) {
        want = in.need;
        r = recv(fd, in.dst + in.at, want, MSG_DONTWAIT);
        if (r > 0) {
          in.at += static_cast<uint32_t>(r);
          in.need -= static_cast<uint32_t>(r);
        }
      } else {
        in.len = in.off = 0;
        want = kInBuf;
        r = recv(fd, in.buf, want, MSG_DONTWAIT);
        if (r > 0) in.len = static_cast<uint32_t>(r);
      }
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        net->broken(this, r == 0 ? "closed by the peer" : strerror(errno));
        return false;
      }
      if (r < 0) return true;
      drained = static_cast<size_t>(r) < want;
      heard = net->now();
    }
    in.have_hdr = false;
    if (!end_frame()) {
      net->protocol_error(this);
      return false;
    }
    if (state == State::kBroken || state == State::kDead) return false;
  }
}

// --- writing -------------------------------------------------------------------

void Conn::frame(Type t, Link* l, uint32_t len) {
  Hdr& h = out.hdr;
  h = Hdr{};
  h.magic = kFrameMagic;
  h.version = kFrameVersion;
  h.type = t;
  h.len = len;
  if (l != nullptr) {
    h.dst_ep = l->peer_ep;
    h.src_ep = l->fab->id();
    h.src_rank = l->fab->config().rank;
    h.ack = l->heads;
  }
  out.active = true;
  out.sealed = false;
  out.len = static_cast<uint32_t>(sizeof(Hdr)) + len;
  out.off = 0;
  out.link = l;
  out.data_frame = false;
  out.answer = false;
  out.data = reinterpret_cast<const char*>(out.small);
  out.pre = 0;
  const uint32_t delay = net->config().fault_delay_us;
  out.ready_at = delay != 0 ? net->now() + uint64_t{delay} * 1000 : 0;
}

bool Conn::pick() {
  if (hello_owed) {
    hello_owed = false;
    frame(Type::kHello, nullptr, sizeof(Hello));
    Hello hello{};
    hello.instance = net->instance();
    hello.step = hs_step;
    memcpy(hello.nonce, nonce_mine, kNonceBytes);
    if (hs_step != kOpen) memcpy(hello.mac, mac_out, sizeof(hello.mac));
    memcpy(out.small, &hello, sizeof(hello));
    hs_step = 0;
    return true;
  }
  if (state != State::kReady) return false;
  if (pong_owed) {
    pong_owed = false;
    frame(Type::kPong, nullptr, 0);
    // Not held back by the delay knob: a caller that waits for the pong
    // taking its call (Conn::confirmed) would wait on our next progress.
    out.ready_at = 0;
    return true;
  }
  if (nbehalf != 0) {
    const Behalf& b = behalf[--nbehalf];
    frame(Type::kBye, nullptr, 0);
    out.hdr.dst_ep = b.dst_ep;
    out.hdr.src_ep = b.src_ep;
    out.hdr.src_rank = b.src_rank;
    out.hdr.flags = kAck;
    return true;
  }
  if (ping_wanted && net->now() - pinged >
                         uint64_t{net->config().keepalive_ms} * 1000000 &&
      net->now() - heard > uint64_t{net->config().keepalive_ms} * 1000000) {
    pinged = net->now();
    frame(Type::kPing, nullptr, 0);
    return true;
  }
  if (links != nullptr && pick_link()) return true;
  // The engine's goodbye, after everything else.
  if (goodbye_owed) {
    goodbye_owed = false;
    frame(Type::kBye, nullptr, 0);
    return true;
  }
  return false;
}

// Round robin over the links: answers to goodbyes, credits (they unblock
// the peer), answers to its gets and our own gets (tcp_rma.cc), then a
// message, then our goodbye once everything before it is out.
bool Conn::pick_link() {
  if (rr == nullptr) rr = links;
  Link* l = rr;
  do {
    Link* nx = l->next != nullptr ? l->next : links;
    if (l->byeack_owed) {  // (cleared once written)
      frame(Type::kBye, l, 0);
      out.hdr.flags = kAck;
      rr = nx;
      return true;
    }
    if (l->state == Link::State::kLive) {
      const FabricConfig& c = l->fab->config();
      // Our own thread wrote head (tx_commit): relaxed.
      const bool ready = l->msgs != shadow_head(*l->shadow.ctl);
      const Credit cr = credit_due(l, ready);
      if (cr == Credit::kNow) {
        frame(Type::kCredit, l, c.nslots);
        out.hdr.nslots = static_cast<uint8_t>(take_credits(l));
        rr = nx;
        return true;
      }
      if (pick_rma(l)) {
        rr = nx;
        return true;
      }
      if (ready) {
        const uint32_t slot =
            l->shadow.ctl->order[l->msgs & (c.nslots - 1)] & (c.nslots - 1);
        const char* base = l->shadow.slot(c, slot);
        uint32_t mlen = reinterpret_cast<const MsgHdr*>(base)->len;
        if (mlen > c.slot_size) mlen = c.slot_size;
        const uint32_t pre = cr == Credit::kRide ? c.nslots : 0;
        frame(Type::kData, l, pre + static_cast<uint32_t>(kSlotHdr) + mlen);
        if (pre != 0) out.hdr.nslots = static_cast<uint8_t>(take_credits(l));
        out.pre = pre;
        out.hdr.seq = l->msgs;
        out.hdr.slot = static_cast<uint16_t>(slot);
        out.data = base;
        out.data_frame = true;
        rr = nx;
        return true;
      }
      if (l->bye_owed) {
        l->bye_owed = false;
        frame(Type::kBye, l, 0);
        out.hdr.flags = l->bye_flags;
        out.hdr.seq = l->rank;
        rr = nx;
        return true;
      }
    }
    l = nx;
  } while (l != rr);
  return false;
}

Conn::Credit Conn::credit_due(Link* l, bool message_ready) const {
  const FabricConfig& c = l->fab->config();
  // Every release owes a credit (TcpFabric::rx_release -> owe_credit) and
  // only take_credits, which sends them all, pays it: nothing owed means
  // nothing released since, without looking at the counts.
  if (!l->credit_owed) return Credit::kNone;
  if (message_ready) return Credit::kRide;
  // The peer counts as taken the slots of the messages we hold and of
  // those released without credits: from half the window, it may be
  // about to wait on them.
  if (l->credit_urgent || 2 * (l->heads - l->credited) >= c.nslots ||
      net->now() - l->credit_since >= uint64_t{kCreditDelayUs} * 1000)
    return Credit::kNow;
  return Credit::kWait;
}

uint32_t Conn::take_credits(Link* l) {
  const FabricConfig& c = l->fab->config();
  const InboxCtl* rx = l->rx.ctl;
  for (uint32_t k = 0; k < c.nslots; ++k) {
    const uint8_t d = rx->done[k].load(std::memory_order_relaxed);
    l->credited += static_cast<uint8_t>(d - l->done_sent[k]);
    out.small[k] = l->done_sent[k] = d;
  }
  l->credit_owed = l->credit_urgent = false;
  return c.nslots;
}

int Conn::out_pieces(uint32_t off, iovec* iov) const {
  const uint32_t hb = static_cast<uint32_t>(sizeof(Hdr));
  const struct {
    const char* p;
    uint32_t n;
  } part[3] = {{reinterpret_cast<const char*>(&out.hdr), hb},
               {reinterpret_cast<const char*>(out.small), out.pre},
               {out.data, out.len - hb - out.pre}};
  int n = 0;
  for (const auto& pc : part) {
    if (off >= pc.n) {
      off -= pc.n;
      continue;
    }
    iov[n++] = iovec{const_cast<char*>(pc.p + off), pc.n - off};
    off = 0;
  }
  return n;
}

// The checksums, once every field is final (callers of frame() may set
// more), just before the first byte goes out.
void Conn::seal() {
  Hdr& h = out.hdr;
  const uint32_t body = out.len - static_cast<uint32_t>(sizeof(Hdr));
  if (net->config().checksum && body != 0) {
    h.flags |= kSummed;
    h.body_crc =
        crc32c(crc32c(0, out.small, out.pre), out.data, body - out.pre);
  }
  h.crc = hdr_crc(h);
  out.sealed = true;
  // Tests: damage after the checksum, as a bad link or a middlebox would.
  if (out.data_frame &&
      ++net->counters().data_sealed == net->config().fault_rekey) {
    MsgHdr m;
    memcpy(&m, out.data, sizeof(m));
    m.key.w[0] += uint64_t{1} << 32;
    memcpy(const_cast<char*>(out.data), &m, sizeof(m));
  }
  const uint32_t slot_bytes = body - out.pre;
  if (out.data_frame && slot_bytes > kSlotHdr &&
      net->chance(net->config().fault_corrupt))
    const_cast<char*>(
        out.data)[kSlotHdr + net->rand64() % (slot_bytes - kSlotHdr)] ^= 0x10;
}

void Conn::last_word(uint8_t flags) {
  if (fd < 0) return;
  const uint64_t end = now_ns() + 100000000ull;
  auto put = [&](const void* p, size_t n) {
    const auto* b = static_cast<const char*>(p);
    while (n != 0) {
      const ssize_t w = send(fd, b, n, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w > 0) {
        b += w;
        n -= static_cast<size_t>(w);
        continue;
      }
      if (w < 0 && errno != EAGAIN && errno != EINTR) return false;
      if (now_ns() >= end) return false;
      pollfd pf{fd, POLLOUT, 0};
      poll(&pf, 1, 10);
    }
    return true;
  };
  // The frame under way first: half of one would break the stream.
  bool ok = true;
  if (out.active && out.off != 0) {
    iovec iov[3];
    const int n = out_pieces(out.off, iov);
    for (int i = 0; ok && i < n; ++i) ok = put(iov[i].iov_base, iov[i].iov_len);
  }
  Hdr h{};
  h.magic = kFrameMagic;
  h.version = kFrameVersion;
  h.type = Type::kBye;
  h.flags = flags;
  h.crc = hdr_crc(h);
  if (ok) put(&h, sizeof(h));
}

bool Conn::pump() {
  if (fd < 0) return true;
  for (;;) {
    if (!out.active && !pick()) {
      if (watch_out) net->watch(this, false);
      return true;
    }
    if (out.ready_at != 0 && net->now() < out.ready_at) return true;
    if (!out.sealed) seal();
    const uint32_t hb = static_cast<uint32_t>(sizeof(Hdr));
    iovec iov[3];
    const int n = out_pieces(out.off, iov);
    const uint32_t split = net->config().fault_split;
    if (split != 0) {
      // Test knob: a short write of 1..split bytes.
      size_t cap = 1 + net->rand64() % split, left = cap;
      for (int i = 0; i < n; ++i) {
        if (iov[i].iov_len > left) iov[i].iov_len = left;
        left -= iov[i].iov_len;
      }
    }
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = static_cast<size_t>(n);
    const ssize_t w = sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EAGAIN || errno == EINTR) {
        if (!watch_out) net->watch(this, true);
        return true;
      }
      net->broken(this, strerror(errno));
      return false;
    }
    out.off += static_cast<uint32_t>(w);
    if (out.off < out.len) continue;
    out.active = false;
    ++net->counters().tx_frames;
    if (out.hdr.type == Type::kBye && out.link != nullptr &&
        (out.hdr.flags & kAck))
      out.link->byeack_owed = false;
    if (out.answer) ++out.link->ans_head;
    if (out.hdr.type == Type::kPut && net->chance(net->config().fault_drop)) {
      ++net->counters().inj_drops;  // test knob, as for data frames
      shutdown(fd, SHUT_RDWR);
    }
    if (out.data_frame) {
      Link* l = out.link;
      ++l->msgs;
      net->counters().tx_bytes += out.len - hb - out.pre - kSlotHdr;
      if (net->chance(net->config().fault_drop)) {
        // Test knob: the connection breaks right after this frame.
        ++net->counters().inj_drops;
        shutdown(fd, SHUT_RDWR);
      }
    }
  }
}

}  // namespace ucc::plat::tcp

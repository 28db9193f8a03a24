// One-sided reads and writes over TCP (tcp_proto.h, "One-sided reads",
// "One-sided writes"): the fabric's registrations, gets and puts emulated
// with request and answer frames. The bytes are written from registered
// memory itself (sendmsg) and read into registered memory itself (recv),
// so they cross no slot and neither CPU copies them; what a NIC would do
// alone, the target's progress does here (it is in the collective whose
// bytes move, waiting for them, so it progresses).
//
// Registrations: a fixed table of kMaxRmaRegs per endpoint. A key is
// the entry's index in its low 8 bits and 24 random bits above, so a
// request for an entry given back and taken again is refused. A
// request is checked against the endpoint its frame names, whole
// elements of the registration and its rights, before a byte is read.
#include <cstring>

#include "platform/os/log.h"
#include "platform/tcp/tcp_conn.h"
#include "platform/tcp/tcp_net.h"

namespace ucc::plat::tcp {

static_assert(kMaxRmaRegs <= 256, "the key keeps the entry in 8 bits");

Status TcpFabric::mem_reg(void* addr, uint64_t len, uint32_t access,
                          RmaReg* reg) {
  uint32_t h = 0;
  while (h < kMaxRmaRegs && regs_[h].key != 0) ++h;
  if (h == kMaxRmaRegs || len == 0) return Status::kNoResource;
  uint32_t key = 0;
  while (key == 0)
    key = (static_cast<uint32_t>(net_->rand64()) & 0xffffff00u) | h;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  regs_[h] = Reg{a, len, key, access};
  *reg = RmaReg{a, len, key, key, h, 0};
  return Status::kOk;
}

void TcpFabric::mem_dereg(uint32_t handle) {
  if (handle >= kMaxRmaRegs || regs_[handle].key == 0) return;
  regs_[handle] = Reg{};
  for (uint32_t i = 0; i < nmade_; ++i) forget(links_[made_[i]], handle);
}

void TcpFabric::forget(Link& l, uint32_t handle) {
  Conn* c = l.conn;
  // Our gets into it land nowhere from now on (the memory is the user's
  // again), also the oldest's answer if it is being read. Our puts from it
  // not acknowledged yet cannot be sent (again) from memory that is not
  // ours: the link fails, as an RDMA queue pair whose work names a
  // registration given back does.
  for (uint32_t i = l.get_head; i != l.get_tail; ++i) {
    Link::Get& g = l.gets[i % kMaxGets];
    if (g.handle != handle) continue;
    if (g.put) {
      if (l.state == Link::State::kLive) {
        UCC_WARN(
            "tcp: a registration was given back under a put to team "
            "rank %u",
            l.rank);
        l.state = Link::State::kLost;
      }
      if (c != nullptr && c->out.active && c->out.link == &l &&
          c->out.hdr.type == Type::kPut) {
        net_->broken(c, "a registration being written from was given back");
        return;
      }
      continue;
    }
    g.dst = nullptr;
    if (i == l.get_head && c != nullptr && c->in.have_hdr && c->in.link == &l &&
        c->in.hdr.type == Type::kGetData)
      c->in.dst = nullptr;
  }
  // A put of the peer's being read into it: the rest is dropped.
  if (c != nullptr && c->in.have_hdr && c->in.link == &l &&
      c->in.hdr.type == Type::kPut && c->in.put_handle == handle)
    c->in.dst = nullptr;
  // Answers still owed from it are refused instead; one being written
  // cannot be cut short in the stream: its connection is made again, and
  // the peer's repeated request is refused then.
  for (uint32_t i = l.ans_head; i != l.ans_tail; ++i) {
    Link::Answer& a = l.answers[i % kMaxGets];
    if (a.handle != handle) continue;
    if (i == l.ans_head && c != nullptr && c->out.active && c->out.answer &&
        c->out.link == &l) {
      net_->broken(c, "a registration being read was given back");
      return;  // the connection's answers are forgotten
    }
    a = Link::Answer{nullptr, 0, kMaxRmaRegs, a.ack};
  }
}

uint32_t TcpFabric::rma_regs() const {
  uint32_t n = 0;
  for (uint32_t h = 0; h < kMaxRmaRegs; ++h) n += regs_[h].key != 0;
  return n;
}

Status TcpFabric::post_rma(uint32_t peer, const Link::Get& op,
                           const RmaReg& reg, uint32_t need, uint64_t* ticket) {
  if (!serves(peer)) return Status::kInvalidParam;
  Link& l = reached(pair_of(peer));
  if (l.state != Link::State::kLive) return Status::kError;
  const auto at = reinterpret_cast<uintptr_t>(op.put ? op.src : op.dst);
  if (reg.handle >= kMaxRmaRegs || regs_[reg.handle].key != reg.lkey ||
      (regs_[reg.handle].access & need) != need || op.len == 0 ||
      op.len > kRmaMaxOp || !rma_covers(reg.addr, reg.len, at, op.len))
    return Status::kInvalidParam;
  if (l.get_tail - l.get_head == kMaxGets) return Status::kInProgress;
  l.gets[l.get_tail % kMaxGets] = op;
  // Operation n completes as rma_done reaches n: a get once its bytes are
  // in, a put once its acknowledgement is.
  *ticket = ++l.get_tail;
  net_->kick(&l);
  return Status::kOk;
}

Status TcpFabric::get(uint32_t peer, void* local, const RmaReg& reg,
                      uint64_t raddr, uint32_t rkey, uint32_t len,
                      uint64_t* ticket) {
  return post_rma(peer,
                  Link::Get{static_cast<char*>(local), nullptr, raddr, rkey,
                            len, reg.handle, false},
                  reg, kRmaLocal, ticket);
}

// Any registration of ours may be written from (Fabric::put).
Status TcpFabric::put(uint32_t peer, const void* local, const RmaReg& reg,
                      uint64_t raddr, uint32_t rkey, uint32_t len,
                      uint64_t* ticket) {
  return post_rma(peer,
                  Link::Get{nullptr, static_cast<const char*>(local), raddr,
                            rkey, len, reg.handle, true},
                  reg, 0, ticket);
}

uint32_t TcpFabric::allowed(const RmaReq& q, uint32_t access) const {
  const uint32_t h = q.rkey & 0xffu;
  return h < kMaxRmaRegs && regs_[h].key == q.rkey && regs_[h].key != 0 &&
                 (regs_[h].access & access) != 0 && q.len <= kRmaMaxOp &&
                 rma_covers(regs_[h].addr, regs_[h].len, q.addr, q.len)
             ? h
             : kMaxRmaRegs;
}

// (A put's request carries at least one byte: Conn::begin_rma, place_put.)
char* TcpFabric::put_target(const RmaReq& q, uint32_t* handle) const {
  *handle = allowed(q, kRmaRemoteWrite);
  return *handle != kMaxRmaRegs ? reinterpret_cast<char*>(q.addr) : nullptr;
}

bool TcpFabric::on_put(Link& l, uint32_t handle) {
  if (l.ans_tail - l.ans_head == kMaxGets) return false;
  l.answers[l.ans_tail++ % kMaxGets] = Link::Answer{nullptr, 0, handle, true};
  net_->kick(&l);
  return true;
}

bool TcpFabric::on_get(Link& l, const RmaReq& q) {
  if (l.ans_tail - l.ans_head == kMaxGets) return false;
  const uint32_t h = allowed(q, kRmaRemoteRead);
  Link::Answer a{nullptr, 0, kMaxRmaRegs, false};
  if (h != kMaxRmaRegs)
    a = Link::Answer{reinterpret_cast<const char*>(q.addr), q.len, h, false};
  l.answers[l.ans_tail++ % kMaxGets] = a;
  net_->kick(&l);
  return true;
}

// --- the connection's side (tcp_conn.h)
// ------------------------------------------

bool Conn::begin_rma(const Hdr& h) {
  in.link = own_link(h);
  if (h.type == Type::kGet) {
    if (h.len != sizeof(RmaReq)) return false;
    in.dst = reinterpret_cast<char*>(in.small);
    return true;
  }
  if (h.type == Type::kPut) {
    // The request first (into `small`); where the bytes go is decided
    // once it is in (place_put).
    if (h.len <= sizeof(RmaReq) || h.len - sizeof(RmaReq) > kRmaMaxOp)
      return false;
    in.pre = sizeof(RmaReq);
    in.put_handle = kMaxRmaRegs;
    return true;
  }
  // kGetData, kPutAck: the answer to the link's oldest get or put asked
  // on this connection, as long as it asked; dropped for an endpoint gone
  // since.
  const bool ack = h.type == Type::kPutAck;
  if (in.link == nullptr) return ack ? h.len == 0 : h.len <= kRmaMaxOp;
  Link& l = *in.link;
  if (l.get_head == l.get_asked) return false;  // nothing asked
  const Link::Get& g = l.gets[l.get_head % kMaxGets];
  if (g.put != ack) return false;  // not the answer it is owed
  if (ack || (h.flags & kRefused) != 0) return h.len == 0;
  if (h.len != g.len) return false;
  in.dst = g.dst;
  return true;
}

void Conn::place_put() {
  Link* l = in.link;
  RmaReq q;
  memcpy(&q, in.small, sizeof(q));
  // Bytes for an endpoint gone, or a link that failed, are dropped; so
  // are a refused put's, which is answered so.
  if (l == nullptr || l->state != Link::State::kLive ||
      q.len != in.hdr.len - sizeof(RmaReq))
    return;
  in.dst = l->fab->put_target(q, &in.put_handle);
}

bool Conn::end_rma(const Hdr& h) {
  Link* l = in.link;
  if (h.type == Type::kGet) {
    if (l == nullptr || l->state != Link::State::kLive) return true;
    RmaReq q;
    memcpy(&q, in.small, sizeof(q));
    return l->fab->on_get(*l, q);
  }
  if (h.type == Type::kPut) {
    if (l == nullptr || l->state != Link::State::kLive) return true;
    if (in.put_handle != kMaxRmaRegs) {
      ++net->counters().puts_in;
      net->counters().put_in_bytes += h.len - sizeof(RmaReq);
    }
    return l->fab->on_put(*l, in.put_handle);
  }
  if (l == nullptr) return true;
  const uint32_t len = l->gets[l->get_head % kMaxGets].len;
  ++l->get_head;
  if ((h.flags & kRefused) != 0) {
    // As a remote access error on RDMA: the link fails.
    if (l->state == Link::State::kLive) {
      UCC_WARN("tcp: team rank %u refused a one-sided %s of its memory",
               l->rank, h.type == Type::kPutAck ? "write" : "read");
      l->state = Link::State::kLost;
    }
    return true;
  }
  ++l->rma_done;
  if (h.type == Type::kPutAck) {
    ++net->counters().puts;
    net->counters().put_bytes += len;
  } else {
    ++net->counters().gets;
    net->counters().get_bytes += h.len;
  }
  return true;
}

bool Conn::pick_rma(Link* l) {
  if (l->ans_head != l->ans_tail) {
    const Link::Answer& a = l->answers[l->ans_head % kMaxGets];
    frame(a.ack ? Type::kPutAck : Type::kGetData, l, a.len);
    if (a.handle == kMaxRmaRegs) out.hdr.flags = kRefused;
    out.data =
        a.src != nullptr ? a.src : reinterpret_cast<const char*>(out.small);
    out.answer = true;
    return true;
  }
  if (l->get_asked != l->get_tail) {
    const Link::Get& g = l->gets[l->get_asked++ % kMaxGets];
    const RmaReq q{g.raddr, g.rkey, g.len};
    memcpy(out.small, &q, sizeof(q));
    if (!g.put) {
      frame(Type::kGet, l, sizeof(RmaReq));
      return true;
    }
    // The request, then the bytes straight from the registered memory.
    frame(Type::kPut, l, static_cast<uint32_t>(sizeof(RmaReq)) + g.len);
    out.pre = sizeof(RmaReq);
    out.data = g.src;
    return true;
  }
  return false;
}

}  // namespace ucc::plat::tcp

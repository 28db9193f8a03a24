// The daemon's clients over TCP (dpu mode, docs/dpu.md): hosts on other
// computers. Nothing they say is taken on trust: they prove the key
// first (offload/proto.h, "Over a network"), every request after that
// carries a tag under the connection's session key and a growing seq,
// and their engines reach their memory by RDMA only, through the keys of
// their own registrations (no pid, no /proc, no cross-memory attach).
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <new>

#include "firmware_sim/server.h"
#include "firmware_sim/server_client.h"
#include "platform/mem/mem_access.h"
#include "platform/os/log.h"
#include "platform/os/sock.h"
#include "platform/wire/wire.h"

namespace ucc::fw {

namespace proto = off::proto;

void Server::accept_tcp() {
  for (;;) {
    const int fd =
        accept4(tfd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    plat::sock::tcp_tune(fd, static_cast<uint32_t>(cfg_.io_timeout_ms) * 4);
    if (!adopt_remote(fd)) return;
  }
}

bool Server::stranger_overdue(const Client& c, uint64_t now) const {
  return c.tcp && !c.authed &&
         now - c.since_ms > static_cast<uint64_t>(cfg_.io_timeout_ms);
}

bool Server::adopt_remote(int fd) {
  // Connections that have not proved the key yet are bounded: a new one
  // displaces the oldest, so strangers holding silent connections cannot
  // fill the daemon, and each goes after io_timeout_ms anyway.
  constexpr uint32_t kMaxStrangers = 64;
  uint32_t strangers = 0, oldest = 0;
  for (uint32_t i = 0; i < nclients_; ++i) {
    const Client& o = *clients_[i];
    if (!o.tcp || o.authed) continue;
    if (strangers++ == 0 || o.since_ms < clients_[oldest]->since_ms) oldest = i;
  }
  if (strangers >= kMaxStrangers) drop(oldest);
  Client* c = add_client(fd);
  if (c == nullptr) return false;
  c->tcp = true;  // no pid, no uid: it must prove the key
  c->since_ms = now_ms();
  proto::AuthChallenge ch{};
  ch.version = proto::kVersion;
  proto::MsgHeader h{proto::kMagic, proto::kVersion, proto::kChallenge,
                     sizeof(ch), 0};
  bool sent = plat::random_bytes(c->nonce, sizeof(c->nonce));
  if (sent) {
    memcpy(ch.nonce, c->nonce, sizeof(ch.nonce));
    sent = c->io.send(&h, sizeof(h), &ch, sizeof(ch), now_ms());
  }
  if (!sent) {
    delete c;  // closes the socket
    return true;
  }
  clients_[nclients_++] = c;
  UCC_DEBUG("firmware_sim: a TCP client connected");
  return true;
}

bool Server::tcp_in(Client& c, Msg& m) {
  if (!c.authed) return m.h.type == proto::kAuth;
  if (!proto::message_ok(c.session, proto::End::kHost, m.h, m.body) ||
      m.h.seq <= c.last_seq) {
    UCC_INFO(
        "firmware_sim: a TCP client sent a message with a bad tag or "
        "an old seq; dropping it");
    return false;
  }
  c.last_seq = m.h.seq;
  m.h.len -= static_cast<uint32_t>(proto::kTagBytes);
  return true;
}

bool Server::on_auth(Client& c, const Msg& m) {
  proto::AuthProof p;
  proto::AuthReply r{};
  r.status = static_cast<int32_t>(Status::kInvalidParam);
  uint8_t want[32];
  if (!c.tcp || c.authed || !m.fixed(sizeof(p))) return false;
  memcpy(&p, m.body, sizeof(p));
  if (!proto::auth_proof(cfg_.key, proto::End::kHost, c.nonce, p.nonce, want) ||
      !plat::mac_equal(want, p.mac)) {
    UCC_INFO("firmware_sim: a TCP client did not prove the key; refused");
    reply(c, m.h.type, m.h.seq, &r, sizeof(r));
    return false;
  }
  if (!proto::auth_proof(cfg_.key, proto::End::kEngine, c.nonce, p.nonce,
                         r.mac) ||
      !proto::auth_session(cfg_.key, c.nonce, p.nonce, &c.session))
    return false;
  r.status = static_cast<int32_t>(Status::kOk);
  const bool sent = reply(c, m.h.type, m.h.seq, &r, sizeof(r));
  c.authed = true;  // after the reply: it has no tag
  c.last_seq = m.h.seq;
  UCC_DEBUG("firmware_sim: a TCP client proved the key");
  return sent;
}

bool Server::on_hello_remote(Client& c, const Msg& m) {
  proto::HelloReply hr{};
  hr.status = static_cast<int32_t>(Status::kInvalidParam);
  hr.daemon_pid = static_cast<int32_t>(getpid());
  proto::HelloRemote hello;
  // The engine reaches this host by RDMA only: it must have connected
  // its channel (kRdmaConnect) first.
  if (c.tcp && !c.ready && c.rmem.mem != nullptr && m.fixed(sizeof(hello))) {
    memcpy(&hello, m.body, sizeof(hello));
    off::EngineConfig ec = hello.hello.engine;
    ec.cma_min = 0;  // no single copy: host memory is not ours to map
    proto::Hello h = hello.hello;
    h.engine = ec;
    const off::ChannelLayout lay = off::Channel::layout(h.sq_capacity, h.ncomp);
    uint64_t end = 0;
    // No result areas: the engine's copy of the channel is mirrored back
    // word by word (RemoteChannel).
    if (hello_ok(h) && h.nres == 0 && hello.rkey != 0 &&
        !__builtin_add_overflow(hello.channel_addr, lay.total, &end)) {
      // Our copy of its channel (completion words touched only where
      // used, as on the host).
      void* p = mmap(nullptr, lay.total, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      Status st = p != MAP_FAILED ? Status::kOk : Status::kNoMemory;
      if (ok(st)) {
        c.chmem = p;
        c.chbytes = lay.total;
        c.ch.init(p, h.sq_capacity, h.ncomp);
        c.mirror = new (std::nothrow) RemoteChannel;
        if (c.mirror == nullptr) st = Status::kNoMemory;
      }
      if (ok(st) && (hello.flags & proto::kPushDescriptors) != 0)
        offer_inbox(c, h.sq_capacity, &hr);
      if (ok(st)) {
        c.mirror->init(&c.rmem, hello.channel_addr, hello.rkey, h.sq_capacity,
                       h.ncomp, &c.ch, c.inbox);
        st = c.regs.init();
      }
      if (ok(st)) {
        dev::EngineEnv env;
        env.net = cfg_.wire != nullptr ? cfg_.wire : cfg_.net;
        env.where.host[0] = cfg_.node[0];
        env.where.host[1] = cfg_.node[1];
        // pid 0: never cross-memory attach; the slot holds the RDMA
        // channel already.
        env.mem = plat::MemAccess::cross_process(0, &c.regs, &c.rmem);
        st = c.engine.init(ec, env, &c.ch);
      }
      if (ok(st)) hr.caps = c.engine.caps();
      hr.status = static_cast<int32_t>(st);
      c.ready = ok(st);
    }
  }
  return reply(c, m.h.type, m.h.seq, &hr, sizeof(hr)) && c.ready;
}

void Server::offer_inbox(Client& c, uint32_t sq_capacity,
                         proto::HelloReply* hr) {
  // Zeroed: an index of 0, nothing pushed yet. Not granted (the TCP
  // fallback cannot expose memory; the daemon's budget of pinned inbox
  // memory is spent), the engine reads the host's ring.
  const size_t bytes = off::InboxLayout::bytes(sq_capacity);
  if (inbox_bytes_ + bytes > cfg_.inbox_budget) {
    UCC_INFO(
        "firmware_sim: inboxes hold %llu bytes of %llu (--inbox-budget): "
        "a dpu client's engine reads its ring",
        static_cast<unsigned long long>(inbox_bytes_),
        static_cast<unsigned long long>(cfg_.inbox_budget));
    return;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  uint32_t rkey = 0;
  if (!c.rmem.mem->expose(p, bytes, &rkey)) {
    munmap(p, bytes);
    UCC_INFO(
        "firmware_sim: a dpu client asked to push descriptors; "
        "its channel cannot take them: the engine reads its ring");
    return;
  }
  c.inbox = p;
  c.inbox_bytes = bytes;
  inbox_bytes_ += bytes;
  hr->inbox_addr = reinterpret_cast<uintptr_t>(p);
  hr->inbox_rkey = rkey;
  hr->flags = proto::kPushDescriptors;
}

bool Server::mirror_ok(Client& c) {
  if (!c.mirror->broken() && !c.mirror->corrupt()) return true;
  // A host that died takes its port's registrations with it: the failed
  // read is how we hear of it first, when its socket has closed too.
  char b;
  const bool left = !c.mirror->corrupt() &&
                    recv(c.io.fd(), &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  if (left) {
    UCC_INFO("firmware_sim: a dpu client has gone; dropping it");
  } else {
    UCC_ERROR("firmware_sim: a dpu client's channel broke (%s); dropping it",
              c.mirror->corrupt()   ? "impossible ring indices"
              : c.tcpmem != nullptr ? "a transfer over TCP failed"
                                    : "an RDMA transfer failed");
  }
  return false;
}

void Server::set_idle(Client& c, bool idle) {
  if (c.mirror != nullptr)
    c.mirror->set_idle(idle);
  else
    c.ch.set_engine_idle(idle);
}

}  // namespace ucc::fw

#include "firmware_sim/server.h"

#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "device/engine/engine.h"
#include "firmware_sim/client_io.h"
#include "firmware_sim/server_client.h"
#include "offload/channel.h"
#include "offload/proto.h"
#include "platform/mem/mem_access.h"
#include "platform/mem/proc_maps.h"
#include "platform/mem/reg_table.h"
#include "platform/mem/remote_mem.h"
#include "platform/os/clock.h"
#include "platform/os/log.h"
#include "platform/os/proc_id.h"
#include "platform/os/segment.h"
#include "platform/os/sock.h"
#include "platform/wire/wire.h"

namespace ucc::fw {

namespace proto = off::proto;

Server::~Server() {
  while (nclients_ != 0) drop(nclients_ - 1);
  free(clients_);
  free(pfds_);
  if (tfd_ >= 0) close(tfd_);
  if (lfd_ >= 0) {
    close(lfd_);
    unlink(cfg_.socket_path);
  }
}

Status Server::start(const ServerConfig& cfg) {
  cfg_ = cfg;
  // A daemon for every user must be reachable by them (in a directory
  // they can enter, which its administrator chose): each client is still
  // told apart by its socket credentials.
  int s = plat::sock::listen_at(cfg.socket_path, cfg.any_user);
  if (s == -EADDRINUSE) return Status::kNoResource;
  if (s < 0) {
    UCC_ERROR("firmware_sim: cannot listen on %s: %s", cfg.socket_path,
              strerror(-s));
    return Status::kError;
  }
  lfd_ = s;
  if (cfg.listen_addr != nullptr) {
    if (cfg.key.len == 0) {
      UCC_ERROR("firmware_sim: --listen needs a key (--key-file)");
      return Status::kInvalidParam;
    }
    if (cfg.hostmem == nullptr)
      UCC_WARN(
          "firmware_sim: --listen without --verbs: hosts' memory over TCP "
          "only (UCC_DPU_MEM=tcp), a development fallback, slower than "
          "RDMA (docs/dpu.md)");
    const int t = plat::sock::tcp_listen(cfg.listen_addr);
    if (t < 0) {
      UCC_ERROR("firmware_sim: cannot listen on %s: %s", cfg.listen_addr,
                strerror(-t));
      return t == -EADDRINUSE ? Status::kNoResource : Status::kError;
    }
    tfd_ = t;
  }
  started_ms_ = now_ms();
  return Status::kOk;
}

void Server::accept_clients() {
  for (;;) {
    pollfd pf{lfd_, POLLIN, 0};
    if (poll(&pf, 1, 0) <= 0) return;
    int fd = accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    if (!adopt(fd)) return;
  }
}

Server::Client* Server::add_client(int fd) {
  if (nclients_ == cap_) {
    uint32_t cap = cap_ == 0 ? 16 : cap_ * 2;
    auto** n = static_cast<Client**>(realloc(clients_, cap * sizeof(void*)));
    if (n == nullptr) {
      close(fd);
      return nullptr;
    }
    clients_ = n;
    cap_ = cap;
  }
  auto* c = new (std::nothrow) Client;
  if (c == nullptr) {
    close(fd);
    return nullptr;
  }
  c->io.init(fd);
  return c;
}

bool Server::adopt(int fd) {
  Client* c = add_client(fd);
  if (c == nullptr) return false;
  if (!plat::sock::peer_cred(fd, &c->pid, &c->uid) ||
      (!cfg_.any_user && c->uid != static_cast<int64_t>(geteuid()))) {
    UCC_INFO(
        "firmware_sim: refused pid %d of uid %lld (this daemon serves uid "
        "%u only; --allow-users for all)",
        c->pid, static_cast<long long>(c->uid),
        static_cast<unsigned>(geteuid()));
    delete c;  // closes the socket
    return true;
  }
  clients_[nclients_++] = c;
  UCC_DEBUG("firmware_sim: client pid %d connected", c->pid);
  return true;
}

void Server::drop(uint32_t i) {
  Client* c = clients_[i];
  UCC_DEBUG("firmware_sim: client pid %d gone", c->pid);
  // Closing the engine ends its collectives; the fabric segments it
  // shared with other clients' engines go with it, and their collectives
  // with this client's ranks end with an error, not a hang.
  c->engine.fini(/*lost=*/true);
  steps_gone_.add(c->rmem.steps);
  if (c->mirror != nullptr) pushed_gone_ += c->mirror->pushed();
  if (c->tcpmem != nullptr) {
    tcp_mem_requests_ += c->tcpmem->requests();
    delete c->tcpmem;
  } else if (c->rmem.mem != nullptr) {
    cfg_.hostmem->close(c->rmem.mem);
  }
  delete c->mirror;
  if (c->chmem != nullptr) munmap(c->chmem, c->chbytes);
  // After the channel that exposed it has closed.
  if (c->inbox != nullptr) {
    munmap(c->inbox, c->inbox_bytes);
    inbox_bytes_ -= c->inbox_bytes;
  }
  delete c;  // closes the socket
  clients_[i] = clients_[--nclients_];
}

bool Server::reply(Client& c, uint16_t type, uint32_t seq, const void* body,
                   uint32_t len) {
  proto::MsgHeader h{proto::kMagic, proto::kVersion,
                     static_cast<uint16_t>(type | proto::kReply), len, seq};
  if (c.tcp && c.authed) {
    // Over TCP: the body, then its tag (replies are small PODs).
    unsigned char buf[proto::kMaxReply];
    if (len + proto::kTagBytes > sizeof(buf)) return false;
    h.len = static_cast<uint32_t>(len + proto::kTagBytes);
    if (len != 0) memcpy(buf, body, len);
    if (!proto::message_tag(c.session, proto::End::kEngine, h, buf, len,
                            buf + len))
      return false;
    return c.io.send(&h, sizeof(h), buf, h.len, now_ms());
  }
  // Queued when the socket does not take it now; a client that leaves
  // its replies unread past the buffer is dropped (client_io.h).
  return c.io.send(&h, sizeof(h), body, len, now_ms());
}

// Answers the requests a client has sent, as far as they have arrived,
// at most kRequestsPerPass of them: no client keeps the others waiting,
// whether it floods us or sends one byte at a time. Every field of a
// request is checked before use.
bool Server::handle(Client& c) {
  constexpr int kRequestsPerPass = 16;
  for (int i = 0; i < kRequestsPerPass; ++i) {
    Msg m;
    const ClientIo::In in = c.io.read(&m, now_ms());
    if (in == ClientIo::In::kMore) return true;
    if (in == ClientIo::In::kBroken) return false;
    if (c.tcp && !tcp_in(c, m)) return false;
    const bool keep = dispatch(c, m);
    if (m.fd >= 0) close(m.fd);
    if (!keep) return false;
  }
  return true;
}

bool Server::still_same(Client& c) {
  // Over TCP the client is whoever proved the key on this connection.
  if (!c.ready || c.tcp) return true;
  c.id_checked_ms = now_ms();
  if (plat::same_process(c.pid, c.id)) return true;
  // A client that exited before we saw its socket close is routine; one
  // that became another program is what the check is for.
  if (plat::process_exited(c.pid)) {
    UCC_DEBUG("firmware_sim: pid %d has exited; dropping its connection",
              c.pid);
  } else {
    UCC_ERROR(
        "firmware_sim: pid %d is no longer the process that said hello (it "
        "exec'd another program); dropping its connection",
        c.pid);
  }
  return false;
}

bool Server::dispatch(Client& c, Msg& m) {
  proto::Reply rep{static_cast<int32_t>(Status::kInvalidParam), 0};
  // Acts on the client's memory or resources: only for the process that
  // said hello (a child that kept the socket after its parent exec'd a
  // setuid program is not it).
  if ((m.h.type == proto::kRegister || m.h.type == proto::kTeamOpen ||
       m.h.type == proto::kTeamConnect) &&
      !still_same(c))
    return false;
  switch (m.h.type) {
    case proto::kHello:
      return on_hello(c, m);
    case proto::kAuth:
      return on_auth(c, m);
    case proto::kHelloRemote:
      return on_hello_remote(c, m);
    case proto::kTeamOpen:
      return on_team_open(c, m);
    case proto::kTeamConnect:
      rep.status = static_cast<int32_t>(on_team_connect(c, m));
      break;
    case proto::kTeamSeal:
    case proto::kTeamClose:
      rep.status = static_cast<int32_t>(on_team_seal_close(c, m));
      break;
    case proto::kRegister:
      return on_register(c, m);
    case proto::kRdmaConnect:
      return on_rdma_connect(c, m);
    case proto::kTcpMemConnect:
      return on_tcp_mem_connect(c, m);
    case proto::kTcpMemAttach:
      return on_tcp_mem_attach(c, m);
    case proto::kDeregister: {
      proto::Deregister dr;
      if (c.ready && m.fixed(sizeof(dr))) {
        memcpy(&dr, m.body, sizeof(dr));
        if (c.regs.remove(dr.key))
          rep.status = static_cast<int32_t>(Status::kOk);
      }
      break;
    }
    case proto::kStats:
      return on_stats(c, m);
    case proto::kShutdown:
      // Only the daemon's own user (or root) ends it: on a daemon shared
      // by users, one of them must not take it from the others.
      if (c.uid == static_cast<int64_t>(geteuid()) || c.uid == 0) {
        shutdown_ = true;
        rep.status = static_cast<int32_t>(Status::kOk);
      } else {
        UCC_INFO("firmware_sim: uid %lld may not shut this daemon down",
                 static_cast<long long>(c.uid));
      }
      break;
    case proto::kDoorbell:
      return true;  // waking us was the point; no reply
    case proto::kBye:
      // Answered, then dropped: its engine is gone before the host reads
      // the answer and lets go of its memory.
      rep.status = static_cast<int32_t>(Status::kOk);
      c.engine.fini(/*lost=*/false);
      reply(c, m.h.type, m.h.seq, &rep, sizeof(rep));
      return false;
    default:
      break;
  }
  return reply(c, m.h.type, m.h.seq, &rep, sizeof(rep));
}

// kHello: map the channel the host passed, start its engine, answer with
// the engine's capability record.
bool Server::on_hello(Client& c, Msg& m) {
  proto::HelloReply hr{};
  hr.status = static_cast<int32_t>(Status::kInvalidParam);
  hr.daemon_pid = static_cast<int32_t>(getpid());
  proto::Hello hello;
  if (!c.ready && m.fd >= 0 && m.fixed(sizeof(hello))) {
    memcpy(&hello, m.body, sizeof(hello));
    // Only a sealed memfd of the client's own, of exactly the size the
    // geometry needs: a file it could shrink would fault here, and any
    // other file it opened (another user's, read-only) is not ours to
    // map (segment.h).
    void* p = nullptr;
    if (hello_ok(hello) &&
        ok(plat::seg_map_fd(m.fd, hello.channel_bytes, c.uid, &p))) {
      {
        c.chmem = p;
        c.chbytes = hello.channel_bytes;
        Status st = c.ch.attach(p, c.chbytes);
        if (ok(st)) st = c.regs.init();
        if (ok(st)) {
          // The host's memory by its pid from the socket (not from
          // anything it says), within its registrations only.
          dev::EngineEnv env;
          env.net = cfg_.wire != nullptr ? cfg_.wire : cfg_.net;
          env.where.host[0] = cfg_.node[0];
          env.where.host[1] = cfg_.node[1];
          env.mem = plat::MemAccess::cross_process(c.pid, &c.regs, &c.rmem);
          st = c.engine.init(hello.engine, env, &c.ch);
        }
        // Who said hello: every privileged act checks it is still so.
        c.id = plat::proc_id(c.pid);
        if (ok(st) && !c.id.valid) st = Status::kError;
        if (ok(st)) hr.caps = c.engine.caps();
        hr.status = static_cast<int32_t>(st);
        c.ready = ok(st);
      }
    }
  }
  if (m.fd >= 0) close(m.fd);  // the mapping (if any) keeps the memory
  m.fd = -1;
  return reply(c, m.h.type, m.h.seq, &hr, sizeof(hr)) && c.ready;
}

bool Server::on_team_open(Client& c, const Msg& m) {
  proto::TeamOpenReply tr{};
  tr.status = static_cast<int32_t>(Status::kInvalidParam);
  proto::TeamOpen to;
  if (c.ready && m.fixed(sizeof(to))) {
    memcpy(&to, m.body, sizeof(to));
    if (to.size >= 1 && to.size <= 65536 && to.rank < to.size) {
      Status st = c.engine.team_open(to.size, to.rank, &tr.idx, &tr.addr);
      tr.status = static_cast<int32_t>(st);
      if (ok(st)) ++c.teams;
    }
  }
  return reply(c, m.h.type, m.h.seq, &tr, sizeof(tr));
}

Status Server::on_team_connect(Client& c, const Msg& m) {
  proto::TeamConnect tc;
  if (!c.ready || m.h.len < sizeof(tc)) return Status::kInvalidParam;
  memcpy(&tc, m.body, sizeof(tc));
  uint64_t need = sizeof(tc) + uint64_t{tc.size} * sizeof(off::TeamAddr);
  if (need != m.h.len || tc.size != c.engine.team_size(tc.idx))
    return Status::kInvalidParam;
  return c.engine.team_connect(
      tc.idx, reinterpret_cast<const off::TeamAddr*>(m.body + sizeof(tc)));
}

Status Server::on_team_seal_close(Client& c, const Msg& m) {
  proto::TeamIdx ti;
  if (!c.ready || !m.fixed(sizeof(ti))) return Status::kInvalidParam;
  memcpy(&ti, m.body, sizeof(ti));
  if (c.engine.team_size(ti.idx) == 0) return Status::kInvalidParam;
  if (m.h.type == proto::kTeamSeal) {
    c.engine.team_seal(ti.idx);
  } else {
    c.engine.team_close(ti.idx);
    --c.teams;
  }
  return Status::kOk;
}

bool Server::on_register(Client& c, const Msg& m) {
  proto::RegisterReply rr{static_cast<int32_t>(Status::kInvalidParam), 0};
  proto::Register rg;
  if (c.ready && m.fixed(sizeof(rg))) {
    memcpy(&rg, m.body, sizeof(rg));
    // Only memory the host has mapped (its own: the pid is the socket's).
    // Where /proc cannot tell, every access is still checked by the
    // kernel. Over TCP there is no /proc of the host: its port checks
    // every access against the key's registration, as it does for GPU
    // memory (mapped PROT_NONE on the host, so /proc cannot vouch).
    const bool gpu = rg.flags == proto::kRegGpu;
    if (rg.flags != 0 && !gpu) {
      UCC_DEBUG("firmware_sim: pid %d: registration flags %#x refused", c.pid,
                rg.flags);
    } else if (gpu && (c.rmem.mem == nullptr || rg.rkey == 0)) {
      UCC_DEBUG("firmware_sim: pid %d: GPU memory without an RDMA key refused",
                c.pid);
    } else if (!c.tcp && !gpu &&
               plat::range_mapped(c.pid, rg.addr, rg.len) ==
                   plat::MapState::kUnmapped) {
      UCC_DEBUG(
          "firmware_sim: pid %d asked to register [%#llx, +%llu), which it "
          "has not mapped: refused",
          c.pid, static_cast<unsigned long long>(rg.addr),
          static_cast<unsigned long long>(rg.len));
    } else if (c.rmem.mem != nullptr && rg.rkey == 0) {
      // The engine reaches this host by RDMA: a range without a key of
      // the host's could not be reached.
      UCC_DEBUG("firmware_sim: pid %d registered a range without an rkey",
                c.pid);
    } else {
      rr.key = c.regs.insert(rg.addr, rg.len, rg.rkey);
      rr.status =
          static_cast<int32_t>(rr.key != 0 ? Status::kOk
                                           : (c.regs.size() == c.regs.capacity()
                                                  ? Status::kNoResource
                                                  : Status::kInvalidParam));
      if (rr.key != 0) ++registered_;
    }
  }
  return reply(c, m.h.type, m.h.seq, &rr, sizeof(rr));
}

uint64_t Server::progress() {
  uint64_t events = cfg_.wire != nullptr ? cfg_.wire->progress() : 0;
  if (cfg_.net != nullptr) events += cfg_.net->progress();
  // Its engine reaches its memory all the time: look now and then
  // (100 ms) whether each client is still the process that said hello.
  // The clock is read every 32nd pass and after a nap, not per client and
  // pass: that read was a sixth of the daemon's time in a small
  // collective (docs/perf/emu.md). Busy passes take microseconds, so the
  // period stays what it was.
  const bool look = look_ || (++passes_ & 31) == 0;
  look_ = false;
  const uint64_t now = look ? now_ms() : 0;
  for (uint32_t i = nclients_; i-- > 0;) {
    Client& c = *clients_[i];
    if (!c.ready) continue;
    if (look && now - c.id_checked_ms >= 100 && !still_same(c)) {
      drop(i);
      ++events;
      continue;
    }
    if (c.mirror != nullptr) {
      events += c.mirror->pull();
      if (!mirror_ok(c)) {
        drop(i);
        ++events;
        continue;
      }
    }
    events += c.engine.progress();
    if (c.mirror != nullptr) c.mirror->flush();
    if (c.mirror != nullptr && !mirror_ok(c)) {
      drop(i);
      ++events;
      continue;
    }
    if (c.ch.corrupt()) {
      // Ring indices no honest host writes: serve it no longer.
      UCC_ERROR("firmware_sim: pid %d wrote impossible ring indices; "
                "dropping it", c.pid);
      drop(i);
      ++events;
    }
  }
  return events;
}

void Server::run() {
  uint32_t idle = 0, passes = 0;
  uint64_t last_client_ms = now_ms();
  while (stop_ == 0) {
    uint64_t events = progress();
    // Requests and new clients: checked every pass while busy is cheap
    // enough (one poll with timeout 0), and waited for while idle.
    bool sleep = false;
    if (events != 0) {
      idle = 0;
    } else if (++idle > cfg_.spin) {
      // Ask hosts for a doorbell, then look once more before sleeping, so
      // a descriptor submitted in between is not left waiting.
      set_idle_all(true);
      sleep = progress() == 0 && (cfg_.wire == nullptr || !cfg_.wire->busy());
      if (!sleep) idle = 0;
    } else if ((idle & 15) == 0) {
      sched_yield();
    }
    // Requests on the sockets are looked at every 64th pass unless asleep:
    // busy or spinning, the rings are where the work comes from, and a
    // poll() per idle pass cost a syscall for each.
    if (!sleep && (++passes & 63) != 0) continue;
    int timeout = 0;
    if (sleep) timeout = nclients_ != 0 ? cfg_.sleep_ms : 100;
    // Peers on the wire cannot ring our doorbell: keep naps short.
    if (sleep && (cfg_.wire != nullptr || cfg_.net != nullptr) && timeout > 1)
      timeout = 1;
    if (!io_pass(timeout)) break;
    if (sleep) {
      set_idle_all(false);
      idle = 0;
      look_ = true;
    }
    if (nclients_ != 0) {
      last_client_ms = now_ms();
    } else {
      if (shutdown_) break;
      if (cfg_.exit_idle_ms >= 0 &&
          now_ms() - last_client_ms > static_cast<uint64_t>(cfg_.exit_idle_ms))
        break;
    }
  }
}

bool Server::io_pass(int timeout_ms) {
  if (pcap_ < nclients_ + 2) {
    const uint32_t cap = nclients_ + 16;
    auto* n = static_cast<pollfd*>(realloc(pfds_, cap * sizeof(pollfd)));
    if (n == nullptr) return false;
    pfds_ = n;
    pcap_ = cap;
  }
  pfds_[0] = pollfd{lfd_, POLLIN, 0};
  pfds_[1] = pollfd{tfd_, POLLIN, 0};  // -1: ignored
  for (uint32_t i = 0; i < nclients_; ++i)
    pfds_[i + 2] =
        pollfd{clients_[i]->io.fd(),
               static_cast<short>(POLLIN |
                                  (clients_[i]->io.wants_out() ? POLLOUT : 0)),
               0};
  const int n = poll(pfds_, nclients_ + 2, timeout_ms);
  if (n > 0) {
    // Clients first (indices match pfds_ until one is dropped).
    for (uint32_t i = nclients_; i-- > 0;) {
      short re = pfds_[i + 2].revents;
      if (re == 0) continue;
      Client& c = *clients_[i];
      bool keep = true;
      if (re & POLLOUT) keep = c.io.flush();
      if (keep && (re & (POLLIN | POLLHUP | POLLERR))) keep = handle(c);
      if (!keep) drop(i);
    }
    if (lfd_ >= 0 && (pfds_[0].revents & POLLIN)) accept_clients();
    if (tfd_ >= 0 && (pfds_[1].revents & POLLIN)) accept_tcp();
  }
  // A request left half-sent, or replies left unread, for too long.
  const uint64_t now = now_ms();
  for (uint32_t i = nclients_; i-- > 0;) {
    if (stranger_overdue(*clients_[i], now)) {
      UCC_INFO(
          "firmware_sim: a TCP client did not prove the key within %d "
          "ms; dropping it",
          cfg_.io_timeout_ms);
      drop(i);
    } else if (clients_[i]->io.overdue(
                   now, static_cast<uint64_t>(cfg_.io_timeout_ms))) {
      UCC_INFO("firmware_sim: pid %d kept a request or its replies pending "
               "past %d ms; dropping it",
               clients_[i]->pid, cfg_.io_timeout_ms);
      drop(i);
    }
  }
  return true;
}

uint64_t Server::pass() {
  const uint64_t events = progress();
  io_pass(0);
  return events;
}

uint64_t Server::nap_pass() {
  set_idle_all(true);
  const uint64_t events = progress();
  set_idle_all(false);
  io_pass(0);
  return events;
}

void Server::set_idle_all(bool idle) {
  for (uint32_t i = 0; i < nclients_; ++i)
    if (clients_[i]->ready) set_idle(*clients_[i], idle);
}

}  // namespace ucc::fw

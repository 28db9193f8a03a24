// Fuzz target for the firmware_sim daemon's network side (dpu mode,
// docs/dpu.md): everything one hostile client across the network can send
// (the handshake, tagged requests, bytes with no framing, forged tags and
// replayed seqs, the TCP fallback asked for and never attached, attaches
// with any token) and everything it can put in the memory the engine reads
// from it by RDMA (its channel: ring indices, descriptors, the header) or
// write by RDMA into the engine's inbox (pushed descriptors and their
// index, honest or not).
//
// The daemon is a real fw::Server in this process, with a key and a
// HostMemPort of the fuzzer's: HostNic, the "NIC" through which the
// engine reaches the client's memory. It serves exactly two windows, each
// under its own rkey, as a NIC serves registrations: the client's channel
// block and an arena (between inaccessible guard pages); any other
// (address, length, rkey) fails as a remote access error does (EIO), which
// breaks the channel. Each input is one client on a socketpair the server
// adopts as a network client (Server::adopt_remote). The input is a
// program (run_op below); the harness can complete the handshake itself,
// so about one operation in eight is a valid proof and most programs get
// past it.
//
// Properties checked (a violation aborts):
//   - no crash, no out-of-bounds access (ASan build), no hang;
//   - every reply after the handshake is well framed and carries the
//     tag of the session (the daemon never answers without it);
//   - the engine never reaches outside the two windows (HostNic checks
//     each access before it copies);
//   - when the client hangs up the daemon drops it within a few passes,
//     and no descriptor of it is left.
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "firmware_sim/server.h"
#include "offload/channel.h"
#include "offload/control_auth.h"
#include "offload/descriptor.h"
#include "offload/proto.h"
#include "platform/mem/remote_mem.h"
#include "platform/os/log.h"
#include "tests/fuzz/fuzz_control.h"
#include "tests/fuzz/fuzz_program.h"

namespace ucc::fuzz {
namespace {

namespace proto = off::proto;
using off::CollDesc;

constexpr uint32_t kSq = 16, kNcomp = 64;
constexpr size_t kArena = 256 * 1024;
constexpr uint32_t kChanKey = 0x1111, kArenaKey = 0x2222;

[[noreturn]] void violated(const char* what) {
  fprintf(stderr, "fuzz_remote: property violated: %s\n", what);
  abort();
}

int checked_free_fd() {
  const int fd = lowest_free_fd();
  if (fd < 0) violated("no descriptor left");
  return fd;
}

// The NIC: copies within the windows it registered, refuses the rest.
struct Window {
  uint8_t* base = nullptr;
  size_t bytes = 0;
  uint32_t rkey = 0;
  bool holds(uint64_t addr, uint32_t rkey_, uint64_t len) const {
    const auto b = reinterpret_cast<uint64_t>(base);
    return base != nullptr && rkey_ == rkey && addr >= b && len <= bytes &&
           addr - b <= bytes - len;
  }
};

class HostNic final : public plat::RemoteMem {
 public:
  Window win[2];
  // The engine's inbox (pushed descriptors), which the "host" writes as
  // its NIC would: until the daemon closes this channel (Port::close).
  uint8_t* inbox = nullptr;
  size_t inbox_bytes = 0;
  bool expose(void* addr, uint64_t len, uint32_t* rkey) override {
    if (inbox != nullptr) return false;
    inbox = static_cast<uint8_t*>(addr);
    inbox_bytes = len;
    *rkey = 0x1b;
    return true;
  }
  bool read(uint64_t addr, uint32_t rkey, void* dst, uint64_t len) override {
    return move(addr, rkey, len, dst, nullptr);
  }
  bool write(uint64_t addr, uint32_t rkey, const void* src,
             uint64_t len) override {
    return move(addr, rkey, len, nullptr, src);
  }

 private:
  bool move(uint64_t addr, uint32_t rkey, uint64_t len, void* dst,
            const void* src) {
    for (const Window& w : win) {
      if (!w.holds(addr, rkey, len)) continue;
      void* p = reinterpret_cast<void*>(static_cast<uintptr_t>(addr));
      if (dst != nullptr)
        memcpy(dst, p, len);
      else
        memcpy(p, src, len);
      return true;
    }
    errno = EIO;  // a remote access error: the channel breaks
    return false;
  }
};

struct Port final : public fw::HostMemPort {
  HostNic* nic = nullptr;  // the current client's
  plat::RemoteMem* open(const proto::RdmaAddr&,
                        proto::RdmaAddr* mine) override {
    memset(mine, 0x5a, sizeof(*mine));
    return nic;
  }
  void close(plat::RemoteMem* m) override {
    static_cast<HostNic*>(m)->inbox = nullptr;  // unmapped next
  }
};

struct World {
  fw::Server server;
  Port port;
  plat::Secret key{};
  uint8_t* arena = nullptr;
  int free_fd = -1;
  std::string sock;
  ControlStats stats;
};

World* g_world = nullptr;

World& world() {
  if (g_world != nullptr) return *g_world;
  plat::log_init();
  if (getenv("UCC_LOG_LEVEL") == nullptr)
    plat::log_set_level(plat::LogLevel::kOff);
  g_world = new World;
  World& w = *g_world;
  memset(w.key.bytes, 0x42, sizeof(w.key.bytes));
  w.key.len = sizeof(w.key.bytes);
  void* m = mmap(nullptr, kArena + 2 * 4096, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) violated("arena mmap");
  w.arena = static_cast<uint8_t*>(m) + 4096;
  mprotect(m, 4096, PROT_NONE);
  mprotect(w.arena + kArena, 4096, PROT_NONE);
  w.sock = "/tmp/ucc-fuzz-remote-" + std::to_string(getpid()) + ".sock";
  fw::ServerConfig cfg;
  cfg.socket_path = w.sock.c_str();
  cfg.key = w.key;
  cfg.hostmem = &w.port;
  if (failed(w.server.start(cfg))) violated("server start");
  w.free_fd = checked_free_fd();
  return w;
}

struct Client {
  World& w;
  HostNic nic;
  int sock = -1;
  uint8_t* chan = nullptr;  // the channel block, in "host" memory
  size_t chan_bytes = 0;
  off::Channel ch;
  uint8_t nonce_e[proto::kNonceBytes] = {};
  bool challenged = false;
  proto::Session session;  // once the daemon proved the key
  uint32_t seq = 0;
  uint16_t pending[64] = {};
  uint32_t phead = 0, ptail = 0;
  uint8_t rbuf[8192];
  size_t rlen = 0;
  bool unframed = false;  // we sent what no honest client sends
  uint32_t team = 0;
  off::TeamAddr addr{};
  bool has_team = false;
  uint32_t key = 0;  // a registration of the arena
  uint32_t gen = 0;
  uint32_t pushed = 0;     // the head last pushed into the engine's inbox
  uint8_t token[32] = {};  // kTcpMemConnect's answer
  bool has_token = false;
  explicit Client(World& world) : w(world) {}
  ~Client() {
    if (sock >= 0) close(sock);
    if (chan != nullptr) munmap(chan, chan_bytes);
  }
};

void learn(Client& c, uint16_t type, const uint8_t* body) {
  int32_t st;
  memcpy(&st, body, sizeof(st));
  if (st != 0) return;
  if (type == proto::kHelloRemote) {
    ++c.w.stats.hellos_ok;
  } else if (type == proto::kTeamOpen) {
    proto::TeamOpenReply r;
    memcpy(&r, body, sizeof(r));
    c.team = r.idx;
    c.addr = r.addr;
    c.has_team = true;
    ++c.w.stats.teams_opened;
  } else if (type == proto::kTeamConnect) {
    ++c.w.stats.teams_connected;
  } else if (type == proto::kRegister) {
    proto::RegisterReply r;
    memcpy(&r, body, sizeof(r));
    c.key = r.key;
    ++c.w.stats.registrations;
  } else if (type == proto::kTcpMemConnect) {
    proto::TcpMemConnectReply r;
    memcpy(&r, body, sizeof(r));
    memcpy(c.token, r.token, sizeof(c.token));
    c.has_token = true;
    ++c.w.stats.tcp_mem;
  }
}

uint32_t reply_len(uint16_t type) {
  switch (type) {
    case proto::kHelloRemote:
      return sizeof(proto::HelloReply);
    case proto::kTeamOpen:
      return sizeof(proto::TeamOpenReply);
    case proto::kRegister:
      return sizeof(proto::RegisterReply);
    case proto::kStats:
      return sizeof(proto::StatsReply);
    case proto::kRdmaConnect:
      return sizeof(proto::RdmaConnectReply);
    case proto::kTcpMemConnect:
      return sizeof(proto::TcpMemConnectReply);
    case proto::kAuth:
      return sizeof(proto::AuthReply);
    default:
      return sizeof(proto::Reply);
  }
}

// Replies in order of the requests; the challenge first of all.
void drain(Client& c) {
  for (;;) {
    const ssize_t n =
        recv(c.sock, c.rbuf + c.rlen, sizeof(c.rbuf) - c.rlen, MSG_DONTWAIT);
    if (n <= 0) break;
    if (c.unframed) continue;
    c.rlen += static_cast<size_t>(n);
    size_t off = 0;
    while (c.rlen - off >= sizeof(proto::MsgHeader)) {
      proto::MsgHeader h;
      memcpy(&h, c.rbuf + off, sizeof(h));
      if (c.rlen - off < sizeof(h) + h.len) {
        if (h.len > sizeof(c.rbuf) - sizeof(h)) violated("a reply too long");
        break;
      }
      const uint8_t* body = c.rbuf + off + sizeof(h);
      if (!c.challenged) {
        if (h.type != proto::kChallenge ||
            h.len != sizeof(proto::AuthChallenge))
          violated("no challenge first");
        memcpy(c.nonce_e, body + 8, sizeof(c.nonce_e));
        c.challenged = true;
      } else {
        if (c.phead == c.ptail) violated("a reply nobody asked for");
        const uint16_t want = c.pending[c.phead++ & 63];
        // The handshake's reply has no tag; every later one has.
        const uint32_t tag = want == proto::kAuth ? 0 : proto::kTagBytes;
        if (h.magic != proto::kMagic || h.type != (want | proto::kReply) ||
            h.len != reply_len(want) + tag)
          violated("a reply out of frame");
        if (tag != 0 &&
            !proto::message_ok(c.session, proto::End::kEngine, h, body))
          violated("a reply without the session's tag");
        learn(c, want, body);
        ++c.w.stats.replies;
      }
      off += sizeof(h) + h.len;
    }
    memmove(c.rbuf, c.rbuf + off, c.rlen - off);
    c.rlen -= off;
  }
}

void passes(Client& c, int n, bool nap = false) {
  c.w.port.nic = &c.nic;
  for (int i = 0; i < n; ++i) {
    if (nap)
      c.w.server.nap_pass();  // the engine reads the ring before it naps
    else
      c.w.server.pass();
  }
  drain(c);
}

bool send_bytes(Client& c, const void* buf, size_t len) {
  const auto* b = static_cast<const uint8_t*>(buf);
  size_t done = 0;
  for (int tries = 0; done < len && tries < 64; ++tries) {
    const ssize_t n =
        send(c.sock, b + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN) return false;
    passes(c, 1);
  }
  return done == len;
}

// A request, tagged once the session is on (`forge`: with a wrong tag or
// an old seq, which must end the connection).
void send_msg(Client& c, uint16_t type, const void* body, uint32_t len,
              bool forge = false) {
  uint8_t buf[sizeof(proto::MsgHeader) + 1024 + proto::kTagBytes];
  if (len > 1024) return;
  proto::MsgHeader h{proto::kMagic, proto::kVersion, type, len,
                     forge ? c.seq : ++c.seq};
  if (c.session.on) h.len += proto::kTagBytes;
  if (len != 0) memcpy(buf + sizeof(h), body, len);
  if (c.session.on) {
    proto::message_tag(c.session, proto::End::kHost, h, buf + sizeof(h), len,
                       buf + sizeof(h) + len);
    if (forge && (c.seq & 1)) buf[sizeof(h) + len] ^= 1;
  }
  memcpy(buf, &h, sizeof(h));
  if (!send_bytes(c, buf, sizeof(h) + h.len) || forge) {
    c.unframed = true;
    return;
  }
  if (type != proto::kDoorbell && c.ptail - c.phead < 64)
    c.pending[c.ptail++ & 63] = type;
}

// The handshake, with a right proof (or a wrong one).
void handshake(Client& c, bool right) {
  passes(c, 1);
  if (!c.challenged || c.session.on || c.phead != c.ptail) return;
  proto::AuthProof p{};
  for (size_t i = 0; i < sizeof(p.nonce); ++i)
    p.nonce[i] = static_cast<uint8_t>(c.seq * 7 + i);
  proto::auth_proof(c.w.key, proto::End::kHost, c.nonce_e, p.nonce, p.mac);
  if (!right) p.mac[3] ^= 0x40;
  send_msg(c, proto::kAuth, &p, sizeof(p));
  passes(c, 2);
  // The session is on once the daemon answered ok (drain learnt nothing
  // of it: check here).
  if (right && !c.unframed && c.phead == c.ptail)
    proto::auth_session(c.w.key, c.nonce_e, p.nonce, &c.session);
}

void hello(Client& c, Input& in) {
  if (c.chan == nullptr) {
    c.chan_bytes = off::Channel::bytes_needed(kSq, kNcomp);
    void* m = mmap(nullptr, c.chan_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) violated("channel mmap");
    c.chan = static_cast<uint8_t*>(m);
    c.ch.init(m, kSq, kNcomp);
    c.nic.win[0] = Window{c.chan, c.chan_bytes, kChanKey};
    c.nic.win[1] = Window{c.w.arena, kArena, kArenaKey};
  }
  proto::HelloRemote h{};
  h.hello.desc_version = off::kDescVersion;
  h.hello.sq_capacity = kSq;
  h.hello.ncomp = kNcomp;
  h.hello.channel_bytes = c.chan_bytes;
  h.hello.engine.max_teams = 4;
  h.hello.engine.team_queue = 8;
  h.hello.engine.slot_size = 4096;
  h.hello.engine.nslots = 2;
  h.hello.engine.inflight = 2;
  h.hello.engine.unexpected = 4;
  h.channel_addr = reinterpret_cast<uint64_t>(c.chan);
  h.rkey = kChanKey;
  h.flags = in.u8() % 2 ? proto::kPushDescriptors : 0;
  for (uint8_t k = in.u8() % 3; k > 0; --k) {  // then any fields
    const size_t off = in.u8() % sizeof(h);
    const uint64_t v = in.u64();
    memcpy(reinterpret_cast<uint8_t*>(&h) + off, &v,
           sizeof(h) - off < 8 ? sizeof(h) - off : 8);
  }
  send_msg(c, proto::kHelloRemote, &h, sizeof(h));
}

void submit(Client& c, Input& in) {
  if (c.chan == nullptr) return;
  CollDesc d{};
  d.magic = off::kDescMagic;
  d.version = off::kDescVersion;
  d.coll = in.u8() % 2 ? off::CollType::kAllreduce : off::CollType::kBarrier;
  d.dtype = off::DType::kInt32;
  d.op = d.coll == off::CollType::kAllreduce ? off::ROp::kSum : off::ROp::kNone;
  d.team = c.has_team ? c.team : in.u8();
  d.comp_slot = in.u8() % kNcomp;
  d.gen = ++c.gen;
  d.count = d.coll == off::CollType::kBarrier ? 0 : 1 + in.u8() % 64;
  const uint64_t base = reinterpret_cast<uint64_t>(c.w.arena);
  if (d.count != 0) {
    d.src = off::BufRef{base + 4096, d.count * 4, c.key, 0, {}};
    d.dst = off::BufRef{base + 65536, d.count * 4, c.key, 0, {}};
  }
  for (uint8_t k = in.u8() % 4; k > 0; --k) {
    const size_t off = in.u8() % sizeof(d);
    const uint64_t v = in.u64();
    memcpy(reinterpret_cast<uint8_t*>(&d) + off, &v,
           sizeof(d) - off < 8 ? sizeof(d) - off : 8);
  }
  if (d.comp_slot < kNcomp) c.ch.arm(d.comp_slot, d.gen);
  if (!c.ch.submit(d)) return;
  ++c.w.stats.descriptors;
  // Pushed as a host does (every descriptor since the last push, then
  // the head), or (one in four) left for the engine to find in the ring
  // before it naps (nap passes, below).
  if (c.nic.inbox == nullptr || in.u8() % 4 == 0) return;
  const uint32_t head = c.ch.sq_produced();
  const size_t sq = off::Channel::layout(kSq, kNcomp).sq;
  for (uint32_t i = head - c.pushed > kSq ? head - kSq : c.pushed; i != head;
       ++i) {
    const size_t slot = (i % kSq) * sizeof(d);
    memcpy(c.nic.inbox + off::InboxLayout::kSlots + slot, c.chan + sq + slot,
           sizeof(d));
  }
  c.pushed = head;
  __atomic_store_n(reinterpret_cast<uint32_t*>(c.nic.inbox), head,
                   __ATOMIC_RELEASE);
}

void run_op(Client& c, Input& in) {
  const uint8_t op = in.u8();
  switch (op % 14) {
    case 0: {  // bytes with no framing
      uint8_t b[128];
      const size_t n = in.u8() % sizeof(b);
      for (size_t i = 0; i < n; ++i) b[i] = in.u8();
      send_bytes(c, b, n);
      c.unframed = true;
      break;
    }
    case 1:
    case 2:
      handshake(c, (op & 0x30) != 0x30);
      break;
    case 3: {  // the engine's way to our memory (any address: ours is fake)
      proto::RdmaAddr a{};
      a.qpn = in.u32();
      send_msg(c, proto::kRdmaConnect, &a, sizeof(a));
      break;
    }
    case 4:
      hello(c, in);
      break;
    case 5: {  // the arena (or any range), under its rkey or another
      proto::Register r{};
      const uint64_t base = reinterpret_cast<uint64_t>(c.w.arena);
      r.addr = in.u8() % 4 ? base + in.u32() % kArena : in.u64();
      r.len = in.u8() % 4 ? kArena - (r.addr - base) % kArena : in.u64();
      r.rkey = in.u8() % 4 ? kArenaKey : in.u32();
      send_msg(c, proto::kRegister, &r, sizeof(r));
      break;
    }
    case 6: {
      if (!c.has_team || (op & 0x40)) {
        proto::TeamOpen t{1, 0};
        send_msg(c, proto::kTeamOpen, &t, sizeof(t));
      } else {
        uint8_t body[sizeof(proto::TeamConnect) + sizeof(off::TeamAddr)];
        proto::TeamConnect tc{c.team, 1};
        memcpy(body, &tc, sizeof(tc));
        memcpy(body + sizeof(tc), &c.addr, sizeof(c.addr));
        send_msg(c, proto::kTeamConnect, body, sizeof(body));
      }
      break;
    }
    case 7:
    case 8:
      submit(c, in);
      break;
    case 9: {  // our channel rewritten anywhere (indices, header)
      if ((op & 0x40) && c.nic.inbox != nullptr) {  // or the engine's inbox
        const size_t off = (in.u32() * 4u) % c.nic.inbox_bytes;
        const uint32_t v = in.u32();
        memcpy(c.nic.inbox + off, &v, 4);
        break;
      }
      if (c.chan == nullptr) break;
      const size_t off = (in.u32() * 4u) % c.chan_bytes;
      const uint32_t v = in.u32();
      memcpy(c.chan + off, &v, c.chan_bytes - off < 4 ? c.chan_bytes - off : 4);
      break;
    }
    case 10:
      if (c.session.on) send_msg(c, proto::kStats, nullptr, 0, true);
      break;
    case 11: {
      const uint8_t t = in.u8() % 6;
      if (t == 5) {
        // The TCP fallback's second connection, asked of this one: with
        // the token this connection was given (it is the waiting client
        // itself), or any other; refused either way, and the connection
        // ends.
        proto::TcpMemAttach a{};
        if (c.has_token && (in.u8() & 1) != 0)
          memcpy(a.token, c.token, sizeof(a.token));
        else
          for (uint8_t& b : a.token) b = in.u8();
        send_msg(c, proto::kTcpMemAttach, &a, sizeof(a));
        break;
      }
      // kTcpMemConnect: the TCP fallback asked for (taken only before the
      // hello and any registration), its memory then never attached.
      send_msg(c,
               t == 0   ? proto::kStats
               : t == 1 ? proto::kDoorbell
               : t == 2 ? proto::kShutdown
               : t == 3 ? proto::kBye
                        : proto::kTcpMemConnect,
               nullptr, 0);
      break;
    }
    default:
      passes(c, 1 + in.u8() % 8, (op & 0x80) != 0);
      break;
  }
}

}  // namespace

const ControlStats& remote_stats() { return world().stats; }

int remote_one(const uint8_t* data, size_t size) {
  World& w = world();
  ++w.stats.inputs;
  {
    Client c(w);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                   sv) != 0)
      violated("socketpair");
    c.sock = sv[1];
    w.port.nic = &c.nic;
    if (!w.server.adopt_remote(sv[0])) violated("adopt_remote");
    Input in{data, size};
    for (int ops = 0; ops < 256 && !in.empty(); ++ops) run_op(c, in);
    passes(c, 2);
    if (w.server.clients() == 0) ++w.stats.dropped;
    for (uint32_t s = 0; c.chan != nullptr && s < kNcomp; ++s)
      if (off::completion_status(c.ch.read(s)) == off::Status::kOk &&
          off::completion_gen(c.ch.read(s)) != 0)
        ++w.stats.completed;
    close(c.sock);
    c.sock = -1;
    for (int i = 0; i < 4 && w.server.clients() != 0; ++i) w.server.pass();
    if (w.server.clients() != 0) violated("a client that hung up still served");
    w.stats.pushed = w.server.stats().pushed;
    w.port.nic = nullptr;
  }
  if (checked_free_fd() != w.free_fd) violated("a descriptor leaked");
  return 0;
}

}  // namespace ucc::fuzz

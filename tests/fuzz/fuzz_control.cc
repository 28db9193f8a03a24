// Fuzz target for the firmware_sim daemon's side of the control socket and
// of the channel: everything one hostile client can send it (offload/
// proto.h framing, bodies, passed descriptors of every kind) and write
// into the memory it shares with it (ring indices, descriptors, the
// channel header), in any order, interleaved with the daemon's passes.
//
// The daemon is a real fw::Server in this process; each input is one
// client, a socketpair whose far end the server adopts (so SO_PEERCRED,
// the /proc checks and the engine's process_vm_readv/writev are real, on
// this process). The input is a program of operations, one byte of
// opcode and its arguments each (run_op below), read until it runs out:
// random bytes make a program, and about one operation in ten is a valid
// hello, so most programs reach the engine.
//
// Properties checked (a violation aborts, which the driver reports and
// saves):
//   - no crash, no out-of-bounds access (ASan build), no hang: every pass
//     returns;
//   - every reply is well framed (magic, version, the request's type with
//     kReply, the body length its type has);
//   - when the client hangs up the daemon drops it within a few passes;
//   - nothing of the client outlives it: no descriptor (fds it passed, its
//     channel, its teams' segments) and no shared mapping.
#include "tests/fuzz/fuzz_control.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "firmware_sim/server.h"
#include "offload/channel.h"
#include "offload/descriptor.h"
#include "offload/proto.h"
#include "platform/os/log.h"
#include "platform/os/segment.h"
#include "tests/fuzz/fuzz_program.h"

namespace ucc::fuzz {
namespace {

namespace proto = off::proto;
using off::CollDesc;

constexpr uint32_t kSq = 16, kNcomp = 64;
constexpr size_t kArenaBytes = 256 * 1024;

[[noreturn]] void violated(const char* what) {
  fprintf(stderr, "fuzz_control: property violated: %s\n", what);
  abort();
}

int checked_free_fd() {
  const int fd = lowest_free_fd();
  if (fd < 0) violated("no descriptor left");
  return fd;
}

// What lives for the whole run: the daemon and memory for registrations
// (an arena between two inaccessible guard pages, which /proc lists as
// mapped, so registrations of them pass and the engine's accesses fail).
struct World {
  fw::Server server;
  uint8_t* arena = nullptr;  // kArenaBytes, guard page each side
  int free_fd = -1;          // the lowest free descriptor between inputs
  int shared_maps = -1;      // memfd mappings between inputs
  ControlStats stats;
};

World* g_world = nullptr;

// Mappings of memfds (channels, team segments): /proc/self/maps names
// them "/memfd:...".
int count_shared_maps() {
  FILE* f = fopen("/proc/self/maps", "re");
  if (f == nullptr) return -1;
  char line[512];
  int n = 0;
  while (fgets(line, sizeof(line), f) != nullptr)
    if (strstr(line, "/memfd:") != nullptr) ++n;
  fclose(f);
  return n;
}

World& world() {
  if (g_world != nullptr) return *g_world;
  // Hostile clients make the daemon log (at error level, by design): keep
  // a million of them quiet, unless UCC_LOG_LEVEL asks (replaying one).
  plat::log_init();
  if (getenv("UCC_LOG_LEVEL") == nullptr)
    plat::log_set_level(plat::LogLevel::kOff);
  g_world = new World;
  void* m = mmap(nullptr, kArenaBytes + 2 * 4096, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) violated("arena mmap");
  g_world->arena = static_cast<uint8_t*>(m) + 4096;
  mprotect(m, 4096, PROT_NONE);
  mprotect(g_world->arena + kArenaBytes, 4096, PROT_NONE);
  g_world->free_fd = checked_free_fd();
  g_world->shared_maps = count_shared_maps();
  return *g_world;
}

// The fuzzed client: its end of the socket, its channel (once it made
// one), and what it learnt from the replies so far.
struct Client {
  World& w;
  int sock = -1;
  int chan_fd = -1;
  void* chan = nullptr;
  size_t chan_bytes = 0;
  off::Channel ch;
  uint32_t seq = 0;
  uint8_t rbuf[4096];
  size_t rlen = 0;
  // The type of each request still to be answered, in order.
  uint16_t pending[256];
  uint32_t phead = 0, ptail = 0;
  uint32_t team_idx[4] = {};
  off::TeamAddr team_addr[4] = {};
  uint32_t nteams = 0;
  uint32_t keys[4] = {};
  uint32_t nkeys = 0;
  uint32_t gen = 0;
  uint32_t armed[kNcomp] = {};  // the generation posted on each slot
  // Bytes went out that no honest client sends (no framing, a header
  // that lies, a request cut short): replies are no longer checked.
  bool unframed = false;

  explicit Client(World& world) : w(world) {}
  ~Client() {
    if (sock >= 0) close(sock);
    if (chan != nullptr) munmap(chan, chan_bytes);
    if (chan_fd >= 0) close(chan_fd);
  }
};

// Serves: the daemon's passes, then whatever replies arrived.
void passes(Client& c, int n);

// The body length the daemon's reply to `type` must have.
uint32_t reply_len(uint16_t type) {
  switch (type) {
    case proto::kHello:
      return sizeof(proto::HelloReply);
    case proto::kTeamOpen:
      return sizeof(proto::TeamOpenReply);
    case proto::kRegister:
      return sizeof(proto::RegisterReply);
    case proto::kStats:
      return sizeof(proto::StatsReply);
    case proto::kRdmaConnect:
      return sizeof(proto::RdmaConnectReply);
    default:
      return sizeof(proto::Reply);
  }
}

void learn(Client& c, uint16_t type, const uint8_t* body) {
  int32_t status;
  memcpy(&status, body, sizeof(status));
  if (status != 0) return;
  if (type == proto::kHello) {
    ++c.w.stats.hellos_ok;
  } else if (type == proto::kTeamOpen && c.nteams < 4) {
    proto::TeamOpenReply tr;
    memcpy(&tr, body, sizeof(tr));
    c.team_idx[c.nteams] = tr.idx;
    c.team_addr[c.nteams++] = tr.addr;
    ++c.w.stats.teams_opened;
  } else if (type == proto::kRegister) {
    proto::RegisterReply rr;
    memcpy(&rr, body, sizeof(rr));
    c.keys[c.nkeys++ & 3] = rr.key;
    ++c.w.stats.registrations;
  } else if (type == proto::kTeamConnect) {
    ++c.w.stats.teams_connected;
  }
}

// Reads and checks the replies that arrived, in order of the requests.
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
      if (c.phead == c.ptail) violated("a reply nobody asked for");
      const uint16_t want = c.pending[c.phead & 255];
      if (h.magic != proto::kMagic || h.version != proto::kVersion ||
          h.type != (want | proto::kReply) || h.len != reply_len(want))
        violated("a reply out of frame");
      if (c.rlen - off < sizeof(h) + h.len) break;
      ++c.phead;
      learn(c, want, c.rbuf + off + sizeof(h));
      off += sizeof(h) + h.len;
      ++c.w.stats.replies;
    }
    memmove(c.rbuf, c.rbuf + off, c.rlen - off);
    c.rlen -= off;
  }
}

void passes(Client& c, int n) {
  for (int i = 0; i < n; ++i) c.w.server.pass();
  drain(c);
}

// Sends all of buf (and the fds with its first byte), serving the daemon
// while the socket is full; false when the daemon hung up.
bool send_bytes(Client& c, const void* buf, size_t len, const int* fds,
                int nfds) {
  const auto* b = static_cast<const uint8_t*>(buf);
  size_t done = 0;
  for (int tries = 0; done < len && tries < 64; ++tries) {
    iovec iov{const_cast<uint8_t*>(b + done), len - done};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    alignas(cmsghdr) char cbuf[CMSG_SPACE(3 * sizeof(int))];
    if (done == 0 && nfds > 0) {
      mh.msg_control = cbuf;
      mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
      cmsghdr* cm = CMSG_FIRSTHDR(&mh);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
      memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
    }
    const ssize_t n = sendmsg(c.sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN) return false;
    passes(c, 1);
  }
  return done == len;
}

// A request: header and body; `type` is what its reply must echo.
void send_msg(Client& c, uint16_t type, const void* body, uint32_t len,
              const int* fds = nullptr, int nfds = 0) {
  proto::MsgHeader h{proto::kMagic, proto::kVersion, type, len, ++c.seq};
  uint8_t buf[sizeof(h) + 1024];
  if (len > sizeof(buf) - sizeof(h)) return;
  memcpy(buf, &h, sizeof(h));
  if (len != 0) memcpy(buf + sizeof(h), body, len);
  if (!send_bytes(c, buf, sizeof(h) + len, fds, nfds)) {
    c.unframed = true;
    return;
  }
  if (type != proto::kDoorbell && c.ptail - c.phead < 256)
    c.pending[c.ptail++ & 255] = type;
}

proto::Hello good_hello() {
  proto::Hello h{};
  h.desc_version = off::kDescVersion;
  h.sq_capacity = kSq;
  h.ncomp = kNcomp;
  h.channel_bytes = off::Channel::bytes_needed(kSq, kNcomp);
  h.engine.max_teams = 4;
  h.engine.team_queue = 8;
  h.engine.slot_size = 4096;
  h.engine.nslots = 2;
  h.engine.inflight = 2;
  h.engine.unexpected = 4;
  return h;
}

// One descriptor of a kind to pass along a request (the caller closes
// it): every kind the daemon must refuse as a channel, and the one it
// must take.
int make_fd(Client& c, uint8_t kind, size_t bytes) {
  int fd = -1;
  switch (kind % 7) {
    case 0: {  // a sealed memfd of our own: the channel (one per client)
      if (c.chan == nullptr) {
        void* m = nullptr;
        if (failed(plat::seg_create("fuzz-chan", bytes, &fd, &m)))
          violated("seg_create");
        c.chan = m;
        c.chan_bytes = bytes;
        c.ch.init(m, kSq, kNcomp);
        c.chan_fd = fd;
      }
      return fcntl(c.chan_fd, F_DUPFD_CLOEXEC, 0);
    }
    case 1:  // unsealed: we could shrink it under the daemon
      fd = memfd_create("fuzz-unsealed", MFD_CLOEXEC);
      if (fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) != 0) break;
      return fd;
    case 2: {  // sealed, but of another size
      void* m = nullptr;
      if (failed(plat::seg_create("fuzz-small", 4096, &fd, &m)))
        violated("seg_create");
      munmap(m, 4096);
      return fd;
    }
    case 3:
      return open("/dev/null", O_RDWR | O_CLOEXEC);
    case 4: {
      int p[2];
      if (pipe2(p, O_CLOEXEC) != 0) return -1;
      close(p[1]);
      return p[0];
    }
    case 5: {
      int s[2];
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) != 0) return -1;
      close(s[1]);
      return s[0];
    }
    default:
      return open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  }
  if (fd >= 0) close(fd);
  return -1;
}

// A descriptor close to one the engine runs, on a team and registration
// the client has (when it has them), with fields then overwritten.
void submit_desc(Client& c, Input& in) {
  if (c.chan == nullptr) return;
  CollDesc d{};
  d.magic = off::kDescMagic;
  d.version = off::kDescVersion;
  static const off::CollType kColls[] = {
      off::CollType::kBarrier, off::CollType::kAllreduce, off::CollType::kBcast,
      off::CollType::kAllgather, off::CollType::kAlltoallv};
  d.coll = kColls[in.u8() % 5];
  d.dtype = off::DType::kInt32;
  d.op = d.coll == off::CollType::kAllreduce ? off::ROp::kSum : off::ROp::kNone;
  d.team = c.nteams != 0 ? c.team_idx[in.u8() % c.nteams] : in.u8();
  d.comp_slot = in.u8() % kNcomp;
  d.gen = ++c.gen;
  d.count = d.coll == off::CollType::kBarrier ? 0 : 1 + in.u8() % 64;
  const uint32_t key =
      c.nkeys != 0 ? c.keys[in.u8() % (c.nkeys < 4 ? c.nkeys : 4)] : 0;
  const uint64_t base = reinterpret_cast<uint64_t>(c.w.arena);
  if (d.count != 0) {  // room for teams of up to 4
    d.src = off::BufRef{base + 4096, 4 * d.count * 4, key, 0, {}};
    d.dst = off::BufRef{base + 65536, 4 * d.count * 4, key, 0, {}};
  }
  if (d.coll == off::CollType::kAlltoallv) d.src_counts = d.dst_counts = base;
  // Then a few fields (or any bytes) as the input says.
  for (uint8_t k = in.u8() % 4; k > 0; --k) {
    const size_t off = in.u8() % sizeof(d);
    const uint64_t v = in.u64();
    memcpy(reinterpret_cast<uint8_t*>(&d) + off, &v,
           sizeof(d) - off < 8 ? sizeof(d) - off : 8);
  }
  if (d.comp_slot < kNcomp) {
    c.ch.arm(d.comp_slot, d.gen);
    c.armed[d.comp_slot] = d.gen;
  }
  if (c.ch.submit(d)) ++c.w.stats.descriptors;
}

// A team request with well-formed lengths and chosen values.
void team_op(Client& c, Input& in) {
  const uint8_t what = in.u8();
  if (what % 4 == 0) {
    proto::TeamOpen to{1u + in.u8() % 4, in.u8() % 5u};
    send_msg(c, proto::kTeamOpen, &to, sizeof(to));
    return;
  }
  // A team of ours, or any index.
  const uint32_t idx = c.nteams != 0 && (what & 8) == 0
                           ? c.team_idx[in.u8() % c.nteams]
                           : in.u32();
  switch (what % 4) {
    case 1: {  // connect: our own team addresses, or bytes of the input
      uint8_t body[sizeof(proto::TeamConnect) + 4 * sizeof(off::TeamAddr)];
      const uint32_t size = 1u + in.u8() % 4;
      proto::TeamConnect tc{idx, size};
      memcpy(body, &tc, sizeof(tc));
      for (uint32_t r = 0; r < size; ++r) {
        off::TeamAddr a{};
        if (c.nteams != 0) a = c.team_addr[(r + what) % c.nteams];
        if ((what & 16) != 0) in.bytes(&a, in.u8() % sizeof(a));
        memcpy(body + sizeof(tc) + r * sizeof(a), &a, sizeof(a));
      }
      send_msg(
          c, proto::kTeamConnect, body,
          static_cast<uint32_t>(sizeof(tc) + size * sizeof(off::TeamAddr)));
      break;
    }
    default: {
      proto::TeamIdx ti{idx, 0};
      send_msg(c, what % 4 == 2 ? proto::kTeamSeal : proto::kTeamClose, &ti,
               sizeof(ti));
      break;
    }
  }
}

void register_op(Client& c, Input& in) {
  const uint8_t what = in.u8();
  if (what % 4 == 3) {
    proto::Deregister dr{c.nkeys != 0 ? c.keys[in.u8() & 3] : in.u32(), 0};
    send_msg(c, proto::kDeregister, &dr, sizeof(dr));
    return;
  }
  proto::Register rg{};  // no rkey: this daemon has no RDMA to the host
  const uint64_t base = reinterpret_cast<uint64_t>(c.w.arena);
  switch (what % 4) {
    case 0:  // inside the arena
      rg.addr = base + (in.u32() % kArenaBytes);
      rg.len = in.u32() % (kArenaBytes + 8192);
      break;
    case 1:  // from a guard page on
      rg.addr = base - 4096 + (in.u16() % 8192);
      rg.len = in.u32();
      break;
    default:
      rg.addr = in.u64();
      rg.len = in.u64();
      break;
  }
  send_msg(c, proto::kRegister, &rg, sizeof(rg));
}

// Any request: a type (known or not), a body of any length, fds.
void raw_msg(Client& c, Input& in) {
  const uint8_t t = in.u8();
  uint16_t type = static_cast<uint16_t>(t % 12);
  if (t & 0x80) type |= proto::kReply;
  uint8_t body[512];
  const uint32_t len = in.u8() % 2 == 0
                           ? in.u16() % sizeof(body)
                           : static_cast<uint32_t>(sizeof(proto::Hello));
  in.bytes(body, len);
  int fds[3];
  int nfds = in.u8() % 4;
  if (type == proto::kHello && nfds == 0) nfds = 1;
  for (int i = 0; i < nfds; ++i)
    fds[i] = make_fd(c, in.u8(), off::Channel::bytes_needed(kSq, kNcomp));
  int sent = 0;
  for (int i = 0; i < nfds; ++i)
    if (fds[i] >= 0) fds[sent++] = fds[i];
  send_msg(c, type, body, len, fds, sent);
  for (int i = 0; i < sent; ++i) close(fds[i]);
}

void run_op(Client& c, Input& in) {
  switch (in.u8() % 12) {
    case 0: {  // bytes with no framing, or a header that lies
      uint8_t b[256];
      size_t n = 0;
      if (in.u8() % 2 == 0) {
        proto::MsgHeader h{proto::kMagic, proto::kVersion, in.u16(), in.u32(),
                           in.u32()};
        if (in.u8() % 4 == 0) h.version = in.u16();
        memcpy(b, &h, sizeof(h));
        n = sizeof(h);
      }
      n += in.bytes(b + n, in.u8() % (sizeof(b) - n));
      send_bytes(c, b, n, nullptr, 0);
      c.unframed = true;
      break;
    }
    case 1:
    case 2:
      raw_msg(c, in);
      break;
    case 3: {  // the hello an honest host sends
      const proto::Hello h = good_hello();
      const int fd = make_fd(c, 0, h.channel_bytes);
      send_msg(c, proto::kHello, &h, sizeof(h), &fd, fd >= 0 ? 1 : 0);
      if (fd >= 0) close(fd);
      break;
    }
    case 4:
      team_op(c, in);
      break;
    case 5:
      register_op(c, in);
      break;
    case 6:
    case 7:
      submit_desc(c, in);
      break;
    case 8: {  // the shared channel rewritten anywhere (header, indices)
      if (c.chan == nullptr) break;
      const size_t off = (in.u16() * 8u) % c.chan_bytes;
      const uint64_t v = in.u64();
      memcpy(static_cast<uint8_t*>(c.chan) + off, &v,
             c.chan_bytes - off < 8 ? c.chan_bytes - off : 8);
      break;
    }
    case 9: {
      const uint8_t t = in.u8() % 3;
      send_msg(c,
               t == 0   ? proto::kStats
               : t == 1 ? proto::kDoorbell
                        : proto::kShutdown,
               nullptr, 0);
      break;
    }
    case 10:
      passes(c, 1 + in.u8() % 8);
      break;
    default:
      if (in.u8() % 8 == 0) shutdown(c.sock, SHUT_WR);
      passes(c, 1);
      break;
  }
}

}  // namespace

const ControlStats& control_stats() { return world().stats; }

int control_one(const uint8_t* data, size_t size) {
  World& w = world();
  ++w.stats.inputs;
  {
    Client c(w);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                   sv) != 0)
      violated("socketpair");
    c.sock = sv[1];
    if (!w.server.adopt(sv[0])) violated("adopt");
    if (w.server.clients() != 1) violated("a client of our own uid refused");
    Input in{data, size};
    for (int ops = 0; ops < 256 && !in.empty(); ++ops) run_op(c, in);
    passes(c, 2);
    if (w.server.clients() == 0) ++w.stats.dropped;
    for (uint32_t s = 0; c.chan != nullptr && s < kNcomp; ++s)
      if (c.armed[s] != 0 &&
          c.ch.read(s) == off::completion_word(c.armed[s], off::Status::kOk))
        ++w.stats.completed;
    // The client hangs up: the daemon must let go of it at once.
    close(c.sock);
    c.sock = -1;
    for (int i = 0; i < 4 && w.server.clients() != 0; ++i) w.server.pass();
    if (w.server.clients() != 0) violated("a client that hung up still served");
  }
  if (checked_free_fd() != w.free_fd) violated("a descriptor leaked");
  if ((w.stats.inputs & 63) == 0 && count_shared_maps() != w.shared_maps)
    violated("a shared mapping leaked");
  return 0;
}

}  // namespace ucc::fuzz

#ifdef UCC_FUZZ_LIBFUZZER_TARGET
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ucc::fuzz::control_one(data, size);
}
#endif

// The emu link: the context's engine runs in this node's firmware_sim
// daemon (the emulated DPU). This process lays out the channel in a memfd
// the daemon maps, posts descriptors and reads completion words; team
// control, registrations and the capability record travel as requests
// over the daemon's unix socket (offload/proto.h).
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "host/link/daemon_link.h"
#include "host/link/link.h"
#include "offload/proto.h"
#include "platform/base/arena.h"
#include "platform/net/net.h"
#include "platform/os/clock.h"
#include "platform/os/log.h"
#include "platform/os/segment.h"
#include "platform/os/sock.h"

#ifndef UCC_FIRMWARE_SIM_BUILD_PATH
#define UCC_FIRMWARE_SIM_BUILD_PATH ""
#endif
#ifndef UCC_FIRMWARE_SIM_INSTALL_PATH
#define UCC_FIRMWARE_SIM_INSTALL_PATH ""
#endif

namespace ucc::host {

namespace proto = off::proto;

namespace {
// Starts a daemon detached from this process (double fork: it is nobody's
// child here, so it outlives us and leaves no zombie). It exits by itself
// some seconds after its last client.
bool spawn_daemon(const char* bin, const char* sock) {
  pid_t p = fork();
  if (p < 0) return false;
  if (p == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 1);
      // Its log comes to our stderr only where that is a terminal. A pipe
      // (a test driver, $(...), a launcher collecting output) would stay
      // open until the daemon exits, and its reader would wait for that.
      if (isatty(2) == 0) dup2(devnull, 2);
    }
    execl(bin, bin, "--socket", sock, "--exit-idle", "5",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int st = 0;
  waitpid(p, &st, 0);
  return true;
}

const char* pick_daemon(const char* configured) {
  if (configured != nullptr && *configured != 0 &&
      strcmp(configured, "auto") != 0)
    return configured;
  static const char* const kPlaces[] = {UCC_FIRMWARE_SIM_BUILD_PATH,
                                        UCC_FIRMWARE_SIM_INSTALL_PATH};
  for (const char* c : kPlaces) {
    if (*c != 0 && access(c, X_OK) == 0) return c;
  }
  return nullptr;
}

}  // namespace

Status DaemonLink::connect_daemon(const LinkConfig& cfg) {
  char path[256];
  if (cfg.socket_path != nullptr && *cfg.socket_path != 0)
    snprintf(path, sizeof(path), "%s", cfg.socket_path);
  else if (plat::sock::private_socket_path(path, sizeof(path),
                                           proto::kDefaultSocketName) != 0)
    return Status::kNoResource;  // logged: no directory of ours to use
  int s = plat::sock::connect_to(path);
  if (s < 0) {
    const char* bin = pick_daemon(cfg.daemon_path);
    if (bin == nullptr || strcmp(bin, "none") == 0) {
      UCC_ERROR(
          "emu: no firmware_sim daemon on %s (%s) and none to start "
          "(UCC_FIRMWARE_SIM)",
          path, strerror(-s));
      return Status::kNoResource;
    }
    UCC_INFO("emu: starting %s on %s", bin, path);
    spawn_daemon(bin, path);
    // Several processes may race to start one: all but one daemon exit,
    // and everyone connects to the winner.
    const uint64_t deadline = plat::now_ns() + cfg.timeout_ms * 1000000ull;
    while ((s = plat::sock::connect_to(path)) < 0 && plat::now_ns() < deadline)
      usleep(2000);
    if (s < 0) {
      UCC_ERROR("emu: the firmware_sim daemon did not come up on %s", path);
      return Status::kNoResource;
    }
  }
  // Whoever listens there must be this user's daemon (or root's): another
  // user's would see our buffers' addresses and could answer every
  // collective with success.
  int dpid = -1;
  int64_t duid = -1;
  if (!plat::sock::peer_cred(s, &dpid, &duid) ||
      (duid != static_cast<int64_t>(geteuid()) && duid != 0)) {
    UCC_ERROR(
        "emu: the daemon on %s runs as uid %lld, neither this user (%u) nor "
        "root: refused",
        path, static_cast<long long>(duid), static_cast<unsigned>(geteuid()));
    close(s);
    return Status::kNoResource;
  }
  sock_ = s;
  return Status::kOk;
}

void DaemonLink::check_daemon() {
  if (dead_) return;
  pollfd pf{sock_, POLLIN, 0};
  // Between requests the daemon never writes: anything readable, or a
  // hang-up, means it has gone (or broken the protocol).
  if (poll(&pf, 1, 0) > 0) {
    dead_ = true;
    UCC_ERROR(
        "%s: the firmware_sim daemon has gone; collectives in flight "
        "fail",
        what_);
  }
}

Status DaemonLink::call(uint16_t type, const void* body, uint32_t len,
                        void* out, uint32_t out_len, int pass_fd) {
  if (dead_) return Status::kError;
  const uint32_t seq = ++seq_;
  if (!send_on(sock_, session_, type, seq, body, len, pass_fd))
    return Status::kError;
  if (!recv_on(sock_, session_, type, seq, out, out_len,
               static_cast<int>(timeout_ms_))) {
    UCC_ERROR("%s: no valid answer from the firmware_sim daemon", what_);
    dead_ = true;  // the stream is out of step, if the daemon is there at all
    return Status::kError;
  }
  return Status::kOk;
}

DaemonLink::~DaemonLink() {
  // dpu: the engine reads our channel all the time; it stops before we
  // deregister it (else its next read fails there, loudly).
  if (dpu_ && sock_ >= 0 && !dead_ && daemon_pid_ != -1) {  // after hello
    proto::Reply r{};
    timeout_ms_ = 2000;
    call(proto::kBye, nullptr, 0, &r, sizeof(r));
  }
  if (sock_ >= 0) close(sock_);  // the daemon frees this context's engine
  // Then our registrations can go. dpu: the daemon reads our channel by
  // RDMA until it sees the socket close; a queue pair torn down first
  // only fails its reads there.
  delete rdma_;
  if (mem_ != nullptr) munmap(mem_, bytes_);
}

Status DaemonLink::open(const LinkConfig& cfg, uint32_t sq_capacity,
                        uint32_t ncomp, off::Channel* ch) {
  ch_ = ch;
  const uint32_t nres = !cfg.dpu && cfg.inline_bytes != 0 ? ncomp : 0;
  bytes_ = off::Channel::bytes_needed(sq_capacity, ncomp, nres);
  timeout_ms_ = cfg.timeout_ms;
  if (cfg.dpu) {
    dpu_ = true;
    what_ = "dpu";
    mem_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem_ == MAP_FAILED) {
      mem_ = nullptr;
      return Status::kNoMemory;
    }
    ch->init(mem_, sq_capacity, ncomp);
    Status st = open_dpu(cfg);
    if (ok(st)) st = hello_remote(cfg, sq_capacity, ncomp);
    return st;
  }
  // The channel lives in a memfd the daemon maps too: sealed, so that
  // neither side can make the other's mapping fault (segment.h).
  int memfd = -1;
  void* m = nullptr;
  Status cs = plat::seg_create("ucc-channel", bytes_, &memfd, &m);
  if (failed(cs)) return cs;
  mem_ = m;
  ch->init(mem_, sq_capacity, ncomp, nres);
  Status st = connect_daemon(cfg);
  if (ok(st)) st = hello(cfg, sq_capacity, ncomp, memfd);
  // The daemon has its own mapping now (or we failed): the fd can go.
  close(memfd);
  if (ok(st) && cfg.rdma_mem) st = connect_rdma(cfg);
  return st;
}

Status DaemonLink::connect_rdma(const LinkConfig& cfg) {
  plat::RemoteMemAddr ours{};
  Status st = plat::open_mem_export(
      cfg.net.verbs, kRegs + cfg.mem_map_handles + 1, &ours, &rdma_);
  if (failed(st)) {
    UCC_ERROR(
        "%s: no RDMA port for the engine to reach this process's memory "
        "(UCC_NET_DEVICES, UCC_VERBS_LIB%s)",
        dpu_ ? "dpu" : "UCC_OFFLOAD_MEM=verbs",
        dpu_ ? "; without RDMA, UCC_DPU_MEM=tcp is a development fallback"
             : "");
    return st;
  }
  proto::RdmaAddr mine;
  static_assert(sizeof(mine) == sizeof(ours));
  memcpy(&mine, &ours, sizeof(mine));
  proto::RdmaConnectReply r{};
  st = call(proto::kRdmaConnect, &mine, sizeof(mine), &r, sizeof(r));
  if (ok(st)) st = static_cast<Status>(r.status);
  if (failed(st)) {
    UCC_ERROR(
        "%s: the daemon cannot reach this process's memory by RDMA (start "
        "it with --verbs%s)",
        dpu_ ? "dpu" : "UCC_OFFLOAD_MEM=verbs",
        dpu_ ? "; without RDMA, UCC_DPU_MEM=tcp is a development fallback"
             : "");
    return st;
  }
  plat::RemoteMemAddr engine;
  static_assert(sizeof(engine) == sizeof(r.addr));
  memcpy(&engine, &r.addr, sizeof(engine));
  return rdma_->connect(engine);
}

Status DaemonLink::hello(const LinkConfig& cfg, uint32_t sq_capacity,
                         uint32_t ncomp, int memfd) {
  proto::Hello h{};
  h.desc_version = off::kDescVersion;
  h.sq_capacity = sq_capacity;
  h.ncomp = ncomp;
  h.nres = ch_->nres();
  h.channel_bytes = bytes_;
  h.engine = cfg.engine;
  proto::HelloReply r{};
  return accept_hello(call(proto::kHello, &h, sizeof(h), &r, sizeof(r), memfd),
                      r);
}

Status DaemonLink::accept_hello(Status st, const proto::HelloReply& r) {
  if (ok(st)) st = static_cast<Status>(r.status);
  if (ok(st) && !off::caps_ok(r.caps)) {
    UCC_ERROR(
        "%s: the daemon's capability record is not one this library "
        "reads (version %u)",
        what_, r.caps.version);
    st = Status::kError;
  }
  if (failed(st)) {
    UCC_ERROR("%s: the daemon refused this context", what_);
    return st;
  }
  daemon_pid_ = r.daemon_pid;
  caps_ = r.caps;
  return Status::kOk;
}

void DaemonLink::submitted() {
  // Pushed before the engine's idle flag is read: an engine that set it
  // after our look reads our ring before it naps (remote_channel.h).
  if (push_) push_descriptors();
  if (!ch_->take_doorbell() || dead_) return;
  ++seq_;
  send_on(sock_, session_, proto::kDoorbell, seq_, nullptr, 0, -1);
}

namespace {

// The body copied into `buf` (h.len bytes), its tag after it, and the
// message sent.
bool tag_and_send(int fd, const off::proto::Session& s,
                  off::proto::MsgHeader& h, const void* body, uint32_t len,
                  unsigned char* buf) {
  if (len != 0) memcpy(buf, body, len);
  return off::proto::message_tag(s, off::proto::End::kHost, h, buf, len,
                                 buf + len) &&
         plat::sock::send_all(fd, &h, sizeof(h), buf, h.len);
}

// A large message (a team connect of many ranks): its buffer from the
// heap, at team creation only.
[[gnu::noinline]] bool tag_and_send_big(int fd, const off::proto::Session& s,
                                        off::proto::MsgHeader& h,
                                        const void* body, uint32_t len) {
  base::Array<unsigned char> big;
  return big.init(h.len) && tag_and_send(fd, s, h, body, len, big.data());
}

}  // namespace

bool DaemonLink::send_on(int fd, const off::proto::Session& s, uint16_t type,
                         uint32_t seq, const void* body, uint32_t len,
                         int pass_fd) {
  proto::MsgHeader h{proto::kMagic, proto::kVersion, type, len, seq};
  if (!s.on) return plat::sock::send_all(fd, &h, sizeof(h), body, len, pass_fd);
  // Over TCP: the body, then its tag. Small messages (the doorbell, which
  // a post may send, and every request but a large team connect) go from
  // the stack; only team creation allocates.
  h.len = len + static_cast<uint32_t>(proto::kTagBytes);
  if (h.len > proto::kMaxReply) return tag_and_send_big(fd, s, h, body, len);
  unsigned char small[proto::kMaxReply];
  return tag_and_send(fd, s, h, body, len, small);
}

bool DaemonLink::recv_on(int fd, const off::proto::Session& s, uint16_t type,
                         uint32_t seq, void* out, uint32_t out_len, int to) {
  proto::MsgHeader rh{};
  const uint32_t tag = s.on ? static_cast<uint32_t>(proto::kTagBytes) : 0;
  if (plat::sock::recv_all(fd, &rh, sizeof(rh), to) != 1 ||
      rh.magic != proto::kMagic || rh.seq != seq ||
      rh.type != (type | proto::kReply) || rh.len != out_len + tag)
    return false;
  if (tag == 0) return plat::sock::recv_all(fd, out, out_len, to) == 1;
  unsigned char buf[proto::kMaxReply];
  if (rh.len > sizeof(buf) || plat::sock::recv_all(fd, buf, rh.len, to) != 1 ||
      !proto::message_ok(s, proto::End::kEngine, rh, buf))
    return false;
  memcpy(out, buf, out_len);
  return true;
}

Status DaemonLink::team_open(uint32_t size, uint32_t rank, uint32_t* idx,
                             off::TeamAddr* addr) {
  proto::TeamOpen b{size, rank};
  proto::TeamOpenReply r{};
  Status st = call(proto::kTeamOpen, &b, sizeof(b), &r, sizeof(r));
  if (failed(st)) return st;
  *idx = r.idx;
  *addr = r.addr;
  return static_cast<Status>(r.status);
}

Status DaemonLink::team_connect(uint32_t idx, uint32_t size,
                                const off::TeamAddr* addrs) {
  size_t len = sizeof(proto::TeamConnect) + size_t{size} * sizeof(*addrs);
  if (len > proto::kMaxBody) return Status::kInvalidParam;
  base::Array<unsigned char> msg;  // team creation, not the data path
  if (!msg.init(len)) return Status::kNoMemory;
  unsigned char* body = msg.data();
  proto::TeamConnect tc{idx, size};
  memcpy(body, &tc, sizeof(tc));
  memcpy(body + sizeof(tc), addrs, size_t{size} * sizeof(*addrs));
  proto::Reply r{};
  Status st = call(proto::kTeamConnect, body, static_cast<uint32_t>(len), &r,
                   sizeof(r));
  return failed(st) ? st : static_cast<Status>(r.status);
}

void DaemonLink::team_seal(uint32_t idx) {
  proto::TeamIdx b{idx, 0};
  proto::Reply r{};
  call(proto::kTeamSeal, &b, sizeof(b), &r, sizeof(r));
}

void DaemonLink::team_close(uint32_t idx) {
  proto::TeamIdx b{idx, 0};
  proto::Reply r{};
  call(proto::kTeamClose, &b, sizeof(b), &r, sizeof(r));
}

Status open_daemon_link(const LinkConfig& cfg, uint32_t sq_capacity,
                        uint32_t ncomp, off::Channel* ch,
                        off::EngineLink** out) {
  return make_link<DaemonLink>(cfg, sq_capacity, ncomp, ch, out);
}

}  // namespace ucc::host

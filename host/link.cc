#include "host/link.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "offload/proto.h"
#include "platform/os/clock.h"
#include "platform/os/log.h"
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

Status EngineLink::init(const LinkConfig& cfg, uint32_t sq_capacity,
                        uint32_t ncomp, off::Channel* ch) {
  ch_ = ch;
  bytes_ = off::Channel::bytes_needed(sq_capacity, ncomp);
  timeout_ms_ = cfg.timeout_ms;
  if (!cfg.emu) {
    if (posix_memalign(&mem_, 64, bytes_) != 0) {
      mem_ = nullptr;
      return Status::kNoMemory;
    }
    ch->init(mem_, sq_capacity, ncomp);
    Status st = engine_.init(cfg.engine, ch);
    if (failed(st)) fini();
    return st;
  }
  // Emu: the channel lives in a memfd the daemon maps too.
  memfd_ = memfd_create("ucc-channel", MFD_CLOEXEC);
  if (memfd_ < 0 || ftruncate(memfd_, static_cast<off_t>(bytes_)) != 0) {
    UCC_ERROR("emu: cannot create the channel segment: %s", strerror(errno));
    fini();
    return Status::kNoMemory;
  }
  void* m =
      mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_, 0);
  if (m == MAP_FAILED) {
    fini();
    return Status::kNoMemory;
  }
  mem_ = m;
  mapped_ = true;
  ch->init(mem_, sq_capacity, ncomp);
  Status st = connect_daemon(cfg);
  if (ok(st)) {
    proto::Hello h{};
    const dev::EngineConfig& e = cfg.engine;
    h.desc_version = off::kDescVersion;
    h.sq_capacity = sq_capacity;
    h.ncomp = ncomp;
    h.max_teams = e.max_teams;
    h.team_queue = e.team_queue;
    h.slot_size = e.slot_size;
    h.nslots = e.nslots;
    h.inflight = e.inflight;
    h.unexpected = e.unexpected;
    h.allreduce_ring_min = e.select.allreduce_ring_min_bytes;
    h.channel_bytes = bytes_;
    for (int i = 0; i < static_cast<int>(off::CollType::kCount); ++i)
      h.forced_alg[i] = e.select.forced[i];
    proto::HelloReply r{};
    st = call(proto::kHello, &h, sizeof(h), &r, sizeof(r), memfd_);
    if (ok(st)) st = static_cast<Status>(r.status);
    if (failed(st)) UCC_ERROR("emu: the daemon refused this context");
    daemon_pid_ = r.daemon_pid;
  }
  // The daemon has its own mapping now (or we failed): the fd can go.
  close(memfd_);
  memfd_ = -1;
  if (failed(st)) fini();
  return st;
}

Status EngineLink::connect_daemon(const LinkConfig& cfg) {
  char path[256];
  if (cfg.socket_path != nullptr && *cfg.socket_path != 0)
    snprintf(path, sizeof(path), "%s", cfg.socket_path);
  else
    proto::default_socket_path(path, sizeof(path));
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
  sock_ = s;
  return Status::kOk;
}

void EngineLink::check_daemon() {
  if (dead_) return;
  pollfd pf{sock_, POLLIN, 0};
  // Between requests the daemon never writes: anything readable, or a
  // hang-up, means it has gone (or broken the protocol).
  if (poll(&pf, 1, 0) > 0) {
    dead_ = true;
    UCC_ERROR(
        "emu: the firmware_sim daemon has gone; collectives in flight "
        "fail");
  }
}

Status EngineLink::call(uint16_t type, const void* body, uint32_t len,
                        void* out, uint32_t out_len, int pass_fd) {
  if (dead_) return Status::kError;
  proto::MsgHeader h{proto::kMagic, proto::kVersion, type, len, ++seq_};
  if (!plat::sock::send_all(sock_, &h, sizeof(h), body, len, pass_fd))
    return Status::kError;
  proto::MsgHeader rh{};
  const int to = static_cast<int>(timeout_ms_);
  if (plat::sock::recv_all(sock_, &rh, sizeof(rh), to) != 1 ||
      rh.magic != proto::kMagic || rh.seq != h.seq ||
      rh.type != (type | proto::kReply) || rh.len != out_len ||
      plat::sock::recv_all(sock_, out, out_len, to) != 1) {
    UCC_ERROR("emu: no valid answer from the firmware_sim daemon");
    dead_ = true;  // the stream is out of step, if the daemon is there at all
    return Status::kError;
  }
  return Status::kOk;
}

void EngineLink::fini() {
  if (sock_ >= 0) {
    close(sock_);  // the daemon frees this context's engine
    sock_ = -1;
  }
  engine_.fini();  // nothing to do unless it was started (inline)
  if (memfd_ >= 0) close(memfd_);
  memfd_ = -1;
  if (mem_ != nullptr) {
    if (mapped_)
      munmap(mem_, bytes_);
    else
      free(mem_);
  }
  mem_ = nullptr;
  mapped_ = false;
}

void EngineLink::submitted() {
  if (sock_ < 0 || !ch_->take_doorbell()) return;
  proto::MsgHeader h{proto::kMagic, proto::kVersion, proto::kDoorbell, 0,
                     ++seq_};
  plat::sock::send_all(sock_, &h, sizeof(h), nullptr, 0);
}

Status EngineLink::cover_range(uint64_t addr, uint64_t len) {
  if (len == 0) return Status::kOk;
  uint64_t end;
  if (__builtin_add_overflow(addr, len, &end)) return Status::kInvalidParam;
  const uint64_t base = addr & ~uint64_t{4095};
  end = (end + 4095) & ~uint64_t{4095};
  ++tick_;
  for (uint32_t i = 0; i < nregs_; ++i) {
    if (regs_[i].base <= base && end <= regs_[i].end) {
      regs_[i].used = tick_;
      return Status::kOk;
    }
  }
  if (nregs_ == kRegs) {  // evict the least recently used
    uint32_t v = 0;
    for (uint32_t i = 1; i < nregs_; ++i)
      if (regs_[i].used < regs_[v].used) v = i;
    deregister(regs_[v].key);
    regs_[v] = regs_[--nregs_];
  }
  uint32_t key = 0;
  Status st = register_range(base, end - base, &key);
  if (failed(st)) {
    UCC_ERROR("emu: the daemon refused to register [%#llx, %#llx)",
              static_cast<unsigned long long>(base),
              static_cast<unsigned long long>(end));
    return st;
  }
  regs_[nregs_++] = Reg{base, end, key, tick_};
  return Status::kOk;
}

Status EngineLink::cover(const off::CollDesc& d, uint32_t n) {
  if (sock_ < 0) return Status::kOk;
  Status st = Status::kOk;
  if (d.src.key == 0) st = cover_range(d.src.addr, d.src.bytes);
  if (ok(st) && d.dst.key == 0) st = cover_range(d.dst.addr, d.dst.bytes);
  const uint64_t cw = (d.flags & off::kDescCount64) ? 8 : 4;
  const uint64_t dw = (d.flags & off::kDescDispl64) ? 8 : 4;
  if (ok(st) && d.src_counts != 0) st = cover_range(d.src_counts, cw * n);
  if (ok(st) && d.dst_counts != 0) st = cover_range(d.dst_counts, cw * n);
  if (ok(st) && d.src_displs != 0) st = cover_range(d.src_displs, dw * n);
  if (ok(st) && d.dst_displs != 0) st = cover_range(d.dst_displs, dw * n);
  return st;
}

Status EngineLink::pin(uint64_t addr, uint64_t len, uint32_t* key) {
  *key = 0;
  uint64_t end;
  if (len == 0 || __builtin_add_overflow(addr, len, &end))
    return Status::kInvalidParam;
  if (sock_ < 0) return Status::kOk;
  return register_range(addr, len, key);
}

void EngineLink::unpin(uint32_t key) {
  if (sock_ < 0 || key == 0) return;
  deregister(key);
}

Status EngineLink::register_range(uint64_t addr, uint64_t len, uint32_t* key) {
  proto::Register rq{addr, len};
  proto::RegisterReply r{};
  Status st = call(proto::kRegister, &rq, sizeof(rq), &r, sizeof(r));
  if (ok(st)) st = static_cast<Status>(r.status);
  if (ok(st) && r.key == 0) st = Status::kError;  // keys are never 0
  if (ok(st)) *key = r.key;
  return st;
}

void EngineLink::deregister(uint32_t key) {
  proto::Deregister dr{key, 0};
  proto::Reply r{};
  call(proto::kDeregister, &dr, sizeof(dr), &r, sizeof(r));
}

Status EngineLink::team_open(uint32_t size, uint32_t rank, uint32_t* idx,
                             plat::shm::SegAddr* addr) {
  if (sock_ < 0) return engine_.team_open(size, rank, idx, addr);
  proto::TeamOpen b{size, rank};
  proto::TeamOpenReply r{};
  Status st = call(proto::kTeamOpen, &b, sizeof(b), &r, sizeof(r));
  if (failed(st)) return st;
  *idx = r.idx;
  *addr = r.addr;
  return static_cast<Status>(r.status);
}

Status EngineLink::team_connect(uint32_t idx, uint32_t size,
                                const plat::shm::SegAddr* addrs) {
  if (sock_ < 0) return engine_.team_connect(idx, addrs);
  size_t len = sizeof(proto::TeamConnect) + size_t{size} * sizeof(*addrs);
  if (len > proto::kMaxBody) return Status::kInvalidParam;
  auto* body = static_cast<unsigned char*>(malloc(len));
  if (body == nullptr) return Status::kNoMemory;
  proto::TeamConnect tc{idx, size};
  memcpy(body, &tc, sizeof(tc));
  memcpy(body + sizeof(tc), addrs, size_t{size} * sizeof(*addrs));
  proto::Reply r{};
  Status st = call(proto::kTeamConnect, body, static_cast<uint32_t>(len), &r,
                   sizeof(r));
  free(body);
  return failed(st) ? st : static_cast<Status>(r.status);
}

void EngineLink::team_seal(uint32_t idx) {
  if (sock_ < 0) return engine_.team_seal(idx);
  proto::TeamIdx b{idx, 0};
  proto::Reply r{};
  call(proto::kTeamSeal, &b, sizeof(b), &r, sizeof(r));
}

void EngineLink::team_close(uint32_t idx) {
  if (sock_ < 0) return engine_.team_close(idx);
  proto::TeamIdx b{idx, 0};
  proto::Reply r{};
  call(proto::kTeamClose, &b, sizeof(b), &r, sizeof(r));
}

}  // namespace ucc::host

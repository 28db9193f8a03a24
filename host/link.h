// Where a context's collectives run: the engine in this process (inline,
// progressed by ucc_context_progress) or in the firmware_sim daemon of this
// node (emu: the emulated DPU; this process only posts descriptors and
// reads completion words). Either way the host talks to the engine through
// the same channel; this class owns the channel's memory and carries the
// team control calls, to the local engine or as requests over the
// daemon's socket (offload/proto.h).
//
// Threads: the context serialises every call (its lock in
// UCC_THREAD_MULTIPLE).
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/engine/engine.h"
#include "offload/channel.h"
#include "platform/shm/shm_fabric.h"

namespace ucc::host {

using off::Status;

struct LinkConfig {
  dev::EngineConfig engine;
  bool emu = false;
  const char* socket_path = nullptr;  // emu; "" = the default path
  const char* daemon_path = nullptr;  // emu autostart: binary, or "none"
  uint32_t timeout_ms = 10000;        // daemon start and each request
};

class EngineLink {
 public:
  EngineLink() = default;
  EngineLink(const EngineLink&) = delete;
  EngineLink& operator=(const EngineLink&) = delete;
  ~EngineLink() { fini(); }

  // Lays out `ch` (sq_capacity descriptors, ncomp completion words) and
  // starts the engine, or connects to (and if needed starts) the daemon.
  Status init(const LinkConfig& cfg, uint32_t sq_capacity, uint32_t ncomp,
              off::Channel* ch);
  void fini();
  bool emu() const { return sock_ >= 0; }
  // Emu: the daemon's pid (it owns the engines' fabric segments).
  int daemon_pid() const { return daemon_pid_; }

  // Inline: the engine's progress. Emu: 0 (the daemon progresses); every
  // so often it also looks whether the daemon is still there.
  uint64_t progress() {
    if (sock_ < 0) return engine_.progress();
    if ((++polls_ & 255) == 0) check_daemon();
    return 0;
  }
  // Emu: the daemon has gone (its socket closed). Collectives still in
  // flight then end with an error, and nothing more can be posted.
  bool dead() const { return dead_; }
  // After submitting descriptors: wakes a sleeping daemon.
  void submitted();

  // Emu: makes sure the daemon may reach every host range `d` names (its
  // buffers and v-arrays; n = ranks taking part), registering what is not
  // yet (a cache of page-rounded ranges; the least recently used goes when
  // it is full). A buffer whose BufRef has a key is inside a pinned
  // registration already and is left alone. Inline: nothing to do.
  // kOk; else the daemon's refusal (kInvalidParam: memory this process
  // has not mapped; kNoResource: its table is full) or kError.
  Status cover(const off::CollDesc& d, uint32_t n);

  // Emu: registers exactly [addr, addr + len) with the daemon until
  // unpin(*key), outside the cache (ucc_mem_map): descriptors name it by
  // *key. Inline: *key = 0, nothing to do. kOk, kInvalidParam (len 0,
  // wrap-around, or memory this process has not mapped), kNoResource (the
  // daemon's table is full), kError (the daemon has gone).
  Status pin(uint64_t addr, uint64_t len, uint32_t* key);
  // Emu: ends a pin() registration (a key of 0 or a gone daemon: nothing
  // to do).
  void unpin(uint32_t key);

  Status team_open(uint32_t size, uint32_t rank, uint32_t* idx,
                   plat::shm::SegAddr* addr);
  Status team_connect(uint32_t idx, uint32_t size,
                      const plat::shm::SegAddr* addrs);
  void team_seal(uint32_t idx);
  void team_close(uint32_t idx);

 private:
  Status connect_daemon(const LinkConfig& cfg);
  void check_daemon();
  Status cover_range(uint64_t addr, uint64_t len);
  // One registration request to the daemon (emu) and its key (never 0),
  // or the daemon's refusal; and its end.
  Status register_range(uint64_t addr, uint64_t len, uint32_t* key);
  void deregister(uint32_t key);
  // One request and its reply (body copied into `out`, out_len bytes).
  Status call(uint16_t type, const void* body, uint32_t len, void* out,
              uint32_t out_len, int pass_fd = -1);

  dev::Engine engine_;
  off::Channel* ch_ = nullptr;
  void* mem_ = nullptr;
  size_t bytes_ = 0;
  int memfd_ = -1;
  bool mapped_ = false;  // mem_ is a mapping of memfd_ (emu)
  int sock_ = -1;
  uint32_t seq_ = 0;
  uint32_t timeout_ms_ = 10000;
  uint32_t polls_ = 0;
  int daemon_pid_ = -1;
  bool dead_ = false;

  // Registrations the daemon holds for us (emu).
  struct Reg {
    uint64_t base, end;
    uint32_t key;
    uint64_t used;  // tick of the last use
  };
  static constexpr uint32_t kRegs = 256;
  Reg regs_[kRegs] = {};
  uint32_t nregs_ = 0;
  uint64_t tick_ = 0;
};

}  // namespace ucc::host

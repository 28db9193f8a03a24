// The inline engine: the context's collectives run in this process,
// advanced by ucc_context_progress, and reach ranks on other hosts over
// the network UCC_NET names (platform/net/net.h: TCP, or verbs with TCP
// for connection setup). The one file of host/ that includes the engine
// (the seam between host and device).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <new>

#include "device/engine/engine.h"
#include "host/link/link.h"
#include "platform/base/hot.h"
#include "platform/net/net.h"
#include "platform/os/log.h"

namespace ucc::host {
namespace {

class InlineLink final : public off::EngineLink {
 public:
  ~InlineLink() override {
    engine_.fini();  // its teams leave the net first
    delete net_;     // which delivers what they still owe
    if (mem_ != nullptr) munmap(mem_, bytes_);
  }

  Status open(const LinkConfig& cfg, uint32_t sq_capacity, uint32_t ncomp,
              off::Channel* ch) {
    // Fresh anonymous pages: zero-filled, and taken only as used.
    bytes_ = off::Channel::bytes_needed(sq_capacity, ncomp);
    void* m = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return Status::kNoMemory;
    mem_ = m;
    ch->init(mem_, sq_capacity, ncomp);
    dev::EngineEnv env;
    env.user_reduce = cfg.user_reduce;
    Status st = plat::open_net(cfg.net, &net_);
    if (failed(st)) return st;
    env.net = net_;
    env.where.host[0] = cfg.host[0];
    env.where.host[1] = cfg.host[1];
    env.where.owner_pid = pid_;
    st = engine_.init(cfg.engine, env, ch);
    if (ok(st)) caps_ = engine_.caps();
    return st;
  }

  bool remote() const override { return false; }
  int owner_pid() const override { return pid_; }
  UCC_HOT uint64_t progress() override {
    uint64_t ev = engine_.progress();
    if (net_ == nullptr) return ev;
    if (!net_->in_use()) {  // no team reaches another host: no system call
      quiet_ = 0;
      return ev;
    }
    // The net may sleep on its sockets only once the engine too has been
    // idle for as long: a rank waiting on shared memory (a node-aware
    // algorithm's non-leaders) has nothing that would wake it there.
    quiet_ = ev == 0 ? quiet_ + 1 : 0;
    return ev + net_->progress_quiet(quiet_);
  }
  bool dead() const override { return false; }
  bool submit(const off::CollDesc& d) override {
    engine_.submit(d);
    return true;
  }
  bool submit_known(uint32_t team, uint32_t slot, uint32_t gen) override {
    return engine_.submit_known(team, slot, gen);
  }
  void submitted() override {}
  Status cover(const off::CollDesc&, uint32_t) override { return Status::kOk; }
  Status pin(uint64_t addr, uint64_t len, uint32_t* key) override {
    *key = 0;
    uint64_t end;
    return len == 0 || __builtin_add_overflow(addr, len, &end)
               ? Status::kInvalidParam
               : Status::kOk;
  }
  void unpin(uint32_t) override {}
  Status team_open(uint32_t size, uint32_t rank, uint32_t* idx,
                   off::TeamAddr* addr) override {
    return engine_.team_open(size, rank, idx, addr);
  }
  Status team_connect(uint32_t idx, uint32_t size,
                      const off::TeamAddr* addrs) override {
    if (engine_.team_size(idx) != size) return Status::kInvalidParam;
    return engine_.team_connect(idx, addrs);
  }
  void team_seal(uint32_t idx) override { engine_.team_seal(idx); }
  void team_close(uint32_t idx) override { engine_.team_close(idx); }

 private:
  dev::Engine engine_;
  plat::Net* net_ = nullptr;  // the engine's network, if any
  uint32_t quiet_ = 0;        // engine passes in a row without events
  void* mem_ = nullptr;
  size_t bytes_ = 0;
  int pid_ = getpid();
};

}  // namespace

Status open_inline_link(const LinkConfig& cfg, uint32_t sq_capacity,
                        uint32_t ncomp, off::Channel* ch,
                        off::EngineLink** out) {
  return make_link<InlineLink>(cfg, sq_capacity, ncomp, ch, out);
}

}  // namespace ucc::host

// The link to an engine in a firmware_sim daemon: emu (this node's
// daemon over a unix socket, the channel in a memfd both map:
// link_daemon.cc) and dpu (a daemon on another computer over TCP, the
// channel in our memory, reached by the engine by RDMA only:
// link_dpu.cc). One class: the two differ in how they connect and say
// hello, and share the requests, the registrations and team control.
#pragma once

#include <cstdint>

#include "host/link/link.h"
#include "offload/control_auth.h"
#include "offload/engine_link.h"
#include "offload/proto.h"
#include "platform/mem/remote_mem.h"
#include "platform/os/crypto.h"

namespace ucc::host {

class DaemonLink final : public off::EngineLink {
 public:
  ~DaemonLink() override;
  Status open(const LinkConfig& cfg, uint32_t sq_capacity, uint32_t ncomp,
              off::Channel* ch);

  bool remote() const override { return true; }
  int owner_pid() const override { return daemon_pid_; }
  uint64_t progress() override {
    if ((++polls_ & 255) == 0) check_daemon();
    return 0;
  }
  bool dead() const override { return dead_; }
  bool submit(const off::CollDesc& d) override { return ch_->submit(d); }
  void submitted() override;
  Status cover(const off::CollDesc& d, uint32_t n) override;
  Status pin(uint64_t addr, uint64_t len, uint32_t* key) override;
  void unpin(uint32_t key) override;
  bool rdma_mem() const override { return rdma_ != nullptr; }
  Status cover_gpu(uint64_t addr, uint64_t len, uint64_t id, DmaBufFn make_fd,
                   void* arg, uint32_t* key) override;
  Status team_open(uint32_t size, uint32_t rank, uint32_t* idx,
                   off::TeamAddr* addr) override;
  Status team_connect(uint32_t idx, uint32_t size,
                      const off::TeamAddr* addrs) override;
  void team_seal(uint32_t idx) override;
  void team_close(uint32_t idx) override;

 private:
  Status connect_daemon(const LinkConfig& cfg);
  Status hello(const LinkConfig& cfg, uint32_t sq_capacity, uint32_t ncomp,
               int memfd);
  void check_daemon();
  // A hello's reply: the engine's capabilities, or its refusal (logged).
  Status accept_hello(Status st, const off::proto::HelloReply& r);
  Status cover_range(uint64_t addr, uint64_t len, bool quiet = false);
  Status cover_side(const off::BufRef& b, uint64_t counts, uint64_t displs,
                    uint32_t n, uint32_t esize);
  // One registration request to the daemon and its key (never 0), or the
  // daemon's refusal (kNotSupported: GPU memory the port takes neither by
  // dma-buf nor by pointer); and its end.
  Status register_range(uint64_t addr, uint64_t len, uint32_t* key,
                        bool gpu = false, int dmabuf_fd = -1);
  void deregister(uint32_t key);
  // One request and its reply (body copied into `out`, out_len bytes).
  Status call(uint16_t type, const void* body, uint32_t len, void* out,
              uint32_t out_len, int pass_fd = -1);

  Status connect_rdma(const LinkConfig& cfg);

  // dpu mode (link_dpu.cc): the daemon across the network; both prove
  // the key, then every message carries a tag (offload/proto.h); the
  // channel stays in our memory, registered with our RDMA port.
  Status open_dpu(const LinkConfig& cfg);
  Status connect_tcp(const LinkConfig& cfg);
  Status hello_remote(const LinkConfig& cfg, uint32_t sq_capacity,
                      uint32_t ncomp);
  // UCC_DPU_RING=push: the descriptors submitted since the last push,
  // written into the engine's inbox, then the ring's producer index.
  void push_descriptors();
  // The TCP fallback (UCC_DPU_MEM=tcp): a second connection, proving
  // the key on its own, becomes the engine's way into our memory,
  // served by a thread (platform/mem/tcp_mem.h).
  Status connect_tcp_mem(const LinkConfig& cfg, const plat::Secret& key);
  // One framed message out on fd (sealed when the session is on), and
  // one reply of type `type` and seq `seq`, whose body must be out_len
  // bytes, within `to` ms.
  static bool send_on(int fd, const off::proto::Session& s, uint16_t type,
                      uint32_t seq, const void* body, uint32_t len,
                      int pass_fd);
  static bool recv_on(int fd, const off::proto::Session& s, uint16_t type,
                      uint32_t seq, void* out, uint32_t out_len, int to);
  // The handshake on fd (offload/proto.h, "Over a network"): both ends
  // prove `key`; *out: the session key. Logged.
  static Status prove(int fd, const plat::Secret& key, int to,
                      off::proto::Session* out);

  off::proto::Session session_;  // dpu mode, once authenticated
  bool dpu_ = false;
  const char* what_ = "emu";  // for log lines

  // UCC_OFFLOAD_MEM=verbs, dpu mode: verbs or (UCC_DPU_MEM=tcp) a
  // plat::TcpMemServer.
  plat::MemExport* rdma_ = nullptr;
  off::Channel* ch_ = nullptr;
  // Pushing (dpu mode): our channel's registration slot and where its
  // ring's slots begin in it, the engine's inbox and its key, and the
  // producer index pushed so far.
  bool push_ = false;
  uint32_t ch_slot_ = 0;
  uint64_t ring_off_ = 0;
  uint32_t inbox_rkey_ = 0;
  uint64_t inbox_addr_ = 0;
  uint32_t pushed_ = 0;
  void* mem_ = nullptr;
  size_t bytes_ = 0;
  int sock_ = -1;
  uint32_t seq_ = 0;
  uint32_t timeout_ms_ = 10000;
  uint32_t polls_ = 0;
  int daemon_pid_ = -1;
  bool dead_ = false;

  // Registrations the daemon holds for us: a cache of page-rounded
  // ranges; the least recently used goes when it is full. A cache entry
  // of GPU memory belongs to one driver allocation (its buffer id): a
  // range that overlaps it and is not of that allocation drops it.
  struct Reg {
    uint64_t base, end;
    uint32_t key;
    uint64_t used;    // tick of the last use
    uint64_t gpu_id;  // 0: host memory
  };
  // Deregisters cache entry i (the last one takes its place); makes room
  // for one more entry and returns its index.
  void drop_reg(uint32_t i);
  uint32_t room();
  static constexpr uint32_t kRegs = 256;
  Reg regs_[kRegs] = {};
  uint32_t nregs_ = 0;
  uint64_t tick_ = 0;
};

}  // namespace ucc::host

// The host process's end of a verbs channel (verbs_channel.h) to its
// firmware_sim engine (UCC_OFFLOAD_MEM=verbs): it opens its RDMA port,
// connects one queue pair to the engine's, and registers with the device
// every range it registers with the daemon (ucc_mem_map pins, and the
// link's cache of collective buffers), passing the remote key along; the
// engine then reads and writes those ranges by RDMA instead of
// cross-memory attach, after the same registration checks. Opened
// through platform/net/net.h (open_mem_export).
//
// Threads: the host's context. Memory: the slot table at open.
#pragma once

#include <cstdint>

#include "platform/base/arena.h"
#include "platform/mem/remote_mem.h"
#include "platform/verbs/verbs_channel.h"

namespace ucc::plat::verbs {

class VerbsExport final : public MemExport {
 public:
  VerbsExport() = default;
  VerbsExport(const VerbsExport&) = delete;
  VerbsExport& operator=(const VerbsExport&) = delete;
  ~VerbsExport() override;

  // The port and a queue pair (*mine: for the engine); room for `nregs`
  // registrations at once. kNoResource without a port (logged),
  // kNoMemory.
  Status open(const VerbsConfig& cfg, uint32_t nregs, RemoteMemAddr* mine);

  // --- MemExport -----------------------------------------------------------
  Status connect(const RemoteMemAddr& engine) override;
  Status reg(uint64_t addr, uint64_t len, uint32_t* rkey, uint32_t* slot,
             bool gpu = false, int dmabuf_fd = -1) override;
  void bind(uint32_t slot, uint32_t key) override;
  void drop(uint32_t slot) override;
  void release(uint32_t key) override;
  bool can_push() const override { return true; }
  bool push(uint32_t slot, const Piece* p, uint32_t n, uint32_t word,
            uint64_t waddr, uint32_t rkey) override;
  // Pushed writes in flight at most (each push has two or three).
  static constexpr uint32_t kPushDepth = 64;

 private:
  struct Slot {
    ibv_mr* mr;
    uint32_t key;  // the daemon's, once bound
  };
  // GPU memory: by its dma-buf, else by the pointer; nullptr (errno,
  // logged once per fallback) where the device takes neither.
  ibv_mr* reg_gpu(uint64_t addr, uint64_t len, int dmabuf_fd);
  VerbsNet dev_;
  VerbsChannel ch_;
  base::Array<Slot> slots_;
};

}  // namespace ucc::plat::verbs

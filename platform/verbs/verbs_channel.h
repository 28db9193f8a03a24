// A verbs channel between a host process and its DPU engine on the same
// node (firmware_sim, the emulated DPU): one RC queue pair over which the
// engine reads and writes host memory the host registered, by RDMA, with
// the host's remote keys; the verbs counterpart of cross-memory attach.
// The host's CPU takes no part once connected: it only registers memory
// (reg) and hands the keys to the engine with its registrations, which
// the engine checks every access against first (mem_access.h).
//
// The engine side has a protection domain of its own, so memory it
// exposes to its host (the inbox host-written descriptors land in) is
// reachable through this queue pair alone, never through another host's.
// The host side may push (UCC_DPU_RING=push): unwaited RDMA WRITEs of its
// registered memory into the exposed range, in order on the queue pair.
//
// The engine side transfers synchronously: a request per staging buffer
// worth (registered engine memory), polled to completion with a bounded
// spin, then yields, giving up after `timeout_ms` (the host or its port
// is gone). An error completion breaks the channel: every later transfer
// fails at once (errno EIO), never hangs.
//
// Threads: one per side. Memory: everything at open.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/mem/remote_mem.h"
#include "platform/verbs/verbs_net.h"

namespace ucc::plat::verbs {

class VerbsChannel final : public RemoteMem {
 public:
  VerbsChannel() = default;
  VerbsChannel(const VerbsChannel&) = delete;
  VerbsChannel& operator=(const VerbsChannel&) = delete;
  ~VerbsChannel() override { close(); }

  // A queue pair in INIT on `dev`'s port (which must outlive the
  // channel), and `staging` bytes of registered memory (the engine side;
  // 0 on the host). `push_depth`: writes push() may have in flight (the
  // host side; 0: none). *mine: what the other side needs.
  Status open(VerbsNet* dev, size_t staging, uint32_t timeout_ms, QpAddr* mine,
              uint32_t push_depth = 0);
  // RTR and RTS towards the other side. kInvalidParam for an address
  // that cannot be one.
  Status connect(const QpAddr& peer);
  void close();

  // Host side: memory the engine may read and write. nullptr with errno.
  ibv_mr* reg(void* addr, size_t len);
  // The same for a dma-buf (GPU memory): [offset, offset + len) of the
  // dma-buf `fd`, which WRs name from `iova` on. nullptr (errno
  // EOPNOTSUPP where the verbs library has no ibv_reg_dmabuf_mr).
  ibv_mr* reg_dmabuf(uint64_t offset, size_t len, uint64_t iova, int fd);
  void dereg(ibv_mr* mr);
  // Host side: MemExport::push's writes, from the registration `mr`.
  bool push(const ibv_mr* mr, const MemExport::Piece* p, uint32_t n,
            uint32_t word, uint64_t waddr, uint32_t rkey);

  // --- RemoteMem (the engine side) --------------------------------------------
  bool read(uint64_t addr, uint32_t rkey, void* dst, uint64_t len) override;
  bool write(uint64_t addr, uint32_t rkey, const void* src,
             uint64_t len) override;
  bool expose(void* addr, uint64_t len, uint32_t* rkey) override;

 private:
  bool transfer(bool to_host, uint64_t addr, uint32_t rkey, char* local,
                uint64_t len);
  // Takes the completions there are, until at most `room` WRs are in
  // flight (a transfer's one: 0; pushes: what fits the queue), waiting
  // up to the timeout; false once broken.
  bool reap(uint32_t room);
  bool bad_completion(int n, const ibv_wc& wc);

  VerbsNet* dev_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  char* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  ibv_mr* staging_mr_ = nullptr;
  ibv_pd* own_pd_ = nullptr;  // the engine side's
  ibv_mr* exposed_mr_ = nullptr;
  uint32_t* words_ = nullptr;  // the host side's pushed words
  ibv_mr* words_mr_ = nullptr;
  uint32_t push_depth_ = 0;
  uint32_t in_flight_ = 0;  // WRs posted, not completed yet
  uint32_t next_word_ = 0;
  uint32_t psn_ = 0;
  uint32_t timeout_ms_ = 10000;
  bool connected_ = false;
  bool broken_ = false;
  uint64_t bytes_read_ = 0, bytes_written_ = 0;
};

}  // namespace ucc::plat::verbs

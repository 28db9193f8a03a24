// Host memory an engine reaches through a remote-memory transport (verbs
// RDMA to the host's registered memory: platform/verbs/verbs_channel.h,
// opened through platform/net/net.h),
// by address and the remote key of its registration, instead of
// cross-memory attach. MemAccess (mem_access.h) checks every access
// against the registrations first, and takes the key from there.
#pragma once

#include <cstdint>

#include "platform/base/status.h"

namespace ucc::plat {

using base::Status;

// What one end of a memory channel tells the other (verbs: a queue
// pair's address), opaque outside its transport, which checks a peer's
// before use. The control protocol carries it as it is
// (offload/proto.h's RdmaAddr, of the same size).
struct RemoteMemAddr {
  uint8_t bytes[28];
};

// The engine's end of a memory channel.
class RemoteMem {
 public:
  virtual ~RemoteMem() = default;
  // Bytes [addr, addr + len) of the host's memory under `rkey` into `dst`
  // (read) or from `src` (write), whole, before returning. false with
  // errno set (EIO: the transfer failed; ETIMEDOUT: no completion).
  virtual bool read(uint64_t addr, uint32_t rkey, void* dst,
                    uint64_t len) = 0;
  virtual bool write(uint64_t addr, uint32_t rkey, const void* src,
                     uint64_t len) = 0;
  // Engine memory [addr, addr + len) that the host may write by RDMA over
  // this channel's queue pair and no other (a protection domain of the
  // channel's own: another host's queue pair cannot reach it), until the
  // channel closes; *rkey for the host. false where the channel cannot
  // (the TCP fallback), or when it has one range exposed already.
  virtual bool expose(void* addr, uint64_t len, uint32_t* rkey) {
    (void)addr;
    (void)len;
    (void)rkey;
    return false;
  }
};

// The host process's end of a memory channel: memory it registers with
// its port so that its engine may read and write it (UCC_OFFLOAD_MEM=
// verbs), in `nregs` slots at once (platform/net/net.h opens one).
class MemExport {
 public:
  virtual ~MemExport() = default;
  // Connects to the engine's end. kInvalidParam for an address that
  // cannot be one, kError.
  virtual Status connect(const RemoteMemAddr& engine) = 0;
  // Registers [addr, addr + len): *rkey for the engine, *slot to name
  // it. kNoResource when every slot is taken, kInvalidParam when the
  // device refuses the range (logged). GPU memory (GPUDirect RDMA) comes
  // with `gpu`: its dma-buf where the driver gave one (`dmabuf_fd`, a
  // dma-buf of exactly the range; the caller closes it after), registered
  // by it, else, or where the device refuses it, the pointer itself;
  // kNotSupported when the device takes neither (each fallback logged
  // once per process).
  virtual Status reg(uint64_t addr, uint64_t len, uint32_t* rkey,
                     uint32_t* slot, bool gpu = false, int dmabuf_fd = -1) = 0;
  // Binds a slot to the daemon's registration key; drops a slot; drops
  // the slot bound to `key` (none: nothing).
  virtual void bind(uint32_t slot, uint32_t key) = 0;
  virtual void drop(uint32_t slot) = 0;
  virtual void release(uint32_t key) = 0;

  // Host-written descriptors (dpu mode, UCC_DPU_RING=push): RDMA WRITEs
  // on the one queue pair, in this order, of `n` pieces of our
  // registered `slot` (bytes [off, off + len) of the registered range,
  // each to the engine's `raddr`), then of the value `word` to the
  // engine's `waddr`, all under the engine's `rkey`. Returns once they
  // are posted, not done: the queue pair places them in order, which is
  // what the engine relies on (it reads `word` first, then the pieces).
  // false where the channel cannot (the TCP fallback) or broke (logged).
  struct Piece {
    uint64_t off, len, raddr;
  };
  virtual bool can_push() const { return false; }
  virtual bool push(uint32_t slot, const Piece* p, uint32_t n, uint32_t word,
                    uint64_t waddr, uint32_t rkey) {
    (void)slot;
    (void)p;
    (void)n;
    (void)word;
    (void)waddr;
    (void)rkey;
    return false;
  }
};

// What an engine's transfers to its host were for, and how long each
// kind took to complete (dpu mode's latency by step, docs/dpu.md): the
// channel's mirror (remote_channel.h: the ring's head polled, new
// descriptors, the tail told back, completion words, the idle flag) and
// the user buffers read and written (MemAccess).
enum class MemStep : uint8_t {
  kRingHead,
  kDescriptors,
  kRingTail,
  kCompletion,
  kIdleFlag,
  kBufRead,
  kBufWrite,
  kCount
};
inline constexpr uint32_t kMemSteps = static_cast<uint32_t>(MemStep::kCount);
inline constexpr const char* kMemStepNames[kMemSteps] = {
    "ring_head", "descriptors", "ring_tail", "completion",
    "idle_flag", "buf_read",    "buf_write"};

struct MemSteps {
  uint64_t n[kMemSteps] = {};
  uint64_t bytes[kMemSteps] = {};
  uint64_t ns[kMemSteps] = {};  // from the call to its completion
  void add(MemStep s, uint64_t len, uint64_t took_ns) {
    const auto i = static_cast<uint32_t>(s);
    ++n[i];
    bytes[i] += len;
    ns[i] += took_ns;
  }
  void add(const MemSteps& o) {
    for (uint32_t i = 0; i < kMemSteps; ++i) {
      n[i] += o.n[i];
      bytes[i] += o.bytes[i];
      ns[i] += o.ns[i];
    }
  }
};

// Where a client's RemoteMem will be once it has connected (the engine's
// MemAccess is made before): nullptr until then, and cross-memory attach
// is used. Every transfer through it goes through transfer(), which
// counts it in `steps` by what it was for.
struct RemoteMemSlot {
  RemoteMem* mem = nullptr;
  mutable MemSteps steps;
  // One read (to_host false) or write of `len` bytes at the host's `addr`
  // under `rkey`, to or from `local`: mem's read or write, timed. Same
  // results. (mem_access.cc)
  bool transfer(MemStep step, bool to_host, uint64_t addr, uint32_t rkey,
                void* local, uint64_t len) const;
};

}  // namespace ucc::plat

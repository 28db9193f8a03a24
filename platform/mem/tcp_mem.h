// dpu mode's TCP fallback (UCC_DPU_MEM=tcp, docs/dpu.md): the memory
// channel between a host process and its engine on a DPU, where no RDMA
// device exists, over one TCP connection of its own. It stands in for
// the RDMA "NIC" and is labelled a fallback wherever it shows: every
// byte crosses a socket and a copy at each end, and each access costs a
// round trip and a wake-up of the host's thread.
//
//   engine end  TcpMemClient (a RemoteMem): read(addr, rkey, len) and
//               write(...) become requests, at most kMaxOp bytes each,
//               each waiting for its answer (as an RDMA read or write
//               waits for its completion).
//   host end    TcpMemServer (a MemExport): one thread of its own, the
//               emulated NIC, started for this mode alone (the only
//               thread the library starts; the user asked for it by
//               choosing the fallback). It blocks on the socket, checks
//               each request against the ranges the host registered
//               (address, length and the random key of the range), and
//               copies. A range the host registered but no longer maps
//               is refused (EFAULT), never a crash: user ranges are
//               copied by process_vm_readv/writev on this process itself
//               (cma.h), which fails cleanly. Only the block given at
//               open (the channel: ring and completion words, mapped for
//               the export's whole life) is accessed directly, its
//               aligned 4- and 8-byte words with acquire loads and
//               release stores, so that the engine's completion word
//               publishes the data written before it, as on RDMA.
//
// Frames (both ways; integers in host order, as the rest of the
// protocol): a TcpMemFrame, `len` payload bytes, then kTagBytes of
// HMAC-SHA256 under the connection's session key over frame and payload
// (platform/os/crypto.h: libcrypto). Requests come from the engine with
// seq 1, 2, 3...; each answer repeats its request's seq. Whoever meets a
// bad magic, end, op, length, seq or tag closes the connection: the
// daemon then drops the client, and the host's collectives fail. Who
// may open the connection and how it gets its session key is the
// control protocol's business (offload/proto.h: kTcpMemConnect,
// kTcpMemAttach).
//
// Threads: a TcpMemClient is its caller's (the daemon's thread). A
// TcpMemServer's MemExport calls are the host context's, its server the
// thread's; the range table between them is locked, and a copy holds
// the lock, so a range is never dropped while the thread copies it.
// Memory: staging of kMaxOp at each end, and the range table, at open;
// nothing after.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "platform/base/arena.h"
#include "platform/mem/remote_mem.h"

namespace ucc::plat {

struct TcpMemFrame {
  uint32_t magic;  // kTcpMemMagic
  uint8_t from;    // 'E': the engine, 'H': the host
  uint8_t op;      // TcpMemOp
  uint16_t pad;
  int32_t status;  // answers: 0, or an errno (EFAULT: not a range of ours)
  uint32_t count;  // bytes the request reads or writes
  uint64_t seq;
  uint64_t addr;
  uint32_t rkey;
  uint32_t len;  // payload bytes after the frame
};
static_assert(sizeof(TcpMemFrame) == 40);

inline constexpr uint32_t kTcpMemMagic = 0x55434d4du;  // "UCMM"
enum TcpMemOp : uint8_t {
  kTcpMemRead = 1,
  kTcpMemWrite = 2,
  kTcpMemAnswer = 3
};
inline constexpr uint32_t kTcpMemMaxOp = 256 * 1024;
inline constexpr uint32_t kTcpMemTagBytes = 16;

// The engine's end.
class TcpMemClient final : public RemoteMem {
 public:
  TcpMemClient() = default;
  TcpMemClient(const TcpMemClient&) = delete;
  TcpMemClient& operator=(const TcpMemClient&) = delete;
  ~TcpMemClient() override;

  // Takes the connected socket `fd` (made blocking here, sends bounded
  // by timeout_ms) and the session key; false: no memory (fd closed).
  bool init(int fd, const uint8_t key[32], uint32_t timeout_ms);
  // RemoteMem: false with errno EFAULT (the host refused the range: the
  // channel still works), or EIO / ETIMEDOUT (the connection is broken
  // for good: broken()).
  bool read(uint64_t addr, uint32_t rkey, void* dst, uint64_t len) override;
  bool write(uint64_t addr, uint32_t rkey, const void* src,
             uint64_t len) override;
  bool broken() const { return fd_ < 0; }
  uint64_t requests() const { return seq_; }

 private:
  bool call(uint8_t op, uint64_t addr, uint32_t rkey, uint32_t count,
            const void* src, void* dst);
  void fail(int err);
  int fd_ = -1;
  uint8_t key_[32] = {};
  int timeout_ms_ = 10000;
  uint64_t seq_ = 0;
  base::Array<uint8_t> stage_;
};

// The host's end.
class TcpMemServer final : public MemExport {
 public:
  TcpMemServer() = default;
  TcpMemServer(const TcpMemServer&) = delete;
  TcpMemServer& operator=(const TcpMemServer&) = delete;
  // Stops the thread (it may be blocked on the socket: shut down first)
  // and closes the socket.
  ~TcpMemServer() override;

  // Room for `nregs` ranges; [stable, stable + stable_len) is the block
  // that stays mapped while this export lives (the channel). kNoMemory.
  Status open(uint32_t nregs, uint64_t stable, uint64_t stable_len);
  // Serves the connected socket `fd` (now ours) under the session key,
  // on a thread of its own. kError: no thread (fd closed).
  Status start(int fd, const uint8_t key[32], uint32_t timeout_ms);
  // Requests answered so far, and whether the thread has stopped (the
  // connection ended, or broke the protocol: logged).
  uint64_t served() const { return served_.load(std::memory_order_relaxed); }
  bool stopped() const { return done_.load(std::memory_order_acquire); }

  // --- MemExport -----------------------------------------------------------
  // The connection is made by the control protocol (start()): nothing.
  Status connect(const RemoteMemAddr& engine) override;
  // kNotSupported for GPU memory (no GPUDirect over a socket: the
  // caller stages it), kNoResource when every slot is taken.
  Status reg(uint64_t addr, uint64_t len, uint32_t* rkey, uint32_t* slot,
             bool gpu = false, int dmabuf_fd = -1) override;
  void bind(uint32_t slot, uint32_t key) override;
  void drop(uint32_t slot) override;
  void release(uint32_t key) override;

 private:
  struct Range {
    uint64_t addr, len;
    uint32_t rkey;  // 0: free
    uint32_t key;   // the daemon's, once bound
  };
  static void* main(void* self);
  void serve();
  // One checked request into its answer (status, payload).
  int32_t access(const TcpMemFrame& f, uint8_t* data);

  base::Array<Range> ranges_;
  uint64_t stable_ = 0, stable_len_ = 0;
  base::Array<uint8_t> stage_;
  std::mutex mu_;
  pthread_t thread_{};
  bool running_ = false;
  int fd_ = -1;
  uint8_t key_[32] = {};
  int timeout_ms_ = 10000;
  std::atomic<uint64_t> served_{0};
  std::atomic<bool> done_{false};  // the thread has left serve()
};

}  // namespace ucc::plat

// Memory access to user buffers: how an engine reads and writes the host
// memory that descriptors name (a BufRef: host virtual address, length,
// registration key). Algorithms never dereference host addresses
// themselves; they go through CollRun's data operations, which go through
// here.
//
// Two modes:
//   direct         the engine runs inside the user's process (inline
//                  mode): map() returns the address itself, so data
//                  operations work in place, and read()/write() are
//                  memcpy. Addresses are the process's own; only the
//                  BufRef's bounds are checked (registrations are not
//                  consulted).
//   cross-process  the engine runs in another process (firmware_sim, the
//                  emulated DPU) and reaches the host process `pid` with
//                  process_vm_readv / process_vm_writev (cross-memory
//                  attach: the emulated equivalent of a DPU's DMA, no
//                  staging copy by the host). map() returns nullptr;
//                  read()/write() check every access against the BufRef's
//                  bounds AND the host's registrations (RegTable) before
//                  touching anything, then loop over partial transfers.
//                  Or, where the host connected one (remote_mem.h), by
//                  RDMA with the key the host gave at registration.
//
// Failures are clean: false (or nullptr), errno saying why: EFAULT when
// the range is outside the BufRef or the registrations (then nothing was
// touched) or not mapped in the host, ESRCH when the host process is gone,
// EPERM when the kernel refuses the access. Cross-memory attach needs
// ptrace access to the host: a child of the engine's process is always
// reachable (Yama ptrace_scope 0 or 1); anything else needs
// /proc/sys/kernel/yama/ptrace_scope = 0, CAP_SYS_PTRACE, or the host
// calling prctl(PR_SET_PTRACER, engine_pid) (what a daemon's clients do).
// A transfer that fails half way may have moved part of the bytes.
//
// A MemAccess is a small value (mode, pid, table pointer), copied into
// EngineConfig; the table must outlive the engines using it. Threads: the
// calls are const and reentrant; the RegTable they read is not
// synchronised (reg_table.h): one thread drives both.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "platform/base/buf_ref.h"
#include "platform/mem/reg_table.h"
#include "platform/mem/remote_mem.h"

namespace ucc::plat {

class MemAccess {
 public:
  enum class Mode : uint8_t { kDirect, kCrossProcess };

  // Direct mode.
  constexpr MemAccess() = default;
  static constexpr MemAccess direct() { return MemAccess(); }
  // Cross-process mode into process `pid`, checked against `regs` (which
  // must outlive this object; nullptr: no registrations, every access
  // fails).
  // With `remote`, once its slot holds a RemoteMem, transfers go through
  // that instead (by the remote key of the registration that holds them).
  static MemAccess cross_process(pid_t pid, const RegTable* regs,
                                 const RemoteMemSlot* remote = nullptr) {
    MemAccess m;
    m.mode_ = Mode::kCrossProcess;
    m.pid_ = pid;
    m.regs_ = regs;
    m.remote_ = remote;
    return m;
  }

  Mode mode() const { return mode_; }
  pid_t pid() const { return pid_; }
  const RegTable* regs() const { return regs_; }
  // Whether data operations need engine staging memory (a bounce buffer):
  // true in every mode whose map() cannot hand out pointers.
  bool needs_bounce() const { return mode_ != Mode::kDirect; }

  // Whether bytes [off, off + len) of `ref` may be accessed: inside the
  // reference and, cross-process, host memory (mem_type 0) inside the
  // registrations. Touches nothing.
  bool check(const base::BufRef& ref, uint64_t off, uint64_t len) const;
  // Changes whenever a range check() accepted may stop being accepted
  // (the host removed a registration); constant in direct mode.
  uint64_t check_epoch() const {
    return regs_ != nullptr ? regs_->removals() : 0;
  }

  // Address of bytes [off, off + len) of `ref` in this process, or nullptr
  // when the range is not inside the reference (or wraps) or the mode
  // cannot map (cross-process: use read/write).
  void* map(const base::BufRef& ref, uint64_t off, uint64_t len) const {
    if (mode_ != Mode::kDirect || !in_ref(ref, off, len)) return nullptr;
    return reinterpret_cast<void*>(static_cast<uintptr_t>(ref.addr + off));
  }

  // Copies bytes [off, off + len) of `ref` to engine memory `dst` (read)
  // or from engine memory `src` into them (write). true on success; a zero
  // length succeeds without checking or touching anything. On failure
  // errno says why (see above).
  bool read(const base::BufRef& ref, uint64_t off, void* dst,
            uint64_t len) const;
  bool write(const base::BufRef& ref, uint64_t off, const void* src,
             uint64_t len) const;

 private:
  static bool in_ref(const base::BufRef& ref, uint64_t off, uint64_t len) {
    return off <= ref.bytes && len <= ref.bytes - off;
  }
  // process_vm_{readv,writev} until all `len` bytes have moved, or the
  // remote-memory transport with the registration's key.
  bool transfer(bool to_host, const base::BufRef& ref, uint64_t addr,
                void* local, uint64_t len) const;

  Mode mode_ = Mode::kDirect;
  pid_t pid_ = 0;
  const RegTable* regs_ = nullptr;
  const RemoteMemSlot* remote_ = nullptr;
};

// The direct adapter, for code that has no engine configuration at hand.
inline constexpr MemAccess kDirectAccess{};

}  // namespace ucc::plat

// The engine's end of a host channel in dpu mode: the host keeps its
// channel (offload/channel.h) in its own memory, registered with its RDMA
// port, and never learns where the engine is. The engine runs on its own
// copy of the channel and mirrors the host's by RDMA only:
//
//   descriptors  pushed (an inbox, UCC_DPU_RING=push): the host writes
//                each descriptor into the inbox's slot and then its
//                producer index by RDMA WRITE (offload/channel.h,
//                InboxLayout); pull() reads the index in its own memory
//                and copies new descriptors out (at most kBatch a pass,
//                as many as the engine's copy has room for). Before a nap
//                it also looks at the host's ring once by RDMA READ (as
//                below), so a push still on its way is never slept on.
//                read (no inbox): pull() makes one RDMA READ of the host
//                ring's producer index; when it moved, RDMA READs of the
//                new descriptors into the engine's ring.
//                Either way, once a quarter of the ring has been taken
//                (or before a nap), one RDMA WRITE of the consumer index
//                into the host's ring, so the host may reuse those slots
//                (the engine has its copies).
//   completions  the engine's copy tells completed() of each word it
//                writes; flush() carries them to the host's completion
//                words by RDMA WRITE, after every write of the collective
//                into host memory has completed (the same queue pair,
//                each transfer waited for), so a host that sees the word
//                sees the data.
//   doorbell     set_idle() writes the engine's idle flag into the host's
//                channel header; a host that finds it set after posting
//                rings the doorbell over the control connection.
//
// Everything read from the host is untrusted: a producer index more than
// a ring ahead of what was taken breaks the channel (corrupt()); an
// inbox index behind what was taken (the ring was read first) says
// nothing new; each
// descriptor is validated by the engine as from any host. A transfer that
// fails (the host or its port is gone) breaks it too; the daemon then
// drops the client.
//
// Threads: the daemon's. Memory: the engine's copy is the caller's.
#pragma once

#include <cstdint>

#include "offload/channel.h"
#include "offload/descriptor.h"
#include "platform/mem/remote_mem.h"

namespace ucc::fw {

class RemoteChannel final : public off::CompletionSink {
 public:
  static constexpr uint32_t kBatch = 16;    // descriptors read per pass
  static constexpr uint32_t kPending = 64;  // completions queued per flush

  // Mirrors the host's channel at `addr` (rkey) with geometry (cap, ncomp)
  // into `local`, laid out with the same geometry.
  // Through `mem` (whose mem is connected), which counts the transfers.
  // `inbox`: the engine's inbox the host pushes to (InboxLayout for
  // `cap`), or nullptr: the engine reads the host's ring.
  void init(const plat::RemoteMemSlot* mem, uint64_t addr, uint32_t rkey,
            uint32_t cap, uint32_t ncomp, off::Channel* local,
            const void* inbox = nullptr);

  // New descriptors from the host; how many (0: none, or broken).
  uint32_t pull();
  // Completion words not yet carried to the host.
  void completed(uint32_t slot) override;
  // Carries them (a failure breaks the channel: broken()).
  void flush();
  void set_idle(bool idle);
  bool broken() const { return broken_; }
  // Descriptors taken from the inbox so far.
  uint64_t pushed() const { return pushed_; }
  bool corrupt() const { return corrupt_; }

 private:
  // One transfer at `off` in the host's channel (false: broken now).
  bool move(plat::MemStep step, bool to_host, uint64_t off, void* local,
            uint64_t len);
  // How many of `ahead` new descriptors to take now (0: none, or corrupt).
  uint32_t how_many(uint32_t ahead);
  // The host's ring by RDMA READ; the inbox.
  uint32_t pull_ring();
  uint32_t pull_inbox();
  // Hands batch_[0, n) to the engine's ring.
  uint32_t take(uint32_t n);

  const plat::RemoteMemSlot* mem_ = nullptr;
  uint64_t addr_ = 0;
  uint32_t rkey_ = 0;
  off::ChannelLayout lay_{};
  uint32_t mask_ = 0;
  uint32_t ncomp_ = 0;
  uint32_t taken_ = 0;  // descriptors copied from the host's ring
  uint32_t told_ = 0;   // the tail the host was last told
  void tell_tail();
  off::Channel* local_ = nullptr;
  const char* inbox_ = nullptr;
  bool look_ring_ = false;  // pushed: read the host's ring once (a nap)
  uint64_t pushed_ = 0;
  uint32_t pending_[kPending] = {};
  uint32_t npending_ = 0;
  bool broken_ = false;
  bool corrupt_ = false;
  off::CollDesc batch_[kBatch];
};

}  // namespace ucc::fw

// Host memory an engine reaches through a remote-memory transport (verbs
// RDMA to the host's registered memory: platform/verbs/verbs_channel.h),
// by address and the remote key of its registration, instead of
// cross-memory attach. MemAccess (mem_access.h) checks every access
// against the registrations first, and takes the key from there.
#pragma once

#include <cstdint>

namespace ucc::plat {

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
};

// Where a client's RemoteMem will be once it has connected (the engine's
// MemAccess is made before): nullptr until then, and cross-memory attach
// is used.
struct RemoteMemSlot {
  RemoteMem* mem = nullptr;
};

}  // namespace ucc::plat

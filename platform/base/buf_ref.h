// A reference to a user buffer, as descriptors carry it (offload/
// descriptor.h) and as the memory layer checks and reaches it
// (platform/mem/mem_access.h): both see it here, below them.
#pragma once

#include <cstdint>

namespace ucc::base {

// [addr, addr + bytes) in the posting process's address space, inside the
// registration named by `key` (0 = the implicit whole-process
// registration of inline mode). It crosses the host/device boundary:
// plain, fixed-size, pointer-free.
struct BufRef {
  uint64_t addr;
  uint64_t bytes;
  uint32_t key;
  uint8_t mem_type;  // 0 = host memory; others are rejected for now
  uint8_t pad0[3];
};
static_assert(sizeof(BufRef) == 24);

}  // namespace ucc::base

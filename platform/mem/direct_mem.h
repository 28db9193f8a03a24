// Memory access to user buffers for an engine that runs inside the user's
// process (inline mode): a buffer reference maps to a plain pointer.
// Another adapter (cross-process copies, DMA) replaces this one where the
// engine runs elsewhere; algorithms never dereference host addresses
// themselves.
#pragma once

#include <cstdint>

#include "offload/descriptor.h"

namespace ucc::plat {

class DirectMem {
 public:
  // The address of bytes [off, off + len) of `ref`, or nullptr when that
  // range is not inside the reference (or wraps).
  static void* map(const off::BufRef& ref, uint64_t off, uint64_t len) {
    if (off > ref.bytes || len > ref.bytes - off) return nullptr;
    return reinterpret_cast<void*>(static_cast<uintptr_t>(ref.addr + off));
  }
};

}  // namespace ucc::plat

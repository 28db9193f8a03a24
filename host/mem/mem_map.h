// Memory mapped to a context with ucc_mem_map (docs/api.md, "Mapped
// memory"; docs/offload.md, "Explicit registration").
//
// Words:
//   handle    what ucc_mem_map returns (ucc_mem_map_mem_h): the address of
//             one MemHandle in its context's pool. Its first memh_size
//             bytes (MemhExport) describe the mapping in plain data; the
//             rest is private to this process.
//   segment   one [addr, addr + len) of a handle, len > 0; a handle has
//             1..kMemMapSegs of them.
//   pinned    emu: each segment is registered with the daemon when it is
//             mapped, under a key of its own, and stays registered until
//             it is unmapped. A buffer inside a segment is named in its
//             descriptor by that key, so the implicit registration cache
//             (EngineLink::cover) neither registers it again nor can evict
//             it. Inline: keys are 0; a handle only records its segments.
//
// Handles are found without trusting them: ucc_mem_unmap searches the
// pools of the live contexts for the address it is given, and a
// collective's memh must lie in its team's context's pool, so a forged or
// stale pointer is reported (UCC_ERR_INVALID_PARAM) and never
// dereferenced. Freed handles are reused least recently freed first, so
// unmapping one twice is reported until the pool has handed out every
// other free handle in between.
//
// Memory: the pool is taken at context creation (UCC_MEM_MAP_HANDLES);
// map, unmap and collective init allocate nothing.
// Threads: a context's pool is used under the context's lock (in
// UCC_THREAD_MULTIPLE); the list of live contexts that ucc_mem_unmap
// searches has a process-wide lock, always taken before a context's.
#pragma once

#include <ucc/api/ucc.h>

#include <cstdint>
#include <type_traits>

#include "offload/descriptor.h"
#include "platform/base/arena.h"

struct ucc_context;

namespace ucc::host {

inline constexpr uint32_t kMemMapSegs = 16;         // segments per handle
inline constexpr uint32_t kMemhMagic = 0x484d454d;  // "MEMH"
inline constexpr uint16_t kMemhVersion = 1;

struct MemSeg {
  uint64_t addr;
  uint64_t len;
};

// The exported part of a handle (memh_size bytes): what the mapping is, in
// a form another process could read. Nothing imports it yet (see
// ucc_mem_map: IMPORT is not supported).
struct MemhExport {
  uint32_t magic;  // kMemhMagic
  uint16_t version;
  uint16_t nsegs;
  uint32_t mode;  // the ucc_mem_map_mode_t it was mapped with
  int32_t pid;
  uint64_t hostid;
  MemSeg segs[kMemMapSegs];
};
static_assert(sizeof(MemhExport) == 24 + 16 * kMemMapSegs);
static_assert(std::is_trivially_copyable_v<MemhExport>);

struct MemHandle {
  MemhExport pub;  // first: the handle's address is its exported form
  uint32_t keys[kMemMapSegs];  // emu: the daemon's key per segment
  bool live;
  bool context;     // holds the context's mem_params: not the user's to unmap
  MemHandle* next;  // live list, or the free FIFO
  MemHandle* prev;  // live list only
};

// A context's handles: a fixed pool, a FIFO of free ones, a list of live
// ones (searched for buffers mapped without a handle given).
class MemMaps {
 public:
  // Takes memory for n handles (n may be 0). kNoMemory.
  off::Status init(uint32_t n);
  void fini();

  // A free handle, off the free FIFO, not yet live; nullptr when all n
  // are in use.
  MemHandle* take();
  // Makes a taken handle live.
  void publish(MemHandle* m);
  // Ends a live handle (or returns an unpublished one): back to the FIFO.
  void give(MemHandle* m);

  // The pool entry at `h` (live or free), or nullptr when `h` is not the
  // address of one. Reads nothing at `h` unless it is inside the pool.
  MemHandle* slot(const void* h) const;
  // The live handle at `h`, or nullptr.
  MemHandle* live(const void* h) const {
    MemHandle* m = slot(h);
    return m != nullptr && m->live ? m : nullptr;
  }
  // A live handle with a segment holding [addr, addr + bytes), with the
  // segment's key; nullptr when none.
  const MemHandle* find(uint64_t addr, uint64_t bytes, uint32_t* key) const;

  MemHandle* first_live() const { return live_; }
  uint32_t nlive() const { return nlive_; }

 private:
  base::Array<MemHandle> pool_;
  MemHandle* free_head_ = nullptr;
  MemHandle* free_tail_ = nullptr;
  MemHandle* live_ = nullptr;
  uint32_t nlive_ = 0;
};

// Whether [addr, addr + bytes) lies inside one segment of `m`; its key.
bool memh_holds(const MemHandle& m, uint64_t addr, uint64_t bytes,
                uint32_t* key);

// Context creation and destruction (mem_map.cc): the pool, and the
// context's place in the list ucc_mem_unmap searches. memmaps_fini
// releases handles still mapped (one warning line for the user's).
//
// `attach` (may be null): the segments of ucc_context_params_t.mem_params
// (UCC_CONTEXT_PARAM_FIELD_MEM_PARAMS, at most kContextSegs), mapped for
// the context's life in handles of their own, beside the n the user gets:
// buffers inside them are mapped memory (MEM_MAPPED_BUFFERS) as if
// ucc_mem_map had mapped them. Empty segments are accepted and map
// nothing; anything ucc_mem_map refuses is refused here.
inline constexpr uint32_t kContextSegs = 32;  // UCC's limit too
// Handles the context's segments take (0 when attach is null).
uint32_t context_handles(const ucc_mem_map_params_t* attach);
ucc_status_t memmaps_init(ucc_context* ctx, uint32_t n,
                          const ucc_mem_map_params_t* attach);
void memmaps_fini(ucc_context* ctx);

// Bytes from `addr` to the end of the mapped segment holding it (the
// furthest end where several do), searched in `only` where it is not
// null, else in every live handle of the context; 0 when no segment
// holds addr. Under the context's lock.
uint64_t mapped_room(const ucc_context* ctx, uint64_t addr,
                     const MemHandle* only);

// At ucc_collective_init, under the context's lock, after the descriptor
// is built: checks src_memh / dst_memh and MEM_MAPPED_BUFFERS against the
// buffers `d` names, and in emu gives each buffer inside a mapped segment
// that segment's key. One log line and UCC_ERR_INVALID_PARAM (or
// UCC_ERR_NOT_SUPPORTED for global handles) on bad input.
ucc_status_t memh_resolve(ucc_context* ctx, const ucc_coll_args_t& a,
                          off::CollDesc* d);

}  // namespace ucc::host

// The direct path's state and its parts shared by gpu_direct.cc (the
// protocol), gpu_ipc.cc (IPC caches, flag pages, tokens) and gpu_work.cc
// (the worker's kernels and copies). Internal to host/exec.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "device/gpu/gpu_kernels.h"
#include "host/exec/gpu_direct.h"
#include "platform/cuda/cuda_driver.h"

namespace ucc::host {
namespace cu = plat::cuda;
namespace gd {

enum Phase : uint8_t { kIdle, kExchange, kInput, kWait, kRun };

constexpr uint32_t kTokenMagic = 0x55474431;  // "UGD1"
constexpr size_t kTokenBytes = 256;
// Token::flags: this rank's collective is in place (a rooted
// collective's root: only it knows).
constexpr uint32_t kTokInPlace = 1;
// Token::flags: this rank could not describe its buffers (logged): every
// rank ends the collective with an error after the exchange (a rank that
// sent no token would leave the others waiting in it).
constexpr uint32_t kTokBroken = 2;
constexpr size_t kSlotBytes = 64;  // a request's words in a flag page
constexpr uint32_t kNoRef = 0xFFFF;
// Polls between two liveness checks of the peer a rank waits for.
constexpr uint64_t kLivenessEvery = 4096;

// What a rank tells the others about one collective (checked on arrival:
// a peer's token is untrusted input).
struct Token {
  uint32_t magic;
  uint32_t pid;
  uint64_t seq;
  int32_t flag_fd;   // the flag page, open in `pid`
  uint32_t flag_bytes;
  uint64_t flag_ino;
  uint64_t flag_dev;
  uint32_t slot;  // this rank's request slot: its words in the flag page
  uint32_t flags;                        // kTokInPlace
  uint64_t src_base, src_off, src_size;  // allocation, in `pid`'s space
  uint64_t dst_base, dst_off, dst_size;
  cu::IpcHandle src_h;
  cu::IpcHandle dst_h;
  // The flag page's words (kSlotBytes a slot), which the worker registers
  // with the GPU; the block tables (VTable) follow them.
  uint32_t flag_words;
  uint32_t pad;
  uint64_t src_len, dst_len;  // bytes of this rank's sides
  uint8_t reserved[8];
};
// The tokens lie in arrays, each kTokenBytes long.
static_assert(sizeof(Token) == kTokenBytes);

// Words of one request slot in a flag page. Both only grow (seq does),
// so a slot reused by a later collective never reads as an earlier one's.
struct Slot {
  std::atomic<uint64_t> ready;  // seq whose input is ready (owner's host)
  std::atomic<uint32_t> done;   // low bits of seq finished (worker's GPU)
  uint32_t pad;
  // seq the worker gave up on after the exchange (worker's host): its
  // peers end that collective with an error instead of waiting for done.
  std::atomic<uint64_t> failed;
};
static_assert(sizeof(Slot) <= kSlotBytes);
constexpr size_t kDoneAt = 8;  // Slot::done's offset, for the GPU's write

// A v-collective's side, block by block (v-collectives only): each block
// lies in one allocation of the owner's, which may differ from block to
// block (a NULL buffer with absolute addresses as displacements: a list
// of tensors). The owner writes it into its flag page's table of the
// request slot before its token goes out; the worker copies it out after
// the exchange and checks every entry (untrusted, like the token).
struct VAlloc {
  cu::IpcHandle h;
  uint64_t base, size;  // in the owner's space
};
struct VBlock {
  uint64_t off;    // inside alloc[this.alloc]
  uint64_t len;    // bytes (0: an empty block, no allocation)
  uint32_t alloc;  // index into VSide::alloc
  uint32_t pad;
};
struct VSide {
  uint32_t nalloc;
  uint32_t nblk;  // the team's size, or 0: not a v side of this rank's
  VAlloc alloc[gpu::kMaxPeers];
  VBlock blk[gpu::kMaxPeers];
};
struct VTable {
  VSide side[2];  // src, dst
};
// A slot's table, kVTableBytes apart after the words.
constexpr size_t kVTableBytes = (sizeof(VTable) + 63) / 64 * 64;

// This process's allocations whose IPC handles it has made, by the
// driver's buffer id (never reused, unlike an address).
struct Export {
  uint64_t id;  // 0: free
  uint64_t base, size;
  cu::IpcHandle h;
  uint64_t used;  // LRU clock
};

// Peers' allocations opened here, by handle.
struct Import {
  bool live;
  uint32_t refs;  // collectives in flight that use it
  uint64_t used;
  cu::IpcHandle h;
  cu::CuDevPtr base;
  uint64_t size;
  uint32_t pid;                   // the exporter
  uint64_t peer_base, peer_size;  // the allocation, in the exporter's space
};

constexpr cu::CuResult kAlreadyMapped = 208;  // CUDA_ERROR_ALREADY_MAPPED

// Counts for log lines and debugging.
struct Stats {
  uint64_t opens;        // peer allocations opened in all
  uint32_t open_now;     // open now
  uint64_t collectives;  // run on the direct path
  uint64_t batches;      // batches of moves that left more to do
};

// What the worker queued of a collective: all of it; one batch, more to
// come once its event has completed (gpu_work_v.cc); nothing (failed,
// logged).
enum class Queued : uint8_t { kDone, kMore, kFailed };

}  // namespace gd

struct GpuDirectCtx {
  bool tried, ok;  // kernels loaded (first direct collective)
  plat::cuda::CuCtx cuctx;
  plat::cuda::CuModule mod;
  cu::CuFunction reduce_fn[static_cast<int>(off::DType::kCount)];
  cu::CuFunction loc_fn[static_cast<int>(off::DType::kCount)];  // pairs
  cu::CuFunction flag_fn;
  cu::CuFunction copy_fn;
  cu::CuFunction swap_fn;
  cu::CuDevPtr counter;  // the reduction kernels' count of finished blocks
  uint32_t cap;
  uint32_t held;  // entries of imp that collectives hold (refs > 0)
  uint64_t clock;
  gd::Export* exp;
  gd::Import* imp;
  gd::Stats stats;
};

// A peer's flag page as the worker sees it.
struct PeerPage {
  uint32_t pid;
  int32_t fd;
  uint64_t ino, dev;
  uint8_t* map;  // nullptr until mapped
  uint32_t bytes;
  uint32_t words;     // bytes of the page's words (registered for the GPU)
  cu::CuDevPtr dptr;  // the mapping as the GPU addresses it (0: not
                      // registered: a peer's view of the worker's page)
};

struct GpuDirectTeam {
  uint64_t seq;
  int fd;
  uint8_t* page;  // this rank's flag page
  uint32_t page_bytes;
  uint32_t words_bytes;  // its words; the block tables follow
  uint64_t ino, dev;
  uint8_t* tokens;  // nreqs * (size + 1) tokens, pinned by nothing
  size_t tokens_bytes;
  PeerPage* peers;  // size entries; the worker's
  // The worker's scratch: 2 * size * size block lengths and 2 * size *
  // size addresses of a batch's moves (gpu_work_v.cc; reduce_scatterv:
  // 2 * size addresses), and one table copied out of a page.
  uint64_t* vblk;
  gd::VSide* vside;
};

namespace gd {

inline const cu::Driver& drv() { return *cu::driver(); }

inline Slot* slot_at(uint8_t* page, uint32_t slot) {
  return reinterpret_cast<Slot*>(page + size_t{slot} * kSlotBytes);
}

// Where slot `slot`'s block table lies in a page whose words take
// `words` bytes, if the page's `bytes` hold it: nullptr otherwise.
inline uint8_t* vtable_at(uint8_t* page, uint32_t bytes, uint32_t words,
                          uint32_t slot) {
  const uint64_t at = uint64_t{words} + uint64_t{slot} * kVTableBytes;
  if (page == nullptr || words > bytes || at + kVTableBytes > bytes)
    return nullptr;
  return page + at;
}

// Token i of r's exchange (i = team size: this rank's own, sent).
Token* token_at(GpuDirectTeam& t, const Request* r, uint32_t i);

// gpu_ipc.cc
bool export_of(GpuDirectCtx& g, uint64_t p, Export** out);
void close_import(GpuDirectCtx& g, Import& e);
void release_refs(GpuDirectCtx* g, GpuDirectReq& q);
bool map_peer_page(PeerPage& pp, const Token& t, bool for_gpu);
bool fill_token(GpuDirectCtx& g, GpuDirectTeam& t, Request* r, Token* k);
bool resolve(GpuDirectCtx& g, GpuDirectReq& q, const Token& k, bool dst,
             uint64_t bytes, uint64_t* out);
// The same for [off, off + bytes) of an allocation a block table names.
bool resolve_in(GpuDirectCtx& g, GpuDirectReq& q, uint32_t pid, const VAlloc& a,
                uint64_t off, uint64_t bytes, uint64_t* out);
// Whether the direct path's collective is a v-collective.
bool is_v(off::CollType c);

// gpu_work.cc: the worker queues the collective's data movement on its
// stream (or its next batch: r->gd.next), then, after the last, the
// peers' flags, and records its `done`.
Queued queue_work(ucc_context* ctx, GpuDirectCtx& g, Request* r,
                  const Token* tok, uint32_t n);
// Launch geometry for `elems` 4-byte elements; the peers' done words for
// the collective, as the GPU addresses them.
unsigned blocks_for(uint64_t elems);
void peer_flags(const Request* r, const Token* tok, uint32_t n,
                gpu::FlagArgs* f);
// Ranks p and q disagree on block j's length (logged): false.
bool disagree(uint32_t p, uint32_t q, uint32_t j);

// gpu_work_v.cc: whether the collective is a list of block moves (the
// v-collectives but reduce_scatterv, and in-place alltoall(v)), and its
// next batch of them, from r->gd.next (*flagged: the batch raised the
// peers' flags, after the last move).
bool v_path(const Request* r);
Queued queue_moves(GpuDirectCtx& g, Request* r, const Token* tok,
                   cu::CuStream s, cu::CuResult* cr, bool* flagged);

}  // namespace gd
}  // namespace ucc::host

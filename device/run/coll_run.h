// What an algorithm sees of the collective it runs: the validated
// descriptor, its place in the team, the fabric towards its peers, and the
// data operations on user buffers.
//
// Data operations go through the memory-access adapter (plat::MemAccess),
// never through raw host addresses, and every one of them is
// bounds-checked against the descriptor's buffer references (and, when the
// engine runs outside the host process, against the host's registrations)
// before any byte moves: a failing check returns kInvalidParam and the
// collective ends with that status.
//
// Each operation takes the adapter's direct pointer when it has one
// (inline mode: the same code as plain memcpy/reduce on user memory).
// Otherwise (cross-process) it copies through engine memory: user bytes
// are read into the message slot or the collective's bounce buffer,
// combined there, and written back, in pieces of at most `slot` bytes
// (whole elements when reducing). Those paths live in coll_run.cc.
//
// Messaging goes through the team's Port with the collective's key, so a
// collective only ever sees its own messages; one whose length is wrong
// ends the collective with kNoMessage instead of being consumed as data.
// Peers are positions in the collective's set of ranks (the whole team, or
// an active set), which the Port's team ranks are mapped from.
#pragma once

#include <cstdint>
#include <cstring>

#include "device/reduce/reduce.h"
#include "device/run/port.h"
#include "offload/descriptor.h"
#include "offload/engine_config.h"
#include "platform/mem/mem_access.h"

namespace ucc::dev {

using off::Status;

enum class Buf : uint8_t { kSrc, kDst };

// An engine outside the host process reaches user memory by a system call
// per access (cross-memory attach, or RDMA). A small allreduce reads and
// writes its dst several times (copy in, each round's send and combine),
// so its dst lives in engine memory for the run instead, the cache: read
// in once where it holds the input (in place), written out once when the
// algorithm ends (Engine::start, alg_ended). Up to this many bytes. An
// inline descriptor (kDescInline) fills it from the descriptor and leaves
// it for the channel's result area instead: no access to user memory.
inline constexpr uint32_t kCacheBytes = 16384;
// Scratch of each running collective of a team of 3 ranks or more that
// is not wide (CollRun::scratch; wide teams have EngineConfig::
// wide_scratch): the node-aware reduce_scatter's small vectors (hier.cc).
inline constexpr uint32_t kSmallScratch = 32768;

// memcpy for the few bytes of a small collective without a library call:
// two possibly overlapping word moves cover 1 to 16 bytes (both loaded
// before either is stored, so overlapping ranges copy as memmove would);
// larger copies go to memcpy (no overlap) or memmove.
inline void copy_bytes(void* dst, const void* src, uint64_t n, bool overlap) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (n >= 8 && n <= 16) {
    uint64_t a, b;
    __builtin_memcpy(&a, s, 8);
    __builtin_memcpy(&b, s + n - 8, 8);
    __builtin_memcpy(d, &a, 8);
    __builtin_memcpy(d + n - 8, &b, 8);
  } else if (n >= 4 && n < 8) {
    uint32_t a, b;
    __builtin_memcpy(&a, s, 4);
    __builtin_memcpy(&b, s + n - 4, 4);
    __builtin_memcpy(d, &a, 4);
    __builtin_memcpy(d + n - 4, &b, 4);
  } else if (n > 16) {
    if (overlap)
      memmove(d, s, n);
    else
      memcpy(d, s, n);
  } else {
    unsigned char t[4];
    for (uint64_t i = 0; i < n; ++i) t[i] = s[i];
    for (uint64_t i = 0; i < n; ++i) d[i] = t[i];
  }
}

struct CollRun {
  const off::CollDesc* d = nullptr;
  Port* port = nullptr;
  uint32_t rank = 0;       // position in the set
  uint32_t size = 0;       // ranks in the set
  MsgKey key{};            // stamps every message of this collective
  uint32_t id = 0;         // the collective's live id in the port
  uint32_t set_start = 0;  // set position i is team rank start + i * stride
  int32_t set_stride = 1;
  // Or, where not null (a phase of a node-aware algorithm, device/coll/
  // hier.cc): set position i is team rank set_map[(i + map_rot) % size].
  const uint32_t* set_map = nullptr;
  uint32_t map_rot = 0;
  uint32_t slot = 0;               // fabric payload bytes per message
  uint32_t esize = 0;              // element size (off::elem_size)
  off::ROp rop = off::ROp::kNone;  // combining op (avg combines as sum)
  bool avg = false;
  off::UserReduce user{};  // reductions of DType::kGeneric (EngineEnv)
  // Block tables (blocks.h), in elements: where a rank's part lies in this
  // rank's src and dst. Indexed by tab(position).
  const uint64_t* src_cnt = nullptr;
  const uint64_t* src_off = nullptr;
  const uint64_t* dst_cnt = nullptr;
  const uint64_t* dst_off = nullptr;
  // How user memory is reached (EngineConfig::mem), and `slot` bytes of
  // engine memory for the copies the adapter cannot map (nullptr where
  // every access maps: MemAccess::needs_bounce).
  const plat::MemAccess* mem = &plat::kDirectAccess;
  void* bounce = nullptr;
  // Where not null, the first cache_bytes of this run's dst (the vector)
  // in engine memory: at(Buf::kDst) maps there (kCacheBytes above), and
  // so does at(Buf::kSrc) where src names the same bytes (in place).
  void* cache = nullptr;
  uint32_t cache_bytes = 0;
  bool cache_src = false;
  // Engine memory of this run for partial results (EngineConfig::
  // wide_scratch bytes on wide teams, else none): the algorithms that
  // need it (reduce_scatter_halving.cc) run only where it holds them.
  void* scratch = nullptr;
  uint32_t scratch_bytes = 0;
  void drop_cache() {
    cache = nullptr;
    cache_bytes = 0;
    cache_src = false;
  }

  const off::BufRef& ref(Buf b) const {
    return b == Buf::kSrc ? d->src : d->dst;
  }
  // Direct pointer to bytes [off, off+len) of a user buffer, or nullptr
  // (out of bounds, or an adapter that cannot map).
  void* at(Buf b, uint64_t off, uint64_t len) const {
    if (cache != nullptr && (b == Buf::kDst || cache_src))
      return off <= cache_bytes && len <= cache_bytes - off
                 ? static_cast<char*>(cache) + off
                 : nullptr;
    return mem->map(ref(b), off, len);
  }
  // Whether two byte ranges of user buffers share any byte (empty ranges
  // share none).
  bool overlap(Buf a, uint64_t aoff, uint64_t alen, Buf b, uint64_t boff,
               uint64_t blen) const {
    if (alen == 0 || blen == 0) return false;
    uint64_t x = ref(a).addr + aoff, y = ref(b).addr + boff;
    return x < y + blen && y < x + alen;
  }

  // --- data operations -----------------------------------------------------
  // Every operation on zero bytes succeeds without mapping anything (a
  // zero-length buffer may well be NULL).
  //
  // engine memory <- user buffer
  Status copy_in(void* eng, Buf b, uint64_t off, uint64_t bytes) const {
    if (bytes == 0) return Status::kOk;
    const void* p = at(b, off, bytes);
    if (p == nullptr)
      return mem->read(ref(b), off, eng, bytes) ? Status::kOk
                                                : Status::kInvalidParam;
    copy_bytes(eng, p, bytes, false);
    return Status::kOk;
  }
  // user buffer <- engine memory
  Status copy_out(Buf b, uint64_t off, const void* eng, uint64_t bytes) const {
    if (bytes == 0) return Status::kOk;
    void* p = at(b, off, bytes);
    if (p == nullptr)
      return mem->write(ref(b), off, eng, bytes) ? Status::kOk
                                                 : Status::kInvalidParam;
    copy_bytes(p, eng, bytes, false);
    return Status::kOk;
  }
  // user buffer <- user buffer (no-op when both name the same bytes;
  // overlapping ranges are copied as memmove would)
  Status copy_uu(Buf db, uint64_t doff, Buf sb, uint64_t soff,
                 uint64_t bytes) const {
    if (bytes == 0) return Status::kOk;
    void* dp = at(db, doff, bytes);
    const void* sp = at(sb, soff, bytes);
    if (dp != nullptr && sp == nullptr) {
      // Into the cache, from the user's memory: in one read, unless both
      // name the same user bytes (in place), whose value is the cache's.
      if (ref(db).addr + doff == ref(sb).addr + soff)
        return mem->check(ref(sb), soff, bytes) ? Status::kOk
                                                : Status::kInvalidParam;
      return copy_in(dp, sb, soff, bytes);
    }
    if (dp == nullptr || sp == nullptr)
      return copy_uu_staged(db, doff, sb, soff, bytes);
    if (dp != sp) copy_bytes(dp, sp, bytes, true);
    return Status::kOk;
  }
  // engine dst <- engine a (op) user b; count elements
  Status reduce_in(void* eng_dst, const void* eng_a, Buf b, uint64_t off,
                   uint64_t count) const {
    if (count == 0) return Status::kOk;
    const void* p = at(b, off, count * esize);
    if (p == nullptr) return reduce_in_staged(eng_dst, eng_a, b, off, count);
    return combine(eng_dst, eng_a, p, count);
  }
  // user dst <- engine a (op) user b (b may be the same bytes as dst)
  Status reduce_out(Buf db, uint64_t doff, const void* eng_a, Buf b,
                    uint64_t boff, uint64_t count) const {
    if (count == 0) return Status::kOk;
    void* dp = at(db, doff, count * esize);
    const void* bp = at(b, boff, count * esize);
    // Into the cache: b comes in through the bounce buffer.
    if (dp != nullptr && bp == nullptr)
      return reduce_in(dp, eng_a, b, boff, count);
    if (dp == nullptr || bp == nullptr)
      return reduce_out_staged(db, doff, eng_a, b, boff, count);
    return combine(dp, eng_a, bp, count);
  }
  // dst <- a (op) b on memory already mapped (engine memory or pointers
  // from at()); dst may be a or b exactly. Every reduction an algorithm
  // does goes through here, so generic types reach the user's callback.
  Status combine(void* dst, const void* a, const void* b,
                 uint64_t count) const {
    if (count == 0) return Status::kOk;
    if (d->dtype == off::DType::kGeneric)
      return user.fn != nullptr
                 ? user.fn(user.ctx, d->user_dt, dst, a, b, count)
                 : Status::kNotSupported;
    reduce(rop, d->dtype, dst, a, b, count);
    return Status::kOk;
  }
  // Final AVG scaling of count elements of a user buffer (no-op otherwise).
  Status finish_avg(Buf b, uint64_t off, uint64_t count) const {
    if (!avg || count == 0) return Status::kOk;
    void* p = at(b, off, count * esize);
    if (p == nullptr) return finish_avg_staged(b, off, count);
    scale_div(d->dtype, p, count, size);
    return Status::kOk;
  }
  // Same for engine memory.
  void finish_avg_eng(void* eng, uint64_t count) const {
    if (avg) scale_div(d->dtype, eng, count, size);
  }

  // --- messaging -------------------------------------------------------------
  uint32_t team_rank(uint32_t peer) const {
    if (set_map != nullptr) {
      const uint32_t i = peer + map_rot;
      return set_map[i >= size ? i - size : i];
    }
    return static_cast<uint32_t>(int64_t{set_start} +
                                 int64_t{peer} * int64_t{set_stride});
  }
  // The block-table index of set position pos: the position itself, or
  // in a phase over a mapped set (whose tables are the team's), the team
  // rank it maps to.
  uint32_t tab(uint32_t pos) const {
    return set_map != nullptr ? team_rank(pos) : pos;
  }
  void* reserve(uint32_t peer) const {
    return port->reserve(team_rank(peer), id);
  }
  void commit(uint32_t peer, uint32_t len) const {
    port->commit(team_rank(peer), len, key, MsgKind::kData);
  }
  // The next message from `peer` or nullptr; *err is set (and nullptr
  // returned) when it is not `expect` bytes long.
  const void* peek(uint32_t peer, uint32_t expect, Status* err) const {
    uint32_t len = 0;
    const void* p = port->find(team_rank(peer), key, MsgKind::kData, &len);
    if (p == nullptr) return nullptr;
    if (len != expect) {
      *err = Status::kNoMessage;
      return nullptr;
    }
    return p;
  }
  void release(uint32_t peer) const {
    port->release(team_rank(peer), key, MsgKind::kData);
  }

  // --- one-sided (device/coll/streams.h) ----------------------------------
  // The smallest stream towards `peer` that goes one-sided (0: none): the
  // same at both ends of a link. Never with the cache (engine memory).
  uint64_t rma_min(uint32_t peer) const {
    return cache == nullptr ? port->links().rma_min(team_rank(peer)) : 0;
  }
  // Registers bytes [off, off+len) of a user buffer (bounds-checked; it
  // must map directly) for this collective; given back by rma_dereg or
  // when the collective ends.
  Status rma_reg(Buf b, uint64_t off, uint64_t len, uint32_t access,
                 plat::RmaReg* reg) const {
    void* p = at(b, off, len);
    if (p == nullptr) return Status::kInvalidParam;
    return port->mem_reg(id, p, len, access, reg);
  }
  void rma_dereg(const plat::RmaReg& reg) const {
    port->mem_dereg(id, reg.handle);
  }
  Status get(uint32_t peer, void* local, const plat::RmaReg& reg,
             uint64_t raddr, uint32_t rkey, uint32_t len,
             uint64_t* ticket) const {
    return port->links().get(team_rank(peer), local, reg, raddr, rkey, len,
                             ticket);
  }
  uint64_t rma_done(uint32_t peer) const {
    return port->links().rma_done(team_rank(peer));
  }
  // The offer's answer (MsgKind::kDone): `len` bytes from `body`.
  bool send_done(uint32_t peer, const void* body, uint32_t len) const {
    void* m = reserve(peer);
    if (m == nullptr) return false;
    if (len != 0) memcpy(m, body, len);
    port->commit(team_rank(peer), len, key, MsgKind::kDone);
    return true;
  }
  // The peer's answer, or nullptr; *len its length.
  const void* peek_done(uint32_t peer, uint32_t* len) const {
    return port->find(team_rank(peer), key, MsgKind::kDone, len);
  }
  void release_done(uint32_t peer) const {
    port->release(team_rank(peer), key, MsgKind::kDone);
  }

  // --- single copy -----------------------------------------------------------
  // bytes [off, off+len) of a user buffer <- `len` bytes at address `remote`
  // in peer's process, with cross-memory attach (platform/mem/cma.h). The
  // local range is bounds-checked like every other operation and must map
  // directly (an inline engine); the remote one is checked by the kernel
  // (memory the peer has not mapped fails with kError).
  Status read_peer(uint32_t peer, uint64_t remote, Buf b, uint64_t off,
                   uint64_t len) const;

 private:
  // The same operations through read/write and the bounce buffer, for
  // adapters that cannot map (coll_run.cc). Each checks every range it
  // will touch before moving a byte.
  Status copy_uu_staged(Buf db, uint64_t doff, Buf sb, uint64_t soff,
                        uint64_t bytes) const;
  Status reduce_in_staged(void* eng_dst, const void* eng_a, Buf b, uint64_t off,
                          uint64_t count) const;
  Status reduce_out_staged(Buf db, uint64_t doff, const void* eng_a, Buf b,
                           uint64_t boff, uint64_t count) const;
  Status finish_avg_staged(Buf b, uint64_t off, uint64_t count) const;
  // Elements per bounce-sized piece; 0 when there is no bounce buffer or
  // an element does not fit.
  uint64_t piece_elems() const;
};

}  // namespace ucc::dev

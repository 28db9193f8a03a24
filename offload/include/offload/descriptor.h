// The collective descriptor: what the host tells the engine about one
// collective. It crosses the host/device boundary, so it is a fixed-size,
// versioned, pointer-free POD: buffers are host virtual addresses plus a
// registration key, the completion slot is an index. The engine validates
// every field before it acts on one (see device/engine/validate.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "offload/types.h"
#include "platform/base/buf_ref.h"

namespace ucc::off {

inline constexpr uint16_t kDescVersion = 3;
inline constexpr uint32_t kDescMagic = 0x55434344u;  // "UCCD"

// A reference to a user buffer (platform/base/buf_ref.h): address,
// length, registration key, memory type.
using base::BufRef;

// Descriptor flags.
enum DescFlags : uint16_t {
  kDescInPlace = 1u << 0,    // see each collective's convention below
  kDescCount64 = 1u << 1,    // v-collective count arrays hold uint64_t
  kDescDispl64 = 1u << 2,    // v-collective displacement arrays hold uint64_t
  kDescTagged = 1u << 3,     // matched by `tag`, not by the team's post order
  kDescErrGlobal = 1u << 4,  // all members agree on the final status
  kDescOneSided = 1u << 5,   // alltoallv: UCC's one-sided convention (below)
  kDescInline = 1u << 6,     // allreduce: the input travels in the descriptor
};

// Inline data (kDescInline): an allreduce whose vector is at most
// kInlineBytes carries its input in `inline_data` (the bytes src names,
// dst's in place), copied there at each post. The engine may then leave
// the user's memory alone: it takes the input from the descriptor and puts
// the result in the channel's result area of the completion slot
// (channel.h), saying so in the completion word (completion_inline); the
// host copies it to dst when it reaps the post. src and dst are still
// valid references the engine may use instead (an algorithm that needs the
// user's buffers, a vector that overlaps itself), and then the word says
// nothing. The engine trusts nothing here: a descriptor whose vector is
// longer than kInlineBytes, or whose slot has no result area, is invalid.
inline constexpr uint32_t kInlineBytes = 32;

// Element-count convention (the host normalises ucc.h's per-collective
// conventions into this one):
//   barrier                 count = 0
//   bcast reduce allreduce  count = elements of the whole vector
//   allgather               count = elements each rank contributes;
//                           dst holds size * count
//   alltoall                count = elements per destination block;
//                           src and dst hold size * count
//   reduce_scatter          count = elements of each rank's result block;
//                           src (or dst when in place) holds size * count
//   gather / scatter        count = elements per rank's block; the root's
//                           dst (gather) / src (scatter) holds size * count
//   fanin / fanout          count = 0; root as for gather / scatter
//   gatherv scatterv        count = this rank's elements; the root's blocks
//   allgatherv alltoallv    are described by team-size arrays of counts and
//   reduce_scatterv         displacements (in elements) at host addresses
//                           {src,dst}_{counts,displs}: 32-bit entries unless
//                           kDescCount64 / kDescDispl64; a displacement
//                           array of 0 means blocks packed in rank order.
//                           reduce_scatterv: count = the whole vector, the
//                           blocks are dst_counts.
// In place (kDescInPlace), the input is read from dst: at this rank's block
// for allgather(v) and at the root for gather(v); scatter(v) then leaves
// the root's block where it is.
//
// One-sided alltoallv (kDescOneSided, UCC's convention for buffers in
// mapped memory): dst_displs[p] is where this rank's block goes in rank
// p's dst (it puts), not where p's block lands in ours; dst_counts is not
// used for placement. dst is the room the peers may write: from the
// user's dst to the end of the mapped segment holding it. Each block
// travels with its place, and the receiver checks it against its own dst
// (device/coll/pairwise.cc). Runs by the onesided algorithm only.
struct alignas(64) CollDesc {
  uint32_t magic;    // kDescMagic
  uint16_t version;  // kDescVersion
  uint16_t flags;    // DescFlags
  CollType coll;
  DType dtype;
  ROp op;
  uint8_t alg;         // algorithm id from the collective's table; 0 = auto
  uint32_t team;       // engine-side team index
  uint32_t comp_slot;  // completion slot index in the channel
  uint32_t gen;        // post generation, echoed in the completion word
  uint32_t root;       // rank (set position) of the root of rooted ones
  uint32_t pad0;
  uint64_t count;  // see the convention above
  BufRef src;
  BufRef dst;
  uint64_t src_counts;  // v-collectives: arrays of team size (see above)
  uint64_t src_displs;
  uint64_t dst_counts;
  uint64_t dst_displs;
  // 0, or nanoseconds after the engine takes the descriptor at which the
  // collective ends with kTimedOut.
  uint64_t timeout_ns;
  // Active set: set_size > 0 restricts the collective to the team ranks
  // set_start + i * set_stride, i < set_size (always kDescTagged); the
  // root, ranks and v-arrays are then counted in set positions.
  // set_size = 0 (start and stride 0 too): the whole team.
  uint32_t set_start;
  int32_t set_stride;
  uint32_t set_size;
  uint16_t tag;  // user tag (kDescTagged)
  uint16_t pad1;
  // DType::kGeneric: the process's generic-datatype index and element size.
  uint32_t user_dt;
  uint32_t user_esize;
  uint8_t inline_data[kInlineBytes];  // kDescInline
  uint8_t pad2[8];
};
static_assert(sizeof(CollDesc) == 192);
static_assert(std::is_trivially_copyable_v<CollDesc>);
static_assert(offsetof(CollDesc, coll) == 8);
static_assert(offsetof(CollDesc, team) == 12);
static_assert(offsetof(CollDesc, count) == 32);
static_assert(offsetof(CollDesc, src) == 40);
static_assert(offsetof(CollDesc, dst) == 64);
static_assert(offsetof(CollDesc, src_counts) == 88);
static_assert(offsetof(CollDesc, timeout_ns) == 120);
static_assert(offsetof(CollDesc, set_start) == 128);
static_assert(offsetof(CollDesc, user_dt) == 144);
static_assert(offsetof(CollDesc, inline_data) == 152);

// Bytes per element of the descriptor's vectors (what `count`, the
// v-arrays and the buffer lengths count): user_esize for kGeneric, a
// {value, index} pair for kMaxloc / kMinloc, dtype_size otherwise; 0 for a
// dtype out of range (the engine's validation rejects those first).
inline uint32_t elem_size(const CollDesc& d) {
  if (d.dtype == DType::kGeneric) return d.user_esize;
  if (static_cast<uint32_t>(d.dtype) >= static_cast<uint32_t>(DType::kCount))
    return 0;
  const auto s = static_cast<uint32_t>(dtype_size(d.dtype));
  return rop_is_loc(d.op) ? 2 * s : s;
}

// A completion word: the engine stores (gen << 32) | flags << 8 |
// uint8(status) with release order once the collective with that
// generation has ended; the host reads it with acquire order and ignores
// words of older generations. Flag kCompInline: the result is in the
// slot's result area (kDescInline), written before the word.
inline constexpr uint32_t kCompInline = 1u << 8;
inline constexpr uint64_t completion_word(uint32_t gen, Status st,
                                          bool result_inline = false) {
  return (static_cast<uint64_t>(gen) << 32) |
         (result_inline ? kCompInline : 0u) |
         static_cast<uint8_t>(static_cast<int8_t>(st));
}
inline constexpr uint32_t completion_gen(uint64_t w) {
  return static_cast<uint32_t>(w >> 32);
}
inline constexpr Status completion_status(uint64_t w) {
  return static_cast<Status>(static_cast<int8_t>(static_cast<uint8_t>(w)));
}
inline constexpr bool completion_inline(uint64_t w) {
  return (w & kCompInline) != 0;
}

}  // namespace ucc::off

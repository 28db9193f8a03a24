// Descriptor validation: everything the engine reads from a descriptor is
// checked here before any algorithm runs, because descriptors cross the
// host/device boundary and may be stale, corrupted or forged.
#include "device/engine/blocks.h"
#include "device/engine/engine.h"
#include "device/engine/team.h"
#include "device/reduce/reduce.h"

namespace ucc::dev {
namespace {

using off::CollType;

// a * b into *out; false on overflow.
bool mul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// A buffer the collective touches (need > 0 bytes): host memory, not
// wrapping, long enough, and reachable through the memory adapter as a
// whole (outside the host process: inside the host's registrations; each
// access is checked again when it happens).
bool fits(const plat::MemAccess& mem, const off::BufRef& r, uint64_t need) {
  if (need == 0) return true;
  if (r.mem_type != 0 || r.addr == 0) return false;
  uint64_t end;
  if (__builtin_add_overflow(r.addr, r.bytes, &end)) return false;
  return r.bytes >= need && mem.check(r, 0, r.bytes);
}

// Bytes a side of a v-collective needs: the furthest block its arrays
// describe. false when the arrays cannot be read or overflow.
bool vector_need(const plat::MemAccess& mem, uint64_t counts, uint64_t displs,
                 const off::CollDesc& d, uint32_t n, uint64_t* need,
                 uint64_t* total = nullptr) {
  uint64_t end = 0, sum = 0;
  if (!vector_extent(mem, counts, displs, d.flags & off::kDescCount64,
                     d.flags & off::kDescDispl64, n, &end, &sum))
    return false;
  if (total != nullptr) *total = sum;
  return mul(end, off::elem_size(d), need);
}

// An active set must name distinct team ranks in range, this rank among
// them; *n and *me are the set's size and this rank's position.
bool set_ok(const off::CollDesc& d, uint32_t team_size, uint32_t team_rank,
            uint32_t* n, uint32_t* me) {
  if (d.set_size == 0) {
    if (d.set_start != 0 || d.set_stride != 0) return false;
    *n = team_size;
    *me = team_rank;
    return true;
  }
  if (d.set_size > team_size || d.set_start >= team_size) return false;
  if (d.set_stride == 0 && d.set_size > 1) return false;
  int64_t last =
      int64_t{d.set_start} + int64_t{d.set_stride} * (int64_t{d.set_size} - 1);
  if (last < 0 || last >= int64_t{team_size}) return false;
  int64_t off = int64_t{team_rank} - int64_t{d.set_start};
  if (d.set_stride == 0) {
    if (off != 0) return false;
    *me = 0;
  } else {
    if (off % d.set_stride != 0) return false;
    int64_t pos = off / d.set_stride;
    if (pos < 0 || pos >= int64_t{d.set_size}) return false;
    *me = static_cast<uint32_t>(pos);
  }
  *n = d.set_size;
  return true;
}

}  // namespace

Status Engine::validate(const off::CollDesc& d) const {
  if (d.magic != off::kDescMagic || d.version != off::kDescVersion)
    return Status::kInvalidParam;
  if (d.comp_slot >= ch_->ncomp()) return Status::kInvalidParam;
  if (d.team >= cfg_.max_teams ||
      teams_[d.team].state != Team::State::kConnected)
    return Status::kInvalidParam;
  if (static_cast<uint32_t>(d.coll) >=
          static_cast<uint32_t>(CollType::kCount) ||
      static_cast<uint32_t>(d.dtype) >=
          static_cast<uint32_t>(off::DType::kCount))
    return Status::kInvalidParam;
  constexpr uint16_t kKnownFlags = off::kDescInPlace | off::kDescCount64 |
                                   off::kDescDispl64 | off::kDescTagged |
                                   off::kDescErrGlobal;
  if ((d.flags & ~kKnownFlags) != 0) return Status::kInvalidParam;
  const Team& t = teams_[d.team];
  uint32_t n = 0, me = 0;
  if (!set_ok(d, t.size, t.rank, &n, &me)) return Status::kInvalidParam;
  // An active set is matched by tag: non-members never count it.
  if (d.set_size != 0 && (d.flags & off::kDescTagged) == 0)
    return Status::kInvalidParam;
  // Element size: generic types carry theirs; the pair ops double the
  // type's (off::elem_size). Every extent below is in these elements.
  const uint64_t esize = off::elem_size(d);
  const bool generic = d.dtype == off::DType::kGeneric;
  if (generic && d.user_esize == 0) return Status::kInvalidParam;
  if (off::coll_reduces(d.coll)) {
    if (generic) {
      // The user's callback defines the op; AVG would need a division the
      // engine cannot do on an opaque type.
      if (static_cast<uint32_t>(d.op) >= static_cast<uint32_t>(off::ROp::kNone))
        return Status::kInvalidParam;
      if (d.op == off::ROp::kAvg || cfg_.user_reduce.fn == nullptr)
        return Status::kNotSupported;
    } else if (!reduce_supported(d.dtype, d.op)) {
      return Status::kNotSupported;
    }
    // Messages carry whole elements when reducing (engine.cc).
    if (esize > cfg_.slot_size) return Status::kNotSupported;
  } else if (d.op != off::ROp::kNone) {
    return Status::kInvalidParam;
  }
  if (d.alg != 0) {
    AlgTable tab = algorithms_of(d.coll);
    bool known = false;
    for (uint32_t i = 0; i < tab.n; ++i) known |= tab.algs[i]->id == d.alg;
    if (!known) return Status::kInvalidParam;
  }
  uint64_t one, all;
  if (!mul(d.count, esize, &one) || !mul(one, n, &all))
    return Status::kInvalidParam;
  bool in_place = (d.flags & off::kDescInPlace) != 0;
  bool root = d.root == me;
  uint64_t need_src = 0, need_dst = 0;
  switch (d.coll) {
    case CollType::kBarrier:
      if (d.count != 0) return Status::kInvalidParam;
      break;
    case CollType::kBcast:
      need_src = one;
      break;
    case CollType::kReduce:
      need_src = one;
      need_dst = root ? one : 0;
      break;
    case CollType::kAllreduce:
      need_src = need_dst = one;
      break;
    case CollType::kAllgather:
      need_src = in_place ? 0 : one;
      need_dst = all;
      break;
    case CollType::kAlltoall:
      need_src = need_dst = all;
      break;
    case CollType::kReduceScatter:
      need_src = all;
      need_dst = in_place ? all : one;
      break;
    case CollType::kGather:
      need_src = in_place && root ? 0 : one;
      need_dst = root ? all : 0;
      break;
    case CollType::kScatter:
      need_src = root ? all : 0;
      need_dst = in_place && root ? 0 : one;
      break;
    case CollType::kFanin:
    case CollType::kFanout:
      if (d.count != 0) return Status::kInvalidParam;
      break;
    case CollType::kGatherv:
      need_src = in_place && root ? 0 : one;
      if (root &&
          !vector_need(cfg_.mem, d.dst_counts, d.dst_displs, d, n, &need_dst))
        return Status::kInvalidParam;
      break;
    case CollType::kScatterv:
      need_dst = in_place && root ? 0 : one;
      if (root &&
          !vector_need(cfg_.mem, d.src_counts, d.src_displs, d, n, &need_src))
        return Status::kInvalidParam;
      break;
    case CollType::kAllgatherv:
      need_src = in_place ? 0 : one;
      if (!vector_need(cfg_.mem, d.dst_counts, d.dst_displs, d, n, &need_dst))
        return Status::kInvalidParam;
      break;
    case CollType::kAlltoallv:
      if (in_place ||
          !vector_need(cfg_.mem, d.src_counts, d.src_displs, d, n, &need_src) ||
          !vector_need(cfg_.mem, d.dst_counts, d.dst_displs, d, n, &need_dst))
        return Status::kInvalidParam;
      break;
    case CollType::kReduceScatterv: {
      // count is the whole vector; dst_counts splits it.
      uint64_t total = 0, mine = 0;
      if (!vector_need(cfg_.mem, d.dst_counts, 0, d, n, &need_src, &total) ||
          total != d.count ||
          !vector_count(cfg_.mem, d.dst_counts, d.flags & off::kDescCount64, n,
                        me, &mine) ||
          !mul(mine, esize, &need_dst))
        return Status::kInvalidParam;
      if (in_place) need_dst = need_src;
      break;
    }
    case CollType::kCount:
      return Status::kInvalidParam;
  }
  if (off::coll_rooted(d.coll) && d.root >= n) return Status::kInvalidParam;
  if (!fits(cfg_.mem, d.src, need_src) || !fits(cfg_.mem, d.dst, need_dst))
    return Status::kInvalidParam;
  return Status::kOk;
}

}  // namespace ucc::dev

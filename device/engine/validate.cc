// Descriptor validation: everything the engine reads from a descriptor is
// checked here before any algorithm runs, because descriptors cross the
// host/device boundary and may be stale, corrupted or forged. What each
// collective may read and write comes from its traits (coll_traits.h).
#include <initializer_list>

#include "device/engine/blocks.h"
#include "device/engine/engine.h"
#include "device/engine/team.h"
#include "device/reduce/reduce.h"
#include "device/select/select.h"

namespace ucc::dev {
namespace {

using off::Side;

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

// The fields every descriptor must get right whatever its collective.
Status Engine::validate_header(const off::CollDesc& d) const {
  if (d.magic != off::kDescMagic || d.version != off::kDescVersion)
    return Status::kInvalidParam;
  if (d.comp_slot >= ch_->ncomp()) return Status::kInvalidParam;
  if (d.team >= cfg_.max_teams ||
      teams_[d.team].state != Team::State::kConnected)
    return Status::kInvalidParam;
  if (off::coll_traits(d.coll) == nullptr ||
      static_cast<uint32_t>(d.dtype) >=
          static_cast<uint32_t>(off::DType::kCount))
    return Status::kInvalidParam;
  constexpr uint16_t kKnownFlags = off::kDescInPlace | off::kDescCount64 |
                                   off::kDescDispl64 | off::kDescTagged |
                                   off::kDescErrGlobal;
  if ((d.flags & ~kKnownFlags) != 0) return Status::kInvalidParam;
  // An active set is matched by tag: non-members never count it.
  if (d.set_size != 0 && (d.flags & off::kDescTagged) == 0)
    return Status::kInvalidParam;
  if (d.alg != 0 && find_impl(d.coll, d.alg) == nullptr)
    return Status::kInvalidParam;
  return Status::kOk;
}

// The datatype and op: defined for each other, reducible here.
Status Engine::validate_op(const off::CollDesc& d,
                           const off::CollTraits& t) const {
  const bool generic = d.dtype == off::DType::kGeneric;
  if (generic && d.user_esize == 0) return Status::kInvalidParam;
  if (!t.reduces)
    return d.op == off::ROp::kNone ? Status::kOk : Status::kInvalidParam;
  if (generic) {
    // The user's callback defines the op; AVG would need a division the
    // engine cannot do on an opaque type.
    if (static_cast<uint32_t>(d.op) >= static_cast<uint32_t>(off::ROp::kNone))
      return Status::kInvalidParam;
    if (d.op == off::ROp::kAvg || env_.user_reduce.fn == nullptr)
      return Status::kNotSupported;
  } else if (!reduce_supported(d.dtype, d.op)) {
    return Status::kNotSupported;
  }
  // Messages carry whole elements when reducing (inst.cc).
  if (off::elem_size(d) > cfg_.slot_size) return Status::kNotSupported;
  return Status::kOk;
}

Status Engine::validate(const off::CollDesc& d) const {
  Status st = validate_header(d);
  if (failed(st)) return st;
  const off::CollTraits& t = *off::coll_traits(d.coll);
  st = validate_op(d, t);
  if (failed(st)) return st;
  const Team& team = teams_[d.team];
  off::Role r{d.count, 0, 0, false, (d.flags & off::kDescInPlace) != 0};
  if (!set_ok(d, team.size, team.rank, &r.n, &r.me))
    return Status::kInvalidParam;
  if (t.rooted && d.root >= r.n) return Status::kInvalidParam;
  r.root = t.rooted && d.root == r.me;
  if (r.in_place && t.in_place == off::InPlaceRule::kRefused)
    return Status::kInvalidParam;
  // Every extent below is in elements of off::elem_size bytes; a vector
  // of the whole set must not overflow either.
  const uint64_t esize = off::elem_size(d);
  uint64_t all;
  if (__builtin_mul_overflow(d.count, esize * r.n, &all))
    return Status::kInvalidParam;
  off::VecFacts facts[2];
  if (!side_facts(env_.mem, t, d, r, facts) || !off::count_agrees(t, r, facts))
    return Status::kInvalidParam;
  for (Side s : {Side::kSrc, Side::kDst}) {
    uint64_t elems = 0, need = 0;
    if (!off::side_extent(t, s, r, facts, &elems) ||
        __builtin_mul_overflow(elems, esize, &need) ||
        !fits(env_.mem, s == Side::kSrc ? d.src : d.dst, need))
      return Status::kInvalidParam;
  }
  return Status::kOk;
}

}  // namespace ucc::dev

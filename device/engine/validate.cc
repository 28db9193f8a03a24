// Descriptor validation: everything the engine reads from a descriptor is
// checked here before any algorithm runs, because descriptors cross the
// host/device boundary and may be stale, corrupted or forged. What each
// collective may read and write comes from its traits (coll_traits.h).
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
// access is checked again when it happens). A side whose blocks its own
// displacements place (`scattered`) may span memory it never touches
// between them (separate tensors named by absolute addresses from a NULL
// base), so only its blocks need to be reachable: the per-access checks
// see to that.
bool fits(const plat::MemAccess& mem, const off::BufRef& r, uint64_t need,
          bool scattered) {
  if (need == 0) return true;
  if (r.mem_type != 0 || r.addr == 0) return false;
  uint64_t end;
  if (__builtin_add_overflow(r.addr, r.bytes, &end)) return false;
  return r.bytes >= need && (scattered || mem.check(r, 0, r.bytes));
}

bool scattered(const off::CollTraits& t, Side s) {
  return t.of(s).arrays == off::Arrays::kCountsDispls;
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

// The fields every descriptor must get right whatever its collective
// and whatever the engine's state.
Status check_header(const off::CollDesc& d, const off::CollTraits* t) {
  if (d.magic != off::kDescMagic || d.version != off::kDescVersion)
    return Status::kInvalidParam;
  if (t == nullptr || static_cast<uint32_t>(d.dtype) >=
                          static_cast<uint32_t>(off::DType::kCount))
    return Status::kInvalidParam;
  constexpr uint16_t kKnownFlags = off::kDescInPlace | off::kDescCount64 |
                                   off::kDescDispl64 | off::kDescTagged |
                                   off::kDescErrGlobal | off::kDescOneSided |
                                   off::kDescInline;
  if ((d.flags & ~kKnownFlags) != 0) return Status::kInvalidParam;
  // One-sided: alltoallv with the displacements it puts at.
  if ((d.flags & off::kDescOneSided) &&
      (d.coll != off::CollType::kAlltoallv || d.dst_displs == 0))
    return Status::kInvalidParam;
  // An active set is matched by tag: non-members never count it.
  if (d.set_size != 0 && (d.flags & off::kDescTagged) == 0)
    return Status::kInvalidParam;
  // In place where the collective refuses it.
  if ((d.flags & off::kDescInPlace) &&
      t->in_place == off::InPlaceRule::kRefused)
    return Status::kInvalidParam;
  if (d.alg != 0 && find_impl(d.coll, d.alg) == nullptr)
    return Status::kInvalidParam;
  return Status::kOk;
}

// The datatype and op: defined for each other, reducible here (generic
// types only with the host's hook), whole elements in a message slot.
Status check_op(const off::CollDesc& d, const off::CollTraits& t,
                bool user_reduce, uint32_t slot_size) {
  const bool generic = d.dtype == off::DType::kGeneric;
  if (generic && d.user_esize == 0) return Status::kInvalidParam;
  if (!t.reduces)
    return d.op == off::ROp::kNone ? Status::kOk : Status::kInvalidParam;
  if (generic) {
    // The user's callback defines the op; AVG would need a division the
    // engine cannot do on an opaque type.
    if (static_cast<uint32_t>(d.op) >= static_cast<uint32_t>(off::ROp::kNone))
      return Status::kInvalidParam;
    if (d.op == off::ROp::kAvg || !user_reduce) return Status::kNotSupported;
  } else if (!reduce_supported(d.dtype, d.op)) {
    return Status::kNotSupported;
  }
  // Messages carry whole elements when reducing (inst.cc).
  if (off::elem_size(d) > slot_size) return Status::kNotSupported;
  return Status::kOk;
}

}  // namespace

Status Engine::validate(const off::CollDesc& d, uint64_t* largest) const {
  if (largest != nullptr) *largest = 0;
  const off::CollTraits* tp = off::coll_traits(d.coll);
  Status st = check_header(d, tp);
  if (failed(st)) return st;
  const Team* team_p = team_at(d.team);
  if (d.comp_slot >= ch_->ncomp() || team_p == nullptr ||
      team_p->state != Team::State::kConnected)
    return Status::kInvalidParam;
  const off::CollTraits& t = *tp;
  st = check_op(d, t, env_.user_reduce.fn != nullptr, cfg_.slot_size);
  if (failed(st)) return st;
  // Inline: a small allreduce with a result area for its slot (the
  // input in the descriptor; src and dst stay valid references).
  if ((d.flags & off::kDescInline) != 0 &&
      (d.coll != off::CollType::kAllreduce || d.dtype == off::DType::kGeneric ||
       d.comp_slot >= ch_->nres() || off::elem_size(d) == 0 || d.count == 0 ||
       d.count > off::kInlineBytes / off::elem_size(d)))
    return Status::kInvalidParam;
  const Team& team = *team_p;
  off::Role r{d.count, 0, 0, false, (d.flags & off::kDescInPlace) != 0};
  if (!set_ok(d, team.size, team.rank, &r.n, &r.me))
    return Status::kInvalidParam;
  if (t.rooted && d.root >= r.n) return Status::kInvalidParam;
  r.root = t.rooted && d.root == r.me;
  // Every extent below is in elements of off::elem_size bytes; the
  // v-collectives' arrays are read (and must agree with count) first.
  off::VecFacts facts[2];
  if (t.vector() ? !side_facts(env_.mem, t, d, r, facts) ||
                       !off::count_agrees(t, r, facts)
                 : t.count == off::CountFrom::kNone && d.count != 0)
    return Status::kInvalidParam;
  if (largest != nullptr && t.alike_counts)
    *largest = facts[static_cast<int>(Side::kDst)].largest;
  const uint64_t esize = off::elem_size(d);
  uint64_t src = 0, dst = 0;
  // One-sided, the dst arrays describe the peers' buffers: dst is the
  // room they may write (all of it must be ours to write), and each block
  // that arrives is checked against it as it is placed (pairwise.cc).
  const bool puts = (d.flags & off::kDescOneSided) != 0;
  if (puts) dst = esize != 0 ? d.dst.bytes / esize : 0;
  if (!off::side_extent(t, Side::kSrc, r, facts, &src) ||
      (!puts && !off::side_extent(t, Side::kDst, r, facts, &dst)) ||
      __builtin_mul_overflow(src, esize, &src) ||
      __builtin_mul_overflow(dst, esize, &dst) ||
      !fits(env_.mem, d.src, src, scattered(t, Side::kSrc)) ||
      !fits(env_.mem, d.dst, dst, !puts && scattered(t, Side::kDst)))
    return Status::kInvalidParam;
  return Status::kOk;
}

}  // namespace ucc::dev

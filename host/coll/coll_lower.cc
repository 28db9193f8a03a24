// ucc_coll_args_t -> CollDesc: the first lowering stage, driven by the
// collective's traits (offload/coll_traits.h), which say which sides the
// user describes, where the datatype and the count come from and how long
// each buffer is. Everything a user can get wrong is caught here with one
// log line and a public status; the engine validates the descriptor again
// on its side of the boundary.
#include <cstring>
#include <initializer_list>

#include "host/api/objects.h"
#include "host/coll/coll_args.h"
#include "host/coll/request.h"
#include "offload/coll_traits.h"
#include "offload/vectors.h"

namespace ucc::host {

using namespace args;
using off::CollTraits;
using off::Side;

namespace {

using ull = unsigned long long;

const char* side_name(Side s) { return s == Side::kSrc ? "src" : "dst"; }

// ucc.h's description of one side: a plain buffer, or a buffer with count
// and displacement arrays (v-collectives).
struct UserSide {
  bool vec;
  const ucc_coll_buffer_info_t* info;
  const ucc_coll_buffer_info_v_t* info_v;
  ucc_datatype_t datatype() const {
    return vec ? info_v->datatype : info->datatype;
  }
};

UserSide user_side(const ucc_coll_args_t& a, const CollTraits& t, Side s) {
  const bool vec = t.of(s).arrays != off::Arrays::kNone;
  if (s == Side::kSrc) return UserSide{vec, &a.src.info, &a.src.info_v};
  return UserSide{vec, &a.dst.info, &a.dst.info_v};
}

// What lowering one collective carries between its steps.
struct Lowering {
  const ucc_coll_args_t& a;
  const CollTraits& t;
  const char* coll;
  off::Role r;
  bool count64, displ64;
  bool described[2];
  off::VecFacts facts[2];
  // v sides: the request's copies of the arrays (lower_arrays), 64-bit,
  // and how many elements the side's buffer moved up by (the first
  // element of its lowest non-empty block, which the copied
  // displacements then count from).
  uint64_t* varr;
  uint64_t counts[2], displs[2];
  uint64_t shift[2];
  // UCC's one-sided alltoallv (lower_one_sided): the dst arrays describe
  // the peers' buffers, and dst is the mapped room they may write.
  bool one_sided;
  uint64_t room;  // one-sided: bytes mapped from the dst buffer on

  UserSide side(Side s) const { return user_side(a, t, s); }
  bool has(Side s) const { return described[static_cast<int>(s)]; }
};

// In place: whether the flag takes effect on this rank, or is refused.
ucc_status_t lower_in_place(Lowering& lo, uint64_t flags) {
  const bool flag = (flags & UCC_COLL_ARGS_FLAG_IN_PLACE) != 0;
  if (flag && lo.t.in_place == off::InPlaceRule::kRefused)
    ARG_REFUSED("%s: in-place is not supported", lo.coll);
  // One-sided puts land in the peers' buffers at places they do not
  // know: nothing of ours could be sent from where theirs come in.
  if (flag && lo.one_sided)
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: one-sided cannot be in place",
              lo.coll);
  lo.r.in_place = off::in_place_applies(lo.t, flag, lo.r.root);
  for (Side s : {Side::kSrc, Side::kDst})
    lo.described[static_cast<int>(s)] = off::side_described(lo.t, s, lo.r);
  return UCC_OK;
}

// One v side's arrays into the request's storage (`cnt`, `dsp`: n
// entries each), widened to 64 bits, so that the engine never reads the
// caller's arrays: runtimes free them as soon as a nonblocking call
// returns (mpi4py after MPI_Ialltoallv). The displacements are rebased on
// the lowest non-empty block, *shift elements up, so that a NULL buffer
// with absolute addresses as displacements (PyTorch's allgather, gather,
// scatter, alltoall over separate tensors) names the memory it uses.
// false when a sum overflows.
bool copy_arrays(const ucc_coll_buffer_info_v_t& v, bool wide_c, bool wide_d,
                 bool displs, bool rebase, uint32_t n, uint64_t* cnt,
                 uint64_t* dsp, uint64_t* shift) {
  uint64_t low = UINT64_MAX, packed = 0;
  for (uint32_t i = 0; i < n; ++i) {
    cnt[i] = off::vec_entry(v.counts, wide_c, i);
    const uint64_t at =
        displs ? off::vec_entry(v.displacements, wide_d, i) : packed;
    if (__builtin_add_overflow(packed, cnt[i], &packed)) return false;
    if (displs) dsp[i] = at;
    if (cnt[i] != 0 && at < low) low = at;
  }
  *shift = rebase && displs && low != UINT64_MAX ? low : 0;
  if (*shift != 0)
    for (uint32_t i = 0; i < n; ++i) dsp[i] = cnt[i] != 0 ? dsp[i] - *shift : 0;
  return true;
}

// The count and displacement arrays of every described v side: present,
// copied into the request (copy_arrays), and what they say (lo.facts).
ucc_status_t lower_arrays(Lowering& lo) {
  const uint32_t n = lo.r.n;
  for (Side s : {Side::kSrc, Side::kDst}) {
    const UserSide u = lo.side(s);
    const int i = static_cast<int>(s);
    lo.counts[i] = lo.displs[i] = lo.shift[i] = 0;
    if (!u.vec || !lo.has(s)) continue;
    const char* which = side_name(s);
    if (u.info_v->counts == nullptr)
      ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: %s counts array is NULL", lo.coll,
                which);
    const bool displs = lo.t.of(s).arrays == off::Arrays::kCountsDispls &&
                        u.info_v->displacements != nullptr;
    // One-sided, dst's displacements are places in the peers' buffers:
    // they must be given, and they do not move ours.
    const bool puts = lo.one_sided && s == Side::kDst;
    if (puts && !displs)
      ARG_ERROR(UCC_ERR_INVALID_PARAM,
                "%s: one-sided (MEM_MAPPED_BUFFERS with a global work "
                "buffer), but the dst displacements array is NULL",
                lo.coll);
    uint64_t* cnt = lo.varr + 2 * size_t{n} * i;
    uint64_t* dsp = cnt + n;
    if (!copy_arrays(*u.info_v, lo.count64, lo.displ64, displs, !puts, n, cnt,
                     dsp, &lo.shift[i]) ||
        !off::vec_scan(off::DirectReader{}, reinterpret_cast<uintptr_t>(cnt),
                       displs ? reinterpret_cast<uintptr_t>(dsp) : 0, true,
                       true, n, lo.r.me, &lo.facts[i]))
      ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: %s counts/displacements overflow",
                lo.coll, which);
    lo.counts[i] = reinterpret_cast<uintptr_t>(cnt);
    lo.displs[i] = displs ? reinterpret_cast<uintptr_t>(dsp) : 0;
  }
  return UCC_OK;
}

// The descriptor's count, by the collective's CountFrom.
ucc_status_t lower_count(Lowering& lo) {
  uint64_t& count = lo.r.count;
  count = 0;
  switch (lo.t.count) {
    case off::CountFrom::kNone:
      return UCC_OK;
    case off::CountFrom::kTotal:
      count = lo.facts[static_cast<int>(Side::kDst)].total;
      return UCC_OK;
    case off::CountFrom::kBuffer:
    case off::CountFrom::kMine:
      break;
  }
  for (Side s : {Side::kSrc, Side::kDst}) {
    if (!lo.has(s) || lo.side(s).vec) continue;
    count = lo.side(s).info->count;
    if (lo.t.count == off::CountFrom::kMine) return UCC_OK;
    // A side holding a block per rank (in place: what the other side
    // holds, when this one holds the whole vector) gives n blocks.
    const Side per =
        lo.r.in_place && lo.t.of(s).in_place == off::InPlace::kOther
            ? off::other(s)
            : s;
    if (lo.t.of(per).extent == off::Extent::kTeam) {
      if (count % lo.r.n != 0)
        ARG_ERROR(UCC_ERR_INVALID_PARAM,
                  "%s: %s count %llu is not a multiple of the team size %u",
                  lo.coll, side_name(s), static_cast<ull>(count), lo.r.n);
      count /= lo.r.n;
    }
    return UCC_OK;
  }
  // kMine without a plain side (in place): this rank's entry of the v side.
  for (Side s : {Side::kSrc, Side::kDst}) {
    if (lo.has(s) && lo.side(s).vec) {
      count = lo.facts[static_cast<int>(s)].mine;
      return UCC_OK;
    }
  }
  return UCC_OK;
}

// One described side: its buffer reference for the elements the traits
// give it, and, for a v side, its arrays.
ucc_status_t lower_side(Lowering& lo, Side s, off::CollDesc* d) {
  const char* which = side_name(s);
  uint64_t elems = 0;
  if (!off::side_extent(lo.t, s, lo.r, lo.facts, &elems))
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: count %llu overflows", lo.coll,
              static_cast<ull>(lo.r.count));
  const UserSide u = lo.side(s);
  off::BufRef* ref = s == Side::kSrc ? &d->src : &d->dst;
  if (!u.vec) {
    if (u.info->count != elems)
      ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: %s count %llu, expected %llu",
                lo.coll, which, static_cast<ull>(u.info->count),
                static_cast<ull>(elems));
    return buffer(lo.coll, which, *u.info, *d, elems, ref);
  }
  const int i = static_cast<int>(s);
  if (lo.one_sided && s == Side::kDst) {
    // The peers put into the mapped room from dst on (in place of the
    // extent our arrays would give: they describe the peers' buffers).
    elems = lo.room / off::elem_size(*d);
    if (elems == 0)
      ARG_ERROR(UCC_ERR_INVALID_PARAM,
                "%s: one-sided, but the dst buffer %p is not inside memory "
                "mapped to this context (ucc_mem_map or the context's "
                "mem_params)",
                lo.coll, u.info_v->buffer);
  }
  // The buffer starts at the lowest block (lower_arrays): base + shift
  // elements, computed as an address so that a NULL base is no pointer
  // arithmetic on nullptr.
  uint64_t moved, start;
  if (__builtin_mul_overflow(lo.shift[i], uint64_t{off::elem_size(*d)},
                             &moved) ||
      __builtin_add_overflow(reinterpret_cast<uintptr_t>(u.info_v->buffer),
                             moved, &start))
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: %s displacements overflow", lo.coll,
              which);
  const ucc_coll_buffer_info_t flat{reinterpret_cast<void*>(start), elems,
                                    u.info_v->datatype, u.info_v->mem_type};
  ucc_status_t st = buffer(lo.coll, which, flat, *d, elems, ref);
  if (st != UCC_OK) return st;
  (s == Side::kSrc ? d->src_counts : d->dst_counts) = lo.counts[i];
  (s == Side::kSrc ? d->src_displs : d->dst_displs) = lo.displs[i];
  return UCC_OK;
}

// Datatype and op, from the first side the user describes (in place: the
// kept one); both sides must agree (buffer()).
ucc_status_t lower_type(const Lowering& lo, const ucc_team& team,
                        off::CollDesc* d) {
  for (Side s : {Side::kSrc, Side::kDst}) {
    if (!lo.has(s)) continue;
    ucc_status_t st = dtype(lo.coll, side_name(s), lo.side(s).datatype(), d);
    if (st != UCC_OK) return st;
    break;
  }
  if (!lo.t.reduces) return UCC_OK;
  return reduction_op(team.ctx->engine->caps(), lo.coll, enum_bits(lo.a.op), d);
}

ucc_status_t lower_buffers(Lowering& lo, off::CollDesc* d) {
  ucc_status_t st = lower_arrays(lo);
  if (st == UCC_OK) st = lower_count(lo);
  if (st != UCC_OK) return st;
  d->count = lo.r.count;
  if (!off::count_agrees(lo.t, lo.r, lo.facts))
    ARG_ERROR(UCC_ERR_INVALID_PARAM,
              "%s: count %llu disagrees with this rank's entry of the counts "
              "array",
              lo.coll, static_cast<ull>(lo.r.count));
  for (Side s : {Side::kSrc, Side::kDst}) {
    if (!lo.has(s)) continue;
    st = lower_side(lo, s, d);
    if (st != UCC_OK) return st;
  }
  if (lo.r.in_place) {
    // The side in place ignores names the kept buffer, and its arrays the
    // kept side's (alltoallv: the block for p goes from where p's block
    // comes in, as long; MPI's in-place convention).
    if (lo.t.keeps == Side::kDst) {
      d->src = d->dst;
      if (lo.t.of(Side::kSrc).arrays != off::Arrays::kNone) {
        d->src_counts = d->dst_counts;
        d->src_displs = d->dst_displs;
      }
    } else {
      d->dst = d->src;
    }
    d->flags |= off::kDescInPlace;
  }
  return UCC_OK;
}

// UCC's one-sided alltoallv: buffers in mapped memory
// (MEM_MAPPED_BUFFERS) and a global work buffer, as UCC's onesided
// algorithm takes them. The descriptor then says so (kDescOneSided) and
// dst is the mapped room from the user's dst on (docs/api.md, "One-sided
// collectives"). The work buffer is not written: the engine keeps its
// own count of arrivals. One-sided alltoall needs nothing of its own (a
// block lands where the two-sided one puts it).
ucc_status_t lower_one_sided(Lowering& lo, uint64_t flags, const ucc_team& team,
                             off::CollDesc* d) {
  const ucc_coll_args_t& a = lo.a;
  if (d->coll != off::CollType::kAlltoallv ||
      !(flags & UCC_COLL_ARGS_FLAG_MEM_MAPPED_BUFFERS) ||
      !(a.mask & UCC_COLL_ARGS_FIELD_GLOBAL_WORK_BUFFER))
    return UCC_OK;
  if (a.global_work_buffer == nullptr)
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: the global work buffer is NULL",
              lo.coll);
  if (enum_bits(a.dst.info_v.mem_type) != UCC_MEMORY_TYPE_HOST ||
      enum_bits(a.src.info_v.mem_type) != UCC_MEMORY_TYPE_HOST)
    ARG_REFUSED("%s: one-sided on memory other than host memory", lo.coll);
  const MemHandle* only = nullptr;
  if (a.mask & UCC_COLL_ARGS_FIELD_MEM_MAP_DST_MEMH)
    only = team.ctx->maps.live(a.dst_memh.local_memh);  // checked later
  lo.one_sided = true;
  lo.room = mapped_room(team.ctx,
                        reinterpret_cast<uintptr_t>(a.dst.info_v.buffer), only);
  if (lo.room > (uint64_t{1} << 62)) lo.room = uint64_t{1} << 62;
  d->flags |= off::kDescOneSided;
  d->alg = off::kAlltoallvOneSided;
  return UCC_OK;
}

ucc_status_t lower_coll_type(const ucc_coll_args_t& a, off::CollDesc* d,
                             const char** coll) {
  const int64_t t = enum_bits(a.coll_type);
  if (map_coll(t, &d->coll, coll)) return UCC_OK;
  if (known_coll(t))
    ARG_REFUSED("collective type %#llx not supported yet",
                static_cast<unsigned long long>(t));
  ARG_ERROR(UCC_ERR_INVALID_PARAM, "unknown collective type %#llx",
            static_cast<unsigned long long>(t));
}

}  // namespace

ucc_status_t build_desc(const ucc_coll_args_t& a, const ucc_team& team,
                        uint64_t* varr, off::CollDesc* d) {
  memset(d, 0, sizeof(*d));
  d->magic = off::kDescMagic;
  d->version = off::kDescVersion;
  d->team = team.eng_idx;
  d->op = off::ROp::kNone;
  const char* coll = "collective";
  ucc_status_t st = lower_coll_type(a, d, &coll);
  if (st != UCC_OK) return st;
  const CollTraits& t = *off::coll_traits(d->coll);
  // MEM_MAPPED_BUFFERS and the memory handles are checked against the
  // buffers once they are known (memh_resolve, mem_map.cc).
  const uint64_t flags = (a.mask & UCC_COLL_ARGS_FIELD_FLAGS) ? a.flags : 0;
  Lowering lo{a,
              t,
              coll,
              off::Role{0, team.size, team.rank, false, false},
              (flags & UCC_COLL_ARGS_FLAG_COUNT_64BIT) != 0,
              (flags & UCC_COLL_ARGS_FLAG_DISPLACEMENTS_64BIT) != 0,
              {false, false},
              {},
              varr,
              {0, 0},
              {0, 0},
              {0, 0},
              false,
              0};
  st = lower_one_sided(lo, flags, team, d);
  if (st == UCC_OK) st = matching(coll, a, flags, team, d, &lo.r.n, &lo.r.me);
  if (st == UCC_OK && t.rooted)
    st = root_position(coll, a.root, *d, team.size, &d->root);
  if (st != UCC_OK) return st;
  lo.r.root = t.rooted && d->root == lo.r.me;
  st = lower_in_place(lo, flags);
  if (st == UCC_OK) st = lower_type(lo, team, d);
  if (st == UCC_OK) st = lower_buffers(lo, d);
  if (st != UCC_OK) return st;
  uint64_t total;
  if (__builtin_mul_overflow(d->count, uint64_t{lo.r.n} * off::elem_size(*d),
                             &total))
    ARG_ERROR(UCC_ERR_INVALID_PARAM, "%s: count %llu overflows", coll,
              static_cast<ull>(d->count));
  // The arrays the descriptor names are the request's 64-bit copies.
  if (t.vector()) d->flags |= off::kDescCount64 | off::kDescDispl64;
  return whole_elements(team.ctx->engine->caps(), coll, *d);
}

}  // namespace ucc::host

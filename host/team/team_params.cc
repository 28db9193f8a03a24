// ucc_team_params_t -> TeamPlan: who the members are, which one we are,
// and how they will find each other. The rules:
//
//   size     the team OOB's n_oob_eps, team_size and ep_map.ep_num must
//            agree where given; with none of them, the context OOB's
//            n_oob_eps.
//   ep_map   team ep i -> context ep map(i), in the context OOB's oob_ep
//            numbering; needs a context created with an OOB. Every mapped
//            ep lies in [0, n_oob_eps) and none appears twice. FULL is the
//            identity over the whole context (ep_num 0 or n_oob_eps).
//            ARRAY elements are int32 (elem_size 4) or uint64 (8).
//   rank     the team OOB's oob_ep; else, with an ep_map, our position in
//            the map (found by our context oob_ep: we must be in it);
//            else the context OOB's oob_ep; else `ep` (0 for a team of
//            one without any OOB).
//   ep       with ep_range CONTIG or no ep_range, ep is the team rank and
//            must equal the rank above; with NONCONTIG it is the user's
//            own label for this member.
//   ep_list  the members' eps in team-rank order: 0..size-1 unless
//            NONCONTIG, else distinct values with ep (if given) at our
//            rank.
//   route    a team of one needs no exchange; a team OOB carries the
//            bootstrap; else an ep_map goes through the context mailbox;
//            else the context OOB must span exactly the team.
//
// Every violation is UCC_ERR_INVALID_PARAM with one log line, found here
// at post, before any exchange starts.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "host/team/team.h"
#include "platform/os/log.h"

namespace ucc::host {
namespace {

constexpr uint64_t kMaxTeamSize = 1u << 20;

using ull = unsigned long long;

bool map_shape_ok(const ucc_ep_map_t& m) {
  switch (enum_bits(m.type)) {
    case UCC_EP_MAP_FULL:
    case UCC_EP_MAP_STRIDED:
      return true;
    case UCC_EP_MAP_ARRAY:
      return m.array.map != nullptr &&
             (m.array.elem_size == 4 || m.array.elem_size == 8);
    case UCC_EP_MAP_CB:
      return m.cb.cb != nullptr;
  }
  return false;
}

// Context ep of team ep i; false when the map gives one outside [0, n).
bool map_ep(const ucc_ep_map_t& m, uint64_t i, uint64_t n, uint64_t* out) {
  switch (enum_bits(m.type)) {
    case UCC_EP_MAP_FULL:
      *out = i;
      return i < n;
    case UCC_EP_MAP_STRIDED: {
      __int128 v = static_cast<__int128>(m.strided.start) +
                   static_cast<__int128>(i) * m.strided.stride;
      *out = static_cast<uint64_t>(v);
      return v >= 0 && v < static_cast<__int128>(n);
    }
    case UCC_EP_MAP_ARRAY:
      if (m.array.elem_size == 4) {
        int32_t v;
        memcpy(&v, static_cast<const char*>(m.array.map) + 4 * i, 4);
        *out = static_cast<uint64_t>(static_cast<int64_t>(v));
        return v >= 0 && static_cast<uint64_t>(v) < n;
      } else {
        memcpy(out, static_cast<const char*>(m.array.map) + 8 * i, 8);
        return *out < n;
      }
    case UCC_EP_MAP_CB:
      *out = m.cb.cb(i, m.cb.cb_ctx);
      return *out < n;
  }
  return false;
}

// Size from the OOB, team_size and ep_map (0: none of them given).
ucc_status_t plan_size(const ucc_team_params_t& p, const ucc_context& ctx,
                       uint64_t* size) {
  uint64_t sz = 0;
  if (p.mask & UCC_TEAM_PARAM_FIELD_OOB) {
    if (p.oob.n_oob_eps == 0) {
      UCC_ERROR("ucc_team_create_post: team oob.n_oob_eps is 0");
      return UCC_ERR_INVALID_PARAM;
    }
    sz = p.oob.n_oob_eps;
  }
  if (p.mask & UCC_TEAM_PARAM_FIELD_TEAM_SIZE) {
    if (p.team_size == 0 || (sz != 0 && p.team_size != sz)) {
      UCC_ERROR("ucc_team_create_post: team_size %llu (oob.n_oob_eps %llu)",
                static_cast<ull>(p.team_size), static_cast<ull>(sz));
      return UCC_ERR_INVALID_PARAM;
    }
    sz = p.team_size;
  }
  if (p.mask & UCC_TEAM_PARAM_FIELD_EP_MAP) {
    const ucc_ep_map_t& m = p.ep_map;
    if (!ctx.has_oob) {
      UCC_ERROR(
          "ucc_team_create_post: an ep_map needs a context created with "
          "an OOB");
      return UCC_ERR_INVALID_PARAM;
    }
    if (!map_shape_ok(m)) {
      UCC_ERROR(
          "ucc_team_create_post: ep_map type %d is unknown or incomplete "
          "(NULL array or callback, elem_size not 4 or 8)",
          static_cast<int>(enum_bits(m.type)));
      return UCC_ERR_INVALID_PARAM;
    }
    uint64_t n = ctx.oob.n_oob_eps;
    const bool full = enum_bits(m.type) == UCC_EP_MAP_FULL;
    uint64_t num = full && m.ep_num == 0 ? n : m.ep_num;
    if (num == 0 || num > n || (full && num != n)) {
      UCC_ERROR(
          "ucc_team_create_post: ep_map.ep_num %llu for a context of %llu "
          "eps",
          static_cast<ull>(m.ep_num), static_cast<ull>(n));
      return UCC_ERR_INVALID_PARAM;
    }
    if (sz != 0 && num != sz) {
      UCC_ERROR(
          "ucc_team_create_post: ep_map.ep_num %llu disagrees with the "
          "team size %llu",
          static_cast<ull>(num), static_cast<ull>(sz));
      return UCC_ERR_INVALID_PARAM;
    }
    sz = num;
  }
  if (sz == 0 && ctx.has_oob) sz = ctx.oob.n_oob_eps;
  if (sz == 0 || sz > kMaxTeamSize) {
    UCC_ERROR("ucc_team_create_post: team size unknown or invalid (%llu)",
              static_cast<ull>(sz));
    return UCC_ERR_INVALID_PARAM;
  }
  *size = sz;
  return UCC_OK;
}

// Fills eps from the map; *pos = our position, or size when absent.
ucc_status_t plan_members(const ucc_ep_map_t& m, const ucc_context& ctx,
                          uint64_t size, uint64_t* eps, uint64_t* pos) {
  uint64_t n = ctx.oob.n_oob_eps;
  base::Array<uint8_t> seen;  // a bit per context ep
  if (!seen.init((n + 7) / 8)) return UCC_ERR_NO_MEMORY;
  ucc_status_t st = UCC_OK;
  *pos = size;
  for (uint64_t i = 0; i < size && st == UCC_OK; ++i) {
    uint64_t e = 0;
    if (!map_ep(m, i, n, &e)) {
      UCC_ERROR(
          "ucc_team_create_post: ep_map sends team ep %llu to context ep "
          "%lld, outside [0, %llu)",
          static_cast<ull>(i), static_cast<long long>(e), static_cast<ull>(n));
      st = UCC_ERR_INVALID_PARAM;
    } else if (seen[e / 8] & (1u << (e % 8))) {
      UCC_ERROR("ucc_team_create_post: ep_map names context ep %llu twice",
                static_cast<ull>(e));
      st = UCC_ERR_INVALID_PARAM;
    } else {
      seen[e / 8] |= static_cast<uint8_t>(1u << (e % 8));
      eps[i] = e;
      if (e == ctx.oob.oob_ep) *pos = i;
    }
  }
  return st;
}

ucc_status_t check_ep_list(const ucc_team_params_t& p, bool noncontig,
                           uint64_t size, uint64_t rank) {
  const uint64_t* l = p.ep_list;
  if (l == nullptr) {
    UCC_ERROR("ucc_team_create_post: ep_list is NULL");
    return UCC_ERR_INVALID_PARAM;
  }
  if (!noncontig) {
    for (uint64_t i = 0; i < size; ++i) {
      if (l[i] != i) {
        UCC_ERROR(
            "ucc_team_create_post: ep_list[%llu] = %llu in a CONTIG range "
            "(must be 0..size-1 in order)",
            static_cast<ull>(i), static_cast<ull>(l[i]));
        return UCC_ERR_INVALID_PARAM;
      }
    }
    return UCC_OK;
  }
  if ((p.mask & UCC_TEAM_PARAM_FIELD_EP) && l[rank] != p.ep) {
    UCC_ERROR("ucc_team_create_post: ep_list[%llu] = %llu but ep is %llu",
              static_cast<ull>(rank), static_cast<ull>(l[rank]),
              static_cast<ull>(p.ep));
    return UCC_ERR_INVALID_PARAM;
  }
  base::Array<uint64_t> sorted;
  if (!sorted.init(size)) return UCC_ERR_NO_MEMORY;
  uint64_t* s = sorted.data();
  memcpy(s, l, size * sizeof(uint64_t));
  std::sort(s, s + size);
  const bool dup = std::adjacent_find(s, s + size) != s + size;
  if (dup) {
    UCC_ERROR("ucc_team_create_post: ep_list names an ep twice");
    return UCC_ERR_INVALID_PARAM;
  }
  return UCC_OK;
}

// Our team rank (see the rules above); pos is our place in the map.
ucc_status_t plan_rank(const ucc_team_params_t& p, const ucc_context& ctx,
                       uint64_t size, const uint64_t* eps, uint64_t pos,
                       bool ep_is_rank, uint64_t* out) {
  uint64_t rank = UINT64_MAX;
  bool fixed = true;  // by an OOB or the map: `ep` must agree
  if (p.mask & UCC_TEAM_PARAM_FIELD_OOB) {
    rank = p.oob.oob_ep;
    if ((p.mask & UCC_TEAM_PARAM_FIELD_EP_MAP) && rank < size &&
        eps[rank] != ctx.oob.oob_ep) {
      UCC_ERROR(
          "ucc_team_create_post: ep_map puts context ep %llu at team rank "
          "%llu (oob.oob_ep), but this process is context ep %u",
          static_cast<ull>(eps[rank]), static_cast<ull>(rank), ctx.oob.oob_ep);
      return UCC_ERR_INVALID_PARAM;
    }
  } else if (p.mask & UCC_TEAM_PARAM_FIELD_EP_MAP) {
    rank = pos;
    if (pos == size) {
      UCC_ERROR(
          "ucc_team_create_post: this process (context ep %u) is not in "
          "the ep_map",
          ctx.oob.oob_ep);
      return UCC_ERR_INVALID_PARAM;
    }
  } else if (ctx.has_oob) {
    rank = ctx.oob.oob_ep;
  } else {
    fixed = false;
    rank = ep_is_rank ? p.ep : (size == 1 ? 0 : UINT64_MAX);
  }
  if (fixed && ep_is_rank && p.ep != rank) {
    UCC_ERROR(
        "ucc_team_create_post: ep %llu is not this member's team rank %llu",
        static_cast<ull>(p.ep), static_cast<ull>(rank));
    return UCC_ERR_INVALID_PARAM;
  }
  if (rank >= size) {
    UCC_ERROR("ucc_team_create_post: rank %lld out of range for a team of %llu",
              static_cast<long long>(rank), static_cast<ull>(size));
    return UCC_ERR_INVALID_PARAM;
  }
  *out = rank;
  return UCC_OK;
}

}  // namespace

ucc_status_t team_plan(const ucc_team_params_t& p, const ucc_context& ctx,
                       TeamPlan* out) {
  out->size = out->rank = 0;
  out->boot = Boot::kSelf;
  out->eps.release();
  const bool has_oob = p.mask & UCC_TEAM_PARAM_FIELD_OOB;
  const bool has_map = p.mask & UCC_TEAM_PARAM_FIELD_EP_MAP;
  const bool has_range = p.mask & UCC_TEAM_PARAM_FIELD_EP_RANGE;
  const int64_t range = has_range ? enum_bits(p.ep_range) : 0;
  if (range != UCC_COLLECTIVE_EP_RANGE_CONTIG &&
      range != UCC_COLLECTIVE_EP_RANGE_NONCONTIG) {
    UCC_ERROR("ucc_team_create_post: unknown ep_range %lld",
              static_cast<long long>(range));
    return UCC_ERR_INVALID_PARAM;
  }
  const bool noncontig = range == UCC_COLLECTIVE_EP_RANGE_NONCONTIG;
  const bool ep_is_rank = (p.mask & UCC_TEAM_PARAM_FIELD_EP) && !noncontig;

  uint64_t size = 0;
  ucc_status_t st = plan_size(p, ctx, &size);
  if (st != UCC_OK) return st;
  if (!out->eps.init(size)) return UCC_ERR_NO_MEMORY;
  uint64_t* eps = out->eps.data();
  uint64_t pos = size;
  if (has_map) {
    st = plan_members(p.ep_map, ctx, size, eps, &pos);
  } else {
    for (uint64_t i = 0; i < size; ++i) eps[i] = i;
  }

  uint64_t rank = UINT64_MAX;
  if (st == UCC_OK) st = plan_rank(p, ctx, size, eps, pos, ep_is_rank, &rank);
  if (st == UCC_OK && (p.mask & UCC_TEAM_PARAM_FIELD_EP_LIST))
    st = check_ep_list(p, noncontig, size, rank);

  Boot boot = Boot::kSelf;
  if (st == UCC_OK && size > 1) {
    if (has_oob) {
      boot = Boot::kTeamOob;
    } else if (has_map) {
      boot = Boot::kMailbox;
    } else if (ctx.has_oob && ctx.oob.n_oob_eps == size) {
      boot = Boot::kCtxOob;
    } else {
      UCC_ERROR(
          "ucc_team_create_post: a team of %llu needs a team OOB, an "
          "ep_map over the context OOB, or a context OOB over exactly its "
          "members",
          static_cast<ull>(size));
      st = UCC_ERR_NOT_SUPPORTED;
    }
  }
  if (st != UCC_OK) {
    out->eps.release();
    return st;
  }
  out->size = static_cast<uint32_t>(size);
  out->rank = static_cast<uint32_t>(rank);
  out->boot = boot;
  return UCC_OK;
}

}  // namespace ucc::host

// ucc_team_create_from_parent: a new team from members of an existing one
// (the seed's "split"). Every member of the parent calls it; those passing
// included != 0 form the new team, ordered by my_ep (ties by parent rank),
// with contiguous endpoints 0..size-1.
//
// The bootstrap exchanges that an OOB would carry for ucc_team_create_post
// run as allgathers on the parent team instead, so no OOB is needed:
//   kMembership  (included, my_ep) of every parent member
//   kExchange    fabric addresses      (team.cc, through split_exchange)
//   kConfirm     connected or not      (team.cc, through split_exchange)
// Members left out take part in all three before the call returns (the
// others need their part) and end with a handle of an empty team:
// ucc_team_create_test gives UCC_OK, collectives on it are refused, and
// ucc_team_destroy releases it. Creation fails with UCC_ERR_TIMED_OUT
// after UCC_TEAM_CREATE_TIMEOUT on members whose peers do not play their
// part.
#include <cstdlib>
#include <cstring>

#include "host/coll/request.h"
#include "platform/os/clock.h"
#include "platform/os/log.h"

namespace ucc::host {
namespace {

constexpr size_t kBootEntry = sizeof(off::TeamAddr);  // the largest entry

// Runs one allgather of `len` bytes per parent member into the stage.
ucc_status_t parent_allgather(ucc_team* t, const void* src, size_t len) {
  if (t->boot_req == nullptr) {
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_ALLGATHER;
    a.src.info = {const_cast<void*>(src), len, UCC_DT_UINT8,
                  UCC_MEMORY_TYPE_HOST};
    a.dst.info = {t->stage, len * t->psize, UCC_DT_UINT8, UCC_MEMORY_TYPE_HOST};
    ucc_status_t st = ucc_collective_init_and_post(&a, &t->boot_req, t->parent);
    if (st != UCC_OK) {
      t->boot_req = nullptr;
      return st;
    }
  }
  ucc_context_progress(t->ctx);
  ucc_status_t st = ucc_collective_test(t->boot_req);
  if (st == UCC_INPROGRESS) return st;
  ucc_collective_finalize(t->boot_req);
  t->boot_req = nullptr;
  return st;
}

}  // namespace

ucc_status_t split_exchange(ucc_team* t, const void* src, void* dst,
                            size_t len) {
  ucc_status_t st = parent_allgather(t, src, len);
  if (st != UCC_OK) return st;
  for (uint32_t i = 0; i < t->size; ++i)
    memcpy(static_cast<char*>(dst) + i * len, t->stage + t->members[i] * len,
           len);
  return UCC_OK;
}

ucc_status_t split_membership(ucc_team* t) {
  ucc_status_t st = parent_allgather(t, t->entry, sizeof(t->entry));
  if (st != UCC_OK) return st;
  const auto* e = reinterpret_cast<const uint64_t*>(t->stage);
  uint32_t n = 0;
  for (uint32_t p = 0; p < t->psize; ++p) n += e[2 * p] != 0;
  // Members in (key, parent rank) order: insertion sort, stable.
  uint32_t k = 0;
  for (uint32_t p = 0; p < t->psize; ++p) {
    if (e[2 * p] == 0) continue;
    uint32_t i = k++;
    while (i > 0 && e[2 * t->members[i - 1] + 1] > e[2 * p + 1]) {
      t->members[i] = t->members[i - 1];
      --i;
    }
    t->members[i] = p;
  }
  if (t->excluded) {
    t->size = 0;  // exchanges deliver nothing to us
    return UCC_OK;
  }
  uint32_t rank = 0;
  while (t->members[rank] != t->parent->rank) ++rank;
  st = team_join(t, n, rank);
  if (st != UCC_OK) return st;
  for (uint32_t i = 0; i < n; ++i) t->eps[i] = t->parent->eps[t->members[i]];
  return UCC_OK;
}

}  // namespace ucc::host

extern "C" ucc_status_t ucc_team_create_from_parent(uint64_t my_ep,
                                                    uint32_t included,
                                                    ucc_team_h parent,
                                                    ucc_team_h* new_team) {
  if (parent == nullptr || parent->magic != ucc::host::kTeamMagic ||
      new_team == nullptr) {
    UCC_ERROR("ucc_team_create_from_parent: invalid parent team or output");
    return UCC_ERR_INVALID_PARAM;
  }
  if (parent->state != ucc_team::State::kReady || parent->excluded) {
    UCC_ERROR("ucc_team_create_from_parent: the parent team is not ready");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc_context* ctx = parent->ctx;
  if (ctx->type == UCC_CONTEXT_EXCLUSIVE) {
    UCC_ERROR(
        "ucc_team_create_from_parent: the context is UCC_CONTEXT_EXCLUSIVE "
        "and its one team is the parent; create the context as "
        "UCC_CONTEXT_SHARED to split teams");
    return UCC_ERR_NO_RESOURCE;
  }
  ucc_team* t = ucc::host::team_alloc(ctx);
  if (t == nullptr) return UCC_ERR_NO_MEMORY;
  t->ctx = ctx;
  t->parent = parent;
  t->psize = parent->size;
  t->ordering = parent->ordering;
  t->excluded = included == 0;
  t->entry[0] = included != 0;
  t->entry[1] = my_ep;
  // The exchanges' stage, and the members (at most the parent's ranks).
  for (int pass = 0; pass < 2; ++pass) {
    t->stage = t->split_mem.take<unsigned char>(
        size_t{t->psize} * ucc::host::kBootEntry, 64);
    t->members = t->split_mem.take<uint32_t>(t->psize);
    if (pass == 0 && !t->split_mem.commit()) break;
  }
  if (t->stage == nullptr) {
    ucc::host::Guard g(ctx->lock, ctx->mt);
    ucc::host::team_free(ctx, t);
    return UCC_ERR_NO_MEMORY;
  }
  t->state = ucc_team::State::kMembership;
  t->magic = ucc::host::kTeamMagic;
  // Members that went away (or never take part) cannot hold the others
  // past the creation timeout.
  t->deadline_ns = ucc::plat::now_ns() + ctx->settings.team_timeout_ns;
  {
    ucc::host::Guard g(ctx->lock, ctx->mt);
    ucc::host::team_link_live(ctx, t);
  }
  *new_team = t;
  if (!t->excluded) return UCC_OK;
  // A member left out has its part to play in the parent's exchanges
  // (they are allgathers the others need), and may go on without ever
  // testing the handle (destroying the parent, its context): it plays it
  // now, before returning.
  ucc_status_t st;
  while ((st = ucc_team_create_test(t)) == UCC_INPROGRESS) {
  }
  return st == UCC_OK ? UCC_OK : st;
}

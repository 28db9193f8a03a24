// Team creation, a non-blocking state machine driven by
// ucc_team_create_test:
//   kExchange  the engine opened this rank's fabric segment; its address
//              travels to every member through the user's OOB allgather
//   kConfirm   every member mapped every segment; the outcome (ok or not)
//              travels through a second allgather so all members agree
//   kReady     collectives may be posted
// The exchanges run over the team OOB, the context OOB, the parent team
// (team_split.cc) or, for teams over an ep_map, the context mailbox
// (team_boot.cc); team_params.cc decides which from the parameters.
#include "host/team/team.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "host/coll/request.h"
#include "platform/os/clock.h"
#include "platform/os/host_id.h"
#include "platform/os/log.h"

using ucc::off::Status;

namespace {

bool valid_ctx(ucc_context_h c) {
  return c != nullptr && c->magic == ucc::host::kCtxMagic;
}
bool valid_team(ucc_team_h t) {
  return t != nullptr && t->magic == ucc::host::kTeamMagic;
}

}  // namespace

namespace ucc::host {

// Team objects are never returned to the heap: a destroyed team goes on
// a process-wide list of dead teams (magic cleared), so a stale handle is
// reported as such rather than read from freed memory, also after its
// context is gone, and later creations reuse the objects, oldest first,
// so a stale handle stays recognisably dead as long as possible.
namespace {

struct DeadTeams {
  SpinLock lock;
  ucc_team* head = nullptr;
  ucc_team* tail = nullptr;
};
DeadTeams& dead_teams() {
  static DeadTeams d;
  return d;
}

}  // namespace

ucc_team* team_alloc(ucc_context*) {
  ucc_team* t = nullptr;
  {
    DeadTeams& d = dead_teams();
    Guard g(d.lock, true);
    t = d.head;
    if (t != nullptr) {
      d.head = t->next_dead;
      if (d.head == nullptr) d.tail = nullptr;
    }
  }
  if (t == nullptr) {
    t = static_cast<ucc_team*>(malloc(sizeof(ucc_team)));
    if (t == nullptr) return nullptr;
  } else {
    // The request pool a buried team kept for its stale handles goes now.
    request_pool_fini(t);
  }
  memset(static_cast<void*>(t), 0, sizeof(*t));
  new (&t->boot_mem) base::Arena;
  new (&t->addr_mem) base::Arena;
  new (&t->exch_mem) base::Arena;
  new (&t->split_mem) base::Arena;
  new (&t->pool_mem) base::Arena;
  t->eng_idx = UINT32_MAX;
  return t;
}

void team_free(ucc_context* ctx, ucc_team* t, uint32_t magic) {
  mbox_end(t);
  if (t->eng_idx != UINT32_MAX) ctx->engine->team_close(t->eng_idx);
  gpu_direct_team_fini(t);  // while its context is there
  // The request pool stays with the buried object until it is reused:
  // a request handle kept past destroy (ucc_collective_test is an inline
  // read of it) finds a dead magic and its last status, not freed memory.
  for (uint32_t i = 0; i < t->nreqs; ++i) t->reqs[i].magic = kDeadMagic;
  t->boot_mem.release();
  t->eps = nullptr;
  team_exchange_done(t);
  t->magic = magic;
  t->next_dead = nullptr;
  DeadTeams& d = dead_teams();
  Guard g(d.lock, true);
  if (d.tail != nullptr)
    d.tail->next_dead = t;
  else
    d.head = t;
  d.tail = t;
}

void team_exchange_done(ucc_team* t) {
  t->addr_mem.release();
  t->exch_mem.release();
  t->split_mem.release();
  t->addrs = nullptr;
  t->oks = nullptr;
  t->members = nullptr;
  t->stage = nullptr;
  t->peer_nonce = nullptr;
  t->boot_bits = nullptr;
}

void team_link_live(ucc_context* ctx, ucc_team* t) {
  t->live_prev = nullptr;
  t->live_next = ctx->live_teams;
  if (ctx->live_teams != nullptr) ctx->live_teams->live_prev = t;
  ctx->live_teams = t;
  ++ctx->nteams;
}

void team_unlink_live(ucc_context* ctx, ucc_team* t) {
  if (t->live_prev != nullptr)
    t->live_prev->live_next = t->live_next;
  else
    ctx->live_teams = t->live_next;
  if (t->live_next != nullptr) t->live_next->live_prev = t->live_prev;
  t->live_next = t->live_prev = nullptr;
  --ctx->nteams;
}

void team_teardown(ucc_context* ctx, ucc_team* t, uint32_t magic) {
  for (uint32_t i = 0; i < t->nreqs; ++i) {
    ucc::host::Request& r = t->reqs[i];
    // Still posted (its peers never did their part in time): it ends
    // with an error, which a handle kept past the destroy reads with
    // ucc_collective_test (a task list's, on its first member); no
    // callback runs. The request memory stays until the team object is
    // reused.
    if (r.linked) {
      ucc::host::unlink_posted(ctx, &r);
      ucc::host::Request* shown = r.lead != nullptr ? r.lead : &r;
      if (shown->pub.status == UCC_INPROGRESS)
        ucc::host::publish_status(shown, UCC_ERR_TIMED_OUT);
    }
    r.magic = ucc::host::kDeadMagic;
  }
  ucc::host::ungate_team(ctx, t);
  ee_team_gone(ctx, t);
  team_unlink_live(ctx, t);
  team_free(ctx, t, magic);
}

ucc_status_t team_join(ucc_team* t, uint32_t size, uint32_t rank) {
  ucc_context* ctx = t->ctx;
  t->size = size;
  t->rank = rank;
  for (int pass = 0; pass < 2; ++pass) {
    t->eps = t->boot_mem.take<uint64_t>(size);
    if (pass == 0 && !t->boot_mem.commit()) return UCC_ERR_NO_MEMORY;
  }
  for (int pass = 0; pass < 2; ++pass) {
    t->addrs = t->addr_mem.take<off::TeamAddr>(size);
    if (pass == 0 && !t->addr_mem.commit()) return UCC_ERR_NO_MEMORY;
  }
  for (int pass = 0; pass < 2; ++pass) {
    t->oks = t->exch_mem.take<Confirm>(size);
    t->peer_nonce = t->exch_mem.take<uint64_t>(size);  // mailbox boot
    t->boot_bits = t->exch_mem.take<uint8_t>(size);
    if (pass == 0 && !t->exch_mem.commit()) return UCC_ERR_NO_MEMORY;
  }
  // Completion slots come in team_queue-sized ranges per engine slot; the
  // pool may be smaller when the user bounds outstanding collectives.
  uint32_t stride = ctx->settings.link.engine.team_queue;
  uint32_t nreqs = t->nreqs != 0 && t->nreqs < stride ? t->nreqs : stride;
  if (!request_pool_init(t, nreqs, size)) return UCC_ERR_NO_MEMORY;
  Guard g(ctx->lock, ctx->mt);
  Status s = ctx->engine->team_open(size, rank, &t->eng_idx, &t->my_addr);
  if (off::failed(s)) {
    t->eng_idx = UINT32_MAX;
    return to_ucc(s);
  }
  t->comp_base = t->eng_idx * stride;
  return UCC_OK;
}

}  // namespace ucc::host

namespace {

// Runs the OOB allgather of the current phase; UCC_OK once complete.
ucc_status_t oob_step(ucc_team* t, void* src, void* dst, size_t len) {
  if (t->oob_req == nullptr) {
    ucc_status_t st =
        t->oob.allgather(src, dst, len, t->oob.coll_info, &t->oob_req);
    if (st != UCC_OK) return st;
  }
  ucc_status_t st = t->oob.req_test(t->oob_req);
  if (st == UCC_INPROGRESS) return st;
  t->oob.req_free(t->oob_req);
  t->oob_req = nullptr;
  return st;
}

// One bootstrap allgather of `len` bytes per member into dst (team-rank
// order): over the user's OOB, over the parent team for a split, or
// through the context mailbox for a team over an ep_map. `phase` is 1 for
// the addresses, 2 for the confirmation.
ucc_status_t boot_step(ucc_team* t, uint32_t phase, const void* src, void* dst,
                       size_t len) {
  if (t->parent != nullptr) return ucc::host::split_exchange(t, src, dst, len);
  if (t->via_mbox && t->size > 1) {
    ucc::host::Guard g(t->ctx->lock, t->ctx->mt);
    return ucc::host::mbox_step(t, phase, src, dst, len);
  }
  if (t->size == 1) {
    memcpy(dst, src, len);
    return UCC_OK;
  }
  return oob_step(t, const_cast<void*>(src), dst, len);
}

using ucc::off::same_host;

// Every member on the first one's host.
bool one_host(const ucc::off::TeamAddr* addrs, uint32_t n) {
  for (uint32_t i = 1; i < n; ++i)
    if (!same_host(addrs[0], addrs[i])) return false;
  return true;
}

// Several hosts among the members, and one with two of them. The hosts
// sorted (n entries of scratch, at team creation) show a pair as
// neighbours, in O(n log n): a team of thousands, each rank on a host of
// its own, must not compare every pair.
bool hierarchical(const ucc::off::TeamAddr* addrs, uint32_t n) {
  if (one_host(addrs, n)) return false;
  struct Key {
    uint64_t h[2];
    bool operator<(const Key& o) const {
      return h[0] != o.h[0] ? h[0] < o.h[0] : h[1] < o.h[1];
    }
  };
  auto* keys = static_cast<Key*>(malloc(size_t{n} * sizeof(Key)));
  if (keys == nullptr) {  // no scratch: compare every pair
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t j = i + 1; j < n; ++j)
        if (same_host(addrs[i], addrs[j])) return true;
    return false;
  }
  for (uint32_t i = 0; i < n; ++i)
    keys[i] = Key{{addrs[i].host[0], addrs[i].host[1]}};
  std::sort(keys, keys + n);
  bool shared = false;
  for (uint32_t i = 1; i < n && !shared; ++i)
    shared =
        keys[i].h[0] == keys[i - 1].h[0] && keys[i].h[1] == keys[i - 1].h[1];
  free(keys);
  return shared;
}

// Whether a collective of the team is posted and not yet complete.
bool posted_on(const ucc_team* t) {
  ucc::host::Guard g(t->ctx->lock, t->ctx->mt);
  if (t->gated != 0) return true;  // held back from the engine (coll.cc)
  for (uint32_t i = 0; i < t->nreqs; ++i)
    if (t->reqs[i].linked) return true;
  return false;
}

// FNV-1a over the members' addresses: what every member must have
// received alike.
uint64_t digest(const ucc::off::TeamAddr* addrs, uint32_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = reinterpret_cast<const unsigned char*>(addrs);
  for (size_t i = 0; i < size_t{n} * sizeof(*addrs); ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

// What competes for this machine's CPUs while member `me` waits: the
// members on the same kernel, itself included (its host's, and those of
// other hosts on it: network namespaces or containers of one machine),
// and, where some of them are other hosts, the kernel's own network work
// that carries every message between them (counted as one more).
uint32_t cpu_sharers(const ucc::off::TeamAddr* addrs, uint32_t n, uint32_t me) {
  uint32_t kernel = 0, host = 0;
  for (uint32_t i = 0; i < n; ++i) {
    kernel += ucc::plat::same_kernel(addrs[me].host, addrs[i].host) ? 1 : 0;
    host += same_host(addrs[me], addrs[i]) ? 1 : 0;
  }
  return kernel > host ? kernel + 1 : kernel;
}

// Creation failed: remember why, and stop waiting for messages.
ucc_status_t fail(ucc_team* t, ucc_status_t st) {
  t->state = ucc_team::State::kFailed;
  t->fail_st = st;
  ucc::host::Guard g(t->ctx->lock, t->ctx->mt);
  ucc::host::mbox_end(t);
  return st;
}

}  // namespace

extern "C" {

ucc_status_t ucc_team_create_post(ucc_context_h* contexts,
                                  uint32_t num_contexts,
                                  const ucc_team_params_t* params,
                                  ucc_team_h* new_team) {
  if (contexts == nullptr || num_contexts == 0 || params == nullptr ||
      new_team == nullptr) {
    UCC_ERROR("ucc_team_create_post: NULL argument or no contexts");
    return UCC_ERR_INVALID_PARAM;
  }
  if (num_contexts != 1) {
    UCC_ERROR("ucc_team_create_post: teams over %u contexts not supported",
              num_contexts);
    return UCC_ERR_NOT_SUPPORTED;
  }
  ucc_context* ctx = contexts[0];
  if (!valid_ctx(ctx)) {
    UCC_ERROR("ucc_team_create_post: invalid context handle");
    return UCC_ERR_INVALID_PARAM;
  }
  if (ucc::host::forked_away(ctx, "ucc_team_create_post"))
    return UCC_ERR_INVALID_PARAM;
  // An exclusive context serves one team at a time (docs/api.md).
  if (ctx->type == UCC_CONTEXT_EXCLUSIVE && ctx->nteams > 0) {
    UCC_ERROR(
        "ucc_team_create_post: the context is UCC_CONTEXT_EXCLUSIVE and "
        "already holds a team; destroy that team first, or create the "
        "context as UCC_CONTEXT_SHARED");
    return UCC_ERR_NO_RESOURCE;
  }
  const ucc_team_params_t& p = *params;
  ucc::host::TeamPlan plan;
  ucc_status_t st = ucc::host::team_plan(p, *ctx, &plan);
  if (st != UCC_OK) return st;
  const uint32_t size = plan.size;
  const uint32_t rank = plan.rank;
  ucc_oob_coll_t oob{};
  if (plan.boot == ucc::host::Boot::kTeamOob) oob = p.oob;
  if (plan.boot == ucc::host::Boot::kCtxOob) oob = ctx->oob;
  if ((plan.boot == ucc::host::Boot::kTeamOob ||
       plan.boot == ucc::host::Boot::kCtxOob) &&
      (oob.allgather == nullptr || oob.req_test == nullptr ||
       oob.req_free == nullptr)) {
    UCC_ERROR("ucc_team_create_post: OOB callbacks missing");
    return UCC_ERR_INVALID_PARAM;
  }
  // Without a common posting order (the UNORDERED values, and
  // INIT_ORDERED, which orders only the inits), collectives are matched by
  // their tags instead (coll_args.cc).
  int ord = UCC_COLLECTIVE_POST_ORDERED;
  if (p.mask & UCC_TEAM_PARAM_FIELD_ORDERING) {
    static_assert(sizeof(ord) == sizeof(p.ordering));
    memcpy(&ord, &p.ordering, sizeof(ord));  // may hold any int
  }
  if (ord < UCC_COLLECTIVE_POST_ORDERED ||
      ord > UCC_COLLECTIVE_INIT_AND_POST_UNORDERED) {
    UCC_ERROR("ucc_team_create_post: unknown ordering %d", ord);
    return UCC_ERR_INVALID_PARAM;
  }
  const auto ordering = static_cast<ucc_post_ordering_t>(ord);

  ucc_team* t = ucc::host::team_alloc(ctx);
  if (t == nullptr) {
    return UCC_ERR_NO_MEMORY;
  }
  t->ctx = ctx;
  t->size = size;
  t->rank = rank;
  t->oob = oob;
  t->ordering = ordering;
  t->has_id = (p.mask & UCC_TEAM_PARAM_FIELD_ID) != 0;
  t->id = t->has_id ? p.id : 0;
  if ((p.mask & UCC_TEAM_PARAM_FIELD_OUTSTANDING_COLLS) &&
      p.outstanding_colls != 0)
    t->nreqs = p.outstanding_colls > UINT32_MAX
                   ? UINT32_MAX
                   : static_cast<uint32_t>(p.outstanding_colls);
  st = ucc::host::team_join(t, size, rank);
  if (st == UCC_OK) {
    memcpy(t->eps, plan.eps.data(), size * sizeof(uint64_t));
    if (plan.boot == ucc::host::Boot::kMailbox) {
      ucc::host::Guard g(ctx->lock, ctx->mt);
      st = ucc::host::mbox_begin(t);
    }
  }
  if (st != UCC_OK) {
    ucc::host::Guard g(ctx->lock, ctx->mt);
    ucc::host::team_free(ctx, t);
    return st;
  }
  t->state = ucc_team::State::kExchange;
  t->magic = ucc::host::kTeamMagic;
  {
    ucc::host::Guard g(ctx->lock, ctx->mt);
    ucc::host::team_link_live(ctx, t);
  }
  *new_team = t;
  return UCC_OK;
}

ucc_status_t ucc_team_create_test(ucc_team_h t) {
  if (!valid_team(t)) {
    UCC_ERROR("ucc_team_create_test: invalid team handle");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc_status_t st = UCC_OK;
  if (t->parent != nullptr && t->state != ucc_team::State::kReady &&
      t->state != ucc_team::State::kFailed &&
      ucc::plat::now_ns() > t->deadline_ns) {
    // A split whose peers did not all play their part in time. The
    // parent's exchange under way is left to end with the parent.
    UCC_ERROR(
        "ucc_team_create_test: split did not complete within "
        "UCC_TEAM_CREATE_TIMEOUT; a member of the parent is gone or never "
        "called ucc_team_create_from_parent");
    t->boot_req = nullptr;
    return fail(t, UCC_ERR_TIMED_OUT);
  }
  switch (t->state) {
    case ucc_team::State::kMembership:
      st = ucc::host::split_membership(t);
      if (st == UCC_INPROGRESS) return st;
      if (st != UCC_OK) return fail(t, st);
      t->state = ucc_team::State::kExchange;
      [[fallthrough]];
    case ucc_team::State::kExchange: {
      st = boot_step(t, 1, &t->my_addr, t->addrs, sizeof(t->my_addr));
      if (st == UCC_INPROGRESS) return st;
      if (st != UCC_OK) return fail(t, st);
      t->hierarchical = hierarchical(t->addrs, t->size);
      t->one_host = one_host(t->addrs, t->size);
      ucc::host::Guard g(t->ctx->lock, t->ctx->mt);
      // Our own entry must be what we sent: another process claiming our
      // ep (or an OOB that mixes up its entries) shows here.
      const bool mine = t->excluded || memcmp(&t->addrs[t->rank], &t->my_addr,
                                              sizeof(t->my_addr)) == 0;
      if (!mine)
        UCC_ERROR(
            "ucc_team_create_test: rank %u's address came back changed "
            "(another process with the same ep, or a broken OOB)",
            t->rank);
      const bool connected =
          mine && (t->excluded || ucc::off::ok(t->ctx->engine->team_connect(
                                      t->eng_idx, t->size, t->addrs)));
      t->my_ok =
          ucc::host::Confirm{ucc::host::kConfirmMagic, connected ? 1u : 0u,
                             digest(t->addrs, t->size)};
      t->cpu_share = t->excluded ? 0 : cpu_sharers(t->addrs, t->size, t->rank);
      // The engine has what it needs of the addresses: they go now, not
      // after the confirmation, which waits for every member.
      t->addr_mem.release();
      t->addrs = nullptr;
      t->state = ucc_team::State::kConfirm;
    }
      [[fallthrough]];
    case ucc_team::State::kConfirm: {
      st = boot_step(t, 2, &t->my_ok, t->oks, sizeof(t->my_ok));
      if (st == UCC_INPROGRESS) return st;
      if (st != UCC_OK) return fail(t, st);
      // Every member connected, and to the same team: everyone received
      // the same addresses. Anything else (garbage from the OOB
      // included) fails creation on every member alike.
      bool all = true;
      for (uint32_t i = 0; all && i < t->size; ++i)
        all = t->oks[i].magic == ucc::host::kConfirmMagic &&
              t->oks[i].ok == 1 && t->oks[i].digest == t->my_ok.digest;
      if (!all || t->my_ok.ok != 1) {
        UCC_ERROR(
            "ucc_team_create_test: a member could not connect to the "
            "team, or the members were told different addresses");
        return fail(t, UCC_ERR_NO_MESSAGE);
      }
      ucc::host::Guard g(t->ctx->lock, t->ctx->mt);
      ucc::host::mbox_end(t);
      if (!t->excluded) {
        t->ctx->engine->team_seal(t->eng_idx);
        ucc::host::context_fit_spin(t->ctx, t->cpu_share);
      }
      ucc::host::team_exchange_done(t);
      t->state = ucc_team::State::kReady;
      return UCC_OK;
    }
    case ucc_team::State::kReady:
      return UCC_OK;
    case ucc_team::State::kFailed:
      return t->fail_st;
  }
  return UCC_ERR_INVALID_PARAM;
}

ucc_status_t ucc_team_destroy(ucc_team_h t) {
  if (t != nullptr && t->magic == ucc::host::kReapedMagic) {
    UCC_DEBUG("ucc_team_destroy: the team went with its context");
    return UCC_OK;
  }
  if (!valid_team(t)) {
    UCC_ERROR("ucc_team_destroy: invalid or destroyed team handle");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc_context* ctx = t->ctx;
  if (t->boot_req != nullptr) {
    // A split exchange is under way on the parent: let it end first so the
    // parent's collectives stay in step on every member.
    ucc_context_progress(ctx);
    if (ucc_collective_test(t->boot_req) == UCC_INPROGRESS)
      return UCC_INPROGRESS;
    ucc_collective_finalize(t->boot_req);
    t->boot_req = nullptr;
  }
  if (t->oob_req != nullptr) {
    // An OOB exchange is under way: finish it so the user's OOB stays
    // consistent, then destroy.
    ucc_status_t st = t->oob.req_test(t->oob_req);
    if (st == UCC_INPROGRESS) return UCC_INPROGRESS;
    t->oob.req_free(t->oob_req);
    t->oob_req = nullptr;
  }
  // Collectives still running on the team: their peers may need our part
  // of them, and their requests must not go while the caller may still
  // look at them. Wait for them (UCC_INPROGRESS, progressing meanwhile),
  // for UCC_NET_PEER_TIMEOUT at most; after that they end with an error.
  if (posted_on(t)) {
    const uint64_t now = ucc::plat::now_ns();
    if (t->destroy_deadline_ns == 0)
      t->destroy_deadline_ns =
          now +
          uint64_t{ctx->settings.link.net.tcp.peer_timeout_ms} * 1000000ull;
    if (now < t->destroy_deadline_ns) {
      ucc_context_progress(ctx);
      if (posted_on(t)) return UCC_INPROGRESS;
    } else {
      UCC_WARN(
          "ucc_team_destroy: collectives still running after %u ms; they "
          "end with an error",
          ctx->settings.link.net.tcp.peer_timeout_ms);
    }
  }
  ucc::host::Guard g(ctx->lock, ctx->mt);
  ucc::host::team_teardown(ctx, t, ucc::host::kDeadMagic);
  return UCC_OK;
}

ucc_status_t ucc_team_get_attr(ucc_team_h t, ucc_team_attr_t* attr) {
  if (!valid_team(t) || attr == nullptr) {
    UCC_ERROR("ucc_team_get_attr: invalid team handle or attr");
    return UCC_ERR_INVALID_PARAM;
  }
  if (attr->mask & UCC_TEAM_ATTR_FIELD_POST_ORDERING)
    attr->ordering = t->ordering;
  if (attr->mask & UCC_TEAM_ATTR_FIELD_OUTSTANDING_CALLS)
    attr->outstanding_colls = t->nreqs;
  if (attr->mask & UCC_TEAM_ATTR_FIELD_EP) attr->ep = t->rank;
  if (attr->mask & UCC_TEAM_ATTR_FIELD_EP_RANGE)
    attr->ep_range = UCC_COLLECTIVE_EP_RANGE_CONTIG;
  if (attr->mask & UCC_TEAM_ATTR_FIELD_SYNC_TYPE)
    attr->sync_type = UCC_NO_SYNC_COLLECTIVES;
  if (attr->mask & UCC_TEAM_ATTR_FIELD_MEM_PARAMS)
    attr->mem_params = ucc_mem_map_params_t{nullptr, 0};
  if (attr->mask & UCC_TEAM_ATTR_FIELD_SIZE) attr->size = t->size;
  if (attr->mask & UCC_TEAM_ATTR_FIELD_EPS) attr->eps = t->eps;
  return UCC_OK;
}

ucc_status_t ucc_team_get_size(ucc_team_h t, uint32_t* size) {
  if (!valid_team(t) || size == nullptr) {
    UCC_ERROR("ucc_team_get_size: invalid team handle or size");
    return UCC_ERR_INVALID_PARAM;
  }
  *size = t->size;
  return UCC_OK;
}

ucc_status_t ucc_team_get_my_ep(ucc_team_h t, uint64_t* ep) {
  if (!valid_team(t) || ep == nullptr) {
    UCC_ERROR("ucc_team_get_my_ep: invalid team handle or ep");
    return UCC_ERR_INVALID_PARAM;
  }
  *ep = t->rank;
  return UCC_OK;
}

ucc_status_t ucc_team_get_all_eps(ucc_team_h t, uint64_t** ep,
                                  uint64_t* num_eps) {
  if (!valid_team(t) || ep == nullptr || num_eps == nullptr) {
    UCC_ERROR("ucc_team_get_all_eps: invalid team handle or output");
    return UCC_ERR_INVALID_PARAM;
  }
  *ep = t->eps;
  *num_eps = t->size;
  return UCC_OK;
}

}  // extern "C"

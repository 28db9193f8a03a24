// Collective requests: init (lower the arguments into a descriptor, take a
// pooled request), post (push the descriptor to the engine), finalize, and
// the reaping of completions during progress. Nothing here allocates after
// team creation.
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "host/coll/request.h"
#include "host/exec/gpu_stage.h"
#include "platform/base/hot.h"
#include "platform/os/log.h"

namespace ucc::host {
namespace {

bool valid_team(ucc_team_h team) {
  return team != nullptr && team->magic == kTeamMagic;
}

}  // namespace

bool request_pool_init(ucc_team* team, uint32_t n, uint32_t size) {
  // The v-array copies: untouched until a v-collective uses them (a large
  // block comes as fresh pages), and requests are reused most recent
  // first, so a few requests' worth is all that is ever touched.
  const size_t per = 4 * size_t{size};
  for (int pass = 0; pass < 2; ++pass) {
    team->reqs = team->pool_mem.take<Request>(n, 64);
    team->varr = team->pool_mem.take<uint64_t>(per * n, 4096);
    if (pass == 0 && !team->pool_mem.commit()) return false;
  }
  team->nreqs = n;
  team->free_reqs = nullptr;
  for (uint32_t i = n; i-- > 0;) {
    Request* r = new (&team->reqs[i]) Request();
    r->index = i;
    r->team = team;
    r->varr = team->varr + per * i;
    r->next = team->free_reqs;
    team->free_reqs = r;
  }
  return true;
}

void request_pool_fini(ucc_team* team) {
  for (uint32_t i = 0; team->reqs != nullptr && i < team->nreqs; ++i) {
    gpu_stage_fini(&team->reqs[i]);
    gpu_rdma_fini(&team->reqs[i]);
  }
  for (uint32_t i = 0; team->reqs != nullptr && i < team->nreqs; ++i)
    team->reqs[i].~Request();
  team->pool_mem.release();
  team->reqs = nullptr;
  team->varr = nullptr;
  team->free_reqs = nullptr;
}

namespace {

// Takes a request from the team's pool (the context's lock held);
// nullptr (one log line) when all are in use.
Request* take_request(ucc_team* team) {
  Request* r = team->free_reqs;
  if (r == nullptr) {
    UCC_ERROR(
        "ucc_collective_init: all %u requests of the team are in use "
        "(UCC_TEAM_MAX_COLLS)",
        team->nreqs);
    return nullptr;
  }
  team->free_reqs = r->next;
  r->next = r->prev = nullptr;
  return r;
}

// Puts back a request that never became the user's.
void return_request(ucc_team* team, Request* r) {
  r->next = team->free_reqs;
  team->free_reqs = r;
}

}  // namespace

// Release store: whoever reads the status (ucc_collective_test is an
// inline plain read in ucc.h) then sees the collective's data. Its own
// function, so that tests/tsan.supp can name exactly this store when
// ThreadSanitizer has lost the reader's stack.
__attribute__((noinline)) void publish_status(Request* r, ucc_status_t st) {
  __atomic_store_n(&r->pub.status, st, __ATOMIC_RELEASE);
}

namespace {

// The bytes of an inline allreduce's vector (kDescInline).
inline size_t inline_len(const off::CollDesc& d) {
  return static_cast<size_t>(d.count) * off::elem_size(d);
}

// Whether the engine has ended the request's latest post (*st: how). An
// inline result goes to dst here, once: the caller unlinks the post.
bool post_ended(const ucc_context* ctx, const Request* r, off::Status* st) {
  const uint64_t w = ctx->ch.read(r->desc.comp_slot);
  *st = off::completion_status(w);
  if (off::completion_gen(w) != r->gen || *st == off::Status::kInProgress)
    return false;
  if (off::completion_inline(w) && *st == off::Status::kOk &&
      (r->desc.flags & off::kDescInline) != 0)
    memcpy(reinterpret_cast<void*>(r->desc.dst.addr),
           ctx->ch.result(r->desc.comp_slot), inline_len(r->desc));
  return true;
}

// emu: a small allreduce on host memory carries its input in the
// descriptor and gets its result back in the channel (descriptor.h,
// kDescInline), so the daemon need not reach into this process. Its
// buffers stay covered: the engine may still use them (node-aware
// algorithms do).
void mark_inline(const ucc_context* ctx, const Request* r, off::CollDesc* d) {
  const uint32_t max = ctx->settings.link.inline_bytes;
  if (max == 0 || d->coll != off::CollType::kAllreduce ||
      d->dtype == off::DType::kGeneric || r->gpu.n != 0 || r->gd.on ||
      r->gr.on || d->src.mem_type != 0 || d->dst.mem_type != 0 ||
      d->comp_slot >= ctx->ch.nres())
    return;
  const size_t n = inline_len(*d);
  if (n != 0 && n <= max) d->flags |= off::kDescInline;
}

}  // namespace

UCC_HOT uint64_t reap(ucc_context* ctx, Request** callbacks) {
  uint64_t done = 0;
  Request* due = nullptr;
  Request* r = ctx->posted;
  while (r != nullptr) {
    Request* next = r->next;
    off::Status st;
    bool ended = post_ended(ctx, r, &st);
    if (!ended && ctx->remote_engine && ctx->engine->dead()) {
      ended = true;  // nobody will complete it now
      st = off::Status::kError;
    }
    ucc_status_t us = to_ucc(st);
    if (r->gd.on) {
      // GPU direct: the engine carried the exchange; the rest is polled.
      us = gpu_direct_progress(ctx, r, ended ? us : UCC_INPROGRESS);
      ended = us != UCC_INPROGRESS;
    } else if (ended && r->gpu.n != 0) {
      // Staged: the results go back to the GPU before the status says so.
      us = gpu_copy_out(ctx, r, us);
      ended = us != UCC_INPROGRESS;
      if (ended) r->gpu.on_stream = false;
    }
    if (ended) {
      unlink_posted(ctx, r);
      ++done;
      r->gr.stream = false;
      r->gd.on_stream = false;
      Request* lead = r->lead;
      if (lead != nullptr) {
        // A member of a task list: the list ends with its last member,
        // with the first error any of them had.
        if (us != UCC_OK && lead->list_st == UCC_OK) lead->list_st = us;
        if (++lead->list_done < lead->list_n) {
          r = next;
          continue;
        }
        r = lead;
        publish_status(r, r->list_st);
      } else {
        publish_status(r, us);
      }
      if (r->has_cb) {
        r->next = due;
        due = r;
      }
    }
    r = next;
  }
  *callbacks = due;
  return done;
}

ucc_status_t team_usable(ucc_team* team, const char* who) {
  if (!valid_team(team)) {
    UCC_ERROR("%s: invalid or destroyed team handle", who);
    return UCC_ERR_INVALID_PARAM;
  }
  if (team->excluded) {
    UCC_ERROR(
        "%s: this rank is not a member of the team (left out of "
        "ucc_team_create_from_parent)",
        who);
    return UCC_ERR_INVALID_PARAM;
  }
  if (team->state != ucc_team::State::kReady) {
    UCC_ERROR(
        "%s: team is not created yet (call ucc_team_create_test until "
        "UCC_OK)",
        who);
    return UCC_ERR_INVALID_PARAM;
  }
  return UCC_OK;
}

ucc_status_t init_request(const ucc_coll_args_t& args, ucc_team* team,
                          Request** out) {
  ucc_context* ctx = team->ctx;
  // The request first: lowering copies the v-arrays into it.
  Request* r = take_request(team);
  if (r == nullptr) return UCC_ERR_NO_RESOURCE;
  off::CollDesc d;
  ucc_status_t st = build_desc(args, *team, r->varr, &d);
  // Buffers in memory mapped with ucc_mem_map: checked against their
  // handles and, in emu, named by their pinned registrations.
  if (st == UCC_OK) st = memh_resolve(ctx, args, &d);
  // GPU buffers: read and written in place by the ranks' GPU (the
  // descriptor is then the exchange of their tokens), by the engine
  // registered with the device and named by that registration, where the
  // engine reaches memory by RDMA), or staged (the descriptor names their
  // host staging from here on).
  r->gr.on = false;
  if (st == UCC_OK) st = gpu_direct_init(ctx, team, r, &d);
  if (st == UCC_OK && !r->gd.on) st = gpu_rdma_init(ctx, r, &d);
  if (st == UCC_OK && !r->gd.on)
    st = gpu_stage(ctx, r, &d);  // whatever GPU side is left
  else if (st == UCC_OK)
    r->gpu.n = 0;
  // Emu: the daemon reaches only registered memory.
  if (st == UCC_OK)
    st = to_ucc(
        ctx->engine->cover(d, d.set_size != 0 ? d.set_size : team->size));
  if (st != UCC_OK) {
    return_request(team, r);
    return st;
  }
  r->magic = kReqMagic;
  r->desc = d;
  r->desc.comp_slot = team->comp_base + r->index;
  mark_inline(ctx, r, &r->desc);
  r->persistent = (args.mask & UCC_COLL_ARGS_FIELD_FLAGS) &&
                  (args.flags & UCC_COLL_ARGS_FLAG_PERSISTENT);
  r->posted = false;
  r->linked = false;
  r->has_cb = (args.mask & UCC_COLL_ARGS_FIELD_CB) && args.cb.cb != nullptr;
  if (r->has_cb) r->cb = args.cb;
  r->lead = nullptr;
  r->list_next = nullptr;
  r->list_n = 0;
  r->pub.status = UCC_OPERATION_INITIALIZED;
  *out = r;
  return UCC_OK;
}

void release_request(ucc_team* team, Request* r) {
  r->magic = kDeadMagic;
  r->next = team->free_reqs;
  team->free_reqs = r;
}

ucc_status_t postable(const Request* r, const char* who) {
  if (r->pub.status == UCC_INPROGRESS) {
    UCC_ERROR("%s: request is already in progress", who);
    return UCC_ERR_INVALID_PARAM;
  }
  if (r->posted && !r->persistent) {
    UCC_ERROR("%s: request was posted already and is not persistent", who);
    return UCC_ERR_INVALID_PARAM;
  }
  return UCC_OK;
}

namespace {

// Holds a post back from the engine (the context's gate queue).
void gate(ucc_context* ctx, Request* r) {
  r->gate_next = nullptr;
  if (ctx->gated_tail != nullptr)
    ctx->gated_tail->gate_next = r;
  else
    ctx->gated = r;
  ctx->gated_tail = r;
  ++r->team->gated;
  r->pub.status = UCC_INPROGRESS;
}

ucc_status_t submit(ucc_context* ctx, Request* r, bool may_end);

UCC_HOT ucc_status_t post_one(ucc_context* ctx, Request* r, bool may_end) {
  if (ctx->remote_engine && ctx->engine->dead()) {
    UCC_ERROR("ucc_collective_post: the engine's daemon has gone");
    return UCC_ERR_NO_MESSAGE;
  }
  if (r->gpu.n != 0) {
    const ucc_status_t st = gpu_copy_in(ctx, r);  // GPU buffers (staged)
    if (st != UCC_OK) return st;
  } else if (r->gd.on) {
    const ucc_status_t st = gpu_direct_post(ctx, r);  // never waits
    if (st != UCC_OK) return st;
  } else if (r->gr.on && !r->gr.stream) {
    const ucc_status_t st = gpu_rdma_post(r);  // GPUDirect RDMA: an event
    if (st != UCC_OK) return st;
  }
  // The engine may read a GPU post's input once the GPU has made it (or
  // copied it to staging); the team's later posts wait behind it, so its
  // order holds.
  if (__builtin_expect(
          r->team->gated != 0 || r->gpu.in_wait || (r->gr.on && r->gr.waiting),
          0)) {
    gate(ctx, r);
    return UCC_OK;
  }
  return submit(ctx, r, may_end);
}

// Hands a post to the engine and links it on the posted list.
UCC_HOT ucc_status_t submit(ucc_context* ctx, Request* r, bool may_end) {
  r->desc.gen = ++r->gen;
  ctx->ch.arm(r->desc.comp_slot, r->gen);
  if (r->desc.flags & off::kDescInline)  // the input as it is now
    memcpy(r->desc.inline_data, reinterpret_cast<const void*>(r->desc.src.addr),
           inline_len(r->desc));
  // A persistent request posted again: its descriptor has not changed
  // since the last post, so an inline engine that knows it runs its own
  // copy.
  const bool known =
      r->posted && r->persistent &&
      ctx->engine->submit_known(r->desc.team, r->desc.comp_slot, r->gen);
  if (!known && !ctx->engine->submit(r->desc)) {
    // The ring is full (emu): let the daemon, woken up, drain it, then try
    // again for a while.
    bool in = false;
    for (int i = 0; i < 10000 && !in; ++i) {
      ctx->engine->progress();
      ctx->engine->submitted();
      in = ctx->engine->submit(r->desc);
      if (!in) sched_yield();
    }
    if (!in) {
      UCC_ERROR("ucc_collective_post: submission ring full");
      return UCC_ERR_NO_RESOURCE;
    }
  }
  if (ctx->remote_engine) ctx->engine->submitted();  // its doorbell
  r->posted = true;
  // Inline, a collective that needed nothing more from its peers (a
  // bcast's root, a reduce's leaves, a team of one) has ended during
  // submit: its status is published now rather than by the next progress
  // call. Only for the user's own posts (`may_end`; an execution engine
  // learns of completions from progress), and not for requests that
  // progress must finish (callbacks, task lists, GPU buffers copied back).
  if (may_end && !r->has_cb && r->lead == nullptr && r->list_n == 0 &&
      r->gpu.n == 0 && !r->gd.on && !r->gr.on) {
    off::Status st;
    if (post_ended(ctx, r, &st)) {
      publish_status(r, to_ucc(st));
      return UCC_OK;
    }
  }
  r->pub.status = UCC_INPROGRESS;
  r->prev = nullptr;
  r->next = ctx->posted;
  if (ctx->posted != nullptr) ctx->posted->prev = r;
  ctx->posted = r;
  r->linked = true;
  return UCC_OK;
}

}  // namespace

namespace {

// Takes r (after prev, nullptr for the first) out of the gate queue.
void unlink_gated(ucc_context* ctx, Request* prev, Request* r) {
  if (prev != nullptr)
    prev->gate_next = r->gate_next;
  else
    ctx->gated = r->gate_next;
  if (ctx->gated_tail == r) ctx->gated_tail = prev;
  r->gate_next = nullptr;
  --r->team->gated;
}

}  // namespace

uint64_t release_gated(ucc_context* ctx, Request** callbacks) {
  if (ctx->gated == nullptr) return 0;
  const uint32_t pass = ++ctx->gate_pass;
  uint64_t n = 0;
  Request* prev = nullptr;
  for (Request* r = ctx->gated; r != nullptr;) {
    Request* next = r->gate_next;
    ucc_team* t = r->team;
    ucc_status_t st = UCC_OK;
    // Only once nothing of its team before it is still held.
    const bool go = t->gate_pass != pass &&
                    (r->gpu.n != 0 ? gpu_copy_in_done(r, &st)
                                   : !r->gr.on || gpu_rdma_ready(r, &st));
    if (!go) {
      t->gate_pass = pass;
      prev = r;
      r = next;
      continue;
    }
    unlink_gated(ctx, prev, r);
    ++n;
    if (st == UCC_OK) st = submit(ctx, r, false);
    if (st != UCC_OK) {
      // It never reached the engine: it ends here, as a failed post would.
      Request* shown = r->lead != nullptr ? r->lead : r;
      if (r->lead != nullptr) {
        if (shown->list_st == UCC_OK) shown->list_st = st;
        if (++shown->list_done < shown->list_n) {
          r = next;
          continue;
        }
        st = shown->list_st;
      }
      publish_status(shown, st);
      if (shown->has_cb) {
        shown->next = *callbacks;
        *callbacks = shown;
      }
    }
    r = next;
  }
  return n;
}

void ungate_team(ucc_context* ctx, ucc_team* t) {
  Request* prev = nullptr;
  for (Request* r = ctx->gated; r != nullptr && t->gated != 0;) {
    Request* next = r->gate_next;
    if (r->team == t) {
      unlink_gated(ctx, prev, r);
      Request* shown = r->lead != nullptr ? r->lead : r;
      if (shown->pub.status == UCC_INPROGRESS)
        publish_status(shown, UCC_ERR_TIMED_OUT);
    } else {
      prev = r;
    }
    r = next;
  }
}

ucc_status_t post_request(ucc_context* ctx, Request* r, bool may_end) {
  if (r->list_n == 0) return post_one(ctx, r, may_end);
  // A task list (coll_list.cc): every member goes to the engine now, one
  // after another, with no round trip between them; the list ends when
  // the last of them does (reap()).
  r->list_done = 0;
  r->list_st = UCC_OK;
  uint32_t posted = 0;
  ucc_status_t st = UCC_OK;
  for (Request* m = r; m != nullptr && st == UCC_OK; m = m->list_next) {
    st = post_one(ctx, m, false);
    if (st == UCC_OK) ++posted;
  }
  if (posted == 0) return st;
  if (st != UCC_OK) {
    // Members already posted run to their end; the list then reports
    // the failure of the rest.
    r->list_done = r->list_n - posted;
    r->list_st = st;
  }
  r->posted = true;
  r->pub.status = UCC_INPROGRESS;
  return UCC_OK;
}

void run_callbacks(Request* due) {
  while (due != nullptr) {
    Request* next = due->next;
    due->next = nullptr;
    // The callback may finalize the request: touch it no more after this.
    due->cb.cb(due->cb.data, due->pub.status);
    due = next;
  }
}

}  // namespace ucc::host

using ucc::host::Request;

extern "C" {

ucc_status_t ucc_collective_init(ucc_coll_args_t* args, ucc_coll_req_h* request,
                                 ucc_team_h team) {
  if (args == nullptr || request == nullptr) {
    UCC_ERROR("ucc_collective_init: args and request must not be NULL");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc_status_t st = ucc::host::team_usable(team, "ucc_collective_init");
  if (st != UCC_OK) return st;
  ucc_context* ctx = team->ctx;
  if (ucc::host::forked_away(ctx, "ucc_collective_init"))
    return UCC_ERR_INVALID_PARAM;
  ucc::host::Guard g(ctx->lock, ctx->mt);
  Request* r = nullptr;
  st = ucc::host::init_request(*args, team, &r);
  if (st == UCC_OK) *request = &r->pub;
  return st;
}

UCC_HOT ucc_status_t ucc_collective_post(ucc_coll_req_h request) {
  Request* r = ucc::host::as_request(request);
  if (r == nullptr) {
    UCC_ERROR("ucc_collective_post: invalid or finalized request");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc_status_t st = ucc::host::postable(r, "ucc_collective_post");
  if (st != UCC_OK) return st;
  ucc_context* ctx = r->team->ctx;
  if (ucc::host::forked_away(ctx, "ucc_collective_post"))
    return UCC_ERR_INVALID_PARAM;
  ucc::host::Guard g(ctx->lock, ctx->mt);
  return ucc::host::post_request(ctx, r, true);
}

ucc_status_t ucc_collective_init_and_post(ucc_coll_args_t* args,
                                          ucc_coll_req_h* request,
                                          ucc_team_h team) {
  ucc_status_t st = ucc_collective_init(args, request, team);
  if (st != UCC_OK) return st;
  st = ucc_collective_post(*request);
  if (st != UCC_OK) {
    ucc_collective_finalize(*request);
    *request = nullptr;
  }
  return st;
}

ucc_status_t ucc_collective_finalize(ucc_coll_req_h request) {
  Request* r = ucc::host::as_request(request);
  if (r == nullptr) {
    UCC_ERROR("ucc_collective_finalize: invalid or finalized request");
    return UCC_ERR_INVALID_PARAM;
  }
  if (r->pub.status == UCC_INPROGRESS) {
    UCC_ERROR("ucc_collective_finalize: request is still in progress");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc_team* team = r->team;
  ucc::host::Guard g(team->ctx->lock, team->ctx->mt);
  // A task list gives back every member.
  for (Request* m = r; m != nullptr;) {
    Request* next = m->list_next;
    ucc::host::release_request(team, m);
    m = next;
  }
  return UCC_OK;
}

}  // extern "C"

// Execution engines (ucc_ee_*) and triggered collectives.
//
// An execution engine stands for an ordered stream of work the caller
// hands collectives to. Here the CPU-thread kind (UCC_EE_CPU_THREAD):
//   - ucc_collective_triggered_post(ee, ev) with ev->ev_type
//     UCC_EVENT_COMPUTE_COMPLETE says the compute the collective ev->req
//     depends on is complete (the calling thread's), so the collective is
//     ready. It joins the engine's stream and a UCC_EVENT_COLLECTIVE_POST
//     event for it is queued before the call returns (PyTorch checks this
//     with ucc_ee_get_event right after the call).
//   - Stream order: the collectives of one engine run one after another,
//     in triggered order; each is posted once the one before it has
//     completed, and a UCC_EVENT_COLLECTIVE_COMPLETE event is queued then.
//     The request's own status and callback behave as after
//     ucc_collective_post.
//   - ucc_ee_set_event queues a user event; each triggered collective
//     consumes one when it is posted, if there is one (UCC's CPU engines
//     do the same; without one it is posted anyway).
//   - Events come from pools taken at ucc_ee_create: when the user does
//     not take them (ucc_ee_get_event) and return them (ucc_ee_ack_event)
//     fast enough, later ones are dropped and one UCC_EVENT_OVERFLOW event
//     says so.
// CUDA stream engines (UCC_EE_CUDA_STREAM) behave the same, and besides
// run each collective in the stream's order (ee_cuda.h): it is posted
// once the stream has reached it, and the stream waits for it to end.
// ROCm streams are refused (UCC_ERR_NOT_SUPPORTED). Nothing here
// allocates after ucc_ee_create.
//
// Threads: every call takes the team's context lock (UCC_THREAD_MULTIPLE).
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "host/coll/coll_args.h"
#include "host/coll/request.h"
#include "platform/os/log.h"

namespace ucc::host {
namespace {

constexpr uint32_t kInEvents = 64;  // user events an engine holds

bool valid_ee(ucc_ee_h ee) { return ee != nullptr && ee->magic == kEeMagic; }

void ee_free(ucc_ee* ee) {
  ee_cuda_destroy(ee);
  ee->mem.~Arena();  // its queue and event pools
  free(ee);
}

// Queues an event for ucc_ee_get_event; when the pool is empty the event
// is lost and an overflow event becomes due.
void emit(ucc_ee* ee, ucc_event_type_t type, ucc_coll_req_h req) {
  if (ee->nfree == 0) {
    ee->overflowed = true;
    return;
  }
  const uint32_t slot = ee->ev_free[--ee->nfree];
  ee->ev[slot] = ucc_ev_t{type, nullptr, 0, req};
  ee->ev_state[slot] = 1;
  ee->out[ee->otail++ % ee->nev] = slot;
}

// Advances the stream: posts its head, and once the head has completed
// (reap() published its status) queues the completion and goes on with
// the next. Returns how many collectives it posted or retired.
uint64_t advance(ucc_ee* ee) {
  uint64_t events = 0;
  while (ee->qhead != ee->qtail) {
    Request* r = ee->q[ee->qhead % ee->qcap];
    // A CUDA stream's collective waits for the stream to reach it.
    if (!ee->head_posted && ee->cu != nullptr &&
        !ee_cuda_ready(ee, ee->qhead % ee->qcap))
      return events;
    if (!ee->head_posted) {
      if (ee->ihead != ee->itail) ++ee->ihead;  // its trigger, if any
      const ucc_status_t st = post_request(ee->ctx, r);
      ++events;
      if (st == UCC_OK) {
        ee->head_posted = true;
        return events;
      }
      // Never reached the engine: it ends here with the post's error.
      __atomic_store_n(&r->pub.status, st, __ATOMIC_RELEASE);
    } else if (__atomic_load_n(&r->pub.status, __ATOMIC_ACQUIRE) ==
               UCC_INPROGRESS) {
      return events;
    }
    emit(ee, UCC_EVENT_COLLECTIVE_COMPLETE, &r->pub);
    if (ee->cu != nullptr) ee_cuda_release(ee);  // the stream goes on
    ++ee->qhead;
    ee->head_posted = false;
    ++events;
  }
  return events;
}

}  // namespace

uint64_t ee_progress(ucc_context* ctx) {
  uint64_t events = 0;
  for (ucc_ee* ee = ctx->ees; ee != nullptr; ee = ee->next)
    if (ee->team != nullptr && ee->qhead != ee->qtail) events += advance(ee);
  return events;
}

void ee_team_gone(ucc_context* ctx, ucc_team* t) {
  for (ucc_ee* ee = ctx->ees; ee != nullptr; ee = ee->next) {
    if (ee->team != t) continue;
    ee->team = nullptr;  // its queued collectives went with the team
    if (ee->cu != nullptr) ee_cuda_release_all(ee);
    ee->qhead = ee->qtail = 0;
    ee->head_posted = false;
  }
}

void ee_context_gone(ucc_context* ctx) {
  for (ucc_ee* ee = ctx->ees; ee != nullptr; ee = ee->next) {
    ee->ctx = nullptr;
    ee->team = nullptr;
  }
  ctx->ees = nullptr;
}

}  // namespace ucc::host

using ucc::host::Guard;
using ucc::host::Request;

extern "C" {

ucc_status_t ucc_ee_create(ucc_team_h team, const ucc_ee_params_t* params,
                           ucc_ee_h* ee_p) {
  if (team == nullptr || team->magic != ucc::host::kTeamMagic ||
      params == nullptr || ee_p == nullptr) {
    UCC_ERROR("ucc_ee_create: invalid team, params or ee pointer");
    return UCC_ERR_INVALID_PARAM;
  }
  if (team->state != ucc_team::State::kReady || team->excluded) {
    UCC_ERROR(
        "ucc_ee_create: the team is not ready, or this rank is not in it");
    return UCC_ERR_INVALID_PARAM;
  }
  const int64_t type = ucc::host::enum_bits(params->ee_type);
  if (type == UCC_EE_ROCM_STREAM)
    ARG_REFUSED(
        "ucc_ee_create: ROCm stream execution engines are not "
        "supported");
  if (type != UCC_EE_CPU_THREAD && type != UCC_EE_CUDA_STREAM) {
    UCC_ERROR("ucc_ee_create: unknown execution engine type %lld",
              static_cast<long long>(type));
    return UCC_ERR_INVALID_PARAM;
  }
  auto* ee = static_cast<ucc_ee*>(calloc(1, sizeof(ucc_ee)));
  if (ee == nullptr) return UCC_ERR_NO_MEMORY;
  new (&ee->mem) ucc::base::Arena;
  ee->type = static_cast<ucc_ee_type_t>(type);
  ee->ctx = team->ctx;
  ee->team = team;
  // Every request of the team at most once in the stream, and two events
  // for each (posted, complete) before any must be taken.
  ee->qcap = team->nreqs;
  ee->nev = 2 * team->nreqs;
  ee->incap = ucc::host::kInEvents;
  ucc::host::CudaEe* cu = nullptr;
  for (int pass = 0; pass < 2; ++pass) {
    ee->q = ee->mem.take<Request*>(ee->qcap);
    ee->ev = ee->mem.take<ucc_ev_t>(ee->nev);
    ee->ev_state = ee->mem.take<uint8_t>(ee->nev);
    ee->ev_free = ee->mem.take<uint32_t>(ee->nev);
    ee->out = ee->mem.take<uint32_t>(ee->nev);
    ee->in = ee->mem.take<ucc_ev_t>(ee->incap);
    if (type == UCC_EE_CUDA_STREAM)
      cu = ucc::host::ee_cuda_take(ee->mem, ee->qcap);
    if (pass == 0 && !ee->mem.commit()) break;
  }
  if (ee->q == nullptr || ee->ev == nullptr || ee->ev_state == nullptr ||
      ee->ev_free == nullptr || ee->out == nullptr || ee->in == nullptr) {
    ucc::host::ee_free(ee);
    return UCC_ERR_NO_MEMORY;
  }
  if (type == UCC_EE_CUDA_STREAM) {
    const ucc_status_t st =
        ucc::host::ee_cuda_create(ee, cu, params->ee_context);
    if (st != UCC_OK) {
      ucc::host::ee_free(ee);
      return st;
    }
  }
  for (uint32_t i = 0; i < ee->nev; ++i) ee->ev_free[i] = ee->nev - 1 - i;
  ee->nfree = ee->nev;
  ee->overflow_ev = ucc_ev_t{UCC_EVENT_OVERFLOW, nullptr, 0, nullptr};
  ee->magic = ucc::host::kEeMagic;
  ucc_context* ctx = team->ctx;
  Guard g(ctx->lock, ctx->mt);
  ee->next = ctx->ees;
  ctx->ees = ee;
  *ee_p = ee;
  return UCC_OK;
}

ucc_status_t ucc_ee_destroy(ucc_ee_h ee) {
  if (!ucc::host::valid_ee(ee)) {
    UCC_ERROR("ucc_ee_destroy: invalid execution engine handle");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc_context* ctx = ee->ctx;
  if (ctx != nullptr) {
    Guard g(ctx->lock, ctx->mt);
    if (ee->team != nullptr && ee->qhead != ee->qtail) {
      UCC_ERROR(
          "ucc_ee_destroy: %u triggered collectives have not completed yet",
          ee->qtail - ee->qhead);
      return UCC_ERR_INVALID_PARAM;
    }
    for (ucc_ee** p = &ctx->ees; *p != nullptr; p = &(*p)->next) {
      if (*p == ee) {
        *p = ee->next;
        break;
      }
    }
  }
  ee->magic = ucc::host::kDeadMagic;
  ucc::host::ee_free(ee);
  return UCC_OK;
}

ucc_status_t ucc_collective_triggered_post(ucc_ee_h ee, ucc_ev_t* ev) {
  if (!ucc::host::valid_ee(ee) || ev == nullptr) {
    UCC_ERROR("ucc_collective_triggered_post: invalid engine or event");
    return UCC_ERR_INVALID_PARAM;
  }
  if (ee->team == nullptr) {
    UCC_ERROR("ucc_collective_triggered_post: the engine's team is gone");
    return UCC_ERR_INVALID_PARAM;
  }
  const int64_t type = ucc::host::enum_bits(ev->ev_type);
  if (type != UCC_EVENT_COMPUTE_COMPLETE) {
    UCC_ERROR(
        "ucc_collective_triggered_post: event type %lld; a collective is "
        "triggered by UCC_EVENT_COMPUTE_COMPLETE",
        static_cast<long long>(type));
    return UCC_ERR_NOT_SUPPORTED;
  }
  Request* r = ucc::host::as_request(ev->req);
  if (r == nullptr || r->team != ee->team) {
    UCC_ERROR(
        "ucc_collective_triggered_post: the event's request is not a live "
        "request of the engine's team");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc_status_t st = ucc::host::postable(r, "ucc_collective_triggered_post");
  if (st != UCC_OK) return st;
  ucc_context* ctx = ee->ctx;
  Guard g(ctx->lock, ctx->mt);
  // A request is in the stream at most once (it is in progress until it
  // leaves), so the ring cannot overflow.
  const uint32_t slot = ee->qtail % ee->qcap;
  if (ee->cu != nullptr) {
    st = ucc::host::ee_cuda_trigger(ee, r, slot);
    if (st != UCC_OK) return st;
  }
  ee->q[slot] = r;
  ++ee->qtail;
  r->pub.status = UCC_INPROGRESS;
  ucc::host::emit(ee, UCC_EVENT_COLLECTIVE_POST, &r->pub);
  ucc::host::advance(ee);
  return UCC_OK;
}

ucc_status_t ucc_ee_get_event(ucc_ee_h ee, ucc_ev_t** ev) {
  if (!ucc::host::valid_ee(ee) || ev == nullptr) {
    UCC_ERROR("ucc_ee_get_event: invalid engine or event pointer");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc_context* ctx = ee->ctx;
  ucc::host::SpinLock none;
  Guard g(ctx != nullptr ? ctx->lock : none, ctx != nullptr && ctx->mt);
  if (ee->ohead != ee->otail) {
    const uint32_t slot = ee->out[ee->ohead++ % ee->nev];
    ee->ev_state[slot] = 2;
    *ev = &ee->ev[slot];
    return UCC_OK;
  }
  if (ee->overflowed && !ee->overflow_out) {
    ee->overflowed = false;
    ee->overflow_out = true;
    *ev = &ee->overflow_ev;
    return UCC_OK;
  }
  return UCC_ERR_NOT_FOUND;
}

ucc_status_t ucc_ee_ack_event(ucc_ee_h ee, ucc_ev_t* ev) {
  if (!ucc::host::valid_ee(ee) || ev == nullptr) {
    UCC_ERROR("ucc_ee_ack_event: invalid engine or event");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc_context* ctx = ee->ctx;
  ucc::host::SpinLock none;
  Guard g(ctx != nullptr ? ctx->lock : none, ctx != nullptr && ctx->mt);
  if (ev == &ee->overflow_ev && ee->overflow_out) {
    ee->overflow_out = false;
    return UCC_OK;
  }
  const auto at = reinterpret_cast<uintptr_t>(ev);
  const auto base = reinterpret_cast<uintptr_t>(ee->ev);
  if (at < base || (at - base) % sizeof(ucc_ev_t) != 0 ||
      (at - base) / sizeof(ucc_ev_t) >= ee->nev ||
      ee->ev_state[(at - base) / sizeof(ucc_ev_t)] != 2) {
    UCC_ERROR(
        "ucc_ee_ack_event: not an event of this engine that "
        "ucc_ee_get_event handed out");
    return UCC_ERR_INVALID_PARAM;
  }
  const auto slot = static_cast<uint32_t>((at - base) / sizeof(ucc_ev_t));
  ee->ev_state[slot] = 0;
  ee->ev_free[ee->nfree++] = slot;
  return UCC_OK;
}

ucc_status_t ucc_ee_set_event(ucc_ee_h ee, ucc_ev_t* ev) {
  if (!ucc::host::valid_ee(ee) || ev == nullptr || ee->ctx == nullptr) {
    UCC_ERROR("ucc_ee_set_event: invalid engine or event");
    return UCC_ERR_INVALID_PARAM;
  }
  Guard g(ee->ctx->lock, ee->ctx->mt);
  if (ee->itail - ee->ihead == ee->incap) {
    UCC_ERROR("ucc_ee_set_event: %u events are waiting already", ee->incap);
    return UCC_ERR_NO_RESOURCE;
  }
  ee->in[ee->itail++ % ee->incap] = *ev;
  return UCC_OK;
}

ucc_status_t ucc_ee_wait(ucc_ee_h ee, ucc_ev_t* ev) {
  if (!ucc::host::valid_ee(ee) || ee->ctx == nullptr) {
    UCC_ERROR("ucc_ee_wait: invalid engine");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc_context* ctx = ee->ctx;
  for (;;) {
    {
      Guard g(ctx->lock, ctx->mt);
      if (ee->ohead != ee->otail || (ee->overflowed && !ee->overflow_out)) {
        // The next event stays queued for ucc_ee_get_event; ev (if given)
        // gets a copy of it.
        if (ev != nullptr)
          *ev = ee->ohead != ee->otail ? ee->ev[ee->out[ee->ohead % ee->nev]]
                                       : ee->overflow_ev;
        return UCC_OK;
      }
      if (ee->team == nullptr || ee->qhead == ee->qtail) {
        // Nothing queued, nothing running: no event will ever come.
        return UCC_ERR_NOT_FOUND;
      }
    }
    ucc_context_progress(ctx);
  }
}

}  // extern "C"

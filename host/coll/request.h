// Collective requests: per-team pools (taken at team creation) and the
// context's list of posted requests whose completions progress reaps.
#pragma once

#include <cstddef>
#include <cstdint>

#include "host/api/objects.h"

namespace ucc::host {

inline size_t round64(size_t v) { return (v + 63) & ~size_t{63}; }

// The request behind a public handle, or nullptr for NULL or a handle
// that names no live request.
inline Request* as_request(ucc_coll_req_h h) {
  auto* r = reinterpret_cast<Request*>(h);
  if (r == nullptr || r->magic != kReqMagic) return nullptr;
  return r;
}

// Builds the team's request pool, each request with room for the
// v-arrays of a collective over the whole team (4 * size entries);
// false when out of memory.
bool request_pool_init(ucc_team* team, uint32_t n, uint32_t size);
void request_pool_fini(ucc_team* team);

// Execution engines (ee.cc), the context's lock held: advance every
// engine's stream (after reap(), before the callbacks run); forget the
// streams of a team being destroyed; detach every engine from a context
// being destroyed (their handles stay valid for ucc_ee_destroy).
uint64_t ee_progress(ucc_context* ctx);
void ee_team_gone(ucc_context* ctx, ucc_team* t);
void ee_context_gone(ucc_context* ctx);

// Whether a team takes collectives from this rank (valid, ready, this
// rank a member); UCC_ERR_INVALID_PARAM and one line naming `who`.
ucc_status_t team_usable(ucc_team* team, const char* who);
// Lowers `args` into a request of the team's pool (the context's lock
// held): the errors of ucc_collective_init.
ucc_status_t init_request(const ucc_coll_args_t& args, ucc_team* team,
                          Request** out);
// Gives a request back to its team's pool (the context's lock held).
void release_request(ucc_team* team, Request* r);

// Whether a request may be posted now: not in progress, and not posted
// before unless persistent (UCC_ERR_INVALID_PARAM, one line naming `who`).
ucc_status_t postable(const Request* r, const char* who);
// Posts it to the engine and links it on the context's posted list (the
// context's lock held); a task list, every member: UCC_OK,
// UCC_ERR_NO_MESSAGE (the daemon has gone) or UCC_ERR_NO_RESOURCE (the
// submission ring stayed full). `may_end`: a plain request that the
// inline engine finished during the call gets its status at once instead
// of being linked (ucc_collective_post; not an execution engine's posts).
ucc_status_t post_request(ucc_context* ctx, Request* r, bool may_end = false);

// The context's gate queue (the context's lock held): posts whose input
// is ready and that have nothing of their team before them go to the
// engine, in order; returns how many left the queue, and in *callbacks
// (linked by `next`, before those already there) the callbacks due for
// posts that failed on the way. And: a team's held posts leave the queue,
// ending with UCC_ERR_TIMED_OUT (the team is being torn down).
uint64_t release_gated(ucc_context* ctx, Request** callbacks);
void ungate_team(ucc_context* ctx, ucc_team* t);
// Removes a request from the context's posted list.
inline void unlink_posted(ucc_context* ctx, Request* r) {
  if (r->prev != nullptr)
    r->prev->next = r->next;
  else
    ctx->posted = r->next;
  if (r->next != nullptr) r->next->prev = r->prev;
  r->next = r->prev = nullptr;
  r->linked = false;
}
// Stores a request's final status for ucc_collective_test (release).
void publish_status(Request* r, ucc_status_t st);

// Copies finished collectives' statuses into their requests; returns how
// many finished, and in *callbacks those whose callback is due (linked by
// `next`), to be run by run_callbacks() once the context lock is released
// (a callback may call ucc_collective_finalize).
uint64_t reap(ucc_context* ctx, Request** callbacks);
void run_callbacks(Request* due);

// Team objects (team.cc): taken from the process's list of dead teams or
// the heap, and put back there (engine slot, pool and arrays released)
// with `magic` (kDeadMagic, or kReapedMagic from a context's destroy).
ucc_team* team_alloc(ucc_context* ctx);
void team_free(ucc_context* ctx, ucc_team* t, uint32_t magic = kDeadMagic);
// Creation has ended: what its exchanges needed (every member's address
// and confirmation, a split's stage) goes.
void team_exchange_done(ucc_team* t);
// A created team joins its context's live list (nteams counts it); and
// leaves it. The context's lock held.
void team_link_live(ucc_context* ctx, ucc_team* t);
void team_unlink_live(ucc_context* ctx, ucc_team* t);
// Destroys a ready (or failed) team: its posted requests are dropped
// (the engine ends them on close), it leaves the live list and its object
// goes to the dead list with `magic`. The context's lock held.
void team_teardown(ucc_context* ctx, ucc_team* t, uint32_t magic);

// Gives a team being created its size and rank: member arrays, request
// pool, engine slot (team.cc).
ucc_status_t team_join(ucc_team* t, uint32_t size, uint32_t rank);

// Split teams (team_split.cc): the membership exchange over the parent,
// then joining; and one bootstrap allgather over the parent, delivering
// the members' entries in team-rank order. UCC_INPROGRESS until done.
ucc_status_t split_membership(ucc_team* t);
ucc_status_t split_exchange(ucc_team* t, const void* src, void* dst,
                            size_t len);

// Sets the context's idle spin limit (UCC_POLL_SPIN=auto) for a team with
// `host_ranks` of its ranks on this host.
void context_fit_spin(ucc_context* ctx, uint32_t host_ranks);

// Translates and validates user arguments into a descriptor
// (coll_lower.cc). A v-collective's count and displacement arrays are
// copied into `varr` (the request's 4 * team size entries), which the
// descriptor then names. Logs one line and returns the public error on
// bad input.
ucc_status_t build_desc(const ucc_coll_args_t& args, const ucc_team& team,
                        uint64_t* varr, off::CollDesc* d);

}  // namespace ucc::host

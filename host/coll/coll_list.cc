// Task lists (ucc_collective_list_init, ucc_ext.h): several collectives of
// one team lowered together into requests of the team's pool, linked
// behind the first, which the caller holds. Posting, completion and
// finalize live with the single requests (coll.cc: post_request, reap,
// ucc_collective_finalize), which follow the links.
#include "host/coll/request.h"
#include "platform/os/log.h"

using ucc::host::Request;

extern "C" {

ucc_status_t ucc_collective_list_init(ucc_coll_args_t* args, uint32_t n,
                                      const ucc_coll_callback_t* cb,
                                      ucc_coll_req_h* request,
                                      ucc_team_h team) {
  if (args == nullptr || request == nullptr || n == 0) {
    UCC_ERROR(
        "ucc_collective_list_init: args and request must not be NULL, "
        "n at least 1");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc_status_t st = ucc::host::team_usable(team, "ucc_collective_list_init");
  if (st != UCC_OK) return st;
  for (uint32_t i = 0; i < n; ++i) {
    if ((args[i].mask & UCC_COLL_ARGS_FIELD_CB) && args[i].cb.cb != nullptr) {
      UCC_ERROR(
          "ucc_collective_list_init: member %u has its own callback; "
          "the list's is the one callback",
          i);
      return UCC_ERR_INVALID_PARAM;
    }
  }
  ucc_context* ctx = team->ctx;
  ucc::host::Guard g(ctx->lock, ctx->mt);
  Request* first = nullptr;
  Request* last = nullptr;
  bool persistent = true;
  for (uint32_t i = 0; i < n && st == UCC_OK; ++i) {
    Request* r = nullptr;
    st = ucc::host::init_request(args[i], team, &r);
    if (st != UCC_OK) break;
    persistent = persistent && r->persistent;
    if (first == nullptr)
      first = r;
    else
      last->list_next = r;
    r->lead = nullptr;  // linked below, once all are there
    last = r;
  }
  if (st != UCC_OK) {
    for (Request* m = first; m != nullptr;) {
      Request* next = m->list_next;
      ucc::host::release_request(team, m);
      m = next;
    }
    return st;
  }
  for (Request* m = first; m != nullptr; m = m->list_next) m->lead = first;
  first->list_n = n;
  first->persistent = persistent;
  first->has_cb = cb != nullptr && cb->cb != nullptr;
  if (first->has_cb) first->cb = *cb;
  *request = &first->pub;
  return UCC_OK;
}

}  // extern "C"

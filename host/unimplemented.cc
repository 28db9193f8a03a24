// Entry points of ucc.h this implementation does not provide yet. Each
// returns UCC_ERR_NOT_IMPLEMENTED with one log line, so a caller learns it
// at once instead of failing to link.
#include "host/objects.h"
#include "platform/os/log.h"

#define NOT_YET(fn)                             \
  do {                                          \
    UCC_ERROR("%s is not implemented yet", fn); \
    return UCC_ERR_NOT_IMPLEMENTED;             \
  } while (0)

extern "C" {

ucc_status_t ucc_ee_create(ucc_team_h, const ucc_ee_params_t*, ucc_ee_h*) {
  NOT_YET("ucc_ee_create");
}
ucc_status_t ucc_ee_destroy(ucc_ee_h) { NOT_YET("ucc_ee_destroy"); }
ucc_status_t ucc_ee_get_event(ucc_ee_h, ucc_ev_t**) {
  NOT_YET("ucc_ee_get_event");
}
ucc_status_t ucc_ee_ack_event(ucc_ee_h, ucc_ev_t*) {
  NOT_YET("ucc_ee_ack_event");
}
ucc_status_t ucc_ee_set_event(ucc_ee_h, ucc_ev_t*) {
  NOT_YET("ucc_ee_set_event");
}
ucc_status_t ucc_ee_wait(ucc_ee_h, ucc_ev_t*) { NOT_YET("ucc_ee_wait"); }
ucc_status_t ucc_collective_triggered_post(ucc_ee_h, ucc_ev_t*) {
  NOT_YET("ucc_collective_triggered_post");
}

}  // extern "C"

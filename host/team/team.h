// Team creation internals shared by team.cc, team_params.cc and
// team_boot.cc.
#pragma once

#include <ucc/api/ucc.h>

#include <cstddef>
#include <cstdint>

#include "host/api/objects.h"

namespace ucc::host {

// How a team's members find each other during creation.
enum class Boot : uint8_t {
  kSelf,     // a team of one: nothing to exchange
  kTeamOob,  // the user's team OOB
  kCtxOob,   // the context OOB, which spans exactly the team
  kMailbox,  // an ep_map over the context OOB's eps: the context mailbox
};

// What ucc_team_params_t says, checked (team_params.cc).
struct TeamPlan {
  uint32_t size = 0;
  uint32_t rank = 0;
  Boot boot = Boot::kSelf;
  base::Array<uint64_t> eps;  // size entries, team rank -> context ep
};

// Resolves size, rank, members and bootstrap route from the parameters.
// UCC_OK; UCC_ERR_INVALID_PARAM (one log line) for inconsistent or
// out-of-range fields; UCC_ERR_NOT_SUPPORTED when no bootstrap route
// exists; UCC_ERR_NO_MEMORY.
ucc_status_t team_plan(const ucc_team_params_t& p, const ucc_context& ctx,
                       TeamPlan* out);

// Mailbox bootstrap (team_boot.cc). mbox_begin: after team_join, sets the
// key and opens our request when a slot is free (else mbox_step retries);
// UCC_ERR_INVALID_PARAM when a creation of the same team (same members
// and id) is already under way here. mbox_step: one allgather of `len`
// bytes per member into dst (team-rank order), UCC_INPROGRESS until done,
// UCC_ERR_TIMED_OUT past the deadline, UCC_ERR_NO_MESSAGE for a message
// that fails validation. mbox_end: closes our request (idempotent).
ucc_status_t mbox_begin(ucc_team* t);
ucc_status_t mbox_step(ucc_team* t, uint32_t phase, const void* src, void* dst,
                       size_t len);
void mbox_end(ucc_team* t);

}  // namespace ucc::host

// Engine-side state of one team: its port (fabric plus message matching),
// the queue of validated descriptors not started yet (started in posting
// order), and a fixed set of instances, each running one collective.
#pragma once

#include <cstdint>

#include "device/engine/engine.h"
#include "device/run/alg.h"
#include "device/run/port.h"

namespace ucc::dev {

// One running collective. Its life: kRun (the algorithm moves data), then
// where the team reaches peers over a network, kFlush until what it sent
// has left the process (Fabric::tx_flushed), then
// on failure kNotify (aborts go to every other member of its set, so none
// waits for us forever), then with a global error type kAgree (the members
// agree on the worst status), then back to kFree. The completion word is
// written exactly once: when the final status is known, which for a local
// failure is before its aborts have all gone out.
struct Engine::Inst {
  enum class Phase : uint8_t { kFree, kRun, kFlush, kNotify, kAgree };
  Phase phase = Phase::kFree;
  bool global = false;    // error_type GLOBAL: agree on the status
  bool reported = false;  // completion word written
  bool res_inline = false;  // the result went to the channel's result area
  Status st = Status::kOk;
  uint64_t deadline = 0;     // 0: none
  uint32_t notify_next = 0;  // kNotify: next set position to tell
  uint32_t agree_dist = 1;   // kAgree: current dissemination distance
  bool agree_sent = false;
  const AlgInfo* alg = nullptr;
  uint8_t alg_id = 0;          // its catalogue id
  uint64_t* blocks = nullptr;  // 4 * team size: block tables (blocks.h)
  void* bounce = nullptr;      // slot_size bytes, or none (CollRun::bounce)
  void* cache = nullptr;       // kCacheBytes, with bounce (CollRun::cache)
  void* scratch = nullptr;     // CollRun::scratch: scratch_bytes, or none
  uint32_t scratch_bytes = 0;
  off::CollDesc d{};
  CollRun run{};
  alignas(64) unsigned char alg_state[kMaxAlgState];
};

// A descriptor this team has validated, chosen an algorithm for and
// prepared a run of. A persistent request posted again brings the same
// bytes but for its generation: take() then skips validation and
// selection, and start() copies the run. A v-collective's validity also
// depends on its user arrays: it is known only while they hold what they
// held at validation (arrays_hold() compares them), and start() copies the
// block tables they gave instead of reading them again.
struct Engine::Known {
  off::CollDesc d{};  // as validated
  const AlgInfo* alg = nullptr;
  uint8_t alg_id = 0;
  bool used = false;
  bool arrays = false;  // a v-collective: `vec` holds its arrays and tables
  uint16_t sig = 0;     // its signature (inst.cc, sig_of)
  CollRun run{};        // what prepare() fills
  // Its message where the algorithm's whole part at this rank is to send
  // it (AlgInfo::sends) and nothing in the descriptor asks for an
  // instance: admit() then sends it itself (Engine::send_known).
  bool direct = false;
  SendPlan sends{};
  // 8 * team size entries where the team has at most Team::kArrayRanks
  // members (else nullptr: its v-collectives are validated every time):
  // the arrays as read_arrays() copied them (4 * run.size at most), from
  // 4 * run.size on the block tables (blocks.h).
  uint64_t* vec = nullptr;
};

struct Engine::Team {
  enum class State : uint8_t { kFree, kOpen, kConnected };
  // Known descriptors by completion slot (a request's own slot), so that
  // the requests a program reposts in turn each keep theirs. Only
  // descriptors whose validity depends on nothing but their bytes, the
  // team, the host's registrations and (v-collectives, in teams of up to
  // kArrayRanks) the user arrays they name, and only while the
  // registrations have not shrunk (MemAccess::check_epoch) since they were
  // recorded.
  static constexpr uint32_t kKnown = 8;
  // Teams up to this size keep their v-collectives' arrays in their known
  // records (Known::vec: 4 KiB per record at this size).
  static constexpr uint32_t kArrayRanks = 64;
  Known known[kKnown];
  uint64_t known_epoch = 0;
  State state = State::kFree;
  uint32_t size = 0;
  uint32_t rank = 0;
  uint64_t seq = 0;  // ordered collectives started so far
  Port port;
  // Everything below that is sized by the team and the configuration, in
  // one block from team_open to team_close.
  base::Arena mem;
  off::CollDesc* queue = nullptr;  // team_queue entries
  uint64_t* qdeadline = nullptr;   // per queue entry: 0, or the deadline
  uint32_t qhead = 0, qtail = 0;   // free-running; qtail - qhead queued
  Inst* inst = nullptr;            // cfg.inflight instances
  uint8_t order[Port::kMaxLive];   // running instances, oldest first
  uint32_t nrun = 0;
  uint32_t ntimed = 0;            // queued or running with a deadline
  uint32_t future_aborts = 0;     // aborts kept for collectives not started
  uint32_t idle = 0;              // passes without progress in a row
  bool broken = false;            // a member is gone (Engine::fail_team)
  uint64_t last_check = 0;        // ns: the last look for lost members
  uint32_t busy_at = UINT32_MAX;  // place on the engine's busy list
  bool busy() const { return nrun != 0 || qtail != qhead; }
  // The next ordered collective's place in the sequence (started, ended
  // at once, or timed out before it started); the port then takes peers'
  // messages up to it as current.
  uint64_t next_seq() {
    port.set_started(++seq);
    return seq;
  }
};

}  // namespace ucc::dev

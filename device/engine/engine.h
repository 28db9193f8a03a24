// The device engine: takes descriptors from a channel, starts each team's
// collectives in posting order, runs up to `inflight` of them at once per
// team as resumable state machines over the team's port, and writes every
// collective's final status into the channel's completion words.
// Collectives may finish in any order.
//
// All memory is taken in init() and team_open(); progress() never
// allocates. The engine treats descriptors as untrusted: each is validated
// (validate.cc) before anything touches a buffer, and a bad one completes
// with an error status while the engine carries on.
//
// Threads: one thread at a time calls any member (inline mode: the host
// context serialises its callers).
#pragma once

#include <cstdint>

#include "device/run/alg.h"
#include "device/run/links.h"
#include "offload/caps.h"
#include "offload/channel.h"
#include "offload/coll_traits.h"
#include "offload/engine_config.h"
#include "offload/team_addr.h"
#include "platform/base/hot.h"
#include "platform/fabric/fabric.h"
#include "platform/mem/mem_access.h"

namespace ucc::dev {

// Where an engine runs, beside what the host asked of it (off::EngineConfig).
struct EngineEnv {
  // Optional: reduces DType::kGeneric (the host's user callbacks, inline
  // mode). Without it, reductions on generic types are refused with
  // kNotSupported; moving them needs no hook.
  off::UserReduce user_reduce;
  // How the engine reaches user buffers: direct (inline: in this process),
  // or, for an engine serving another process, cross-process into that
  // process with its registrations (plat::MemAccess::cross_process(pid,
  // &regs): the table must outlive the engine). Validation and every data
  // operation check buffers through it.
  plat::MemAccess mem;
  // Optional: how team members reach ranks on other hosts (TCP for an
  // inline engine, the wire between emulated NICs in firmware_sim). Must
  // outlive the engine; progressed by its owner on the engine's thread.
  // Without one, teams must sit on one host.
  plat::Net* net = nullptr;
  // Our identity in team addresses: the host (node) ranks on it share
  // memory with, and the process owning our segments.
  Where where;
};

class Engine {
 public:
  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine() { fini(); }

  // kInvalidParam for a configuration outside off::engine_config_ok,
  // kNoMemory when the team table cannot be allocated.
  Status init(const off::EngineConfig& cfg, const EngineEnv& env,
              off::Channel* ch);
  // lost: the host is gone without closing its teams (firmware_sim's
  // client died); their peers are told.
  void fini(bool lost = false);

  // --- team control (the host drives these during team creation) ----------
  // Reserves a team slot and opens this rank's transports (links.h); *addr
  // is what peers need to reach us. kNoResource when all slots are taken.
  Status team_open(uint32_t size, uint32_t rank, uint32_t* idx,
                   off::TeamAddr* addr);
  // Binds every member to its transport (addrs indexed by team rank).
  Status team_connect(uint32_t idx, const off::TeamAddr* addrs);
  // All members are connected: creation-time resources can go.
  void team_seal(uint32_t idx);
  // Frees the slot; collectives still queued or running on it complete
  // with kError.
  void team_close(uint32_t idx, bool lost = false);

  // Takes new descriptors and advances every team's current collective.
  // Returns how much happened (descriptors taken, messages moved,
  // collectives finished): 0 means the pass was idle.
  uint64_t progress();
  // An engine in the host's own process (inline): takes `d` now, after
  // whatever the channel holds, as drain() would take it from there; a
  // collective with nothing before it on its team starts at once, so
  // its first messages leave during the host's post.
  void submit(const off::CollDesc& d);
  // The same for a descriptor of this team it already knows (team.h,
  // Known), named by its completion slot: generation `gen` of the
  // engine's own validated copy. false when it does not know it (any
  // more): the host then submits the descriptor itself.
  bool submit_known(uint32_t team, uint32_t slot, uint32_t gen);

  // Ranks of an open team, or 0 when `idx` names none.
  uint32_t team_size(uint32_t idx) const;
  // Descriptors taken from the channel so far.
  uint64_t taken() const { return taken_; }
  // Of those, the ones sent at once without an instance (send_known).
  uint64_t sent_direct() const { return sent_direct_; }

  // Validation of one descriptor against the engine's state (validate.cc).
  // *largest, where not null: for the collectives with alike counts
  // (off::CollTraits::alike_counts) the largest block of the dst count
  // array it read, which selection goes by; else 0.
  Status validate(const off::CollDesc& d, uint64_t* largest = nullptr) const;

  // What this engine can do with its configuration (offload/caps.h);
  // filled by init().
  const off::EngineCaps& caps() const { return caps_; }

 private:
  struct Team;
  struct Inst;
  struct Known;

  uint64_t drain();  // moves submitted descriptors onto their teams
  void take(const off::CollDesc& d);
  // The record of the descriptor last validated for completion slot
  // `slot` of a connected team (team.h, Known), else nullptr; forgets
  // every record of the team once a registration has gone.
  Known* known_at(uint32_t team, uint32_t slot);
  // Whether a record still stands for its descriptor: a v-collective's
  // only while its arrays hold what they held at validation.
  bool arrays_hold(const Known& k) const;
  // Its record when `d` is that descriptor but for the generation (and
  // it stands).
  const Known* recall(const off::CollDesc& d);
  // Records `d` (validated, its team connected; `largest` as validate()
  // gave it) with the algorithm chosen for it.
  const Known* remember(Team& t, const off::CollDesc& d, uint64_t largest);
  // A v-collective's record: copies its arrays and the block tables they
  // give into k.vec. false where there is no room or one cannot be read.
  bool keep_arrays(Known& k) const;
  // A validated descriptor (`k`: its record, if any) as generation `gen`:
  // sent at once when its record says that is all it is, else started now
  // when nothing waits before it, else queued.
  void admit(Team& t, const off::CollDesc& d, uint32_t gen, const Known* k);
  // Whether a record whose algorithm planned its message (Known::sends)
  // may be sent without an instance on team t.
  bool direct_ok(const Team& t, const Known& k) const;
  // Sends a direct record's message as generation `gen` and completes it:
  // the collective in its place of the team's sequence, as start() would
  // run it. false, with nothing sent, when the peer's inbox has no room
  // or the buffer cannot be read: it then runs as any other.
  bool send_known(Team& t, const Known& k, uint32_t gen);
  uint64_t advance(Team& t);
  void set_busy(Team& t, uint32_t idx);  // onto the busy list
  void set_idle(Team& t);                // off it
  void fail_team(Team& t);    // a member is gone: everything ends in error
  bool lost_member(Team& t);  // at most every 100 ms: fabric peer_lost()

  // Instance life (inst.cc).
  uint64_t start_queued(Team& t, uint64_t now);
  // Starts `d` as generation `gen` on a free instance (one must be free:
  // nrun < inflight), with the algorithm `k` records, or (k nullptr) the
  // one selected now.
  void start(Team& t, const off::CollDesc& d, uint32_t gen, uint64_t deadline,
             const Known* k);
  uint64_t step(Team& t, Inst& in, uint64_t now);
  void alg_ended(Team& t, Inst& in, Status st, bool notify);
  void report(Inst& in, Status st);
  void retire(Team& t, uint32_t id);
  uint64_t notify(Team& t, Inst& in);
  uint64_t agree(Team& t, Inst& in);
  void check_aborts(Team& t);
  uint32_t set_rank(const Team& t, const off::CollDesc& d) const;
  // The algorithm selection picks for `d` on this team (*id: its id);
  // `largest` as validate() gave it.
  const AlgInfo* choose(const Team& t, const off::CollDesc& d, uint64_t largest,
                        uint8_t* id) const;
  // Fills what the validated descriptor alone decides of a run (sizes,
  // ranks, element and message sizes, the op) and returns its signature.
  uint16_t prepare(const Team& t, const off::CollDesc& d, CollRun* r) const;

  void fill_caps();

  off::EngineConfig cfg_{};
  EngineEnv env_{};
  off::EngineCaps caps_{};
  off::Channel* ch_ = nullptr;
  // The team in slot idx, or nullptr (out of range, or never opened).
  Team* team_at(uint32_t idx) const {
    return teams_ != nullptr && idx < cfg_.max_teams ? teams_[idx] : nullptr;
  }

  // The engine's tables (teams_, homes_, busy_), taken at init.
  base::Arena tables_;
  Team** teams_ = nullptr;  // max_teams slots, each made on first use
  // Per slot: the memory of its Team object, taken when a team first
  // opens in it and kept for the next (the team's own memory is its
  // arena, Team::mem, released when it closes).
  base::Arena* homes_ = nullptr;
  Store store_;
  // The teams with queued or running collectives (indices), in no
  // particular order; Team::busy_at is each one's place here.
  uint32_t* busy_ = nullptr;
  uint32_t nbusy_ = 0;
  uint64_t taken_ = 0;
  uint64_t sent_direct_ = 0;
};

}  // namespace ucc::dev

// The objects behind the public handles. Each starts with a magic number
// that is cleared when the object is destroyed, so a stale handle is
// reported (where the memory has not been reused) instead of followed.
//
// Threads: a context serialises its callers with `lock` when the library
// was initialised with UCC_THREAD_MULTIPLE; otherwise the caller does.
#pragma once

#include <ucc/api/ucc.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "host/boot/mailbox.h"
#include "host/config/config.h"
#include "host/exec/ee_cuda.h"
#include "host/exec/gpu_direct.h"
#include "host/exec/gpu_rdma.h"
#include "host/exec/gpu_stage.h"
#include "host/link/link.h"
#include "host/mem/mem_map.h"
#include "offload/channel.h"
#include "offload/engine_link.h"
#include "platform/base/arena.h"
#include "platform/os/backoff.h"

namespace ucc::host {

inline constexpr uint32_t kLibMagic = 0x4c494231;   // "LIB1"
inline constexpr uint32_t kCtxMagic = 0x43545831;   // "CTX1"
inline constexpr uint32_t kTeamMagic = 0x54454131;  // "TEA1"
inline constexpr uint32_t kReqMagic = 0x52455131;   // "REQ1"
inline constexpr uint32_t kEeMagic = 0x45454531;    // "EEE1"
inline constexpr uint32_t kDeadMagic = 0xdeadbeef;
// A team its context's destruction destroyed: a later ucc_team_destroy
// on the handle is quietly OK (MPI_Finalize order: the context goes with
// MPI_COMM_WORLD, communicators the program never freed after it).
inline constexpr uint32_t kReapedMagic = 0xdeadbea7;

// The integer a caller stored in a field of (C) enum type E. User input
// may hold any value, and loading one outside E's range as an E is
// undefined behaviour, so checks look at the bits.
template <typename E>
inline int64_t enum_bits(const E& e) {
  std::underlying_type_t<E> v;
  memcpy(&v, &e, sizeof(v));
  return static_cast<int64_t>(v);
}

// Maps an internal status onto the public one. Inline: every reaped
// collective goes through it.
inline ucc_status_t to_ucc(off::Status st) {
  switch (st) {
    case off::Status::kOk:
      return UCC_OK;
    case off::Status::kInProgress:
      return UCC_INPROGRESS;
    case off::Status::kNoResource:
      return UCC_ERR_NO_RESOURCE;
    case off::Status::kInvalidParam:
      return UCC_ERR_INVALID_PARAM;
    case off::Status::kNotSupported:
      return UCC_ERR_NOT_SUPPORTED;
    case off::Status::kNoMemory:
      return UCC_ERR_NO_MEMORY;
    case off::Status::kTimedOut:
      return UCC_ERR_TIMED_OUT;
    case off::Status::kNoMessage:
    case off::Status::kMessageTruncated:
    case off::Status::kError:
      break;
  }
  return UCC_ERR_NO_MESSAGE;
}

// Forks seen by this process image: a child's count is one more than its
// parent's was (a pthread_atfork handler, installed by ucc_init). A
// context remembers the count it was made under; in a forked child it
// no longer matches, and the context, which shares its segments and
// engine state with the parent's, refuses to be used (it would write into
// the parent's collectives).
extern std::atomic<uint32_t> g_fork_gen;
void install_fork_guard();
void forked_away_log(const char* who);

struct Request {
  ucc_coll_req_t pub;  // first: ucc_collective_test() reads pub.status
  uint32_t magic;
  uint32_t index;  // in the team's pool; completion slot = base + index
  ucc_team* team;
  uint32_t gen;  // generation of the latest post
  bool persistent;
  bool posted;  // posted at least once
  bool linked;  // on the context's list of posted requests
  ucc_coll_callback_t cb;
  bool has_cb;
  uint64_t* varr;  // 4 * team size entries: the v-arrays the desc names
  // Task lists (coll_list.cc): the list's first member leads it (its
  // handle is the list's) and counts the members that ended; every
  // member points at it. Standalone requests: lead nullptr, list_n 0.
  Request* lead;
  Request* list_next;
  uint32_t list_n, list_done;
  ucc_status_t list_st;  // the first error of a member, or UCC_OK
  off::CollDesc desc;
  GpuStage gpu;   // GPU buffers staged through host memory (gpu_stage.h)
  GpuDirectReq gd;  // or read and written in place (gpu_direct.h)
  GpuRdma gr;       // or registered with the device (gpu_rdma.h)
  // Posted, held back from the engine (the context's gate queue, below).
  Request* gate_next;
  Request* next;  // posted list, or free list while unused
  Request* prev;
};

// Serialises a context's callers in UCC_THREAD_MULTIPLE mode.
class SpinLock {
 public:
  void lock() {
    while (flag_.test_and_set(std::memory_order_acquire)) {
      plat::Backoff b(16);
      b.idle();
    }
  }
  void unlock() { flag_.clear(std::memory_order_release); }

 private:
  std::atomic_flag flag_ = ATOMIC_FLAG_INIT;
};

// Team creation's second exchange: whether each member connected, and a
// digest of the addresses it received, so that members who were told
// different things (an OOB that returns garbage, two processes claiming
// one ep) all fail instead of some ending up on a team the others do not
// share (team.cc).
struct Confirm {
  uint32_t magic;  // kConfirmMagic
  uint32_t ok;     // 1: connected
  uint64_t digest;
};
inline constexpr uint32_t kConfirmMagic = 0x434f4e46;  // "CONF"

class Guard {
 public:
  Guard(SpinLock& l, bool on) : l_(l), on_(on) {
    if (on_) l_.lock();
  }
  ~Guard() {
    if (on_) l_.unlock();
  }

 private:
  SpinLock& l_;
  bool on_;
};

}  // namespace ucc::host

struct ucc_lib_info {
  uint32_t magic;
  ucc_thread_mode_t thread_mode;
  uint64_t coll_types;
  char env_prefix[64];
  int ncontexts;
};

struct ucc_lib_config {
  char env_prefix[64];
  ucc::host::ConfigValues values;
};

struct ucc_context_config {
  ucc_lib_info* lib;
  ucc::host::ConfigValues values;
};

struct ucc_context {
  uint32_t magic;
  ucc_lib_info* lib;
  bool mt;  // UCC_THREAD_MULTIPLE: take `lock`
  ucc::host::SpinLock lock;
  ucc::host::ContextSettings settings;
  // UCC_CONTEXT_EXCLUSIVE (asked for explicitly): at most one team at a
  // time, and no lock (one thread uses it). Without the TYPE field a
  // context is SHARED. See docs/api.md.
  ucc_context_type_t type;
  bool has_oob;
  ucc_oob_coll_t oob;
  // With an OOB over more than one ep: the service mailbox through which
  // teams over an ep_map bootstrap (team_boot.cc).
  ucc::host::Mailbox mbox;
  // Teams over an ep_map waiting for a free mailbox request, in post order
  // (linked by boot_next): only the head may take the next free one.
  ucc_team* boot_queue;
  ucc_team* boot_queue_tail;
  uint64_t addr[2];  // what ucc_context_get_attr reports
  ucc::off::Channel ch;
  ucc::off::EngineLink* engine;  // inline engine or the daemon's (link.h)
  bool remote_engine;            // engine->remote(), kept: asked on every post
  ucc::plat::Backoff backoff;
  ucc::host::Request* posted;  // head of the posted list
  // Posts held back from the engine in post order (coll.cc): GPUDirect
  // posts until the GPU has produced their input, and every later post
  // of their teams behind them. gate_pass numbers the passes over it.
  ucc::host::Request* gated;
  ucc::host::Request* gated_tail;
  uint32_t gate_pass;
  int nteams;
  ucc_team* live_teams;     // the nteams teams, linked by live_next/prev
  uint32_t max_host_ranks;  // most ranks on our host in a team (back-off)
  // ucc_mem_map handles (mem_map.h), and the next context in the
  // process-wide list ucc_mem_unmap searches.
  ucc::host::MemMaps maps;
  ucc_context* maps_next;
  ucc_ee* ees;                // execution engines of its teams (ee.cc)
  ucc::host::GpuContext gpu;  // GPU buffers' copy stream (gpu_stage.h)
  uint32_t fork_gen;          // ucc::host::g_fork_gen when made
};

namespace ucc::host {

// A context used from a process forked after it was made (one log line
// naming `who`).
inline bool forked_away(const ucc_context* ctx, const char* who) {
  if (ctx->fork_gen == g_fork_gen.load(std::memory_order_relaxed)) return false;
  forked_away_log(who);
  return true;
}

}  // namespace ucc::host

// An execution engine (ee.cc): collectives triggered on it run in order,
// one after another, as on a stream; its events are fixed pools taken at
// ucc_ee_create.
struct ucc_ee {
  uint32_t magic;
  ucc_ee_type_t type;
  ucc_context* ctx;  // nullptr once its context is gone
  ucc_team* team;    // nullptr once its team is gone
  ucc_ee* next;      // the context's list
  // Triggered collectives in stream order: a ring of team->nreqs.
  ucc::host::Request** q;
  uint32_t qcap, qhead, qtail;
  bool head_posted;
  // Events handed out by ucc_ee_get_event: `nev` slots, their state (0
  // free, 1 queued, 2 with the user), a free stack and the out FIFO.
  ucc_ev_t* ev;
  uint8_t* ev_state;
  uint32_t* ev_free;
  uint32_t* out;
  uint32_t nev, nfree, ohead, otail;
  bool overflowed;    // an event was lost: UCC_EVENT_OVERFLOW is due
  bool overflow_out;  // the overflow event is with the user
  ucc_ev_t overflow_ev;
  // Events the user set (ucc_ee_set_event), in order.
  ucc_ev_t* in;
  uint32_t incap, ihead, itail;
  ucc::host::CudaEe* cu;  // UCC_EE_CUDA_STREAM (ee_cuda.h), else nullptr
  ucc::base::Arena mem;   // q, ev, ev_state, ev_free, out, in
};

struct ucc_team {
  enum class State : uint8_t {
    kMembership,  // split only: who joins, in which order (team_split.cc)
    kExchange,
    kConfirm,
    kReady,
    kFailed
  };
  uint32_t magic;
  State state;
  ucc_context* ctx;
  uint32_t size;
  uint32_t rank;
  uint64_t* eps;  // team rank -> context ep
  ucc_oob_coll_t oob;
  void* oob_req;
  uint32_t eng_idx;  // engine team slot
  ucc::off::TeamAddr my_addr;
  ucc::off::TeamAddr* addrs;
  ucc::host::Confirm my_ok;  // what this member says in the confirmation
  ucc::host::Confirm* oks;   // what every member said
  ucc_status_t fail_st;      // what create_test reports once kFailed
  uint64_t id;               // UCC_TEAM_PARAM_FIELD_ID, or 0
  bool has_id;
  ucc_post_ordering_t ordering;
  ucc::host::Request* reqs;
  uint64_t* varr;  // the requests' v-array copies (request_pool_init)
  uint32_t nreqs;
  uint32_t comp_base;
  ucc::host::Request* free_reqs;
  uint32_t gated;       // its posts in the context's gate queue
  uint32_t gate_pass;   // the last gate pass that left one of them there
  ucc_team* next_dead;  // link on the process's list of dead teams
  ucc_team* live_next;  // the context's live teams
  ucc_team* live_prev;
  // Split teams (ucc_team_create_from_parent): the parent team carries the
  // bootstrap exchanges instead of a user OOB.
  ucc_team* parent;         // nullptr for teams made from an OOB
  ucc_coll_req_h boot_req;  // the parent allgather under way
  uint32_t psize;           // parent team size
  uint32_t* members;        // team rank -> parent rank
  unsigned char* stage;     // psize * kBootEntry bytes for the exchanges
  uint64_t entry[2];        // our membership entry: included, key
  bool excluded;            // took part in the split without joining
  // Teams over an ep_map: the bootstrap runs through the context's
  // mailbox (team_boot.cc) instead of an OOB.
  bool via_mbox;
  // Several hosts, some with several members: node-aware algorithms run
  // (what the engine's links conclude from the same addresses).
  bool hierarchical;
  bool one_host;           // every member on one host (the linear rules' test)
  uint32_t cpu_share;      // members sharing this member's CPUs (at connect)
  ucc::host::MboxKey key;  // what our request and messages carry
  uint32_t req_slot;
  uint64_t req_nonce;    // our open request, 0 while none
  uint64_t* peer_nonce;  // team rank -> that member's request, 0 unknown
  uint8_t* boot_bits;    // team rank -> kSent/kGot bits per phase
  // Its memory, by lifetime (platform/base/arena.h): the members' eps
  // (team_join) until destroy; the members' addresses (addrs) until the
  // engine has connected to them, so that a member of a team of thousands
  // holds them only for that moment (docs/scale.md); what the rest of
  // creation exchanges (oks, peer_nonce, boot_bits: team_join) and a
  // split's stage and members (team_split.cc) until creation ends; the
  // request pool (reqs, varr) until the object is reused, so that stale
  // request handles read dead requests, not freed memory.
  ucc::base::Arena boot_mem;
  ucc::base::Arena addr_mem;
  ucc::base::Arena exch_mem;
  ucc::base::Arena split_mem;
  ucc::base::Arena pool_mem;
  uint64_t deadline_ns;  // creation fails with UCC_ERR_TIMED_OUT after it
  uint64_t destroy_deadline_ns;  // destroy stops waiting for collectives
  bool queued;                   // on the context's boot_queue
  ucc_team* boot_next;
  ucc::host::GpuDirectTeam* gd;  // GPU-direct flag page and tokens, or null
};

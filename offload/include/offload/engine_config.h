// What a host asks of its engine (the part of its configuration an engine
// runs with), and the one hook an inline engine may call back into the
// host. EngineConfig is a plain, fixed-layout struct: the inline link
// hands it to the engine in this process, the emu link sends it to
// firmware_sim inside kHello (proto.h) as it is. The daemon checks it with
// engine_config_ok() before using any field: it comes from a host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "offload/types.h"

namespace ucc::off {

// Limits of the team slots: at most kMaxTeamsLimit teams per engine, and
// max_teams * team_queue completion words (8 bytes each: 128 MiB of
// address space at the limit; the channel's pages are taken only as
// teams use them, channel.h).
inline constexpr uint32_t kMaxTeamsLimit = 65536;
inline constexpr uint64_t kMaxCompletionWords = uint64_t{1} << 24;
// UCC_MAX_TEAMS=auto: this many teams, fewer where the queue is so deep
// that the completion words would pass their limit.
inline constexpr uint32_t kAutoMaxTeams = 16384;

struct EngineConfig {
  uint32_t max_teams = 64;
  uint32_t team_queue = 256;       // collectives queued per team; power of 2
  uint32_t slot_size = 64 * 1024;  // message slot bytes; multiple of 64
  uint32_t nslots = 8;             // slots per peer inbox; power of 2, 2..64
  uint32_t inflight = 8;     // collectives running at once per team, 1..64
  uint32_t unexpected = 16;  // engine-wide store of unexpected messages
  // Selection: allreduce vectors of at least this many bytes use the
  // ring; bcast vectors and allgather / alltoall blocks of at least
  // cma_min bytes move by single copy (0: never).
  uint64_t allreduce_ring_min = 64 * 1024;
  uint64_t cma_min = 0;
  // Per collective: forced algorithm id, 0 = by the rules.
  uint8_t forced[static_cast<int>(CollType::kCount)] = {};
  // Selection: teams with all their ranks on one host, 4 to linear_ranks
  // of them, use the flat trees (linear bcast and reduce below linear_max
  // bytes; the linear barrier where crowded, below). 0: never.
  uint32_t linear_ranks = 8;
  // Selection: the CPUs this host's ranks run on (UCC_HOST_CPUS, 1..
  // kMaxHostCpus). A linear team with more ranks than this is crowded:
  // its barrier is the flat tree, else dissemination (caps.h, When).
  uint32_t cpus = 1;
  uint64_t linear_max = 64 * 1024;
  // Alltoall's own bound for the linear exchange on such teams: blocks
  // below it go straight to every rank at once, from it on the pairwise
  // exchange (the exchange keeps its lead over the pairwise one to larger
  // blocks than the other linear algorithms do; docs/perf/small_teams.md).
  uint64_t alltoall_linear_max = 1024 * 1024;
  // Selection: teams of at least wide_ranks ranks gather small blocks in
  // log2(n) rounds (Bruck's allgather) instead of the ring's n - 1 steps
  // (caps.h, When::kWide): below wide_max bytes per block on every such
  // team, below linear_max on those without the node-aware shape. 0:
  // never.
  uint32_t wide_ranks = 16;
  uint32_t wide_max = 512;
  // Selection: on wide teams without the node-aware shape, allreduce
  // runs Rabenseifner's algorithm from allreduce_rab_min bytes up to
  // allreduce_ring_per_rank bytes per team rank (teams of a power of two
  // ranks) or allreduce_ring_per_rank_fold (other sizes, where it folds
  // the ranks beyond the power of two in and out: two more whole-vector
  // transfers), before the ring, whose 2 (n - 1) steps are latency-bound
  // below it; recursive doubling below allreduce_rab_min
  // (docs/scale.md). A bound of 0: the ring from allreduce_ring_min.
  uint32_t allreduce_ring_per_rank = 24 * 1024;
  uint32_t allreduce_rab_min = 8192;
  uint32_t allreduce_ring_per_rank_fold = 3 * 1024;
  // Selection: alltoall blocks below wide_max bytes go by Bruck's
  // algorithm on every wide team, below alltoall_bruck_max on those
  // without the node-aware shape (caps.h, When::kWideFlat), before the
  // pairwise exchange (docs/scale.md).
  uint32_t alltoall_bruck_max = 1024;
  // Engine memory per running collective of a wide team (wide_ranks ranks
  // or more) for algorithms that hold partial results: reduce_scatter by
  // recursive halving runs where its whole vector fits (caps.h,
  // EngineCaps::scratch_kib). A multiple of 1 KiB, at most kMaxScratch.
  uint32_t wide_scratch = 1024 * 1024;
  // Selection: on teams with the node-aware shape (several hosts, some
  // with several ranks), alltoall blocks below this many bytes go by the
  // node-aware exchange (device/coll/hier_exchange.cc), packed per host,
  // before the pairwise exchange. 0: never.
  uint32_t alltoall_hier_max = 256 * 1024;
  // The same for allgather's packed exchange, before the node-aware ring.
  uint32_t allgather_hier_max = 1024 * 1024;
  // On wide teams of that shape, allgather blocks below this many bytes
  // go by the node-aware Bruck (hier_bruck). 0: never.
  uint32_t allgather_hier_bruck_max = 8 * 1024;
  // Selection: on wide teams without the node-aware shape, bcast and
  // reduce vectors below this many bytes go down and up a 4-nomial tree
  // instead of the binomial one (docs/scale.md). 0: never.
  uint32_t knomial_max = 16 * 1024;
};
static_assert(std::is_trivially_copyable_v<EngineConfig>);
static_assert(sizeof(EngineConfig) == 128);
static_assert(offsetof(EngineConfig, linear_max) == 64);
static_assert(offsetof(EngineConfig, alltoall_linear_max) == 72);
// The largest UCC_WIDE_SCRATCH (EngineCaps keeps it in KiB, 16 bits).
inline constexpr uint32_t kMaxScratch = 16u << 20;
// The scratch bytes of each running collective of a team of n ranks.
inline uint32_t wide_scratch(const EngineConfig& c, uint32_t n) {
  return c.wide_ranks != 0 && n >= c.wide_ranks ? c.wide_scratch : 0;
}
// The largest UCC_LINEAR_RANKS (EngineCaps keeps it in a byte).
inline constexpr uint32_t kMaxLinearRanks = 255;
// The largest UCC_HOST_CPUS (EngineCaps keeps it in 16 bits).
inline constexpr uint32_t kMaxHostCpus = 65535;
// The largest UCC_WIDE_RANKS (likewise).
inline constexpr uint32_t kMaxWideRanks = 65535;
static_assert(offsetof(EngineConfig, allreduce_ring_min) == 24);

// Whether every field is within the limits the host's knobs allow (and
// a daemon accepts).
bool engine_config_ok(const EngineConfig& c);

// A reduction the engine cannot do itself: DType::kGeneric, whose op is
// the user's callback, which only the host can reach (inline mode). The
// host hands one to an inline engine; without one the engine refuses to
// reduce generic types.
//
// fn(ctx, user_dt, dst, a, b, count): dst[i] = a[i] op b[i] for count
// elements of the generic type numbered user_dt (the descriptor's field).
// dst may be a or b exactly. Returns kOk, or an error (an unknown or
// destroyed type, a failing callback) that ends the collective. Called
// from the engine's progress, on the thread that runs it.
struct UserReduce {
  Status (*fn)(void* ctx, uint32_t user_dt, void* dst, const void* a,
               const void* b, uint64_t count) = nullptr;
  void* ctx = nullptr;
};

}  // namespace ucc::off

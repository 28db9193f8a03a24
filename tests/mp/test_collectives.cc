// Correctness of every supported collective across forked ranks, through
// the public API only.
//
// One gtest case per (family, configuration, team size): it forks the ranks
// once, creates one team, and runs the family's whole matrix of datatype x
// op x count x in-place x root inside it. Each rank fills its inputs from
// (seed, rank, index) (mp_util.h), poisons every output and checks every
// element of its own result against a serial reference it computes alone,
// plus the guards around each buffer, that inputs stay untouched, and that
// buffers the API leaves alone (non-root dst of reduce) stay poisoned.
// Failures are printed by the rank ("rank 2: allreduce float32 sum n=3
// ...: elem 5 got ... want ...") and turn into a nonzero exit.
//
// Families: the seven collectives, "persistent" (one request posted three
// times with new inputs each time) and "inflight" (many collectives posted
// before the first wait). Configurations select the allreduce algorithm and
// the shared-memory slot size (256-byte slots and 2 of them per peer force
// segmentation and back-pressure at small counts).
//
// The checks of one collective live in coll_check.h; the barrier,
// persistent and in-flight families in test_collectives_families.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/harness.h"
#include "tests/common/sanitizer.h"
#include "tests/mp/coll_check.h"
#include "tests/mp/mp_util.h"

namespace {

using ucct::DtypeInfo;
using ucct::mp::Report;
using ucct::mp::coll::Case;
using ucct::mp::coll::Checker;
using ucct::mp::coll::Config;
using ucct::mp::coll::Env;
using ucct::mp::coll::family_barrier;
using ucct::mp::coll::family_inflight;
using ucct::mp::coll::family_persistent;
using ucct::mp::coll::is_reduction;
using ucct::mp::coll::Slot;

// ~1 MiB of float32, odd. Under a sanitizer (tests/sanitize.sh runs every
// case) half of it: still 8 default slots of float32, and still one
// rank's block of an 8-rank allgather/alltoall over UCC_CMA_MIN (64 KiB).
#ifdef UCCT_SANITIZER
constexpr size_t kLarge = 131075;
#else
constexpr size_t kLarge = 262147;
#endif
const size_t kCounts[] = {0, 1, 7, 1000, 4099, kLarge};

const std::vector<const char*> kAllreduceOnly = {"allreduce", "inflight"};

const Config kConfigs[] = {
    {"default", {}, false, {}},
    {"rd", {{"UCC_ALLREDUCE_ALG", "rd"}}, false, kAllreduceOnly},
    // Radix 4: teams made wide from 2 ranks, so that they have the
    // scratch its rounds need (else every round is a pair's); a group of
    // four at 4 and 5 ranks (5: with a fold), a group and a pair at 8;
    // vectors beyond a slot (4 KiB: 1000 float32 go in groups, 1000
    // float64 and 4099 of any type in pairs).
    {"allreduce_knomial",
     {{"UCC_ALLREDUCE_ALG", "knomial"},
      {"UCC_WIDE_RANKS", "2"},
      {"UCC_SHM_SEG_SIZE", "4K"}},
     false,
     kAllreduceOnly},
    {"ring", {{"UCC_ALLREDUCE_ALG", "ring"}}, false, kAllreduceOnly},
    // Rabenseifner's: the reduce-scatter's halves and the allgather's
    // windows are balanced blocks of the vector, empty ones where count
    // < the power of two; folds at 3, 5, 6, 7 ranks.
    {"rabenseifner",
     {{"UCC_ALLREDUCE_ALG", "rabenseifner"}},
     false,
     kAllreduceOnly},
    // The node-aware allreduce forced on one host: its phases (reduce to
    // the host's first rank, recursive doubling among the hosts' first
    // ranks, bcast) name buffers of their own.
    {"hier", {{"UCC_ALLREDUCE_ALG", "hier"}}, false, kAllreduceOnly},
    // Its leaders by Rabenseifner's algorithm where there are 4 hosts or
    // more (tests/CMakeLists.txt runs it across hosts; on one host, as
    // hier).
    {"hier_rabenseifner",
     {{"UCC_ALLREDUCE_ALG", "hier_rabenseifner"}},
     false,
     kAllreduceOnly},
    {"auto_ringmin1k",
     {{"UCC_ALLREDUCE_ALG", "auto"}, {"UCC_ALLREDUCE_RING_MIN", "1K"}},
     false,
     kAllreduceOnly},
    {"barrier_rd", {{"UCC_BARRIER_ALG", "rd"}}, false, {"barrier"}},
    // The flat trees at every team size and vector size (by default only
    // one-host teams of 4 to 8 ranks below 64 KiB run them), and the
    // binomial ones where those are not the default any more.
    {"linear",
     {{"UCC_BARRIER_ALG", "linear"},
      {"UCC_BCAST_ALG", "linear"},
      {"UCC_REDUCE_ALG", "linear"}},
     false,
     {"barrier", "bcast", "reduce"}},
    {"trees",
     {{"UCC_BARRIER_ALG", "dissemination"},
      {"UCC_BCAST_ALG", "binomial"},
      {"UCC_REDUCE_ALG", "binomial"}},
     false,
     {"barrier", "bcast", "reduce"}},
    // The 4-nomial trees and the barrier's dissemination of radix 4 at
    // every team size (by default only wide teams run them; the trees
    // below UCC_KNOMIAL_MAX).
    {"knomial",
     {{"UCC_BARRIER_ALG", "kdissemination"},
      {"UCC_BCAST_ALG", "knomial"},
      {"UCC_REDUCE_ALG", "knomial"}},
     false,
     {"barrier", "bcast", "reduce"}},
    // The linear exchanges at every team size and block size (by default
    // only one-host teams of 4 to 8 ranks below 64 KiB run them; alltoall
    // below 1 MiB), and the
    // rings and pairwise exchange where those are not the default any more.
    {"exchange",
     {{"UCC_ALLGATHER_ALG", "linear"},
      {"UCC_ALLTOALL_ALG", "linear"},
      {"UCC_REDUCE_SCATTER_ALG", "linear"}},
     false,
     {"allgather", "alltoall", "reduce_scatter", "inflight"}},
    {"ring_pairwise",
     {{"UCC_ALLGATHER_ALG", "ring"},
      {"UCC_ALLTOALL_ALG", "pairwise"},
      {"UCC_REDUCE_SCATTER_ALG", "ring"}},
     false,
     {"allgather", "alltoall", "reduce_scatter"}},
    // Bruck's allgather and alltoall at every team size and block size
    // (by default only teams of UCC_WIDE_RANKS ranks run them, below
    // UCC_WIDE_MAX and UCC_LINEAR_MAX bytes per block): the allgather's
    // ranges that wrap past the last rank travel as two streams, the
    // alltoall's rounds pack blocks from src and dst; with two slots of
    // 256 bytes each stream is many messages, and a block spans several.
    // Alltoall in place runs the pairwise exchange instead.
    // Recursive halving for reduce_scatter on every team of 2 ranks or
    // more (wide, so that they have scratch), with room for the large
    // vector too; folds at 3, 5, 6, 7 ranks. Slots of 4 KiB, two per
    // peer: the fold and the first rounds are many messages from 1000
    // elements on.
    {"halving",
     {{"UCC_REDUCE_SCATTER_ALG", "halving"},
      {"UCC_WIDE_RANKS", "2"},
      {"UCC_WIDE_SCRATCH", "4M"},
      {"UCC_SHM_SEG_SIZE", "4K"},
      {"UCC_SHM_NSEGS", "2"}},
     false,
     {"reduce_scatter", "inflight"}},
    {"bruck",
     {{"UCC_ALLGATHER_ALG", "bruck"}, {"UCC_ALLTOALL_ALG", "bruck"}},
     false,
     {"allgather", "alltoall"}},
    {"bruck_smallseg",
     {{"UCC_ALLGATHER_ALG", "bruck"},
      {"UCC_ALLTOALL_ALG", "bruck"},
      {"UCC_SHM_SEG_SIZE", "256"},
      {"UCC_SHM_NSEGS", "2"}},
     true,
     {"allgather", "alltoall", "inflight"}},
    // The node-aware packed exchanges (alltoall's hier, allgather's
    // hier_exchange) at every block size, with two slots of 256 bytes:
    // each host's blocks packed into streams of many messages, a block
    // spanning several. On one host their first phase is the local copy
    // alone; tests/CMakeLists.txt runs them across hosts of 2 ranks
    // (uniform: 4, 8 ranks) and 2 + 1 (3, 5 ranks: the pairwise exchange
    // and the ring instead). Alltoall in place: the pairwise exchange.
    {"hier_smallseg",
     {{"UCC_ALLTOALL_ALG", "hier"},
      {"UCC_ALLGATHER_ALG", "hier_exchange"},
      {"UCC_SHM_SEG_SIZE", "256"},
      {"UCC_SHM_NSEGS", "2"}},
     true,
     {"alltoall", "allgather", "inflight"}},
    // The node-aware Bruck allgather (hier_bruck: Bruck's among each
    // place's ranks of the hosts, then the exchange within hosts) at every
    // block size, with two slots of 256 bytes: rounds of many messages, a
    // block spanning several. tests/CMakeLists.txt runs it across hosts of
    // 2 ranks (2, 3 and 4 hosts: ranges that wrap past the last host), in
    // block and round-robin placement; uneven hosts run flat Bruck.
    {"hier_bruck_smallseg",
     {{"UCC_ALLGATHER_ALG", "hier_bruck"},
      {"UCC_SHM_SEG_SIZE", "256"},
      {"UCC_SHM_NSEGS", "2"}},
     true,
     {"allgather", "inflight"}},
    // The linear exchanges' rounds, with two slots of 256 bytes: a rank's
    // sends run ahead of its receives as far as the inboxes take them,
    // also with many collectives in flight.
    {"exchange_smallseg",
     {{"UCC_ALLGATHER_ALG", "linear"},
      {"UCC_ALLTOALL_ALG", "linear"},
      {"UCC_REDUCE_SCATTER_ALG", "linear"},
      {"UCC_SHM_SEG_SIZE", "256"},
      {"UCC_SHM_NSEGS", "2"}},
     true,
     {"allgather", "alltoall", "reduce_scatter", "inflight"}},
    // Single copy for every size, and from its default threshold on (the
    // default config never single-copies). Emu engines never single-copy:
    // there both run the slot algorithms.
    {"cma1",
     {{"UCC_CMA", "auto"}, {"UCC_CMA_MIN", "1"}},
     false,
     {"bcast", "allgather", "alltoall", "persistent", "inflight"}},
    {"cma", {{"UCC_CMA", "auto"}}, false, {"bcast", "allgather", "alltoall"}},
    {"smallseg",
     {{"UCC_SHM_SEG_SIZE", "256"}, {"UCC_SHM_NSEGS", "2"}},
     true,
     {}},
    {"rd_smallseg",
     {{"UCC_ALLREDUCE_ALG", "rd"},
      {"UCC_SHM_SEG_SIZE", "256"},
      {"UCC_SHM_NSEGS", "2"}},
     true,
     kAllreduceOnly},
    {"ring_smallseg",
     {{"UCC_ALLREDUCE_ALG", "ring"},
      {"UCC_SHM_SEG_SIZE", "256"},
      {"UCC_SHM_NSEGS", "2"}},
     true,
     kAllreduceOnly},
    {"rabenseifner_smallseg",
     {{"UCC_ALLREDUCE_ALG", "rabenseifner"},
      {"UCC_SHM_SEG_SIZE", "256"},
      {"UCC_SHM_NSEGS", "2"}},
     true,
     kAllreduceOnly},
};

bool large_ok(const Env& e, const DtypeInfo& t, ucc_reduction_op_t op,
              bool inplace) {
  const bool main_type = t.dt == UCC_DT_INT32 || t.dt == UCC_DT_FLOAT32;
  if (e.cfg.small_slots) return main_type && op == UCC_OP_SUM && !inplace;
  return main_type || op == UCC_OP_SUM;
}

// Block per rank for allgather / alltoall / reduce_scatter: the large count
// is the total, so that N=8 stays ~1 MiB.
size_t block_of(size_t count, int n) {
  return count == kLarge ? (kLarge / n) | 1 : count;
}

std::vector<int> roots_for(size_t count, int n) {
  std::vector<int> r;
  if (count <= 1000) {
    for (int i = 0; i < n; ++i) r.push_back(i);
  } else {
    r.push_back(0);
    if (n > 1) r.push_back(n - 1);
  }
  return r;
}

void family_matrix(Env& e, ucc_coll_type_t coll) {
  const int n = e.ck.n();
  Slot s;
  const bool red = is_reduction(coll);
  for (const DtypeInfo* t : ucct::mp::supported_dtypes()) {
    for (ucc_reduction_op_t op : ucct::mp::kAllOps) {
      if (red ? !ucct::mp::matrix_op(*t, op) : op != UCC_OP_SUM) continue;
      for (size_t count : kCounts) {
        for (int inplace = 0; inplace < 2; ++inplace) {
          if (count == kLarge) {
            if (red && !large_ok(e, *t, op, inplace)) continue;
            if (!red && e.cfg.small_slots && t->dt != UCC_DT_INT32) continue;
          }
          if (coll == UCC_COLL_TYPE_BCAST && inplace) continue;
          const size_t k = coll == UCC_COLL_TYPE_ALLGATHER ||
                                   coll == UCC_COLL_TYPE_ALLTOALL ||
                                   coll == UCC_COLL_TYPE_REDUCE_SCATTER
                               ? block_of(count, n)
                               : count;
          const bool rooted =
              coll == UCC_COLL_TYPE_BCAST || coll == UCC_COLL_TYPE_REDUCE;
          std::vector<int> roots =
              rooted ? roots_for(count, n) : std::vector<int>{0};
          for (int root : roots) {
            s.c = Case{coll,
                       t,
                       op,
                       k,
                       root,
                       inplace != 0,
                       ((root + inplace) & 1) == 0};
            e.run(s);
            if (e.fatal) return;
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// gtest cases.

struct Param {
  const char* family;
  const Config* cfg;
  int n;
};

int run_family(const Param& p, ucct::Rank& r) {
  ucct::World w;
  w.env = p.cfg->env;
  if (w.init(r) != UCC_OK) return 1;
  Report rep(r.rank);
  Checker ck(r.size, r.rank, p.cfg->name, rep);
  Env e{w, ck, *p.cfg};
  const std::string f = p.family;
  if (f == "barrier")
    family_barrier(e);
  else if (f == "bcast")
    family_matrix(e, UCC_COLL_TYPE_BCAST);
  else if (f == "reduce")
    family_matrix(e, UCC_COLL_TYPE_REDUCE);
  else if (f == "allreduce")
    family_matrix(e, UCC_COLL_TYPE_ALLREDUCE);
  else if (f == "allgather")
    family_matrix(e, UCC_COLL_TYPE_ALLGATHER);
  else if (f == "alltoall")
    family_matrix(e, UCC_COLL_TYPE_ALLTOALL);
  else if (f == "reduce_scatter")
    family_matrix(e, UCC_COLL_TYPE_REDUCE_SCATTER);
  else if (f == "persistent")
    family_persistent(e);
  else if (f == "inflight")
    family_inflight(e);
  if (e.fatal) {
    std::fflush(nullptr);
    _exit(3);  // peers may be stuck in a collective: no collective teardown
  }
  return rep.failures() == 0 ? 0 : 2;
}

std::vector<Param> all_params() {
  static const char* const kAll[] = {
      "barrier",  "bcast",          "reduce",     "allreduce", "allgather",
      "alltoall", "reduce_scatter", "persistent", "inflight"};
  std::vector<Param> out;
  for (const Config& cfg : kConfigs) {
    for (int n : ucct::mp::matrix_ranks()) {
      if (cfg.families.empty()) {
        for (const char* f : kAll) out.push_back({f, &cfg, n});
      } else {
        for (const char* f : cfg.families) out.push_back({f, &cfg, n});
      }
    }
  }
  return out;
}

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.family << " cfg=" << p.cfg->name << " n=" << p.n;
}

class Collectives : public ::testing::TestWithParam<Param> {};

TEST_P(Collectives, Matrix) {
  const Param& p = GetParam();
  const char* why = "";
  if (ucct::gpu::mode() != ucct::gpu::Mode::kHost &&
      !ucct::gpu::available(&why))
    GTEST_SKIP() << "SKIPPED: UCCT_MEM asks for GPU buffers; no CUDA GPU here ("
                 << why << ")";
  const bool ok = ucct::run_ranks(
      p.n, [&](ucct::Rank& r) { return run_family(p, r); }, 180);
  EXPECT_TRUE(ok) << p.family << " cfg=" << p.cfg->name << " n=" << p.n
                  << ": see the ranks' lines above";
}

INSTANTIATE_TEST_SUITE_P(Mp, Collectives, ::testing::ValuesIn(all_params()),
                         [](const ::testing::TestParamInfo<Param>& i) {
                           return std::string(i.param.family) + "_" +
                                  i.param.cfg->name + "_n" +
                                  std::to_string(i.param.n);
                         });

}  // namespace

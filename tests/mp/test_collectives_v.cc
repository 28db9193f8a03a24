// Correctness of the rooted and v-collectives across forked ranks, through
// the public API only: gather, gatherv, scatter, scatterv, allgatherv,
// alltoallv, reduce_scatterv, fanin and fanout, in the matrix style of
// test_collectives.cc.
//
// One gtest case per (family, configuration, team size) forks the ranks
// once, creates one team and runs the family's whole matrix inside it:
// datatype (x op for reduce_scatterv) x count shape x in-place x root
// (in-place alltoallv with counts symmetric between each pair, MPI's rule).
// Each case also takes the next of a rotation of the argument spellings
// that must not change the result: the displacement layout (NULL, packed,
// gaps between blocks, reverse rank order; per rank or the same on all),
// 32- or 64-bit count and displacement arrays, and whether the buffers the
// API ignores are zeroed or poisoned memory. Every rank checks every
// element of its own result against a serial reference, that the gaps,
// guards and ignored buffers stay poisoned and that inputs and arrays stay
// untouched (vcoll_check.h).
//
// Count shapes (vcount()): the same block everywhere (0, 1, 7 elements:
// every root), every third rank contributing nothing, counts that differ
// per rank and per peer, and larger ones (1000 and 4099 elements: roots 0
// and n-1), plus ~70000 int8 and ~20000 float64 elements per block under
// the default 64 KiB slots so that blocks are segmented there too. The
// "smallseg" configuration (256-byte slots, 2 per peer) segments and
// back-pressures everything beyond a few elements.
//
// Families: the nine collectives, and "vpersistent" (persistent requests
// posted three times with new inputs; every collective in flight at once),
// in test_collectives_v_families.cc with fanin and fanout. At the end, a
// reproduction of a library bug that the matrix steps around meanwhile
// (CollectivesVBug).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/vcoll_check.h"

namespace {

using ucct::DtypeInfo;
using ucct::mp::Report;
using ucct::mp::coll::Config;
using ucct::mp::vcoll::Counts;
using ucct::mp::vcoll::Displs;
using ucct::mp::vcoll::VCase;
using ucct::mp::vcoll::VChecker;
using ucct::mp::vcoll::VEnv;
using ucct::mp::vcoll::VSlot;

const Config kConfigs[] = {
    {"default", {}, false, {}},
    {"smallseg",
     {{"UCC_SHM_SEG_SIZE", "256"}, {"UCC_SHM_NSEGS", "2"}},
     true,
     {}},
    // The linear exchanges at every team size and block size (by default
    // allgatherv and reduce_scatterv run them on one-host teams of 4 to 8
    // ranks whose largest block is below 64 KiB, alltoallv there at every
    // size), with
    // blocks of different sizes to and from each peer, also in rounds of
    // 256-byte segments that end at different rounds per peer.
    {"exchange",
     {{"UCC_ALLGATHERV_ALG", "linear"},
      {"UCC_ALLTOALLV_ALG", "linear"},
      {"UCC_REDUCE_SCATTERV_ALG", "linear"}},
     false,
     {"allgatherv", "alltoallv", "reduce_scatterv", "vpersistent"}},
    {"exchange_smallseg",
     {{"UCC_ALLGATHERV_ALG", "linear"},
      {"UCC_ALLTOALLV_ALG", "linear"},
      {"UCC_REDUCE_SCATTERV_ALG", "linear"},
      {"UCC_SHM_SEG_SIZE", "256"},
      {"UCC_SHM_NSEGS", "2"}},
     true,
     {"allgatherv", "alltoallv", "reduce_scatterv", "vpersistent"}},
    // The ring and pairwise exchange where the linear ones are the default.
    {"ring_pairwise",
     {{"UCC_ALLGATHERV_ALG", "pairwise"},
      {"UCC_ALLTOALLV_ALG", "pairwise"},
      {"UCC_REDUCE_SCATTERV_ALG", "ring"}},
     false,
     {"allgatherv", "alltoallv", "reduce_scatterv"}},
};

struct Shape {
  Counts counts;
  size_t base;
  bool all_roots;   // else roots 0 and n-1
  bool all_dtypes;  // data movement: every datatype, not only move_dtype()
};

// Gather and scatter take the kSame shapes only (one block size).
const Shape kShapes[] = {
    {Counts::kSame, 0, true, false},
    {Counts::kSame, 1, true, false},
    {Counts::kSame, 7, true, false},
    {Counts::kZeroThird, 2, true, false},
    {Counts::kVaried, 0, true, true},
    {Counts::kVaried, 1000, false, false},
    {Counts::kZeroThird, 4099, false, true},
    {Counts::kSame, 4099, false, true},
};

struct Large {
  ucc_datatype_t dt;
  Shape shape;
};
// Segmented under the default slots; default configuration only.
const Large kLarge[] = {
    {UCC_DT_INT8, {Counts::kVaried, 70000, false, false}},
    {UCC_DT_FLOAT64, {Counts::kZeroThird, 20000, false, false}},
    {UCC_DT_INT8, {Counts::kSame, 70001, false, false}},
};

bool regular(ucc_coll_type_t c) {
  return c == UCC_COLL_TYPE_GATHER || c == UCC_COLL_TYPE_SCATTER;
}

// Data movement hardly depends on the datatype: these four take every
// shape, the others those marked all_dtypes (at roots 0 and n-1).
bool move_dtype(const DtypeInfo& t) {
  return t.dt == UCC_DT_INT8 || t.dt == UCC_DT_INT32 ||
         t.dt == UCC_DT_FLOAT64 || t.dt == UCC_DT_BFLOAT16;
}

// reduce_scatterv: every op defined for int32 and float32, sum elsewhere.
std::vector<std::pair<const DtypeInfo*, ucc_reduction_op_t>> red_combos() {
  std::vector<std::pair<const DtypeInfo*, ucc_reduction_op_t>> out;
  for (const DtypeInfo* t : ucct::mp::supported_dtypes()) {
    const bool main = t->dt == UCC_DT_INT32 || t->dt == UCC_DT_FLOAT32;
    for (ucc_reduction_op_t op : ucct::mp::kAllOps) {
      if (!ucct::mp::matrix_op(*t, op)) continue;
      if (main || op == UCC_OP_SUM) out.push_back({t, op});
    }
  }
  return out;
}

class Matrix {
 public:
  Matrix(VEnv& e, ucc_coll_type_t coll) : e_(e), coll_(coll) {}

  // Runs shape sh for (t, op) with and without in place, at its roots.
  void shape(const DtypeInfo* t, ucc_reduction_op_t op, const Shape& sh) {
    const int n = e_.ck.n();
    if (regular(coll_) && sh.counts != Counts::kSame) return;
    std::vector<int> roots{0};
    if (ucct::mp::vcoll::is_rooted(coll_)) {
      roots.clear();
      for (int r = 0; r < n; ++r) {
        if (sh.all_roots || r == 0 || r == n - 1) roots.push_back(r);
      }
    }
    for (int inplace = 0; inplace < 2; ++inplace) {
      for (int root : roots) {
        VCase c{};
        c.coll = coll_;
        c.t = t;
        c.op = op;
        c.counts = sh.counts;
        c.base = sh.base;
        c.displs = static_cast<Displs>(idx_ % ucct::mp::vcoll::kDisplModes);
        c.count64 = (idx_ >> 2) & 1;
        c.displ64 = (idx_ >> 3) & 1;
        c.mixed = (idx_ >> 4) & 1;
        c.ignored_bufs = (idx_ / 3) & 1;
        c.root = root;
        c.inplace = inplace != 0;
        ++idx_;
        slot_.c = c;
        e_.run(slot_);
        if (e_.fatal) return;
      }
    }
  }

  void run() {
    if (coll_ == UCC_COLL_TYPE_REDUCE_SCATTERV) {
      for (const auto& [t, op] : red_combos()) {
        for (const Shape& sh : kShapes) {
          shape(t, op, sh);
          if (e_.fatal) return;
        }
      }
    } else {
      for (const DtypeInfo* t : ucct::mp::supported_dtypes()) {
        for (Shape sh : kShapes) {
          if (!move_dtype(*t)) {
            if (!sh.all_dtypes) continue;
            sh.all_roots = false;
          }
          shape(t, UCC_OP_SUM, sh);
          if (e_.fatal) return;
        }
      }
    }
    if (e_.cfg.small_slots) return;
    for (const Large& l : kLarge) {
      const DtypeInfo* t = ucct::dtype_info(l.dt);
      if (coll_ == UCC_COLL_TYPE_REDUCE_SCATTERV)
        t = ucct::dtype_info(l.dt == UCC_DT_INT8 ? UCC_DT_INT32 : l.dt);
      shape(t, UCC_OP_SUM, l.shape);
      if (e_.fatal) return;
    }
  }

 private:
  VEnv& e_;
  ucc_coll_type_t coll_;
  VSlot slot_;
  size_t idx_ = 0;  // rotates layouts, widths and ignored-buffer spelling
};

// ---------------------------------------------------------------------------
// gtest cases.

struct Family {
  const char* name;
  ucc_coll_type_t coll;  // UCC_COLL_TYPE_LAST: vpersistent
};

const Family kFamilies[] = {
    {"gather", UCC_COLL_TYPE_GATHER},
    {"gatherv", UCC_COLL_TYPE_GATHERV},
    {"scatter", UCC_COLL_TYPE_SCATTER},
    {"scatterv", UCC_COLL_TYPE_SCATTERV},
    {"allgatherv", UCC_COLL_TYPE_ALLGATHERV},
    {"alltoallv", UCC_COLL_TYPE_ALLTOALLV},
    {"reduce_scatterv", UCC_COLL_TYPE_REDUCE_SCATTERV},
    {"fanin", UCC_COLL_TYPE_FANIN},
    {"fanout", UCC_COLL_TYPE_FANOUT},
    {"vpersistent", UCC_COLL_TYPE_LAST},
};

struct Param {
  const Family* family;
  const Config* cfg;
  int n;
};

// Sets up a world for cfg on rank r, runs body in it and gives the rank's
// exit code.
template <typename Body>
int in_world(const Config& cfg, ucct::Rank& r, Body body) {
  ucct::World w;
  w.env = cfg.env;
  if (w.init(r) != UCC_OK) return 1;
  Report rep(r.rank);
  VChecker ck(r.size, r.rank, cfg.name, rep);
  VEnv e{w, ck, cfg};
  body(e);
  if (e.fatal) {
    std::fflush(nullptr);
    _exit(3);  // peers may be stuck in a collective: no collective teardown
  }
  return rep.failures() == 0 ? 0 : 2;
}

int run_family(const Param& p, ucct::Rank& r) {
  return in_world(*p.cfg, r, [&](VEnv& e) {
    const ucc_coll_type_t c = p.family->coll;
    if (c == UCC_COLL_TYPE_LAST) {
      ucct::mp::vcoll::family_vpersistent(e);
    } else if (c == UCC_COLL_TYPE_FANIN || c == UCC_COLL_TYPE_FANOUT) {
      ucct::mp::vcoll::family_fan(e, c);
    } else {
      Matrix m(e, c);
      m.run();
    }
  });
}

std::vector<Param> all_params() {
  std::vector<Param> out;
  for (const Config& cfg : kConfigs) {
    for (int n : ucct::mp::matrix_ranks()) {
      for (const Family& f : kFamilies) {
        bool in = cfg.families.empty();
        for (const char* name : cfg.families) in |= strcmp(name, f.name) == 0;
        if (in) out.push_back({&f, &cfg, n});
      }
    }
  }
  return out;
}

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.family->name << " cfg=" << p.cfg->name << " n=" << p.n;
}

class CollectivesV : public ::testing::TestWithParam<Param> {};

TEST_P(CollectivesV, Matrix) {
  const Param& p = GetParam();
  const char* why = "";
  if (ucct::gpu::mode() != ucct::gpu::Mode::kHost &&
      !ucct::gpu::available(&why))
    GTEST_SKIP() << "SKIPPED: UCCT_MEM asks for GPU buffers; no CUDA GPU here ("
                 << why << ")";
  const bool ok = ucct::run_ranks(
      p.n, [&](ucct::Rank& r) { return run_family(p, r); }, 180);
  EXPECT_TRUE(ok) << p.family->name << " cfg=" << p.cfg->name << " n=" << p.n
                  << ": see the ranks' lines above";
}

INSTANTIATE_TEST_SUITE_P(Mp, CollectivesV, ::testing::ValuesIn(all_params()),
                         [](const ::testing::TestParamInfo<Param>& i) {
                           return std::string(i.param.family->name) + "_" +
                                  i.param.cfg->name + "_n" +
                                  std::to_string(i.param.n);
                         });

// Regression: in-place allgatherv where a rank's empty block starts where
// another rank's block of several segments starts ({300, 0, 302} int8 with
// 256-byte slots, {20000, 0, 20002} float64 with the default ones). The
// pairwise exchange once took the two blocks for the same bytes (it
// compared start addresses) and let rank 1 receive rank 2's block only as
// far as its own zero-byte send had gone: one segment, then a hang.
// Expected: every rank's dst holds all three blocks.
TEST(CollectivesVRegression, AllgathervInPlaceEmptyBlock) {
  for (const Config& cfg : kConfigs) {
    const bool ok = ucct::run_ranks(
        3,
        [&](ucct::Rank& r) {
          return in_world(cfg, r, [&](VEnv& e) {
            e.timeout_s = 5;
            VSlot s;
            s.c = VCase{UCC_COLL_TYPE_ALLGATHERV,
                        ucct::dtype_info(cfg.small_slots ? UCC_DT_INT8
                                                         : UCC_DT_FLOAT64),
                        UCC_OP_SUM,
                        Counts::kZeroThird,
                        cfg.small_slots ? size_t{300} : size_t{20000},
                        Displs::kNull,
                        false,
                        false,
                        false,
                        0,
                        true,
                        false};
            e.run(s);
          });
        },
        60);
    EXPECT_TRUE(ok) << "in-place allgatherv with an empty block, n=3 cfg="
                    << cfg.name << ": see the ranks' lines above";
  }
}

// Allgatherv and reduce_scatterv select by their largest block, which
// every member sees alike: here (4 ranks, float32, blocks 16382, 0, 16384
// and 16385 elements) ranks 0 and 1 hold blocks below UCC_LINEAR_MAX (64
// KiB) and ranks 2 and 3 blocks at or above it, so a choice by a rank's
// own block would put the linear exchange on two ranks and the default on
// the other two; likewise with UCC_LINEAR_MAX=1K, 2 slots of 256 bytes and
// blocks of 254, 0, 256 and 257 elements. Expected: every rank completes
// with the right result. (With a choice by a rank's own block
// reduce_scatterv fails here, its ring's messages are not the linear
// one's; allgatherv's pairwise and linear messages happen to pair up, so
// for it this checks the results.)
TEST(CollectivesVSelect, MembersAgreeWhereOnlySomeBlocksAreLarge) {
  static_assert(16384 * 4 == 65536, "the default UCC_LINEAR_MAX");
  const Config small{"linearmax1k_smallseg",
                     {{"UCC_LINEAR_MAX", "1K"},
                      {"UCC_SHM_SEG_SIZE", "256"},
                      {"UCC_SHM_NSEGS", "2"}},
                     true,
                     {}};
  struct Run {
    const Config* cfg;
    size_t base;  // blocks base, 0, base + 2, base + 3: straddling the max
  };
  const Run runs[] = {{&kConfigs[0], 16382}, {&small, 254}};
  for (const Run& run : runs)
    for (ucc_coll_type_t coll :
         {UCC_COLL_TYPE_ALLGATHERV, UCC_COLL_TYPE_REDUCE_SCATTERV}) {
      const Config& cfg = *run.cfg;
      const bool ok = ucct::run_ranks(
          4,
          [&](ucct::Rank& r) {
            return in_world(cfg, r, [&](VEnv& e) {
              e.timeout_s = 5;
              VSlot s;
              s.c = VCase{coll,       ucct::dtype_info(UCC_DT_FLOAT32),
                          UCC_OP_SUM, Counts::kZeroThird,
                          run.base,   Displs::kNull,
                          false,      false,
                          false,      0,
                          false,      false};
              e.run(s);
            });
          },
          60);
      EXPECT_TRUE(ok) << ucct::coll_name(coll) << " cfg=" << cfg.name
                      << ": see the ranks' lines above";
    }
}

}  // namespace

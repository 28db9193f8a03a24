// ucc_perftest's configuration and its command line (perftest_args.cc).
#pragma once

#include <ucc/api/ucc.h>

#include <cstdint>

#include "tests/common/types.h"

namespace ucct::perf {

struct CollSpec {
  ucc_coll_type_t type;
  bool rooted;
  bool reduction;
  bool has_inplace;
  bool total_bytes;   // data bytes = size * count * elem (else count * elem)
  int busbw_num_nm1;  // busbw factor = num_nm1 * (n - 1) / n, or 1 when 0
  // The collective whose buffers, inputs and result this one has: itself,
  // or for allgatherv, alltoallv and reduce_scatterv the regular one (every
  // block count elements, packed in rank order, through the v arrays).
  ucc_coll_type_t base;
};

// Sizes above this (count * elem) are "large": fewer iterations by
// default.
inline constexpr uint64_t kLargeBytes = 1 << 20;

// The spec of a collective perftest runs, or nullptr.
const CollSpec* spec_of(ucc_coll_type_t t);

struct Config {
  const CollSpec* coll = nullptr;
  const DtypeInfo* dt = nullptr;
  ucc_reduction_op_t op = UCC_OP_SUM;
  uint64_t min_count = 2;
  uint64_t max_count = 4ull << 20;
  uint64_t factor = 2;
  int n_iter = -1;    // -1: 100 small / 20 large
  int n_warmup = -1;  // -1: 10 small / 2 large
  bool inplace = false;
  bool full = false;
  bool verbose = false;  // -v: the team's algorithm selection, alg column
  uint64_t root = 0;
  int ranks = 4;
  int timeout_s = 600;
  bool bind = true;        // --bind core (default) / none
  bool overlap = false;    // --overlap: also post / compute / wait
  bool compare = false;    // --compare mpi: MPI's collective beside ours
  // --compare-barrier: which library's barrier precedes and follows each
  // of the two timed collectives of an iteration.
  enum class Between : uint8_t {
    kMixed,  // MPI_Barrier before MPI's, ours before ours (default)
    kOwn,    // each its own library's, before and after
    kUcc,    // ours around both
    kMpi     // MPI_Barrier around both
  };
  Between between = Between::kMixed;
  // --start window: every timed collective starts at one instant on every
  // rank, read from the clock they share (perftest_window.h), instead of
  // when each rank leaves the barrier before it.
  bool window = false;
  bool cuda = false;       // -m cuda: src and dst in GPU memory
  bool under_mpi = false;  // started by mpirun (not a command-line flag)
  // CPUs the ranks of this host share: the launching process's affinity
  // before any rank is bound, or under mpirun the CPUs online (not a
  // command-line flag).
  int cpus = 1;
  // Across hosts without MPI: `nodes` perftests, this one `node_rank`,
  // each forking `ranks` ranks, meet at `bootstrap` (HOST:PORT, where
  // node 0 listens) through ucc_ext_oob_tcp_create.
  int nodes = 1;
  int node_rank = 0;
  const char* bootstrap = nullptr;
  uint64_t bootstrap_key = 0;
  int total_ranks() const { return nodes * ranks; }
};

// Fills *cfg from the command line. Returns -1 to go on, or the exit
// status (after printing usage or an error).
int parse_args(int argc, char** argv, Config* cfg);

}  // namespace ucct::perf

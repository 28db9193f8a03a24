// ucc_simperf's simulated job: the ranks' shared state in the one process
// SimGrid runs them in, and the OOB they bootstrap through.
//
// The OOB stands for the runtime's (PMIx, MPI's): an allgather that moves
// every rank's bytes to every rank through process memory, and charges
// each rank in simulated time what a Bruck allgather of those bytes would
// take over the platform's first route (ceil(log2 n) latencies plus
// (n - 1) * len / bandwidth). It blocks its caller until every rank has
// called it: UCC's OOB is non-blocking, but every rank calls the same
// allgathers in the same order, and a blocking simulated call costs no
// polling.
//
// Threads: SimGrid's actors, one at a time.
#pragma once

#include <ucc/api/ucc.h>

#include <cstdint>
#include <simgrid/s4u/Barrier.hpp>
#include <vector>

namespace ucct::sim {

struct Job {
  int n = 0;
  simgrid::s4u::BarrierPtr barrier;
  // The OOB's cost model (Job::set_route).
  double lat_s = 0;
  double bw_bps = 0;
  // What the OOB carried: rounds, and bytes per rank over them.
  uint64_t oob_rounds = 0;
  uint64_t oob_bytes = 0;
  // n * len of the allgathers under way: round k in oob_buf[k % 2] (a
  // rank posts round k + 1 only after taking round k's result, so round
  // k + 2 never overwrites what a rank has still to take).
  std::vector<char> oob_buf[2];

  // The simulated seconds a Bruck allgather of len bytes per rank takes.
  double allgather_s(size_t len) const;
};

// One rank's end of the OOB (ucc_oob_coll_t::coll_info).
struct RankOob {
  Job* job;
  int rank;
  // This rank's allgathers so far, and the one to finish at its test:
  // its result is copied into `rbuf` then, not when every rank has
  // contributed, so that the ranks of a big job do not all hold the
  // whole result at one moment (the library frees it soon after;
  // docs/scale.md).
  uint64_t round = 0;
  void* rbuf = nullptr;
  size_t len = 0;
};

// The OOB for a rank, ready for the context's and the team's params.
ucc_oob_coll_t make_oob(RankOob* r);

}  // namespace ucct::sim

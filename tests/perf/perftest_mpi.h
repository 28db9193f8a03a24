// ucc_perftest under MPI: bootstrap from mpirun, and the MPI counterpart of
// each collective for the side-by-side comparison (--compare mpi).
//
// Built with MPI when CMake finds it (perftest_mpi.cc); otherwise
// perftest_nompi.cc gives the same functions, which say MPI is missing.
//
// Two ways in:
//   mpirun -np 4 ucc_perftest -c allreduce ...   each MPI process is a rank;
//                                                the OOB is MPI_Iallgather
//   ucc_perftest -N 4 --compare mpi ...          re-executes itself under
//                                                mpirun -np 4 (same args)
//
// Threads: the perftest's single thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tests/common/harness.h"
#include "tests/perf/perftest_args.h"

namespace ucct::perf {

// True when this binary has the MPI side.
bool mpi_built();

// The world size when mpirun (Open MPI, MPICH, or a PMI/PMIx launcher)
// started this process, else 0. Reads the environment only.
int mpi_launched_size();

// What fn returns when it failed but every rank got to its end (a wrong
// result): the job then ends normally with this status.
constexpr int kRanksDone = 2;

// Runs fn as this MPI process's rank: MPI_Init, a Rank whose OOB is
// MPI_Iallgather over a private communicator, fn, MPI_Finalize. Any other
// nonzero result aborts the job with that status (the others may be waiting
// in a collective). Returns the exit status: the largest over the ranks.
int mpi_run(const std::function<int(Rank&)>& fn);

// Replaces this process with `mpirun -np <cfg.ranks> <binding> <this binary
// and argv>`; returns an exit status only when that fails.
int mpi_relaunch(int argc, char** argv, const Config& cfg);

// Why MPI cannot run cfg's collective as ours does (datatype, op, or
// layout), or nullptr when it can.
const char* mpi_unsupported(const Config& cfg);

// One blocking MPI collective on the perftest's buffers, with UCC's buffer
// conventions (count per rank as in ucc_perftest), its arguments resolved
// once (datatype, op, rank, buffers) so that a timed mpi_call() is MPI's
// call alone, as our timed post is of a request made beforehand. nullptr
// when MPI cannot take the arguments (a count over INT_MAX).
struct MpiCall;
std::shared_ptr<const MpiCall> mpi_prepare(const Config& cfg, bool inplace,
                                           void* src, void* dst,
                                           uint64_t count);
// Runs it; true on success.
bool mpi_call(const MpiCall& c);
bool mpi_barrier();

// The MPI library's name and version, one line ("built without MPI").
std::string mpi_library_version();

}  // namespace ucct::perf

// ucc_perftest built without MPI: the functions of perftest_mpi.h, saying
// so where it matters.
#include <cstdio>

#include "tests/perf/perftest_mpi.h"

namespace ucct::perf {

bool mpi_built() { return false; }
int mpi_launched_size() { return 0; }

int mpi_run(const std::function<int(Rank&)>&) {
  std::fprintf(stderr, "ucc_perftest: built without MPI\n");
  return 1;
}

int mpi_relaunch(int, char**, const Config&) {
  std::fprintf(stderr,
               "ucc_perftest: --compare mpi needs MPI at build time (CMake "
               "found none; on Debian: apt-get install libopenmpi-dev)\n");
  return 1;
}

const char* mpi_unsupported(const Config&) { return "built without MPI"; }
struct MpiCall {};
std::shared_ptr<const MpiCall> mpi_prepare(const Config&, bool, void*, void*,
                                           uint64_t) {
  return nullptr;
}
bool mpi_call(const MpiCall&) { return false; }
bool mpi_barrier() { return false; }
std::string mpi_library_version() { return "built without MPI"; }

}  // namespace ucct::perf

// ucc_perftest's output: the header that says what runs where, and one
// row per size from every rank's figures (perftest_report.cc).
//
// Threads: the perftest's single thread.
#pragma once

#include <ucc/api/ucc.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/perf/perftest_args.h"

namespace ucct::perf {

// What each rank reports for one size (combined with the OOB allgather).
struct RankStats {
  double avg_us;
  double it_min_us;  // fastest single iteration
  double it_max_us;  // slowest single iteration
  int32_t wrong;     // 1: result check failed here
  int32_t pad;
  double ov_total_us;    // --overlap: post + compute + wait
  double ov_compute_us;  // the compute part of it
  double mpi_avg_us;     // --compare: MPI's mean iteration time
  int32_t mpi_wrong;     // 1: MPI's result check failed here
  int32_t pad2;
  // --start window (perftest_window.h): the mean over iterations of the
  // last rank's finish from the common start, the same on every rank;
  // this rank's starts and how many of them were over 10 us late.
  double span_us;
  double mpi_span_us;
  int32_t starts;
  int32_t late;
};

// Where the ranks run: each rank's host (UCC_HOST_ID where set, else its
// hostname), gathered over the OOB; "name: k ranks" per host, in order of
// first appearance; *most: the most ranks on one host. Every rank takes
// part.
std::string gather_hosts(const Rank& rk, ucc_context_h ctx, int* most);

// Rank 0: the header (per_host: the most ranks on one host).
void print_header(const Config& cfg, int n, ucc_team_h team,
                  const std::string& hosts, int per_host);

// -v: every collective's selection, as the team's engine reports it.
void print_selection(ucc_team_h team);

// The column headings that print_header ends with.
void print_columns(const Config& cfg);

// Rank 0: one row (or a warning) from all ranks' stats.
void print_row(const Config& cfg, int n, uint64_t count,
               const std::vector<RankStats>& all, ucc_team_h team);

}  // namespace ucct::perf

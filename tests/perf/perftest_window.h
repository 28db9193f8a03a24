// ucc_perftest --start window: the timed collectives of one size start at
// instants fixed in advance, the same on every rank, read from the clock
// that all ranks share, instead of when each rank leaves a barrier.
//
// Why: ranks leave a barrier up to a message latency apart, in an order
// that depends on the barrier's algorithm and on who entered it last. A
// rank's time from its own post to its completion then takes in or leaves
// out that skew: a bcast's non-root that leaves the barrier after the root
// finds the data there and reports almost nothing. At 2 emulated hosts x 1
// rank, both on one core, Open MPI's barrier let its bcast's non-root post
// 24-30 us after the root and ours let ours post 15-23 us before it, for
// the same 37-43 us from the root's post to the non-root's completion in
// both libraries (docs/perf/hosts.md). From a common start both are
// measured alike.
//
// Scheme (as ReproMPI's window-based synchronisation, with the clock
// offsets known to be zero): after the warmup every rank proposes a window
// length, the longest wins, and slot k starts at t0 + k * period. A rank
// still busy with slot k - 1 at that instant starts late; such starts are
// counted (late%), not hidden.
//
// Only where every rank reads the same CLOCK_MONOTONIC: one kernel (the
// same boot id) and one time namespace. Emulated hosts (network and mount
// namespaces, tests/multihost/hosts.sh) qualify; real separate hosts do
// not, and the perftest says so and stops.
//
// Threads: the perftest's single thread.
#pragma once

#include <ucc/api/ucc.h>

#include <string>
#include <vector>

namespace ucct::perf {

// True when every rank of `oob` reads this rank's clock; otherwise false
// with *why set. Every rank takes part (an OOB allgather).
bool shared_clock(const ucc_oob_coll_t& oob, ucc_context_h ctx,
                  std::string* why);

struct Windows {
  double t0_us = 0;      // slot 0's start, on the shared clock
  double period_us = 0;  // between slots
  double start(int slot) const { return t0_us + slot * period_us; }
};

// The same schedule on every rank: the period is 3 times the largest
// `need_us` any rank proposes (its mean time for one slot's work in the
// warmup, barrier included), at least 100 us; slot 0 starts 2 ms after
// the latest rank's clock reading. Every rank takes part.
bool agree_windows(const ucc_oob_coll_t& oob, ucc_context_h ctx, double need_us,
                   Windows* out);

// Waits until the shared clock reads t_us: sleeps until 1 ms before it
// (timer slack 1 ns; this VM's sleeps of 1 ms overshoot by 53 us on
// average, 229 at most), then reads the clock in a loop that yields. Returns
// how late the wait ended (0 when on time, > 0 when t_us had passed already).
double wait_until_us(double t_us);

// From every rank's finish times (one per iteration, from the slot's
// start, this rank's in `mine`): the mean over iterations of the latest
// rank's finish. Every rank takes part.
bool mean_span(const ucc_oob_coll_t& oob, ucc_context_h ctx,
               const std::vector<double>& mine, int nranks, double* span_us);

}  // namespace ucct::perf

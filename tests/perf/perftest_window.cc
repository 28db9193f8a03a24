#include "tests/perf/perftest_window.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "tests/common/harness.h"

namespace ucct::perf {
namespace {

constexpr double kTimeoutS = 60;

// What decides whose clock this is: the boot id and the time namespace.
struct ClockId {
  char boot[40];
  char timens[40];
};

void read_small(const char* path, char* out, size_t cap, bool link) {
  std::memset(out, 0, cap);
  if (link) {
    const ssize_t n = readlink(path, out, cap - 1);
    if (n < 0) out[0] = '\0';
    return;
  }
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t n = read(fd, out, cap - 1);
  close(fd);
  if (n < 0) out[0] = '\0';
}

}  // namespace

bool shared_clock(const ucc_oob_coll_t& oob, ucc_context_h ctx,
                  std::string* why) {
  ClockId mine{};
  read_small("/proc/sys/kernel/random/boot_id", mine.boot, sizeof mine.boot,
             false);
  // No time namespace support: the link is missing, alike everywhere.
  read_small("/proc/self/ns/time", mine.timens, sizeof mine.timens, true);
  std::vector<ClockId> all(oob.n_oob_eps);
  if (oob_allgather(oob, &mine, all.data(), sizeof mine, ctx, kTimeoutS) !=
      UCC_OK) {
    *why = "the OOB allgather of the ranks' clock ids failed";
    return false;
  }
  if (mine.boot[0] == '\0') {
    *why = "no /proc/sys/kernel/random/boot_id to tell kernels apart";
    return false;
  }
  for (size_t q = 0; q < all.size(); ++q) {
    if (std::memcmp(&all[q], &mine, sizeof mine) != 0) {
      *why = "rank " + std::to_string(q) +
             " runs on another kernel or in another time namespace";
      return false;
    }
  }
  return true;
}

bool agree_windows(const ucc_oob_coll_t& oob, ucc_context_h ctx, double need_us,
                   Windows* out) {
  const double mine[2] = {need_us, now_s() * 1e6};
  std::vector<double> all(2 * oob.n_oob_eps);
  if (oob_allgather(oob, mine, all.data(), sizeof mine, ctx, kTimeoutS) !=
      UCC_OK)
    return false;
  double need = 0, latest = 0;
  for (size_t q = 0; q < oob.n_oob_eps; ++q) {
    need = all[2 * q] > need ? all[2 * q] : need;
    latest = all[2 * q + 1] > latest ? all[2 * q + 1] : latest;
  }
  out->period_us = 3 * need > 100 ? 3 * need : 100;
  out->t0_us = latest + 2000;
  return true;
}

double wait_until_us(double t_us) {
  // The sleep's default slack (50 us) would make most starts late.
  static const bool slack_set = prctl(PR_SET_TIMERSLACK, 1UL) == 0;
  (void)slack_set;
  double now = now_s() * 1e6;
  if (t_us - now > 1200) {
    const double until_s = (t_us - 1000) * 1e-6;
    timespec ts;
    ts.tv_sec = static_cast<time_t>(until_s);
    ts.tv_nsec =
        static_cast<long>((until_s - static_cast<double>(ts.tv_sec)) * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) ==
           EINTR) {
    }
  }
  // Yielding: with more ranks than cores, a rank still in its collective
  // may need this core.
  while ((now = now_s() * 1e6) < t_us) sched_yield();
  return now - t_us;
}

bool mean_span(const ucc_oob_coll_t& oob, ucc_context_h ctx,
               const std::vector<double>& mine, int nranks, double* span_us) {
  const size_t iters = mine.size();
  *span_us = 0;
  if (iters == 0) return true;
  std::vector<double> all(iters * static_cast<size_t>(nranks));
  if (oob_allgather(oob, mine.data(), all.data(), iters * sizeof(double), ctx,
                    kTimeoutS) != UCC_OK)
    return false;
  double sum = 0;
  for (size_t i = 0; i < iters; ++i) {
    double last = 0;
    for (int q = 0; q < nranks; ++q) {
      const double f = all[static_cast<size_t>(q) * iters + i];
      last = f > last ? f : last;
    }
    sum += last;
  }
  *span_us = sum / static_cast<double>(iters);
  return true;
}

}  // namespace ucct::perf

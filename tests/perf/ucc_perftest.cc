// ucc_perftest: the project's collective benchmark.
//
// Self-launching: `ucc_perftest -N 4 -c allreduce` forks 4 local ranks
// (tests/common/harness.h) that build a lib / context / team over the
// built-in OOB and time one collective over a range of sizes. Flags, defaults
// where they make sense, and the table follow UCC's tools/perf/ucc_perftest;
// -N is our rank count (UCC's -N, buffer count, does not apply).
//
// Words used below:
//   count       - the element count of one size, in UCC's convention per
//                 collective (see usage text)
//   data bytes  - what algbw divides by time: count * elem for allreduce,
//                 bcast, reduce; size * count * elem for allgather, alltoall,
//                 reduce_scatter (the nccl-tests convention)
//   busbw       - algbw times the nccl-tests factor of the collective
//
// Per size: allocate once, init one persistent request, fill inputs, run one
// untimed iteration and check its result, then warmup + timed iterations
// (post + progress until complete, each preceded by an untimed UCC barrier).
// Each rank averages its iteration times; the ranks' averages are combined
// over the OOB (mean, min, max) and rank 0 prints one row. A wrong result
// prints a WARNING line instead of the row and makes the exit code nonzero.
#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/perf/perftest_check.h"

namespace ucct::perf {
namespace {

constexpr uint64_t kLargeBytes = 1 << 20;  // "large": count * elem above this
constexpr double kWaitTimeoutS = 60;       // one collective

// Per collective: how its count maps to buffers and bandwidth.
struct CollSpec {
  ucc_coll_type_t type;
  bool rooted;
  bool reduction;
  bool has_inplace;
  bool total_bytes;   // data bytes = size * count * elem (else count * elem)
  int busbw_num_nm1;  // busbw factor = num_nm1 * (n - 1) / n, or 1 when 0
};

const CollSpec kSpecs[] = {
    // {type, rooted, reduction, has_inplace, total_bytes, busbw_num_nm1}
    {UCC_COLL_TYPE_ALLREDUCE, false, true, true, false, 2},
    {UCC_COLL_TYPE_BCAST, true, false, false, false, 0},
    {UCC_COLL_TYPE_REDUCE, true, true, true, false, 0},
    {UCC_COLL_TYPE_ALLGATHER, false, false, true, true, 1},
    {UCC_COLL_TYPE_ALLTOALL, false, false, true, true, 1},
    {UCC_COLL_TYPE_REDUCE_SCATTER, false, true, true, true, 1},
    {UCC_COLL_TYPE_BARRIER, false, false, false, false, 0},
};

const CollSpec* spec_of(ucc_coll_type_t t) {
  for (const CollSpec& s : kSpecs) {
    if (s.type == t) return &s;
  }
  return nullptr;
}

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
  uint64_t root = 0;
  int ranks = 4;
  int timeout_s = 600;
  bool bind = true;      // --bind core (default) / none
  bool overlap = false;  // --overlap: also post / compute / wait
};

int iters_for(const Config& c, uint64_t bytes) {
  return c.n_iter >= 0 ? c.n_iter : (bytes > kLargeBytes ? 20 : 100);
}
int warmup_for(const Config& c, uint64_t bytes) {
  return c.n_warmup >= 0 ? c.n_warmup : (bytes > kLargeBytes ? 2 : 10);
}

double busbw_factor(const CollSpec& s, int n) {
  return s.busbw_num_nm1 ? s.busbw_num_nm1 * (n - 1) / static_cast<double>(n)
                         : 1.0;
}

// Page-aligned buffer, freed on scope exit; empty when bytes == 0.
class Buffer {
 public:
  explicit Buffer(size_t bytes) {
    if (bytes && posix_memalign(&p_, 4096, bytes) != 0) p_ = nullptr;
    ok_ = !bytes || p_;
  }
  ~Buffer() { ::free(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return p_; }
  bool ok() const { return ok_; }

 private:
  void* p_ = nullptr;
  bool ok_ = true;
};

// What each rank reports for one size (combined with the OOB allgather).
struct RankStats {
  double avg_us;
  double it_min_us;  // fastest single iteration
  double it_max_us;  // slowest single iteration
  int32_t wrong;     // 1: result check failed here
  int32_t pad;
  double ov_total_us;    // --overlap: post + compute + wait
  double ov_compute_us;  // the compute part of it
};

// Busy work with no library call for about `us` microseconds; returns how
// long it took.
double compute_for(double us) {
  const double t0 = now_s();
  volatile double x = 1.0;
  double t = t0;
  while ((t - t0) * 1e6 < us) {
    for (int i = 0; i < 256; ++i) x = x * 1.0000001 + 1e-9;
    t = now_s();
  }
  return (t - t0) * 1e6;
}

void fail_line(int rank, const char* what, uint64_t count, ucc_status_t st) {
  std::fprintf(stderr, "rank %d: %s failed (count %" PRIu64 "): %s\n", rank,
               what, count, status_name(st));
}

// Posts req and polls until it leaves UCC_INPROGRESS. The timed path: post +
// progress only, no yields; the clock is read every 1024 polls for the
// deadline.
ucc_status_t post_and_wait(World& w, ucc_coll_req_h req, double* t_us) {
  const double t0 = now_s();
  ucc_status_t st = ucc_collective_post(req);
  if (st != UCC_OK) return st;
  unsigned polls = 0;
  while ((st = ucc_collective_test(req)) == UCC_INPROGRESS) {
    const ucc_status_t pst = ucc_context_progress(w.ctx);
    if (pst < 0) return pst;
    if ((++polls & 1023) == 0 && now_s() - t0 > kWaitTimeoutS)
      return UCC_ERR_TIMED_OUT;
  }
  *t_us = (now_s() - t0) * 1e6;
  return st;
}

// Runs one size on this rank. Returns UCC_OK with *out filled, or the
// status of the first failing call (already reported on stderr).
ucc_status_t run_size(World& w, const Config& cfg, uint64_t count,
                      RankStats* out) {
  const CollSpec& cs = *cfg.coll;
  const int n = w.size, r = w.rank;
  const size_t es = cfg.dt->size;
  const bool inplace = cfg.inplace && cs.has_inplace;
  const bool is_root = static_cast<uint64_t>(r) == cfg.root;
  const uint64_t nc = count * static_cast<uint64_t>(n);

  // Element counts of src / dst as UCC defines them, and which exist here.
  uint64_t src_count = 0, dst_count = 0;
  bool src_here = false, dst_here = false;
  switch (cs.type) {
    case UCC_COLL_TYPE_ALLREDUCE:
      src_count = dst_count = count;
      break;
    case UCC_COLL_TYPE_BCAST:
      src_count = count;
      break;
    case UCC_COLL_TYPE_REDUCE:
      src_count = dst_count = count;
      break;
    case UCC_COLL_TYPE_ALLGATHER:
      src_count = count;
      dst_count = nc;
      break;
    case UCC_COLL_TYPE_ALLTOALL:
      src_count = dst_count = nc;
      break;
    case UCC_COLL_TYPE_REDUCE_SCATTER:
      src_count = nc;
      dst_count = inplace ? nc : count;  // in place: dst holds the whole vector
      break;
    default:
      break;
  }
  if (cs.type != UCC_COLL_TYPE_BARRIER) {
    src_here = cs.type == UCC_COLL_TYPE_BCAST || !inplace ||
               (cs.type == UCC_COLL_TYPE_REDUCE && !is_root);
    dst_here = cs.type != UCC_COLL_TYPE_BCAST &&
               (cs.type != UCC_COLL_TYPE_REDUCE || is_root);
  }
  Buffer src(src_here ? src_count * es : 0), dst(dst_here ? dst_count * es : 0);
  if (!src.ok() || !dst.ok()) {
    fail_line(r, "buffer allocation", count, UCC_ERR_NO_MEMORY);
    return UCC_ERR_NO_MEMORY;
  }

  Setup setup{cs.type, cfg.dt, cfg.op, r, n, count, cfg.root, inplace};
  fill_inputs(setup, src.get(), src_count, dst.get(), dst_here ? dst_count : 0);

  ucc_coll_args_t args{};
  args.mask = UCC_COLL_ARGS_FIELD_FLAGS;
  args.flags = UCC_COLL_ARGS_FLAG_PERSISTENT |
               (inplace ? UCC_COLL_ARGS_FLAG_IN_PLACE : 0);
  args.coll_type = cs.type;
  if (cs.type != UCC_COLL_TYPE_BARRIER) {
    args.src.info = {src.get(), src_count, cfg.dt->dt, UCC_MEMORY_TYPE_HOST};
    args.dst.info = {dst.get(), dst_count, cfg.dt->dt, UCC_MEMORY_TYPE_HOST};
  }
  if (cs.reduction) args.op = cfg.op;
  if (cs.rooted) args.root = cfg.root;

  ucc_coll_req_h req = nullptr;
  ucc_status_t st = ucc_collective_init(&args, &req, w.team);
  if (st != UCC_OK) {
    fail_line(r, "ucc_collective_init", count, st);
    return st;
  }
  const char* step = "check iteration";
  double t_us = 0;
  st = w.barrier(kWaitTimeoutS);
  if (st == UCC_OK) st = post_and_wait(w, req, &t_us);
  std::string why;
  out->wrong = 0;
  if (st == UCC_OK && !check_result(setup, src.get(), dst.get(), &why)) {
    std::fprintf(stderr, "rank %d: %s count %" PRIu64 ": wrong result: %s\n", r,
                 coll_name(cs.type), count, why.c_str());
    out->wrong = 1;
  }

  const uint64_t bytes = count * es;
  const int warmup = warmup_for(cfg, bytes), iters = iters_for(cfg, bytes);
  // Iterations are separated by an untimed UCC barrier (as OSU separates
  // them by MPI_Barrier): ranks leave it within microseconds of each other,
  // unlike the socket OOB barrier.
  ucc_coll_args_t bargs{};
  bargs.mask = UCC_COLL_ARGS_FIELD_FLAGS;
  bargs.flags = UCC_COLL_ARGS_FLAG_PERSISTENT;
  bargs.coll_type = UCC_COLL_TYPE_BARRIER;
  ucc_coll_req_h breq = nullptr;
  if (st == UCC_OK) {
    step = "barrier init";
    st = ucc_collective_init(&bargs, &breq, w.team);
  }
  double sum = 0, mn = 0, mx = 0;
  for (int it = 0; st == UCC_OK && it < warmup + iters; ++it) {
    step = "barrier";
    double b_us = 0;
    st = post_and_wait(w, breq, &b_us);
    if (st != UCC_OK) break;
    step = "timed iteration";
    st = post_and_wait(w, req, &t_us);
    if (st != UCC_OK || it < warmup) continue;
    sum += t_us;
    mn = (it == warmup || t_us < mn) ? t_us : mn;
    mx = (it == warmup || t_us > mx) ? t_us : mx;
  }
  if (st != UCC_OK) {
    fail_line(r, step, count, st);
    if (st != UCC_ERR_TIMED_OUT)
      ucc_collective_finalize(req);  // in flight: not allowed
    return st;
  }
  // OSU-style overlap: post, compute for about the pure collective time
  // without calling the library, then wait.
  out->ov_total_us = out->ov_compute_us = 0;
  const double pure = iters ? sum / iters : 0;
  for (int it = 0; cfg.overlap && st == UCC_OK && it < warmup + iters; ++it) {
    step = "barrier";
    double b_us = 0;
    st = post_and_wait(w, breq, &b_us);
    if (st != UCC_OK) break;
    step = "overlap iteration";
    const double t0 = now_s();
    st = ucc_collective_post(req);
    if (st != UCC_OK) break;
    const double c_us = compute_for(pure);
    unsigned polls = 0;
    while ((st = ucc_collective_test(req)) == UCC_INPROGRESS) {
      const ucc_status_t pst = ucc_context_progress(w.ctx);
      if (pst < 0) st = pst;
      if (pst < 0 || ((++polls & 1023) == 0 && now_s() - t0 > kWaitTimeoutS)) {
        st = pst < 0 ? pst : UCC_ERR_TIMED_OUT;
        break;
      }
    }
    if (st != UCC_OK || it < warmup) continue;
    out->ov_total_us += (now_s() - t0) * 1e6;
    out->ov_compute_us += c_us;
  }
  if (st != UCC_OK) {
    fail_line(r, step, count, st);
    return st;
  }
  if (iters) {
    out->ov_total_us /= iters;
    out->ov_compute_us /= iters;
  }
  st = ucc_collective_finalize(req);
  if (st == UCC_OK) st = ucc_collective_finalize(breq);
  if (st != UCC_OK) {
    fail_line(r, "ucc_collective_finalize", count, st);
    return st;
  }
  out->avg_us = iters ? sum / iters : 0;
  out->it_min_us = mn;
  out->it_max_us = mx;
  return UCC_OK;
}

int online_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

void print_header(const Config& cfg, int n) {
  const CollSpec& cs = *cfg.coll;
  const bool barrier = cs.type == UCC_COLL_TYPE_BARRIER;
  Setup probe{cs.type, cfg.dt, cfg.op, 0, n, 1, cfg.root, cfg.inplace};
  const char* skip = check_skip_reason(probe);
  std::printf("# ucc_perftest, library %s\n", ucc_get_version_string());
  std::printf("# %-20s %s\n", "Collective:", coll_name(cs.type));
  std::printf("# %-20s %s\n", "Memory type:", "host");
  std::printf("# %-20s %s\n", "Datatype:", barrier ? "N/A" : cfg.dt->name);
  std::printf("# %-20s %s\n",
              "Reduction:", cs.reduction ? op_name(cfg.op) : "N/A");
  std::printf("# %-20s %s\n",
              "Inplace:", cs.has_inplace ? (cfg.inplace ? "1" : "0") : "N/A");
  if (cs.rooted) std::printf("# %-20s %" PRIu64 "\n", "Root:", cfg.root);
  std::printf("# %-20s %d local processes, %d CPUs, bound: %s\n", "Ranks:", n,
              online_cpus(), cfg.bind ? "core" : "none");
  if (n > online_cpus()) {
    std::printf(
        "# %-20s more ranks than CPUs: timings include scheduling delays\n",
        "Note:");
  }
  if (cfg.n_warmup >= 0) {
    std::printf("# %-20s %d\n", "Warmup:", cfg.n_warmup);
  } else {
    std::printf("# %-20s 10 (2 above %" PRIu64 " bytes)\n",
                "Warmup:", kLargeBytes);
  }
  if (cfg.n_iter >= 0) {
    std::printf("# %-20s %d\n", "Iterations:", cfg.n_iter);
  } else {
    std::printf("# %-20s 100 (20 above %" PRIu64 " bytes)\n",
                "Iterations:", kLargeBytes);
  }
  std::printf("# %-20s %s%s\n",
              "Result check:", skip ? "skipped: " : "one iteration per size",
              skip ? skip : "");
  if (!barrier) {
    std::printf("# %-20s %s\n", "Bandwidth bytes:",
                cs.total_bytes ? "ranks * count * elem" : "count * elem");
  }
  std::printf("#\n# %10s %11s %11s %11s %11s %11s %11s", "count", "size(B)",
              "avg(us)", "min(us)", "max(us)", "algbw(GB/s)", "busbw(GB/s)");
  if (cfg.full) {
    std::printf(" %11s %11s %11s %11s", "busbw_max", "busbw_min", "it_min(us)",
                "it_max(us)");
  }
  if (cfg.overlap)
    std::printf(" %11s %11s %9s", "ov_total", "ov_compute", "overlap%");
  std::printf("\n");
  std::fflush(stdout);
}

// Rank 0: one row (or a warning) from all ranks' stats.
void print_row(const Config& cfg, int n, uint64_t count,
               const std::vector<RankStats>& all) {
  const CollSpec& cs = *cfg.coll;
  std::string wrong;
  double sum = 0, mn = all[0].avg_us, mx = all[0].avg_us;
  double it_mn = all[0].it_min_us, it_mx = all[0].it_max_us;
  for (int q = 0; q < n; ++q) {
    const RankStats& s = all[q];
    if (s.wrong) wrong += (wrong.empty() ? "" : ",") + std::to_string(q);
    sum += s.avg_us;
    mn = s.avg_us < mn ? s.avg_us : mn;
    mx = s.avg_us > mx ? s.avg_us : mx;
    it_mn = s.it_min_us < it_mn ? s.it_min_us : it_mn;
    it_mx = s.it_max_us > it_mx ? s.it_max_us : it_mx;
  }
  if (!wrong.empty()) {
    std::printf("WARNING: count %" PRIu64
                ": wrong result on rank(s) %s (details on stderr);"
                " no timing reported\n",
                count, wrong.c_str());
    std::fflush(stdout);
    return;
  }
  const double avg = sum / n;
  const bool barrier = cs.type == UCC_COLL_TYPE_BARRIER;
  const uint64_t size_b = barrier ? 0 : count * cfg.dt->size;
  const double data = static_cast<double>(cs.total_bytes ? size_b * n : size_b);
  const double factor = busbw_factor(cs, n);
  auto bw = [&](double us) {
    return us > 0 ? data / us / 1e3 : 0.0;
  };  // bytes/us -> GB/s
  std::printf("  %10" PRIu64 " %11" PRIu64
              " %11.2f %11.2f %11.2f %11.3f %11.3f",
              count, size_b, avg, mn, mx, bw(avg), bw(avg) * factor);
  if (cfg.full) {
    std::printf(" %11.3f %11.3f %11.2f %11.2f", bw(mn) * factor,
                bw(mx) * factor, it_mn, it_mx);
  }
  if (cfg.overlap) {
    // Averages over ranks; overlap% = 100 * max(0, 1 - (total - compute) /
    // pure), as OSU's benchmarks define it.
    double tot = 0, cmp = 0;
    for (int q = 0; q < n; ++q) {
      tot += all[q].ov_total_us;
      cmp += all[q].ov_compute_us;
    }
    tot /= n;
    cmp /= n;
    double ov = avg > 0 ? 100.0 * (1.0 - (tot - cmp) / avg) : 0;
    std::printf(" %11.2f %11.2f %9.1f", tot, cmp, ov < 0 ? 0.0 : ov);
  }
  std::printf("\n");
  std::fflush(stdout);
}

int rank_main(Rank& rk, const Config& cfg) {
  int rc = 0;
  {
    World w;
    if (w.init(rk) != UCC_OK) return 1;
    if (w.rank == 0) print_header(cfg, w.size);
    std::vector<uint64_t> counts;
    if (cfg.coll->type == UCC_COLL_TYPE_BARRIER) {
      counts.push_back(0);
    } else {
      for (uint64_t c = cfg.min_count; c <= cfg.max_count;) {
        counts.push_back(c);
        const uint64_t next = c ? c * cfg.factor : 1;
        if (next <= c) break;  // overflow
        c = next;
      }
    }
    for (uint64_t count : counts) {
      RankStats mine{};
      // An error leaves the others waiting in a collective or the barrier:
      // exit now, and run_ranks stops them.
      if (run_size(w, cfg, count, &mine) != UCC_OK) return 1;
      std::vector<RankStats> all(w.size);
      const ucc_status_t st = oob_allgather(
          w.oob, &mine, all.data(), sizeof mine, w.ctx, 2 * kWaitTimeoutS);
      if (st != UCC_OK) {
        std::fprintf(stderr, "rank %d: combining results failed: %s\n", w.rank,
                     status_name(st));
        return 1;
      }
      if (w.rank == 0) print_row(cfg, w.size, count, all);
      for (const RankStats& s : all) rc = s.wrong ? 2 : rc;
    }
  }
  // Nobody exits before rank 0 has printed everything (a nonzero exit makes
  // run_ranks kill the others).
  if (oob_barrier(rk.oob, nullptr, kWaitTimeoutS) != UCC_OK) return 1;
  return rc;
}

// ---------------------------------------------------------------------------
// Command line

const char kUsage[] =
    "Usage: ucc_perftest [options]\n"
    "Forks N local ranks and times one collective over a range of sizes.\n"
    "\n"
    "  -c <coll>      collective: allreduce (default), bcast, reduce, "
    "allgather,\n"
    "                 alltoall, reduce_scatter, barrier\n"
    "  -b <count>     min element count (default 2); K, M, G suffixes (x1024)\n"
    "  -e <count>     max element count (default 4M: 16 MiB of float32)\n"
    "  -f <factor>    count multiplier between sizes (default 2)\n"
    "  -d <dtype>     datatype (default float32): int8 int16 int32 int64 "
    "uint8\n"
    "                 uint16 uint32 uint64 float16 bfloat16 float32 float64\n"
    "                 (also int128 uint128 float128 float32_complex\n"
    "                 float64_complex float128_complex: not checked)\n"
    "  -o <op>        reduction (default sum): sum prod max min land lor lxor\n"
    "                 band bor bxor avg\n"
    "  -n <iters>     timed iterations per size (default 100; 20 above 1 MiB)\n"
    "  -w <iters>     warmup iterations per size (default 10; 2 above 1 MiB)\n"
    "                 (\"above 1 MiB\": count * elem > 1048576; -n / -w apply\n"
    "                 to all sizes)\n"
    "  -i             in place (allreduce, reduce, allgather, alltoall,\n"
    "                 reduce_scatter; ignored elsewhere)\n"
    "  -r <rank>      root of bcast / reduce (default 0)\n"
    "  -F             full print: add busbw_max and busbw_min (busbw at the "
    "min\n"
    "                 and at the max time) and it_min / it_max (fastest and\n"
    "                 slowest single iteration of any rank, us)\n"
    "  -N, --ranks <n>  number of local ranks (default 4)\n"
    "  -m host        memory type (host only)\n"
    "  -p             persistent (always on; accepted for UCC compatibility)\n"
    "  -t, --timeout <s>  kill all ranks after s seconds (default 600)\n"
    "  --overlap      after the timed iterations, as many more that post, "
    "compute\n"
    "                 (no library call) for the average time just measured, "
    "then\n"
    "                 wait; adds ov_total(us), ov_compute(us) and overlap% =\n"
    "                 100 * max(0, 1 - (ov_total - ov_compute) / avg), as "
    "OSU's\n"
    "                 non-blocking benchmarks define it\n"
    "  --bind core|none  pin rank r to CPU r mod ncpu (default core, as\n"
    "                 mpirun --bind-to core; without it the scheduler may\n"
    "                 leave two ranks on one core for seconds)\n"
    "  -h, --help     this text\n"
    "\n"
    "Count (UCC's convention), per rank:\n"
    "  allreduce, bcast, reduce: the vector has count elements\n"
    "  allgather:      src count, dst ranks * count\n"
    "  alltoall:       src and dst ranks * count (count to / from each rank)\n"
    "  reduce_scatter: src ranks * count, dst count (in place: dst holds\n"
    "                  ranks * count, this rank's result at rank * count)\n"
    "  barrier:        no data, one row\n"
    "\n"
    "Columns: count; size(B) = count * elem; avg / min / max over ranks of "
    "each\n"
    "rank's mean iteration time (us; post until complete, ranks aligned by an\n"
    "untimed UCC barrier before each iteration); algbw = data bytes / avg "
    "time,\n"
    "data bytes = count * elem (allreduce, bcast, reduce) or ranks * count *\n"
    "elem (allgather, alltoall, reduce_scatter); busbw = algbw * factor, as "
    "in\n"
    "nccl-tests: allreduce 2(n-1)/n; allgather, alltoall, reduce_scatter\n"
    "(n-1)/n; bcast, reduce 1; barrier prints 0. GB = 1e9 bytes.\n"
    "\n"
    "Each size runs one untimed iteration whose result is checked first; a\n"
    "wrong result prints a WARNING line instead of the row. Exit status: 0\n"
    "when every size ran and checked out, nonzero otherwise. Environment\n"
    "variables (UCC_*) reach the library unchanged.\n";

bool parse_count(const char* s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || errno || *s == '-') return false;
  uint64_t mult = 1;
  switch (*end) {
    case 'k':
    case 'K':
      mult = 1ull << 10;
      ++end;
      break;
    case 'm':
    case 'M':
      mult = 1ull << 20;
      ++end;
      break;
    case 'g':
    case 'G':
      mult = 1ull << 30;
      ++end;
      break;
    default:
      break;
  }
  if (mult != 1 && (*end == 'b' || *end == 'B')) ++end;
  if (*end || v > UINT64_MAX / mult) return false;
  *out = v * mult;
  return true;
}

bool parse_int(const char* s, long lo, long hi, long* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// Returns -1 to go on, or the exit status.
int parse_args(int argc, char** argv, Config* cfg) {
  static const option kLong[] = {{"ranks", required_argument, nullptr, 'N'},
                                 {"timeout", required_argument, nullptr, 't'},
                                 {"bind", required_argument, nullptr, 'B'},
                                 {"overlap", no_argument, nullptr, 'O'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  const CollInfo* coll = coll_by_name("allreduce");
  cfg->dt = dtype_by_name("float32");
  long v = 0;
  int c;
  auto bad = [&](const char* what, const char* arg) {
    std::fprintf(stderr, "ucc_perftest: invalid %s: '%s' (see -h)\n", what,
                 arg);
    return 1;
  };
  while ((c = getopt_long(argc, argv, "c:b:e:f:d:o:n:w:r:N:m:t:iFph", kLong,
                          nullptr)) != -1) {
    switch (c) {
      case 'c':
        coll = coll_by_name(optarg);
        if (!coll) return bad("collective", optarg);
        if (!spec_of(coll->type))
          return bad("collective (not in this perftest)", optarg);
        break;
      case 'b':
        if (!parse_count(optarg, &cfg->min_count))
          return bad("min count", optarg);
        break;
      case 'e':
        if (!parse_count(optarg, &cfg->max_count))
          return bad("max count", optarg);
        break;
      case 'f':
        if (!parse_int(optarg, 2, 1 << 20, &v)) return bad("factor", optarg);
        cfg->factor = static_cast<uint64_t>(v);
        break;
      case 'd':
        if (!(cfg->dt = dtype_by_name(optarg))) return bad("datatype", optarg);
        break;
      case 'o': {
        const OpInfo* op = op_by_name(optarg);
        if (!op) return bad("reduction op", optarg);
        cfg->op = op->op;
        break;
      }
      case 'n':
        if (!parse_int(optarg, 0, 1 << 30, &v))
          return bad("iteration count", optarg);
        cfg->n_iter = static_cast<int>(v);
        break;
      case 'w':
        if (!parse_int(optarg, 0, 1 << 30, &v))
          return bad("warmup count", optarg);
        cfg->n_warmup = static_cast<int>(v);
        break;
      case 'r':
        if (!parse_int(optarg, 0, 1 << 20, &v)) return bad("root", optarg);
        cfg->root = static_cast<uint64_t>(v);
        break;
      case 'N':
        if (!parse_int(optarg, 1, 1024, &v)) return bad("rank count", optarg);
        cfg->ranks = static_cast<int>(v);
        break;
      case 't':
        if (!parse_int(optarg, 1, 1 << 24, &v)) return bad("timeout", optarg);
        cfg->timeout_s = static_cast<int>(v);
        break;
      case 'O':
        cfg->overlap = true;
        break;
      case 'B':
        if (std::strcmp(optarg, "core") == 0)
          cfg->bind = true;
        else if (std::strcmp(optarg, "none") == 0)
          cfg->bind = false;
        else
          return bad("binding (core or none)", optarg);
        break;
      case 'm':
        if (std::strcmp(optarg, "host") != 0)
          return bad("memory type (host only)", optarg);
        break;
      case 'i':
        cfg->inplace = true;
        break;
      case 'F':
        cfg->full = true;
        break;
      case 'p':
        break;
      case 'h':
        std::fputs(kUsage, stdout);
        return 0;
      default:
        std::fprintf(stderr, "see ucc_perftest -h\n");
        return 1;
    }
  }
  if (optind < argc) return bad("argument", argv[optind]);
  cfg->coll = spec_of(coll->type);
  if (cfg->min_count > cfg->max_count) {
    std::fprintf(stderr,
                 "ucc_perftest: min count (-b) is above max count (-e)\n");
    return 1;
  }
  if (cfg->coll->rooted && cfg->root >= static_cast<uint64_t>(cfg->ranks)) {
    std::fprintf(stderr,
                 "ucc_perftest: root %" PRIu64
                 " is not below the rank count %d\n",
                 cfg->root, cfg->ranks);
    return 1;
  }
  return -1;
}

}  // namespace
}  // namespace ucct::perf

int main(int argc, char** argv) {
  ucct::perf::Config cfg;
  const int rc = ucct::perf::parse_args(argc, argv, &cfg);
  if (rc >= 0) return rc;
  const bool ok = ucct::run_ranks(
      cfg.ranks, [&](ucct::Rank& r) { return ucct::perf::rank_main(r, cfg); },
      cfg.timeout_s, cfg.bind);
  return ok ? 0 : 1;
}

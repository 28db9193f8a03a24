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
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/common/gpu.h"
#include "tests/common/harness.h"
#include "tests/perf/perftest_args.h"
#include "tests/perf/perftest_check.h"
#include "tests/perf/perftest_mpi.h"
#include "tests/perf/perftest_report.h"
#include "tests/perf/perftest_window.h"

namespace ucct::perf {
namespace {

constexpr double kWaitTimeoutS = 60;  // one collective

// Per collective: how its count maps to buffers and bandwidth.
int iters_for(const Config& c, uint64_t bytes) {
  return c.n_iter >= 0 ? c.n_iter : (bytes > kLargeBytes ? 20 : 100);
}
int warmup_for(const Config& c, uint64_t bytes) {
  return c.n_warmup >= 0 ? c.n_warmup : (bytes > kLargeBytes ? 2 : 10);
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

// -m cuda: a GPU copy of a host buffer (device 0), made from it at once;
// back() copies it to the host buffer. Empty when bytes == 0.
class DevBuffer {
 public:
  DevBuffer(size_t bytes, void* host) : host_(host), bytes_(bytes) {
    ok_ = bytes == 0 || (ucct::gpu::alloc(bytes, false, &dev_) &&
                         ucct::gpu::to_device(dev_, host, bytes));
  }
  ~DevBuffer() { ucct::gpu::release(dev_); }
  DevBuffer(const DevBuffer&) = delete;
  DevBuffer& operator=(const DevBuffer&) = delete;
  void* get() const { return reinterpret_cast<void*>(dev_); }
  bool ok() const { return ok_; }
  bool back() const {
    return bytes_ == 0 || ucct::gpu::to_host(host_, dev_, bytes_);
  }

 private:
  void* host_;
  size_t bytes_;
  uint64_t dev_ = 0;
  bool ok_ = true;
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
  // Untimed (t_us null, the barrier between iterations): no clock read
  // before the post or after completion, as MPI_Barrier has none in
  // --compare's iteration; the timeout clock starts at the 1024th poll.
  double t0 = t_us != nullptr ? now_s() : 0;
  ucc_status_t st = ucc_collective_post(req);
  if (st != UCC_OK) return st;
  unsigned polls = 0;
  while ((st = ucc_collective_test(req)) == UCC_INPROGRESS) {
    const ucc_status_t pst = ucc_context_progress(w.ctx);
    if (pst < 0) return pst;
    if ((++polls & 1023) == 0) {
      if (t0 == 0) t0 = now_s();
      if (now_s() - t0 > kWaitTimeoutS) return UCC_ERR_TIMED_OUT;
    }
  }
  if (t_us != nullptr) *t_us = (now_s() - t0) * 1e6;
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
  Setup setup{cs.base, cfg.dt, cfg.op, r, n, count, cfg.root, inplace};
  const Shape sh = shape_of(setup, cs.type);
  const uint64_t src_count = sh.src_count, dst_count = sh.dst_count;
  const bool src_here = sh.src_here, dst_here = sh.dst_here;
  Buffer src(src_here ? src_count * es : 0), dst(dst_here ? dst_count * es : 0);
  if (!src.ok() || !dst.ok()) {
    fail_line(r, "buffer allocation", count, UCC_ERR_NO_MEMORY);
    return UCC_ERR_NO_MEMORY;
  }

  fill_inputs(setup, src.get(), src_count, dst.get(), dst_here ? dst_count : 0);

  // -m cuda: the collective runs on GPU copies of the buffers, which come
  // back to the host for the check; a side this rank does not hold (a
  // non-root's dst in reduce, src in place) has none.
  DevBuffer dsrc(cfg.cuda && src_here ? src_count * es : 0, src.get());
  DevBuffer ddst(cfg.cuda && dst_here ? dst_count * es : 0, dst.get());
  if (!dsrc.ok() || !ddst.ok()) {
    fail_line(r, "GPU buffer allocation", count, UCC_ERR_NO_MEMORY);
    return UCC_ERR_NO_MEMORY;
  }
  const ucc_memory_type_t mt =
      cfg.cuda ? UCC_MEMORY_TYPE_CUDA : UCC_MEMORY_TYPE_HOST;
  VArrays v;
  ucc_coll_args_t args =
      coll_args(setup, cs.type, sh, cfg.cuda ? dsrc.get() : src.get(),
                cfg.cuda ? ddst.get() : dst.get(), mt, &v);
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
  if (st == UCC_OK && cfg.cuda && !(dsrc.back() && ddst.back()))
    st = UCC_ERR_NO_MESSAGE;
  std::string why;
  out->wrong = 0;
  if (st == UCC_OK && !check_result(setup, src.get(), dst.get(), &why)) {
    std::fprintf(stderr, "rank %d: %s count %" PRIu64 ": wrong result: %s\n", r,
                 coll_name(cs.type), count, why.c_str());
    out->wrong = 1;
  }

  std::shared_ptr<const MpiCall> mpi;
  if (st == UCC_OK && cfg.compare) {
    // The same check for MPI's collective, on freshly filled buffers.
    fill_inputs(setup, src.get(), src_count, dst.get(),
                dst_here ? dst_count : 0);
    out->mpi_wrong = 0;
    mpi = mpi_prepare(cfg, inplace, src.get(), dst.get(), count);
    if (mpi == nullptr || !mpi_barrier() || !mpi_call(*mpi)) {
      fail_line(r, "MPI collective", count, UCC_ERR_NO_MESSAGE);
      ucc_collective_finalize(req);
      return UCC_ERR_NO_MESSAGE;
    }
    if (!check_result(setup, src.get(), dst.get(), &why)) {
      std::fprintf(stderr,
                   "rank %d: MPI %s count %" PRIu64 ": wrong result: %s\n", r,
                   coll_name(cs.type), count, why.c_str());
      out->mpi_wrong = 1;
    }
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
  double sum = 0, mn = 0, mx = 0, mpi_sum = 0;
  auto add = [&](double us, bool first) {
    sum += us;
    mn = (first || us < mn) ? us : mn;
    mx = (first || us > mx) ? us : mx;
  };
  // --compare: MPI's iteration first, then ours, each after a barrier as
  // --compare-barrier says (default: each library's own before it, as OSU
  // runs MPI's and our perftest runs ours). With more ranks than cores
  // the ranks that finish first wait in the next barrier while others are
  // still in the collective, each library's barrier polling its own way
  // (own: each library's also after its own, so that its early ranks
  // wait in its code). And ranks leave a barrier up to a message latency
  // apart, which per-rank times of a rooted collective take in or leave
  // out: --start window (docs/perf/hosts.md).
  using B = Config::Between;
  auto barrier_of = [&](bool mpi_side) {
    const bool ucc =
        cfg.between == B::kUcc || (!mpi_side && cfg.between != B::kMpi);
    if (!ucc) return mpi_barrier() ? UCC_OK : UCC_ERR_NO_MESSAGE;
    return post_and_wait(w, breq, nullptr);
  };
  const bool after = cfg.between == B::kOwn;
  // --start window: the warmup runs between barriers as above, and its
  // mean times of barrier + collective size the windows of the timed
  // iterations (the collective's own time may hide a barrier's skew).
  const int barrier_iters = cfg.window ? warmup : warmup + iters;
  double warm_ours = 0, warm_mpi = 0;
  for (int it = 0; st == UCC_OK && it < barrier_iters; ++it) {
    if (cfg.compare) {
      step = "MPI iteration";
      const double tb = now_s();
      st = barrier_of(true);
      if (st != UCC_OK) break;
      const double t0 = now_s();
      if (!mpi_call(*mpi)) {
        st = UCC_ERR_NO_MESSAGE;
        break;
      }
      const double mpi_us = (now_s() - t0) * 1e6;
      if (it >= warmup) mpi_sum += mpi_us;
      warm_mpi += it < warmup ? (now_s() - tb) * 1e6 : 0;
      if (after && (st = barrier_of(true)) != UCC_OK) break;
    }
    step = "barrier";
    const double tb = now_s();
    st = cfg.compare ? barrier_of(false) : post_and_wait(w, breq, nullptr);
    if (st != UCC_OK) break;
    step = "timed iteration";
    st = post_and_wait(w, req, &t_us);
    if (st == UCC_OK && it < warmup) warm_ours += (now_s() - tb) * 1e6;
    if (st == UCC_OK && cfg.compare && after) {
      step = "barrier";
      st = barrier_of(false);
    }
    if (st == UCC_OK && it >= warmup) add(t_us, it == warmup);
  }
  out->span_us = out->mpi_span_us = 0;
  out->late = out->starts = 0;
  if (st == UCC_OK && cfg.window && iters > 0) {
    // Slot 2i: MPI's iteration i, 2i + 1 ours (--compare); else slot i ours.
    // Each rank's time runs from the slot's start to its own completion.
    double need = warmup ? warm_ours / warmup : t_us;
    if (warmup && warm_mpi / warmup > need) need = warm_mpi / warmup;
    Windows win;
    step = "window agreement";
    if (!agree_windows(w.oob, w.ctx, need, &win)) st = UCC_ERR_NO_MESSAGE;
    const int per = cfg.compare ? 2 : 1;
    std::vector<double> fin, mpi_fin;
    fin.reserve(iters);
    mpi_fin.reserve(iters);
    auto start = [&](int slot) {
      const double late = wait_until_us(win.start(slot));
      out->late += late > 10;
      ++out->starts;
      return win.start(slot);
    };
    for (int it = 0; st == UCC_OK && it < iters; ++it) {
      if (cfg.compare) {
        step = "MPI iteration";
        const double t0 = start(per * it);
        if (!mpi_call(*mpi)) {
          st = UCC_ERR_NO_MESSAGE;
          break;
        }
        mpi_fin.push_back(now_s() * 1e6 - t0);
        mpi_sum += mpi_fin.back();
      }
      step = "timed iteration";
      const double t0 = start(per * it + per - 1);
      st = post_and_wait(w, req, nullptr);
      if (st != UCC_OK) break;
      fin.push_back(now_s() * 1e6 - t0);
      add(fin.back(), it == 0);
    }
    step = "spans";
    if (st == UCC_OK &&
        (!mean_span(w.oob, w.ctx, fin, n, &out->span_us) ||
         !mean_span(w.oob, w.ctx, mpi_fin, n, &out->mpi_span_us)))
      st = UCC_ERR_NO_MESSAGE;
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
    st = post_and_wait(w, breq, nullptr);
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
  out->mpi_avg_us = iters ? mpi_sum / iters : 0;
  out->it_min_us = mn;
  out->it_max_us = mx;
  return UCC_OK;
}

int rank_main(Rank& rk, const Config& cfg) {
  int rc = 0;
  {
    World w;
    if (w.init(rk) != UCC_OK) return 1;
    if (cfg.cuda && !ucct::gpu::init()) return 1;
    int per_host = w.size;
    const std::string hosts = gather_hosts(rk, w.ctx, &per_host);
    std::string why;
    if (cfg.window && !shared_clock(w.oob, w.ctx, &why)) {
      if (w.rank == 0)
        std::fprintf(stderr, "ucc_perftest: --start window: %s\n", why.c_str());
      return 1;
    }
    if (w.rank == 0) print_header(cfg, w.size, w.team, hosts, per_host);
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
      if (w.rank == 0) print_row(cfg, w.size, count, all, w.team);
      for (const RankStats& s : all)
        rc = (s.wrong || s.mpi_wrong) ? kRanksDone : rc;
    }
  }
  // Nobody exits before rank 0 has printed everything (a nonzero exit makes
  // run_ranks kill the others).
  if (oob_barrier(rk.oob, nullptr, kWaitTimeoutS) != UCC_OK) return 1;
  return rc;
}

}  // namespace
}  // namespace ucct::perf

int main(int argc, char** argv) {
  namespace perf = ucct::perf;
  perf::Config cfg;
  // Under mpirun the job's size is the rank count (-N may repeat it).
  const int mpi_size = perf::mpi_launched_size();
  if (mpi_size > 0) cfg.ranks = mpi_size;
  cfg.under_mpi = mpi_size > 0;
  const int rc = perf::parse_args(argc, argv, &cfg);
  if (rc >= 0) return rc;
  if (cfg.compare) {
    const char* why = perf::mpi_unsupported(cfg);
    if (why) {
      std::fprintf(stderr, "ucc_perftest: --compare mpi: %s\n", why);
      return 1;
    }
  }
  const char* no_gpu = "";
  if (cfg.cuda && !ucct::gpu::available(&no_gpu)) {
    std::fprintf(stderr, "ucc_perftest: -m cuda needs a CUDA GPU: %s\n",
                 no_gpu);
    return 1;
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  cfg.cpus = mpi_size > 0 ? static_cast<int>(online > 0 ? online : 1)
                          : ucct::usable_cpus();
  auto fn = [&](ucct::Rank& r) { return perf::rank_main(r, cfg); };
  if (mpi_size > 0) {
    if (cfg.ranks != mpi_size) {
      std::fprintf(stderr, "ucc_perftest: -N %d but mpirun started %d\n",
                   cfg.ranks, mpi_size);
      return 1;
    }
    return perf::mpi_run(fn);
  }
  if (cfg.compare) return perf::mpi_relaunch(argc, argv, cfg);
  if (cfg.bootstrap != nullptr) {
    // Across hosts: the forked ranks leave the local OOB for the job's.
    auto node_fn = [&](ucct::Rank& r) {
      ucc_ext_oob_tcp_params_t p{};
      p.server = cfg.bootstrap;
      p.n_oob_eps = static_cast<uint32_t>(cfg.total_ranks());
      p.oob_ep = static_cast<uint32_t>(cfg.node_rank * cfg.ranks + r.rank);
      p.key = cfg.bootstrap_key;
      p.timeout = cfg.timeout_s;
      ucct::Rank job{static_cast<int>(p.oob_ep), cfg.total_ranks(), {}};
      const ucc_status_t st = ucc_ext_oob_tcp_create(&p, &job.oob);
      if (st != UCC_OK) {
        std::fprintf(stderr, "rank %u: bootstrap at %s: %s\n", p.oob_ep,
                     cfg.bootstrap, ucct::status_name(st));
        return 1;
      }
      const int rc = perf::rank_main(job, cfg);
      ucc_ext_oob_tcp_destroy(&job.oob);
      return rc;
    };
    return ucct::run_ranks(cfg.ranks, node_fn, cfg.timeout_s, cfg.bind) ? 0 : 1;
  }
  return ucct::run_ranks(cfg.ranks, fn, cfg.timeout_s, cfg.bind) ? 0 : 1;
}

// ucc_simperf: ucc_perftest's table for a job of up to thousands of ranks,
// simulated on SimGrid (docs/scale.md). Every rank is an S4U actor of this
// process running the real library (ucc_init, context, team, collectives)
// and its inline engine; the engines talk over UCC_NET=sim
// (platform/sim/sim_net.h), so data really moves and every result is
// checked element by element, while time is SimGrid's.
//
//   ucc_simperf --platform P.xml -N 1024 [--ppn 8] -c allreduce -b 8 -e 1M
//
// Ranks fill the platform's hosts in name order, ppn per host (each host
// is a node of its own: ranks that share one share a host id, so the
// node-aware algorithms see the nodes). The other flags are
// ucc_perftest's (-c -d -o -b -e -f -n -w -r -i -F -v); -N may exceed
// ucc_perftest's 1024. SimGrid's own options (--cfg=..., --log=...) pass
// through.
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <string>
#include <vector>

// Not self-contained: after the S4U headers.
#include <simgrid/version.h>

#include "platform/sim/sim_net.h"
#include "tests/common/harness.h"
#include "tests/perf/perftest_args.h"
#include "tests/perf/perftest_check.h"
#include "tests/perf/perftest_report.h"
#include "tests/sim/sim_job.h"

namespace ucct::sim {
namespace {

namespace sg4 = simgrid::s4u;
namespace perf = ucct::perf;

struct Options {
  const char* platform = nullptr;
  int ranks = 0;
  int ppn = 1;
  double copy_gbs = 0;    // 0: measured here at start
  double reduce_gbs = 0;  // 0: measured here at start
  double send_msg_us = 0;  // per message, at its sender and receiver
  double recv_msg_us = 0;
  double limit_s = 100;   // simulated seconds one collective may take
};

// What the ranks share beyond the OOB.
struct Run {
  Options opt;
  perf::Config cfg;
  Job job;
  std::vector<sg4::Host*> hosts;
  std::vector<perf::RankStats> stats;
  std::vector<double> setup_s;  // per rank: context + team, simulated
  int failed = 0;               // ranks that failed a call
  uint64_t nudges = 0;          // polls that had to sleep (see idle())
  // Process memory: before the contexts, after the teams.
  long rss_kb[2] = {};
  size_t heap[2] = {};
};

long rss_kb() {
  FILE* f = fopen("/proc/self/statm", "r");
  long pages = 0, res = 0;
  if (f != nullptr) {
    if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
    fclose(f);
  }
  return res * (sysconf(_SC_PAGESIZE) / 1024);
}
size_t heap_bytes() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// Bytes per second of a copy and of a float sum into a buffer (d += s),
// 256 KiB at a time (in cache, as the engine's slots are), best of 5.
void measure_rates(double* copy_gbs, double* reduce_gbs) {
  constexpr size_t kBytes = 256 * 1024, kReps = 64;
  std::vector<float> a(kBytes / 4, 1.0f), b(kBytes / 4, 2.0f);
  double best_c = 0, best_r = 0;
  for (int round = 0; round < 5; ++round) {
    double t0 = now_s();
    for (size_t i = 0; i < kReps; ++i) {
      memcpy(a.data(), b.data(), kBytes);
      asm volatile("" : : "r"(a.data()) : "memory");
    }
    double t = now_s() - t0;
    best_c = std::max(best_c, kBytes * kReps / t / 1e9);
    t0 = now_s();
    for (size_t i = 0; i < kReps; ++i) {
      float* d = a.data();
      const float* s = b.data();
      for (size_t k = 0; k < a.size(); ++k) d[k] += s[k];
      asm volatile("" : : "r"(d) : "memory");
    }
    t = now_s() - t0;
    best_r = std::max(best_r, kBytes * kReps / t / 1e9);
  }
  *copy_gbs = best_c;
  *reduce_gbs = best_r;
}

// A poll loop's idle step. The library's progress waits in simulated time
// when its net is idle (sim_net.h); a loop whose calls never reach a wait
// would keep simulated time still, so after 256 polls at one instant it
// sleeps 0.1 ns (counted: a figure that moved by it says so).
struct Idle {
  Run* run;
  double at = -1;
  unsigned same = 0;
  void operator()() {
    const double now = sg4::Engine::get_clock();
    if (now != at) {
      at = now;
      same = 0;
      return;
    }
    if (++same < 256) return;
    same = 0;
    ++run->nudges;
    sg4::this_actor::sleep_for(1e-10);
  }
};

ucc_status_t wait_req(Run& run, ucc_context_h ctx, ucc_coll_req_h req) {
  Idle idle{&run};
  const double t0 = sg4::Engine::get_clock();
  ucc_status_t st;
  while ((st = ucc_collective_test(req)) == UCC_INPROGRESS) {
    const ucc_status_t pst = ucc_context_progress(ctx);
    if (pst < 0) return pst;
    idle();
    if (sg4::Engine::get_clock() - t0 > run.opt.limit_s)
      return UCC_ERR_TIMED_OUT;
  }
  return st;
}

// Simulated time repeats itself: few iterations by default.
int warmup_of(const perf::Config& c) {
  return c.n_warmup >= 0 ? c.n_warmup : 1;
}
int iters_of(const perf::Config& c) { return c.n_iter >= 0 ? c.n_iter : 3; }

bool report(int rank, const char* what, ucc_status_t st) {
  if (st == UCC_OK) return true;
  std::fprintf(stderr, "rank %d: %s: %s\n", rank, what, status_name(st));
  return false;
}

// One size on one rank: a checked iteration, then the timed ones, every
// one started by all ranks at the same simulated instant.
bool run_size(Run& run, int r, ucc_context_h ctx, ucc_team_h team,
              uint64_t count, perf::RankStats* out) {
  const perf::Config& cfg = run.cfg;
  const perf::CollSpec& cs = *cfg.coll;
  const int n = run.job.n;
  const bool inplace = cfg.inplace && cs.has_inplace;
  perf::Setup s{cs.base, cfg.dt, cfg.op, r, n, count, cfg.root, inplace};
  const perf::Shape sh = perf::shape_of(s, cs.type);
  const size_t es = cfg.dt->size;
  std::vector<char> src(sh.src_here ? sh.src_count * es : 0);
  std::vector<char> dst(sh.dst_here ? sh.dst_count * es : 0);
  perf::fill_inputs(s, src.data(), sh.src_count, dst.data(),
                    sh.dst_here ? sh.dst_count : 0);
  perf::VArrays v;
  ucc_coll_args_t args = perf::coll_args(
      s, cs.type, sh, src.empty() ? nullptr : src.data(),
      dst.empty() ? nullptr : dst.data(), UCC_MEMORY_TYPE_HOST, &v);
  ucc_coll_req_h req = nullptr;
  if (!report(r, "ucc_collective_init", ucc_collective_init(&args, &req, team)))
    return false;
  const int warmup = warmup_of(cfg), iters = iters_of(cfg);
  *out = perf::RankStats{};
  double sum = 0;
  for (int it = -1; it < warmup + iters; ++it) {
    run.job.barrier->wait();
    const double t0 = sg4::Engine::get_clock();
    ucc_status_t st = ucc_collective_post(req);
    if (st == UCC_OK) st = wait_req(run, ctx, req);
    if (!report(r, "collective", st)) return false;
    const double us = (sg4::Engine::get_clock() - t0) * 1e6;
    if (it < 0) {  // the checked one
      std::string why;
      if (!perf::check_result(s, src.data(), dst.data(), &why)) {
        std::fprintf(stderr, "rank %d: count %" PRIu64 ": wrong result: %s\n",
                     r, count, why.c_str());
        out->wrong = 1;
      }
      continue;
    }
    if (it < warmup) continue;
    sum += us;
    out->it_min_us = it == warmup || us < out->it_min_us ? us : out->it_min_us;
    out->it_max_us = us > out->it_max_us ? us : out->it_max_us;
  }
  out->avg_us = iters ? sum / iters : 0;
  return report(r, "ucc_collective_finalize", ucc_collective_finalize(req));
}

void print_header(const Run& run, ucc_team_h team) {
  const perf::Config& cfg = run.cfg;
  const int n = run.job.n, ppn = run.opt.ppn;
  const int nodes = (n + ppn - 1) / ppn;
  int major = 0, minor = 0, patch = 0;
  sg_version_get(&major, &minor, &patch);
  std::printf("# ucc_simperf, library %s, SimGrid %d.%d.%d\n",
              ucc_get_version_string(), major, minor, patch);
  std::printf("# %-20s %s\n", "Collective:", coll_name(cfg.coll->type));
  std::printf("# %-20s %s\n", "Datatype:",
              cfg.coll->type == UCC_COLL_TYPE_BARRIER ? "N/A" : cfg.dt->name);
  std::printf("# %-20s %s\n",
              "Reduction:", cfg.coll->reduction ? op_name(cfg.op) : "N/A");
  std::printf("# %-20s %s\n", "Platform:", run.opt.platform);
  std::printf("# %-20s %d simulated, %d per host on %d hosts\n", "Ranks:", n,
              ppn, nodes);
  std::printf(
      "# %-20s copy %.2f GB/s, reduce %.2f GB/s (per byte, charged "
      "at each message's two ends)\n",
      "Engine work:", run.opt.copy_gbs, run.opt.reduce_gbs);
  std::printf("# %-20s %.3f us to send, %.3f us to take one\n",
              "Per message:", run.opt.send_msg_us, run.opt.recv_msg_us);
  std::printf("# %-20s %d warmup + %d timed, in simulated time\n",
              "Iterations:", warmup_of(cfg), iters_of(cfg));
  std::printf("# %-20s one iteration per size\n", "Result check:");
  double setup = 0;
  for (double s : run.setup_s) setup = std::max(setup, s);
  std::printf(
      "# %-20s %.1f us simulated, the slowest rank's (context and "
      "team; the OOB: %" PRIu64 " allgathers, %" PRIu64 " bytes per rank)\n",
      "Setup:", setup * 1e6, run.job.oob_rounds, run.job.oob_bytes);
  std::printf(
      "# %-20s %.0f KiB resident, %.0f KiB heap (the library's "
      "contexts and teams, over the ranks)\n",
      "Memory per rank:",
      static_cast<double>(run.rss_kb[1] - run.rss_kb[0]) / n,
      (static_cast<double>(run.heap[1]) - run.heap[0]) / 1024.0 / n);
  const ucc::plat::sim::Counters c = ucc::plat::sim::counters();
  std::printf("# %-20s %.1f per team member\n", "Peers connected:",
              c.fabrics ? static_cast<double>(c.connected) / c.fabrics : 0);
  if (cfg.verbose) perf::print_selection(team);
  perf::print_columns(cfg);
}

// What the simulated nets did, once the job has ended.
void print_footer(const Run& run) {
  const ucc::plat::sim::Counters c = ucc::plat::sim::counters();
  const double fab = c.fabrics ? static_cast<double>(c.fabrics) : 1;
  std::printf("# %-20s %.1f per team member\n",
              "Peers exchanged with:", c.touched / fab);
  std::printf("# %-20s %" PRIu64 " messages, %" PRIu64 " bytes, %" PRIu64
              " credit messages; %" PRIu64 " idle waits (%" PRIu64
              " timed out); %" PRIu64 " nudges\n",
              "Simulated net:", c.messages, c.bytes, c.credits, c.waits,
              c.timeouts, run.nudges);
  std::fflush(stdout);
}

void rank_main(Run& run, int r) {
  Job& job = run.job;
  RankOob ro{&job, r};
  const ucc_oob_coll_t oob = make_oob(&ro);
  ucc_lib_h lib = nullptr;
  ucc_context_h ctx = nullptr;
  ucc_team_h team = nullptr;
  bool ok = true;

  job.barrier->wait();  // every actor exists: the memory baseline
  if (r == 0) {
    run.rss_kb[0] = rss_kb();
    run.heap[0] = heap_bytes();
  }
  job.barrier->wait();
  const double t0 = sg4::Engine::get_clock();
  ucc_lib_config_h lcfg = nullptr;
  ucc_lib_params_t lp{};
  lp.mask = UCC_LIB_PARAM_FIELD_THREAD_MODE;
  lp.thread_mode = UCC_THREAD_SINGLE;
  ok = report(r, "ucc_lib_config_read",
              ucc_lib_config_read(nullptr, nullptr, &lcfg)) &&
       report(r, "ucc_init", ucc_init(&lp, lcfg, &lib));
  if (lcfg != nullptr) ucc_lib_config_release(lcfg);
  ucc_context_config_h ccfg = nullptr;
  ok = ok && report(r, "ucc_context_config_read",
                    ucc_context_config_read(lib, nullptr, &ccfg));
  // Ranks of one simulated host are one host to the library.
  const std::string host = sg4::this_actor::get_host()->get_name();
  ok = ok && report(r, "ucc_context_config_modify",
                    ucc_context_config_modify(ccfg, nullptr, "HOST_ID",
                                              host.c_str()));
  ucc_context_params_t cp{};
  cp.mask = UCC_CONTEXT_PARAM_FIELD_OOB;
  cp.oob = oob;
  ok = ok && report(r, "ucc_context_create",
                    ucc_context_create(lib, &cp, ccfg, &ctx));
  if (ccfg != nullptr) ucc_context_config_release(ccfg);
  const ucc_team_params_t tp = ucct::world_team_params(oob);
  ok = ok && report(r, "ucc_team_create_post",
                    ucc_team_create_post(&ctx, 1, &tp, &team));
  if (ok) {
    Idle idle{&run};
    ucc_status_t st;
    while ((st = ucc_team_create_test(team)) == UCC_INPROGRESS) {
      ucc_context_progress(ctx);
      idle();
    }
    ok = report(r, "ucc_team_create_test", st);
  }
  run.setup_s[r] = sg4::Engine::get_clock() - t0;
  if (!ok) ++run.failed;
  job.barrier->wait();
  if (r == 0) {
    run.rss_kb[1] = rss_kb();
    run.heap[1] = heap_bytes();
  }
  if (run.failed != 0) return;  // every rank sees it: none goes on

  const perf::Config& cfg = run.cfg;
  if (r == 0) print_header(run, team);
  std::vector<uint64_t> counts;
  if (cfg.coll->type == UCC_COLL_TYPE_BARRIER) {
    counts.push_back(0);
  } else {
    for (uint64_t c = cfg.min_count; c <= cfg.max_count; c *= cfg.factor) {
      counts.push_back(c);
      if (c == 0 || c * cfg.factor <= c) break;
    }
  }
  for (uint64_t count : counts) {
    if (!run_size(run, r, ctx, team, count, &run.stats[r])) ++run.failed;
    job.barrier->wait();
    if (run.failed != 0) break;
    if (r == 0) {
      perf::print_row(cfg, job.n, count, run.stats, team);
      std::fflush(stdout);  // a sweep may stop the run at any size
    }
    for (const perf::RankStats& s : run.stats) run.failed += s.wrong && r == 0;
    job.barrier->wait();
    if (run.failed != 0) break;
  }
  if (run.failed == 0) {
    Idle idle{&run};
    ucc_status_t st;
    while ((st = ucc_team_destroy(team)) == UCC_INPROGRESS) {
      ucc_context_progress(ctx);
      idle();
    }
    report(r, "ucc_team_destroy", st);
    report(r, "ucc_context_destroy", ucc_context_destroy(ctx));
    report(r, "ucc_finalize", ucc_finalize(lib));
  }
}

int usage(const char* why) {
  if (why != nullptr) std::fprintf(stderr, "ucc_simperf: %s\n", why);
  std::fprintf(
      stderr,
      "usage: ucc_simperf --platform FILE.xml -N RANKS [--ppn K]\n"
      "         [--copy-gbs X] [--reduce-gbs X] [--msg-us S[,R]] [--limit S]\n"
      "         [ucc_perftest's -c -d -o -b -e -f -n -w -r -i -F -v]\n"
      "         [SimGrid's --cfg=... --log=...]\n"
      "  --platform  a SimGrid platform (tests/sim/platforms/*.xml)\n"
      "  -N          ranks (actors), any number the hosts and memory hold\n"
      "  --ppn       ranks per host (default 1)\n"
      "  --copy-gbs, --reduce-gbs  the engine's per-byte work, GB/s\n"
      "              (default: measured on this machine at start)\n"
      "  --msg-us    the engine's work per message, us: S to send one, R\n"
      "              to take one (R defaults to S; default 0: bytes only)\n"
      "  --limit     simulated seconds one collective may take (100)\n");
  return 1;
}

// Natural order of host names (node-2 before node-10).
bool name_less(const sg4::Host* a, const sg4::Host* b) {
  const std::string &x = a->get_name(), &y = b->get_name();
  size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    if (isdigit(static_cast<unsigned char>(x[i])) &&
        isdigit(static_cast<unsigned char>(y[j]))) {
      size_t ei = i, ej = j;
      while (ei < x.size() && isdigit(static_cast<unsigned char>(x[ei]))) ++ei;
      while (ej < y.size() && isdigit(static_cast<unsigned char>(y[ej]))) ++ej;
      const unsigned long long u = strtoull(x.c_str() + i, nullptr, 10);
      const unsigned long long w = strtoull(y.c_str() + j, nullptr, 10);
      if (u != w) return u < w;
      i = ei;
      j = ej;
      continue;
    }
    if (x[i] != y[j]) return x[i] < y[j];
    ++i;
    ++j;
  }
  return x.size() - i < y.size() - j;
}

// The OOB's cost: the route between the first two hosts.
void set_route(Run& run) {
  if (run.hosts.size() < 2) return;
  std::vector<sg4::Link*> links;
  double lat = 0;
  run.hosts[0]->route_to(run.hosts[1], links, &lat);
  double bw = 0;
  for (const sg4::Link* l : links)
    bw = bw == 0 ? l->get_bandwidth() : std::min(bw, l->get_bandwidth());
  run.job.lat_s = lat;
  run.job.bw_bps = bw;
}

}  // namespace
}  // namespace ucct::sim

int main(int argc, char** argv) {
  namespace sim = ucct::sim;
  namespace sg4 = simgrid::s4u;
  sim::Run run;
  // Ours, SimGrid's and perftest's arguments apart.
  std::vector<char*> sg_args{argv[0]}, pt_args{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a.rfind("--cfg=", 0) == 0 || a.rfind("--log=", 0) == 0) {
      sg_args.push_back(argv[i]);
    } else if (a == "--platform" && more) {
      run.opt.platform = argv[++i];
    } else if ((a == "-N" || a == "--ranks") && more) {
      run.opt.ranks = atoi(argv[++i]);
    } else if (a == "--ppn" && more) {
      run.opt.ppn = atoi(argv[++i]);
    } else if (a == "--copy-gbs" && more) {
      run.opt.copy_gbs = atof(argv[++i]);
    } else if (a == "--reduce-gbs" && more) {
      run.opt.reduce_gbs = atof(argv[++i]);
    } else if (a == "--msg-us" && more) {
      const char* v = argv[++i];
      char* end = nullptr;
      run.opt.send_msg_us = strtod(v, &end);
      run.opt.recv_msg_us =
          end != nullptr && *end == ',' ? atof(end + 1) : run.opt.send_msg_us;
      if (end == v || run.opt.send_msg_us < 0 || run.opt.recv_msg_us < 0)
        return sim::usage("--msg-us takes S or S,R, microseconds, >= 0");
    } else if (a == "--limit" && more) {
      run.opt.limit_s = atof(argv[++i]);
    } else if (a == "-h" || a == "--help") {
      return sim::usage(nullptr);
    } else {
      pt_args.push_back(argv[i]);
    }
  }
  if (run.opt.platform == nullptr) return sim::usage("--platform is needed");
  if (run.opt.ranks < 2) return sim::usage("-N must be 2 or more");
  if (run.opt.ppn < 1) return sim::usage("--ppn must be 1 or more");
  int pt_argc = static_cast<int>(pt_args.size());
  pt_args.push_back(nullptr);
  const int rc = ucct::perf::parse_args(pt_argc, pt_args.data(), &run.cfg);
  if (rc >= 0) return rc;
  if (run.cfg.root >= static_cast<uint64_t>(run.opt.ranks))
    return sim::usage("the root is not a rank");

  double copy = 0, reduce = 0;
  if (run.opt.copy_gbs <= 0 || run.opt.reduce_gbs <= 0)
    sim::measure_rates(&copy, &reduce);
  if (run.opt.copy_gbs <= 0) run.opt.copy_gbs = copy;
  if (run.opt.reduce_gbs <= 0) run.opt.reduce_gbs = reduce;
  ucc::plat::sim::Costs costs;
  costs.send_s_per_byte = 1e-9 / run.opt.copy_gbs;
  costs.recv_s_per_byte =
      1e-9 / (run.cfg.coll->reduction ? run.opt.reduce_gbs : run.opt.copy_gbs);
  costs.send_s_per_msg = run.opt.send_msg_us * 1e-6;
  costs.recv_s_per_msg = run.opt.recv_msg_us * 1e-6;
  ucc::plat::sim::set_costs(costs);
  ucc::plat::sim::install();
  setenv("UCC_NET", "sim", 1);

  int sg_argc = static_cast<int>(sg_args.size());
  sg4::Engine e(&sg_argc, sg_args.data());
  e.load_platform(run.opt.platform);
  run.hosts = e.get_all_hosts();
  std::sort(run.hosts.begin(), run.hosts.end(), sim::name_less);
  const int n = run.opt.ranks, ppn = run.opt.ppn;
  const size_t need = static_cast<size_t>((n + ppn - 1) / ppn);
  if (need > run.hosts.size()) {
    std::fprintf(stderr,
                 "ucc_simperf: %d ranks at %d per host need %zu "
                 "hosts; %s has %zu\n",
                 n, ppn, need, run.opt.platform, run.hosts.size());
    return 1;
  }
  sim::set_route(run);
  run.job.n = n;
  run.job.barrier = sg4::Barrier::create(static_cast<unsigned>(n));
  run.stats.assign(static_cast<size_t>(n), {});
  run.setup_s.assign(static_cast<size_t>(n), 0);
  for (int r = 0; r < n; ++r) {
    sg4::Actor::create("rank" + std::to_string(r),
                       run.hosts[static_cast<size_t>(r / ppn)],
                       [&run, r] { sim::rank_main(run, r); });
  }
  e.run();
  sim::print_footer(run);
  return run.failed != 0 ? 1 : 0;
}

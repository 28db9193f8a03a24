#include "tests/perf/perftest_report.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "tests/common/gpu.h"
#include "tests/perf/perftest_check.h"
#include "tests/perf/perftest_mpi.h"

namespace ucct::perf {
namespace {

double busbw_factor(const CollSpec& s, int n) {
  return s.busbw_num_nm1 ? s.busbw_num_nm1 * (n - 1) / static_cast<double>(n)
                         : 1.0;
}

// -m cuda: the copy engines' bandwidth on this GPU (pinned host memory,
// 64 MiB, best of 5 each way; and GPU to GPU within device memory, bytes
// copied a second), in GB/s; false on a CUDA error.
bool copy_engine_gbs(double* htod, double* dtoh, double* dtod) {
  constexpr size_t kBytes = size_t{64} << 20;
  void* h = ucct::gpu::host_alloc(kBytes);
  uint64_t d = 0;
  void* s = nullptr;
  bool ok = h != nullptr && ucct::gpu::alloc(kBytes, false, &d) &&
            ucct::gpu::stream_create(&s);
  uint64_t d2 = 0;
  ok = ok && ucct::gpu::alloc(kBytes, false, &d2);
  *htod = *dtoh = *dtod = 0;
  for (int i = 0; ok && i < 5; ++i) {
    double t0 = now_s();
    ok = ucct::gpu::to_device_async(d, h, kBytes, s) &&
         ucct::gpu::stream_sync(s);
    const double up = kBytes / (now_s() - t0) / 1e9;
    t0 = now_s();
    ok = ok && ucct::gpu::to_host_async(h, d, kBytes, s) &&
         ucct::gpu::stream_sync(s);
    const double down = kBytes / (now_s() - t0) / 1e9;
    t0 = now_s();
    ok = ok && ucct::gpu::dtod_async(d2, d, kBytes, s) &&
         ucct::gpu::stream_sync(s);
    const double within = kBytes / (now_s() - t0) / 1e9;
    *htod = up > *htod ? up : *htod;
    *dtoh = down > *dtoh ? down : *dtoh;
    *dtod = within > *dtod ? within : *dtod;
  }
  ucct::gpu::release(d2);
  if (s != nullptr) ucct::gpu::stream_destroy(s);
  ucct::gpu::release(d);
  ucct::gpu::host_free(h);
  return ok;
}

// The algorithm `team` runs for `coll` at `bytes`, or "?".
const char* alg_at(ucc_team_h team, ucc_coll_type_t coll, uint64_t bytes) {
  ucc_coll_alg_range_t r[8];
  uint32_t n = 8;
  if (ucc_team_coll_algs(team, coll, r, &n) != UCC_OK || n == 0) return "?";
  const char* name = r[0].alg_name;
  for (uint32_t i = 0; i < n && i < 8; ++i)
    if (bytes >= r[i].min_bytes) name = r[i].alg_name;
  return name;
}

}  // namespace

// -v: every collective's selection, as the team's engine reports it.
void print_selection(ucc_team_h team) {
  std::printf("# %-20s by message size (bytes), not in place\n", "Algorithms:");
  size_t nc = 0;
  const CollInfo* colls = coll_table(&nc);
  for (size_t c = 0; c < nc; ++c) {
    ucc_coll_alg_range_t r[8];
    uint32_t n = 8;
    if (ucc_team_coll_algs(team, colls[c].type, r, &n) != UCC_OK) continue;
    std::printf("#   %-18s", colls[c].name);
    for (uint32_t i = 0; i < n && i < 8; ++i)
      std::printf("%s%s from %" PRIu64, i ? ", " : " ", r[i].alg_name,
                  r[i].min_bytes);
    std::printf("\n");
  }
}

// Where the ranks run: each rank's host (UCC_HOST_ID where set, else its
// hostname), gathered over the OOB; "name: k ranks" per host, in order of
// first appearance; *most: the most ranks on one host. Every rank takes
// part.
std::string gather_hosts(const Rank& rk, ucc_context_h ctx, int* most) {
  constexpr size_t kName = 64;
  char me[kName] = {0};
  const char* id = getenv("UCC_HOST_ID");
  if (id != nullptr && *id != '\0')
    snprintf(me, sizeof(me), "%s", id);
  else if (gethostname(me, sizeof(me) - 1) != 0)
    snprintf(me, sizeof(me), "?");
  std::vector<char> all(kName * static_cast<size_t>(rk.size));
  if (ucct::oob_allgather(rk.oob, me, all.data(), kName, ctx) != UCC_OK)
    return "?";
  std::vector<std::pair<std::string, int>> hosts;
  for (int q = 0; q < rk.size; ++q) {
    std::string name(&all[kName * static_cast<size_t>(q)]);
    auto it = std::find_if(hosts.begin(), hosts.end(),
                           [&](const auto& h) { return h.first == name; });
    if (it == hosts.end())
      hosts.emplace_back(name, 1);
    else
      ++it->second;
  }
  *most = 0;
  for (const auto& h : hosts) *most = h.second > *most ? h.second : *most;
  std::string out = std::to_string(hosts.size()) + " (";
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (i == 4 && hosts.size() > 5) {
      out += ", ...";
      break;
    }
    out += (i ? ", " : "") + hosts[i].first + ": " +
           std::to_string(hosts[i].second);
  }
  return out + ")";
}

// per_host: the most ranks on one host.
void print_header(const Config& cfg, int n, ucc_team_h team,
                  const std::string& hosts, int per_host) {
  const CollSpec& cs = *cfg.coll;
  const bool barrier = cs.type == UCC_COLL_TYPE_BARRIER;
  Setup probe{cs.base, cfg.dt, cfg.op, 0, n, 1, cfg.root, cfg.inplace};
  const char* skip = check_skip_reason(probe);
  std::printf("# ucc_perftest, library %s\n", ucc_get_version_string());
  std::printf("# %-20s %s\n", "Collective:", coll_name(cs.type));
  if (cfg.cuda) {
    double up = 0, down = 0, within = 0;
    if (copy_engine_gbs(&up, &down, &within))
      std::printf(
          "# %-20s cuda (GPU 0; copy engines: host to GPU %.1f GB/s, "
          "GPU to host %.1f GB/s, GPU to GPU %.1f GB/s)\n",
          "Memory type:", up, down, within);
    else
      std::printf("# %-20s cuda (copy engines not measured)\n", "Memory type:");
  } else {
    std::printf("# %-20s %s\n", "Memory type:", "host");
  }
  std::printf("# %-20s %s\n", "Datatype:", barrier ? "N/A" : cfg.dt->name);
  std::printf("# %-20s %s\n",
              "Reduction:", cs.reduction ? op_name(cfg.op) : "N/A");
  std::printf("# %-20s %s\n",
              "Inplace:", cs.has_inplace ? (cfg.inplace ? "1" : "0") : "N/A");
  if (cs.rooted) std::printf("# %-20s %" PRIu64 "\n", "Root:", cfg.root);
  if (cfg.under_mpi) {
    std::printf("# %-20s %d MPI processes, %d CPUs, bound by mpirun\n",
                "Ranks:", n, cfg.cpus);
  } else if (cfg.bootstrap != nullptr) {
    std::printf(
        "# %-20s %d on %d hosts (%d each; bootstrap %s), %d CPUs here, "
        "bound: %s\n",
        "Ranks:", n, cfg.nodes, cfg.ranks, cfg.bootstrap, cfg.cpus,
        cfg.bind ? "core" : "none");
  } else {
    std::printf("# %-20s %d local processes, %d CPUs, bound: %s\n", "Ranks:", n,
                cfg.cpus, cfg.bind ? "core" : "none");
  }
  std::printf("# %-20s %s\n", "Hosts:", hosts.c_str());
  if (cfg.compare) {
    static const char* const kBetween[] = {
        "MPI_Barrier before MPI's, ours before ours",
        "each between its own library's barriers", "both between our barriers",
        "both between MPI_Barriers"};
    std::printf(
        "# %-20s %s (same buffers, one MPI iteration before each of"
        " ours, %s)\n",
        "Compared with:", mpi_library_version().c_str(),
        kBetween[static_cast<int>(cfg.between)]);
  }
  std::printf("# %-20s %s\n", "Start:",
              cfg.window ? "windows on the ranks' shared clock (warmup"
                           " between barriers)"
                         : "as each rank leaves the barrier before it");
  if (per_host > cfg.cpus) {
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
  if (cfg.verbose) print_selection(team);
  print_columns(cfg);
}

void print_columns(const Config& cfg) {
  std::printf("#\n# %10s %11s %11s %11s %11s %11s %11s", "count", "size(B)",
              "avg(us)", "min(us)", "max(us)", "algbw(GB/s)", "busbw(GB/s)");
  if (cfg.full) {
    std::printf(" %11s %11s %11s %11s", "busbw_max", "busbw_min", "it_min(us)",
                "it_max(us)");
  }
  if (cfg.overlap)
    std::printf(" %11s %11s %9s", "ov_total", "ov_compute", "overlap%");
  if (cfg.window) std::printf(" %11s %6s", "span(us)", "late%");
  if (cfg.compare)
    std::printf(" %11s %11s %8s", "mpi(us)", "mpi_busbw", "speedup");
  if (cfg.compare && cfg.window) std::printf(" %11s", "mpi_span");
  if (cfg.verbose) std::printf(" %s", "alg");
  std::printf("\n");
  std::fflush(stdout);
}

// Rank 0: one row (or a warning) from all ranks' stats.
void print_row(const Config& cfg, int n, uint64_t count,
               const std::vector<RankStats>& all, ucc_team_h team) {
  const CollSpec& cs = *cfg.coll;
  std::string wrong;
  double sum = 0, mn = all[0].avg_us, mx = all[0].avg_us;
  double it_mn = all[0].it_min_us, it_mx = all[0].it_max_us;
  for (int q = 0; q < n; ++q) {
    const RankStats& s = all[q];
    if (s.wrong || s.mpi_wrong) {
      wrong += (wrong.empty() ? "" : ",") + std::to_string(q);
      if (!s.wrong) wrong += " (MPI)";
    }
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
  // --start window: the span is the same on every rank; late% over all
  // ranks' starts.
  const double span = all[0].span_us, mpi_span = all[0].mpi_span_us;
  if (cfg.window) {
    double late = 0, starts = 0;
    for (int q = 0; q < n; ++q) {
      late += all[q].late;
      starts += all[q].starts;
    }
    std::printf(" %11.2f %6.1f", span, starts > 0 ? 100 * late / starts : 0);
  }
  if (cfg.compare) {
    // MPI: the mean over ranks of each rank's mean; speedup > 1: we are
    // faster (by the spans under --start window).
    double mpi = 0;
    for (int q = 0; q < n; ++q) mpi += all[q].mpi_avg_us;
    mpi /= n;
    const double speedup = cfg.window ? (span > 0 ? mpi_span / span : 0)
                                      : (avg > 0 ? mpi / avg : 0);
    std::printf(" %11.2f %11.3f %8.2f", mpi, bw(mpi) * factor, speedup);
    if (cfg.window) std::printf(" %11.2f", mpi_span);
  }
  if (cfg.verbose) std::printf(" %s", alg_at(team, cs.type, size_b));
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace ucct::perf

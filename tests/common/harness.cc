#include "tests/common/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "host/boot/oob_star.h"

namespace ucct {
namespace {

void close_all(const std::vector<int>& fds) {
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
}

int exit_code(int rc) {
  if (rc == 0) return 0;
  return (rc & 0xff) ? (rc & 0xff) : 1;  // 256 must not read as success
}

// The child side of run_ranks(): keeps only its own socket ends, runs fn,
// exits. root_end[p] / leaf_end[p] are the two ends of rank p's socket to
// rank 0 (index 0 unused).
// Pins the calling process to the r-th CPU it may run on (round robin).
void bind_to_cpu(int r) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  int want = r % usable_cpus();
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (want-- == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      sched_setaffinity(0, sizeof(one), &one);
      return;
    }
  }
}

// Where rank r of n runs. UCCT_RANKS_PER_HOST=k puts ranks r and r' on
// one host when r / k == r' / k, or with UCCT_HOST_PLACEMENT=cyclic when
// r % h == r' % h for h = ceil(n / k) hosts (round-robin placement, as
// `mpirun --map-by node` does): by default hosts are told apart by
// UCC_HOST_ID alone (shared memory within, TCP on loopback between); with
// UCCT_HOST_PIDS (comma-separated, one per host) the rank also joins the
// network, UTS and mount namespaces of that host's process
// (tests/multihost/hosts.sh makes them), so it has the host's address,
// hostname and private /dev/shm.
void place(int r, int n) {
  const char* per = getenv("UCCT_RANKS_PER_HOST");
  const int k = per != nullptr ? atoi(per) : 0;
  if (k <= 0) return;
  const char* how = getenv("UCCT_HOST_PLACEMENT");
  const bool cyclic = how != nullptr && std::strcmp(how, "cyclic") == 0;
  const int host = cyclic ? r % ((n + k - 1) / k) : r / k;
  const char* pids = getenv("UCCT_HOST_PIDS");
  if (pids == nullptr || *pids == '\0') {
    const std::string id = "ucct-host-" + std::to_string(host);
    setenv("UCC_HOST_ID", id.c_str(), 1);
    return;
  }
  std::string list = pids;
  size_t at = 0;
  for (int i = 0; i < host && at != std::string::npos; ++i) {
    at = list.find(',', at);
    if (at != std::string::npos) ++at;
  }
  if (at == std::string::npos || at >= list.size()) {
    std::fprintf(stderr, "rank %d: no host %d in UCCT_HOST_PIDS\n", r, host);
    _exit(124);
  }
  const std::string pid = list.substr(at, list.find(',', at) - at);
  for (const char* ns : {"net", "uts", "mnt"}) {
    const std::string path = "/proc/" + pid + "/ns/" + ns;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, 0) != 0) {
      std::fprintf(stderr, "rank %d: cannot join %s: %s\n", r, path.c_str(),
                   std::strerror(errno));
      _exit(124);
    }
    close(fd);
  }
}

[[noreturn]] void run_child(int r, int n, const std::vector<int>& root_end,
                            const std::vector<int>& leaf_end,
                            const std::function<int(Rank&)>& fn, pid_t parent,
                            bool bind) {
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // no orphans if the test binary dies
#endif
  if (bind) bind_to_cpu(r);
  if (getppid() != parent) _exit(126);  // parent died before prctl took effect
  place(r, n);
  std::vector<int> mine;
  if (r == 0) {
    mine = root_end;
    close_all(leaf_end);
  } else {
    mine.push_back(leaf_end[r]);
    close_all(root_end);
    for (int p = 1; p < n; ++p) {
      if (p != r) close(leaf_end[p]);
    }
  }
  int rc = 0;
  {
    // The library's own star allgather (host/boot/oob_star.h), over the
    // socketpairs made before fork.
    ucc::host::OobStar* star = ucc::host::OobStar::create(
        static_cast<uint32_t>(r), static_cast<uint32_t>(n), mine.data());
    if (star == nullptr) _exit(124);
    Rank rank{r, n, star->coll()};
    try {
      rc = fn(rank);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: exception: %s\n", r, e.what());
      rc = 125;
    } catch (...) {
      std::fprintf(stderr, "rank %d: unknown exception\n", r);
      rc = 125;
    }
    delete star;
  }
  std::fflush(nullptr);  // _exit() skips stdio; don't lose the rank's output
  _exit(exit_code(rc));
}

void sleep_ms(int ms) {
  timespec ts{0, ms * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

}  // namespace

int usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) +
         1e-9 * static_cast<double>(ts.tv_nsec);
}

const char* status_name(ucc_status_t st) {
  struct Row {
    ucc_status_t st;
    const char* name;
  };
  static const Row kRows[] = {
      {UCC_OK, "UCC_OK"},
      {UCC_INPROGRESS, "UCC_INPROGRESS"},
      {UCC_OPERATION_INITIALIZED, "UCC_OPERATION_INITIALIZED"},
      {UCC_ERR_NOT_SUPPORTED, "UCC_ERR_NOT_SUPPORTED"},
      {UCC_ERR_NOT_IMPLEMENTED, "UCC_ERR_NOT_IMPLEMENTED"},
      {UCC_ERR_INVALID_PARAM, "UCC_ERR_INVALID_PARAM"},
      {UCC_ERR_NO_MEMORY, "UCC_ERR_NO_MEMORY"},
      {UCC_ERR_NO_RESOURCE, "UCC_ERR_NO_RESOURCE"},
      {UCC_ERR_NO_MESSAGE, "UCC_ERR_NO_MESSAGE"},
      {UCC_ERR_NOT_FOUND, "UCC_ERR_NOT_FOUND"},
      {UCC_ERR_TIMED_OUT, "UCC_ERR_TIMED_OUT"},
      {UCC_ERR_IO_ERROR, "UCC_ERR_IO_ERROR"},
  };
  for (const Row& row : kRows) {
    if (row.st == st) return row.name;
  }
  return "UCC_ERR_(unknown)";
}

bool run_ranks(int n, const std::function<int(Rank&)>& fn, int timeout_s,
               bool bind, uint64_t may_be_killed) {
  auto allowed_kill = [&](int r, int st) {
    return r < 64 && ((may_be_killed >> r) & 1) != 0 && WIFSIGNALED(st) &&
           WTERMSIG(st) == SIGKILL;
  };
  if (n < 1) {
    std::fprintf(stderr, "run_ranks: need at least 1 rank, got %d\n", n);
    return false;
  }
  std::vector<int> root_end(n, -1), leaf_end(n, -1);
  for (int p = 1; p < n; ++p) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      std::fprintf(stderr, "run_ranks: socketpair: %s\n", std::strerror(errno));
      close_all(root_end);
      close_all(leaf_end);
      return false;
    }
    root_end[p] = sv[0];
    leaf_end[p] = sv[1];
  }

  std::fflush(
      nullptr);  // or the children print the parent's buffered output again
  const pid_t parent = getpid();
  std::vector<pid_t> pids(n, -1);
  std::vector<bool> reaped(n, false), killed(n, false);
  std::vector<int> wstatus(n, 0);
  int running = 0;
  bool failed = false;
  int first_failed = -1;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = fork();
    if (pid == 0) run_child(r, n, root_end, leaf_end, fn, parent, bind);
    if (pid < 0) {
      std::fprintf(stderr, "run_ranks: fork rank %d: %s\n", r,
                   std::strerror(errno));
      failed = true;
      break;
    }
    pids[r] = pid;
    ++running;
  }
  close_all(root_end);
  close_all(leaf_end);

  const double deadline = now_s() + timeout_s;
  bool timed_out = false;
  while (running > 0 && !failed) {
    for (int r = 0; r < n; ++r) {
      if (pids[r] < 0 || reaped[r]) continue;
      int st = 0;
      const pid_t w = waitpid(pids[r], &st, WNOHANG);
      if (w == 0 || (w < 0 && errno == EINTR)) continue;
      reaped[r] = true;
      --running;
      wstatus[r] = w < 0 ? -1 : st;  // -1: reaped by someone else
      if (w < 0 ||
          ((!WIFEXITED(st) || WEXITSTATUS(st) != 0) && !allowed_kill(r, st))) {
        failed = true;
        if (first_failed < 0) first_failed = r;
      }
    }
    if (running == 0 || failed) break;
    if (now_s() > deadline) {
      timed_out = true;
      break;
    }
    sleep_ms(2);
  }

  for (int r = 0; r < n; ++r) {
    if (pids[r] < 0 || reaped[r]) continue;
    kill(pids[r], SIGKILL);
    killed[r] = true;
  }
  for (int r = 0; r < n; ++r) {
    if (pids[r] < 0 || reaped[r]) continue;
    int st = 0;
    while (waitpid(pids[r], &st, 0) < 0 && errno == EINTR) {
    }
    reaped[r] = true;
    wstatus[r] = st;
  }

  for (int r = 0; r < n; ++r) {
    if (pids[r] < 0) continue;
    const int st = wstatus[r];
    if (killed[r]) {
      if (timed_out) {
        std::fprintf(stderr, "rank %d: timeout after %d s\n", r, timeout_s);
      } else if (first_failed >= 0) {
        std::fprintf(stderr,
                     "rank %d: killed by the harness (rank %d failed)\n", r,
                     first_failed);
      } else {
        std::fprintf(stderr, "rank %d: killed by the harness (fork failed)\n",
                     r);
      }
    } else if (st == -1) {
      std::fprintf(stderr, "rank %d: exit status lost (reaped elsewhere)\n", r);
    } else if (WIFSIGNALED(st) && !allowed_kill(r, st)) {
      std::fprintf(stderr, "rank %d: killed by signal %d (%s)\n", r,
                   WTERMSIG(st), strsignal(WTERMSIG(st)));
    } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
      std::fprintf(stderr, "rank %d: exit %d\n", r, WEXITSTATUS(st));
    }
  }
  return !failed && !timed_out;
}

ucc_status_t oob_allgather(const ucc_oob_coll_t& oob, const void* src,
                           void* dst, size_t len, ucc_context_h ctx,
                           double timeout_s) {
  void* req = nullptr;
  ucc_status_t st =
      oob.allgather(const_cast<void*>(src), dst, len, oob.coll_info, &req);
  if (st != UCC_OK) return st;
  const double deadline = now_s() + timeout_s;
  unsigned polls = 0;
  while ((st = oob.req_test(req)) == UCC_INPROGRESS) {
    if (ctx) ucc_context_progress(ctx);
    if ((++polls & 63) == 0 && now_s() > deadline) {
      st = UCC_ERR_TIMED_OUT;
      break;
    }
    sched_yield();
  }
  oob.req_free(req);
  return st;
}

ucc_status_t oob_barrier(const ucc_oob_coll_t& oob, ucc_context_h ctx,
                         double timeout_s) {
  const char token = 1;
  std::vector<char> all(oob.n_oob_eps);
  return oob_allgather(oob, &token, all.data(), 1, ctx, timeout_s);
}

// ---------------------------------------------------------------------------
// World

namespace {

ucc_status_t report(int rank, const char* call, ucc_status_t st) {
  if (st != UCC_OK) {
    std::fprintf(stderr, "rank %d: %s failed: %s\n", rank, call,
                 status_name(st));
  }
  return st;
}

}  // namespace

ucc_team_params_t world_team_params(const ucc_oob_coll_t& oob) {
  ucc_team_params_t p{};
  p.mask = UCC_TEAM_PARAM_FIELD_EP | UCC_TEAM_PARAM_FIELD_EP_RANGE |
           UCC_TEAM_PARAM_FIELD_OOB;
  p.ep = oob.oob_ep;
  p.ep_range = UCC_COLLECTIVE_EP_RANGE_CONTIG;
  p.oob = oob;
  return p;
}

ucc_status_t World::init(Rank& r, double timeout_s) {
  rank = r.rank;
  size = r.size;
  oob = r.oob;
  for (const auto& kv : env) setenv(kv.first.c_str(), kv.second.c_str(), 1);

  ucc_lib_config_h lib_config = nullptr;
  ucc_status_t st = ucc_lib_config_read(nullptr, nullptr, &lib_config);
  if (report(rank, "ucc_lib_config_read", st) != UCC_OK) return st;
  ucc_lib_params_t lib_params{};
  lib_params.mask = UCC_LIB_PARAM_FIELD_THREAD_MODE;
  lib_params.thread_mode = thread_mode;
  st = ucc_init(&lib_params, lib_config, &lib);
  ucc_lib_config_release(lib_config);
  if (report(rank, "ucc_init", st) != UCC_OK) {
    lib = nullptr;
    return st;
  }

  ucc_context_config_h ctx_config = nullptr;
  st = ucc_context_config_read(lib, nullptr, &ctx_config);
  if (report(rank, "ucc_context_config_read", st) != UCC_OK) return st;
  ucc_context_params_t ctx_params{};
  ctx_params.mask = UCC_CONTEXT_PARAM_FIELD_OOB;
  ctx_params.oob = oob;
  if (ctx_mem != nullptr) {
    ctx_params.mask |= UCC_CONTEXT_PARAM_FIELD_MEM_PARAMS;
    ctx_params.mem_params = *ctx_mem;
  }
  st = ucc_context_create(lib, &ctx_params, ctx_config, &ctx);
  ucc_context_config_release(ctx_config);
  if (report(rank, "ucc_context_create", st) != UCC_OK) {
    ctx = nullptr;
    return st;
  }

  const ucc_team_params_t team_params = world_team_params(oob);
  st = ucc_team_create_post(&ctx, 1, &team_params, &team);
  if (report(rank, "ucc_team_create_post", st) != UCC_OK) {
    team = nullptr;
    return st;
  }
  const double deadline = now_s() + timeout_s;
  unsigned polls = 0;
  while ((st = ucc_team_create_test(team)) == UCC_INPROGRESS) {
    ucc_context_progress(ctx);
    if ((++polls & 15) == 0) {
      if (now_s() > deadline) {
        std::fprintf(stderr, "rank %d: team creation timed out after %.0f s\n",
                     rank, timeout_s);
        return UCC_ERR_TIMED_OUT;
      }
      sched_yield();
    }
  }
  return report(rank, "ucc_team_create_test", st);
}

World::~World() {
  if (team) {
    // Destroy is collective; a peer that never comes must not hang us.
    const double deadline = now_s() + 30;
    ucc_status_t st;
    unsigned polls = 0;
    while ((st = ucc_team_destroy(team)) == UCC_INPROGRESS) {
      if (ctx) ucc_context_progress(ctx);
      if ((++polls & 15) == 0) {
        if (now_s() > deadline) break;
        sched_yield();
      }
    }
    if (st != UCC_OK) {
      report(rank, "ucc_team_destroy", st);
      return;  // a live team under the context: leave the rest to _exit()
    }
  }
  if (ctx) report(rank, "ucc_context_destroy", ucc_context_destroy(ctx));
  if (lib) report(rank, "ucc_finalize", ucc_finalize(lib));
}

ucc_status_t World::wait(ucc_coll_req_h req, double timeout_s) {
  if (!req) return UCC_ERR_INVALID_PARAM;
  const double deadline = now_s() + timeout_s;
  unsigned polls = 0;
  ucc_status_t st;
  while ((st = ucc_collective_test(req)) == UCC_INPROGRESS) {
    const ucc_status_t pst = ucc_context_progress(ctx);
    if (pst < 0) return pst;
    if ((++polls & 127) == 0) {
      if (now_s() > deadline) return UCC_ERR_TIMED_OUT;
      sched_yield();  // oversubscribed ranks: let the peers we wait for run
    }
  }
  return st;
}

ucc_status_t World::run(ucc_coll_args_t& args, double timeout_s) {
  ucc_coll_req_h req = nullptr;
  ucc_status_t st = ucc_collective_init(&args, &req, team);
  if (st != UCC_OK) return st;
  st = ucc_collective_post(req);
  if (st != UCC_OK) {
    ucc_collective_finalize(req);
    return st;
  }
  st = wait(req, timeout_s);
  if (st == UCC_ERR_TIMED_OUT)
    return st;  // still in flight: finalize is not allowed
  const ucc_status_t fst = ucc_collective_finalize(req);
  return st != UCC_OK ? st : fst;
}

ucc_status_t World::new_team(ucc_team_h* t, ucc_team_params_t p) {
  p.mask |= UCC_TEAM_PARAM_FIELD_OOB;
  p.oob = oob;
  *t = nullptr;
  ucc_status_t st = ucc_team_create_post(&ctx, 1, &p, t);
  if (st != UCC_OK) return st;
  while ((st = ucc_team_create_test(*t)) == UCC_INPROGRESS)
    ucc_context_progress(ctx);
  return st;
}

}  // namespace ucct

#include "tests/perf/perftest_args.h"

#include <getopt.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace ucct::perf {

namespace {

const CollSpec kSpecs[] = {
    // {type, rooted, reduction, has_inplace, total_bytes, busbw_num_nm1,
    //  base}
    {UCC_COLL_TYPE_ALLREDUCE, false, true, true, false, 2,
     UCC_COLL_TYPE_ALLREDUCE},
    {UCC_COLL_TYPE_BCAST, true, false, false, false, 0, UCC_COLL_TYPE_BCAST},
    {UCC_COLL_TYPE_REDUCE, true, true, true, false, 0, UCC_COLL_TYPE_REDUCE},
    {UCC_COLL_TYPE_ALLGATHER, false, false, true, true, 1,
     UCC_COLL_TYPE_ALLGATHER},
    {UCC_COLL_TYPE_ALLTOALL, false, false, true, true, 1,
     UCC_COLL_TYPE_ALLTOALL},
    {UCC_COLL_TYPE_REDUCE_SCATTER, false, true, true, true, 1,
     UCC_COLL_TYPE_REDUCE_SCATTER},
    {UCC_COLL_TYPE_BARRIER, false, false, false, false, 0,
     UCC_COLL_TYPE_BARRIER},
    {UCC_COLL_TYPE_ALLGATHERV, false, false, false, true, 1,
     UCC_COLL_TYPE_ALLGATHER},
    {UCC_COLL_TYPE_ALLTOALLV, false, false, false, true, 1,
     UCC_COLL_TYPE_ALLTOALL},
    {UCC_COLL_TYPE_REDUCE_SCATTERV, false, true, false, true, 1,
     UCC_COLL_TYPE_REDUCE_SCATTER},
};

}  // namespace

const CollSpec* spec_of(ucc_coll_type_t t) {
  for (const CollSpec& s : kSpecs) {
    if (s.type == t) return &s;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// Command line

namespace {

const char kUsage[] =
    "Usage: ucc_perftest [options]\n"
    "Forks N local ranks and times one collective over a range of sizes.\n"
    "\n"
    "  -c <coll>      collective: allreduce (default), bcast, reduce, "
    "allgather,\n"
    "                 alltoall, reduce_scatter, barrier, allgatherv, "
    "alltoallv,\n"
    "                 reduce_scatterv\n"
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
    "  -v             verbose: print which algorithm the team's engine\n"
    "                 selects for every collective by message size (not in\n"
    "                 place), and add an alg column with the one each row\n"
    "                 ran (ucc_team_coll_algs)\n"
    "  -F             full print: add busbw_max and busbw_min (busbw at the "
    "min\n"
    "                 and at the max time) and it_min / it_max (fastest and\n"
    "                 slowest single iteration of any rank, us)\n"
    "  -N, --ranks <n>  number of local ranks (default 4; under mpirun,\n"
    "                 every MPI process is a rank and -N may only repeat\n"
    "                 the job's size)\n"
    "  -m host|cuda   memory type of src and dst (cuda: device 0, in every "
    "rank;\n"
    "                 the header gives the copy engines' bandwidth)\n"
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
    "  --compare mpi  run MPI's collective on the same buffers, alternating\n"
    "                 with ours iteration by iteration; adds mpi(us),\n"
    "                 mpi_busbw and speedup = mpi / avg. Needs MPI at build\n"
    "                 time; started without mpirun, re-executes itself as\n"
    "                 mpirun -np <ranks> (UCC_PERFTEST_MPIRUN overrides)\n"
    "  --compare-barrier mixed|own|ucc|mpi  the barrier around each timed\n"
    "                 collective of --compare's iteration: mixed (default)\n"
    "                 MPI_Barrier before MPI's, ours before ours; own:\n"
    "                 the same and again after each; ucc or mpi: that\n"
    "                 library's before both.\n"
    "                 With more ranks than cores, the ranks that wait in\n"
    "                 a barrier take cores from those still in the\n"
    "                 collective, each library's barrier differently\n"
    "  --start barrier|window  when a timed collective starts on each\n"
    "                 rank: as it leaves the barrier before it (default),\n"
    "                 or window: at one instant on every rank, read from\n"
    "                 the clock they share (ranks on one kernel only: one\n"
    "                 host, or hosts emulated by namespaces), in windows\n"
    "                 3x the warmup's longest mean apart; adds span(us),\n"
    "                 the mean over iterations of the last rank's finish\n"
    "                 from that instant, late% (starts over 10 us late),\n"
    "                 and with --compare mpi_span; speedup = mpi_span /\n"
    "                 span. Ranks leave a barrier up to a message latency\n"
    "                 apart, which a rooted collective's per-rank times\n"
    "                 take in or leave out by which rank leaves first\n"
    "  --bind core|none  pin rank r to CPU r mod ncpu (default core, as\n"
    "                 mpirun --bind-to core; without it the scheduler may\n"
    "                 leave two ranks on one core for seconds)\n"
    "  --nodes <m> --node-rank <k> --bootstrap <host:port>\n"
    "                 across hosts without MPI: run one perftest per host,\n"
    "                 each with the same -N and options; their ranks meet\n"
    "                 at host:port, where the one with --node-rank 0\n"
    "                 listens (ucc_ext_oob_tcp_create). Rank k * N + r is\n"
    "                 local rank r of node k\n"
    "  --bootstrap-key <n>  a secret the perftests share (not 0); across\n"
    "                 hosts a key is needed: this, or UCC_BOOTSTRAP_KEY_FILE\n"
    "                 (a file of mode 0600) or UCC_BOOTSTRAP_KEY\n"
    "  -h, --help     this text\n"
    "\n"
    "Count (UCC's convention), per rank:\n"
    "  allreduce, bcast, reduce: the vector has count elements\n"
    "  allgather:      src count, dst ranks * count\n"
    "  alltoall:       src and dst ranks * count (count to / from each rank)\n"
    "  reduce_scatter: src ranks * count, dst count (in place: dst holds\n"
    "                  ranks * count, this rank's result at rank * count)\n"
    "  barrier:        no data, one row\n"
    "  allgatherv, alltoallv, reduce_scatterv: as allgather, alltoall,\n"
    "                  reduce_scatter, through the v arguments (count and\n"
    "                  displacement arrays: every block count elements,\n"
    "                  packed in rank order); not in place\n"
    "\n"
    "Columns: count; size(B) = count * elem; avg / min / max over ranks of "
    "each\n"
    "rank's mean iteration time (us; post until complete, ranks aligned by an\n"
    "untimed UCC barrier before each iteration); algbw = data bytes / avg "
    "time,\n"
    "data bytes = count * elem (allreduce, bcast, reduce) or ranks * count *\n"
    "elem (allgather, alltoall, reduce_scatter and their v forms); busbw =\n"
    "algbw * factor, as in nccl-tests: allreduce 2(n-1)/n; allgather,\n"
    "alltoall, reduce_scatter (and v) (n-1)/n; bcast, reduce 1; barrier\n"
    "prints 0. GB = 1e9 bytes.\n"
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

// The index of arg among words, or -1.
int word_of(const char* arg, std::initializer_list<const char*> words) {
  int i = 0;
  for (const char* w : words) {
    if (std::strcmp(arg, w) == 0) return i;
    ++i;
  }
  return -1;
}

}  // namespace

int parse_args(int argc, char** argv, Config* cfg) {
  static const option kLong[] = {
      {"ranks", required_argument, nullptr, 'N'},
      {"timeout", required_argument, nullptr, 't'},
      {"bind", required_argument, nullptr, 'B'},
      {"overlap", no_argument, nullptr, 'O'},
      {"compare", required_argument, nullptr, 'C'},
      {"compare-barrier", required_argument, nullptr, 'W'},
      {"start", required_argument, nullptr, 'T'},
      {"nodes", required_argument, nullptr, 'M'},
      {"node-rank", required_argument, nullptr, 'K'},
      {"bootstrap", required_argument, nullptr, 'S'},
      {"bootstrap-key", required_argument, nullptr, 'Y'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  const CollInfo* coll = coll_by_name("allreduce");
  cfg->dt = dtype_by_name("float32");
  long v = 0;
  int c, w;
  auto bad = [&](const char* what, const char* arg) {
    std::fprintf(stderr, "ucc_perftest: invalid %s: '%s' (see -h)\n", what,
                 arg);
    return 1;
  };
  while ((c = getopt_long(argc, argv, "c:b:e:f:d:o:n:w:r:N:m:t:iFvph", kLong,
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
      case 'M':
        if (!parse_int(optarg, 1, 1024, &v)) return bad("node count", optarg);
        cfg->nodes = static_cast<int>(v);
        break;
      case 'K':
        if (!parse_int(optarg, 0, 1023, &v)) return bad("node rank", optarg);
        cfg->node_rank = static_cast<int>(v);
        break;
      case 'S':
        cfg->bootstrap = optarg;
        break;
      case 'Y': {
        char* end = nullptr;
        errno = 0;
        cfg->bootstrap_key = std::strtoull(optarg, &end, 0);
        if (*optarg == '\0' || *end != '\0' || errno != 0)
          return bad("bootstrap key", optarg);
        break;
      }
      case 'C':
        if (std::strcmp(optarg, "mpi") != 0)
          return bad("comparison (mpi)", optarg);
        cfg->compare = true;
        break;
      case 'T':
        if ((w = word_of(optarg, {"barrier", "window"})) < 0)
          return bad("start (barrier or window)", optarg);
        cfg->window = w == 1;
        break;
      case 'W':
        // In Config::Between's order.
        if ((w = word_of(optarg, {"mixed", "own", "ucc", "mpi"})) < 0)
          return bad("barrier (own, ucc, mpi or mixed)", optarg);
        cfg->between = static_cast<Config::Between>(w);
        break;
      case 'B':
        if ((w = word_of(optarg, {"core", "none"})) < 0)
          return bad("binding (core or none)", optarg);
        cfg->bind = w == 0;
        break;
      case 'm':
        if (std::strcmp(optarg, "cuda") == 0)
          cfg->cuda = true;
        else if (std::strcmp(optarg, "host") != 0)
          return bad("memory type (host or cuda)", optarg);
        break;
      case 'i':
        cfg->inplace = true;
        break;
      case 'F':
        cfg->full = true;
        break;
      case 'v':
        cfg->verbose = true;
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
  if (cfg->nodes > 1 || cfg->bootstrap != nullptr) {
    if (cfg->bootstrap == nullptr || cfg->node_rank >= cfg->nodes) {
      std::fprintf(stderr,
                   "ucc_perftest: --nodes needs --bootstrap host:port and a "
                   "--node-rank below it\n");
      return 1;
    }
    if (cfg->under_mpi || cfg->compare) {
      std::fprintf(stderr,
                   "ucc_perftest: --nodes is for runs without MPI (under "
                   "mpirun the MPI job spans the hosts)\n");
      return 1;
    }
  }
  if (cfg->cuda && cfg->compare) {
    std::fprintf(stderr,
                 "ucc_perftest: --compare mpi takes host memory (-m host)\n");
    return 1;
  }
  if (cfg->coll->rooted &&
      cfg->root >= static_cast<uint64_t>(cfg->total_ranks())) {
    std::fprintf(stderr,
                 "ucc_perftest: root %" PRIu64
                 " is not below the rank count %d\n",
                 cfg->root, cfg->total_ranks());
    return 1;
  }
  return -1;
}

}  // namespace ucct::perf

// The queries and small entry points of ucc.h: versions, status strings,
// attributes of library, context and team, configuration printing, and the
// entry points that are not implemented yet (they must say so, not crash).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/common/harness.h"

namespace {

#define EXPECT_OK(call) EXPECT_EQ((call), UCC_OK) << #call

TEST(Api, VersionAndStatusStrings) {
  unsigned major = 0, minor = 0, release = 99;
  ucc_get_version(&major, &minor, &release);
  EXPECT_EQ(major, UCC_API_MAJOR);
  EXPECT_EQ(minor, UCC_API_MINOR);
  std::string v = ucc_get_version_string();
  EXPECT_EQ(v, std::to_string(major) + "." + std::to_string(minor) + "." +
                   std::to_string(release));
  for (ucc_status_t st :
       {UCC_OK, UCC_INPROGRESS, UCC_OPERATION_INITIALIZED,
        UCC_ERR_NOT_SUPPORTED, UCC_ERR_NOT_IMPLEMENTED, UCC_ERR_INVALID_PARAM,
        UCC_ERR_NO_MEMORY, UCC_ERR_NO_RESOURCE, UCC_ERR_NO_MESSAGE,
        UCC_ERR_NOT_FOUND, UCC_ERR_TIMED_OUT, UCC_ERR_IO_ERROR}) {
    const char* s = ucc_status_string(st);
    ASSERT_NE(s, nullptr);
    EXPECT_STRNE(s, "Unknown error") << st;
  }
  EXPECT_STREQ(ucc_status_string(static_cast<ucc_status_t>(-77)),
               "Unknown error");
}

std::string print_to_string(void (*print)(FILE*, const void*),
                            const void* cfg) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  print(f, cfg);
  std::fclose(f);
  std::string out(buf, len);
  std::free(buf);
  return out;
}

TEST(Api, AttributesAndConfigurationOfOneRank) {
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    int bad = 0;
    auto check = [&](bool ok, const char* what) {
      if (!ok) {
        std::fprintf(stderr, "rank %d: %s\n", r.rank, what);
        ++bad;
      }
    };
    ucc_lib_attr_t la{};
    la.mask = UCC_LIB_ATTR_FIELD_THREAD_MODE | UCC_LIB_ATTR_FIELD_COLL_TYPES |
              UCC_LIB_ATTR_FIELD_REDUCTION_TYPES | UCC_LIB_ATTR_FIELD_SYNC_TYPE;
    check(ucc_lib_get_attr(w.lib, &la) == UCC_OK, "lib_get_attr");
    check(la.thread_mode == UCC_THREAD_SINGLE, "thread mode");
    check(la.coll_types == 0xffff, "all 16 collective types");
    check(la.reduction_types & (1ull << UCC_OP_AVG), "avg offered");
    check(la.reduction_types & (1ull << UCC_OP_MAXLOC), "maxloc offered");
    check(la.reduction_types & (1ull << UCC_OP_MINLOC), "minloc offered");

    ucc_context_attr_t ca{};
    ca.mask = UCC_CONTEXT_ATTR_FIELD_TYPE | UCC_CONTEXT_ATTR_FIELD_CTX_ADDR |
              UCC_CONTEXT_ATTR_FIELD_CTX_ADDR_LEN;
    check(ucc_context_get_attr(w.ctx, &ca) == UCC_OK, "context_get_attr");
    // Created without the TYPE field: shared (many teams).
    check(ca.type == UCC_CONTEXT_SHARED, "context type");
    check(ca.ctx_addr != nullptr && ca.ctx_addr_len > 0, "context address");

    ucc_team_attr_t ta{};
    ta.mask = UCC_TEAM_ATTR_FIELD_SIZE | UCC_TEAM_ATTR_FIELD_EP |
              UCC_TEAM_ATTR_FIELD_EPS | UCC_TEAM_ATTR_FIELD_POST_ORDERING |
              UCC_TEAM_ATTR_FIELD_OUTSTANDING_CALLS;
    check(ucc_team_get_attr(w.team, &ta) == UCC_OK, "team_get_attr");
    check(ta.size == static_cast<uint32_t>(r.size), "team size");
    check(ta.ep == static_cast<uint64_t>(r.rank), "team ep");
    check(ta.eps != nullptr && ta.eps[r.rank] == ta.ep, "team eps");
    check(ta.ordering == UCC_COLLECTIVE_POST_ORDERED, "ordering");
    check(ta.outstanding_colls > 0, "outstanding");
    uint32_t size = 0;
    uint64_t ep = 99, *eps = nullptr, neps = 0;
    check(ucc_team_get_size(w.team, &size) == UCC_OK && size == ta.size,
          "get_size");
    check(ucc_team_get_my_ep(w.team, &ep) == UCC_OK && ep == ta.ep,
          "get_my_ep");
    check(ucc_team_get_all_eps(w.team, &eps, &neps) == UCC_OK && neps == size &&
              eps[0] == 0 && eps[size - 1] == size - 1,
          "get_all_eps");

    // Printing lists the knobs with their values; modify changes them.
    ucc_lib_config_h lc = nullptr;
    check(ucc_lib_config_read(nullptr, nullptr, &lc) == UCC_OK, "lib cfg");
    std::string lp = print_to_string(
        [](FILE* f, const void* c) {
          ucc_lib_config_print(
              static_cast<ucc_lib_config_h>(const_cast<void*>(c)), f, "lib",
              UCC_CONFIG_PRINT_CONFIG);
        },
        lc);
    check(lp.find("UCC_LOG_LEVEL=") != std::string::npos, "lib print");
    check(ucc_lib_config_modify(lc, "CLS", "basic") == UCC_OK,
          "what Open MPI's coll/ucc sets");
    ucc_lib_config_release(lc);
    ucc_context_config_h cc = nullptr;
    check(ucc_context_config_read(w.lib, nullptr, &cc) == UCC_OK, "ctx cfg");
    check(ucc_context_config_modify(cc, nullptr, "ALLREDUCE_ALG", "ring") ==
              UCC_OK,
          "ctx modify");
    std::string cp = print_to_string(
        [](FILE* f, const void* c) {
          ucc_context_config_print(
              static_cast<ucc_context_config_h>(const_cast<void*>(c)), f, "ctx",
              static_cast<ucc_config_print_flags_t>(UCC_CONFIG_PRINT_CONFIG |
                                                    UCC_CONFIG_PRINT_HEADER |
                                                    UCC_CONFIG_PRINT_DOC));
        },
        cc);
    check(cp.find("UCC_ALLREDUCE_ALG=ring") != std::string::npos,
          "ctx print shows the modified value");
    check(cp.find("# ctx") != std::string::npos, "ctx print header");
    check(
        ucc_context_config_modify(cc, "tl/ucp", "X", "1") == UCC_ERR_NOT_FOUND,
        "unknown component");
    check(ucc_context_config_modify(cc, "cl/basic,tl/ucp", "X", "1") ==
              UCC_ERR_NOT_FOUND,
          "unknown component list");
    check(ucc_context_config_modify(cc, "ucp", "X", "1") ==
              UCC_ERR_INVALID_PARAM,
          "malformed component");
    check(ucc_context_config_modify(cc, "all", "ALLREDUCE_ALG", "rd") == UCC_OK,
          "all components: the one table");
    check(ucc_context_config_modify(cc, nullptr, "ESTIMATED_NUM_EPS", "2") ==
                  UCC_OK &&
              ucc_context_config_modify(cc, nullptr, "ESTIMATED_NUM_PPN",
                                        "2") == UCC_OK &&
              ucc_context_config_modify(cc, nullptr, "NODE_LOCAL_ID", "0") ==
                  UCC_OK,
          "what Open MPI's coll/ucc sets");
    ucc_context_config_release(cc);

    // Capability query: answers match what init accepts.
    ucc_coll_caps_t caps{};
    check(ucc_coll_query(w.ctx, UCC_COLL_TYPE_ALLREDUCE, UCC_DT_FLOAT32,
                         UCC_OP_SUM, UCC_MEMORY_TYPE_HOST, &caps) == UCC_OK &&
              caps.supported && caps.n_algs == 7 &&
              std::strcmp(caps.alg_names[0], "rd") == 0 &&
              std::strcmp(caps.alg_names[1], "ring") == 0 &&
              std::strcmp(caps.alg_names[2], "hier") == 0 &&
              std::strcmp(caps.alg_names[3], "hier_ring") == 0 &&
              std::strcmp(caps.alg_names[4], "rabenseifner") == 0 &&
              std::strcmp(caps.alg_names[5], "hier_rabenseifner") == 0 &&
              std::strcmp(caps.alg_names[6], "knomial") == 0 &&
              caps.max_team_size > 0 && caps.max_count > 0,
          "query allreduce float32 sum");
    check(ucc_coll_query(w.ctx, UCC_COLL_TYPE_ALLREDUCE, UCC_DT_FLOAT32,
                         UCC_OP_BAND, UCC_MEMORY_TYPE_HOST, &caps) == UCC_OK &&
              !caps.supported,
          "query band on float32: not supported");
    check(
        ucc_coll_query(w.ctx, UCC_COLL_TYPE_REDUCE, UCC_DT_INT32, UCC_OP_MAXLOC,
                       UCC_MEMORY_TYPE_HOST, &caps) == UCC_OK &&
            caps.supported && caps.max_count == (1ull << 62) / 8,
        "query maxloc on int32 pairs");
    check(
        ucc_coll_query(w.ctx, UCC_COLL_TYPE_REDUCE, UCC_DT_BFLOAT16,
                       UCC_OP_MINLOC, UCC_MEMORY_TYPE_HOST, &caps) == UCC_OK &&
            !caps.supported,
        "query minloc on bfloat16: not supported");
    check(ucc_coll_query(w.ctx, UCC_COLL_TYPE_BCAST, UCC_DT_INT8, UCC_OP_LAST,
                         UCC_MEMORY_TYPE_CUDA, &caps) == UCC_OK &&
              !caps.supported,
          "query bcast on cuda memory: not supported");
    check(ucc_coll_query(w.ctx, UCC_COLL_TYPE_BARRIER, 0, UCC_OP_LAST,
                         UCC_MEMORY_TYPE_HOST, &caps) == UCC_OK &&
              caps.supported && caps.n_algs == 5,
          "query barrier");
    check(ucc_coll_query(w.ctx, static_cast<ucc_coll_type_t>(3), UCC_DT_INT8,
                         UCC_OP_SUM, UCC_MEMORY_TYPE_HOST,
                         &caps) == UCC_ERR_INVALID_PARAM,
          "query invalid coll type");
    for (uint64_t t = 1; t < UCC_COLL_TYPE_LAST; t <<= 1) {
      check(ucc_coll_query(w.ctx, static_cast<ucc_coll_type_t>(t), UCC_DT_INT32,
                           UCC_OP_SUM, UCC_MEMORY_TYPE_HOST, &caps) == UCC_OK &&
                caps.supported,
            "every collective type answers");
    }

    // GPU stream engines are refused (the zero type is CUDA_STREAM);
    // CPU-thread engines are made (tests/mp/test_ee.cc).
    ucc_ee_h ee = nullptr;
    ucc_ee_params_t ep_params{};
    check(ucc_ee_create(w.team, &ep_params, &ee) == UCC_ERR_NOT_SUPPORTED,
          "ee_create CUDA stream");
    ep_params.ee_type = UCC_EE_CPU_THREAD;
    check(ucc_ee_create(w.team, &ep_params, &ee) == UCC_OK &&
              ucc_ee_destroy(ee) == UCC_OK,
          "ee_create CPU thread");
    size_t memh_size = 0;
    ucc_mem_map_mem_h memh = nullptr;
    ucc_mem_map_params_t mp{};
    check(ucc_mem_map(w.ctx, UCC_MEM_MAP_MODE_EXPORT, &mp, &memh_size, &memh) ==
              UCC_ERR_INVALID_PARAM,
          "mem_map without segments (test_mem_map.cc has the rest)");
    // Generic datatypes: test_user_types.cc has the rest.
    ucc_datatype_t dt = 0;
    ucc_generic_dt_ops_t ops{};
    check(ucc_dt_create_generic(nullptr, nullptr, &dt) == UCC_ERR_INVALID_PARAM,
          "dt_create_generic without ops");
    ops.mask = UCC_GENERIC_DT_OPS_FIELD_FLAGS;
    ops.flags = UCC_GENERIC_DT_OPS_FLAG_CONTIG;
    ops.contig_size = 24;
    check(ucc_dt_create_generic(&ops, nullptr, &dt) == UCC_OK &&
              (dt & UCC_DATATYPE_CLASS_MASK) == UCC_DATATYPE_GENERIC,
          "dt_create_generic");
    check(ucc_coll_query(w.ctx, UCC_COLL_TYPE_ALLGATHER, dt, UCC_OP_LAST,
                         UCC_MEMORY_TYPE_HOST, &caps) == UCC_OK &&
              caps.supported && caps.max_count == (1ull << 62) / 24,
          "query allgather of a contiguous generic type");
    check(ucc_coll_query(w.ctx, UCC_COLL_TYPE_ALLREDUCE, dt, UCC_OP_SUM,
                         UCC_MEMORY_TYPE_HOST, &caps) == UCC_OK &&
              !caps.supported,
          "query allreduce of a generic type without FLAG_REDUCE");
    ucc_dt_destroy(dt);
    check(ucc_coll_query(w.ctx, UCC_COLL_TYPE_ALLGATHER, dt, UCC_OP_LAST,
                         UCC_MEMORY_TYPE_HOST, &caps) == UCC_ERR_INVALID_PARAM,
          "query a destroyed generic type");
    return bad;
  }));
}

}  // namespace

namespace {

// What ucc_team_coll_algs says for one collective, as "name@from,...".
std::string selection(ucc_team_h team, ucc_coll_type_t coll) {
  ucc_coll_alg_range_t r[8];
  uint32_t n = 8;
  if (ucc_team_coll_algs(team, coll, r, &n) != UCC_OK) return "error";
  std::string s;
  for (uint32_t i = 0; i < n && i < 8; ++i)
    s += (i ? "," : "") + std::string(r[i].alg_name) + "@" +
         std::to_string(r[i].min_bytes);
  return s;
}

bool emu_mode() {
  const char* m = std::getenv("UCC_OFFLOAD");
  return m != nullptr && std::strcmp(m, "emu") == 0;
}

// Whether check(team) holds on every rank of an n-rank world made with
// env, and UCC_HOST_CPUS=2 unless env starts with it (so that a selection
// is the same on every machine).
template <typename Check>
bool on_every_rank(int n,
                   const std::vector<std::pair<std::string, std::string>>& env,
                   Check check) {
  return ucct::run_ranks(n, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = env;
    if (env.empty() || env[0].first != "UCC_HOST_CPUS")
      w.env.emplace_back("UCC_HOST_CPUS", "2");
    if (w.init(r) != UCC_OK) return 1;
    return check(w.team) ? 0 : 1;
  });
}

}  // namespace

// The selection table and the capability answers come from the engine
// that runs the collectives: the configuration moves the thresholds and
// forces algorithms, and in emu mode the daemon's engine (which cannot
// call a generic type's reduction back, nor read peers' memory) answers.
TEST(Api, SelectionAndCapabilitiesComeFromTheEngine) {
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    ucct::World w;
    w.env = {{"UCC_ALLREDUCE_RING_MIN", "1K"},
             {"UCC_BARRIER_ALG", "rd"},
             {"UCC_CMA", "auto"},
             {"UCC_CMA_MIN", "4K"}};
    if (w.init(r) != UCC_OK) return 1;
    int bad = 0;
    auto check = [&](bool ok, const std::string& what) {
      if (!ok) {
        std::fprintf(stderr, "rank %d: %s\n", r.rank, what.c_str());
        ++bad;
      }
    };
    std::string s = selection(w.team, UCC_COLL_TYPE_ALLREDUCE);
    check(s == "rd@0,ring@1024", "allreduce selection: " + s);
    s = selection(w.team, UCC_COLL_TYPE_BARRIER);
    check(s == "rd@0", "forced barrier: " + s);
    s = selection(w.team, UCC_COLL_TYPE_GATHERV);
    check(s == "linear@0", "gatherv: " + s);
    // Single copy: only an engine in the rank's own process, and only
    // where the kernel lets ranks attach.
    s = selection(w.team, UCC_COLL_TYPE_BCAST);
    check(s == "binomial@0" || (!emu_mode() && s == "binomial@0,cma@4096"),
          "bcast: " + s);
    uint32_t n = 0;
    check(ucc_team_coll_algs(w.team, UCC_COLL_TYPE_ALLREDUCE, nullptr, &n) ==
                  UCC_OK &&
              n == 2,
          "count only");
    check(ucc_team_coll_algs(nullptr, UCC_COLL_TYPE_ALLREDUCE, nullptr, &n) ==
              UCC_ERR_INVALID_PARAM,
          "NULL team");
    check(ucc_team_coll_algs(w.team, static_cast<ucc_coll_type_t>(3), nullptr,
                             &n) == UCC_ERR_INVALID_PARAM,
          "bad type");

    // A generic type with a reduction: the inline engine calls it back,
    // the daemon's cannot, and init agrees with the query either way.
    ucc_generic_dt_ops_t ops{};
    ops.mask = UCC_GENERIC_DT_OPS_FIELD_FLAGS;
    ops.flags = UCC_GENERIC_DT_OPS_FLAG_CONTIG | UCC_GENERIC_DT_OPS_FLAG_REDUCE;
    ops.contig_size = 8;
    ops.reduce.cb = [](const ucc_reduce_cb_params_t*) { return UCC_OK; };
    ucc_datatype_t dt = 0;
    check(ucc_dt_create_generic(&ops, nullptr, &dt) == UCC_OK, "generic type");
    ucc_coll_caps_t caps{};
    check(ucc_coll_query(w.ctx, UCC_COLL_TYPE_ALLREDUCE, dt, UCC_OP_SUM,
                         UCC_MEMORY_TYPE_HOST, &caps) == UCC_OK &&
              caps.supported == (emu_mode() ? 0 : 1),
          "query allreduce of a reducible generic type");
    std::vector<uint64_t> buf(4, 0);
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
    a.src.info = {buf.data(), 4, dt, UCC_MEMORY_TYPE_HOST};
    a.dst.info = {buf.data(), 4, dt, UCC_MEMORY_TYPE_HOST};
    a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
    a.op = UCC_OP_SUM;
    ucc_coll_req_h req = nullptr;
    const ucc_status_t st = ucc_collective_init(&a, &req, w.team);
    check(st == (emu_mode() ? UCC_ERR_NOT_SUPPORTED : UCC_OK),
          "init agrees with the query");
    if (st == UCC_OK) ucc_collective_finalize(req);
    ucc_dt_destroy(dt);
    return bad;
  }));
}

// One-host teams of 4 to UCC_LINEAR_RANKS ranks take the flat trees:
// linear bcast and reduce below UCC_LINEAR_MAX, and the linear barrier
// where the team has more ranks than UCC_HOST_CPUS (in emu too: the
// daemon selects by the host's value); and the linear exchanges for
// allgather and reduce_scatter below UCC_LINEAR_MAX, alltoall below
// UCC_ALLTOALL_LINEAR_MAX; smaller teams, and teams past the limit, the
// log-depth algorithms, the rings and the pairwise exchange. Every case names UCC_HOST_CPUS (2 unless it
// says), so that it selects alike on every machine.
TEST(Api, SmallOneHostTeamsSelectTheFlatTrees) {
  struct Want {
    int n;
    std::vector<std::pair<std::string, std::string>> env;
    const char* barrier;
    const char* bcast;  // reduce selects the same
    const char* allgather;
    const char* alltoall;
    const char* reduce_scatter;
  };
  const Want wants[] = {
      {4,
       {},
       "linear@0",
       "linear@0,binomial@65536",
       "linear@0,ring@65536",
       "linear@0,pairwise@1048576",
       "linear@0,ring@65536"},
      {4,
       {{"UCC_LINEAR_MAX", "1K"}},
       "linear@0",
       "linear@0,binomial@1024",
       "linear@0,ring@1024",
       "linear@0,pairwise@1048576",
       "linear@0,ring@1024"},
      // Alltoall's own bound; 0: never the linear exchange.
      {4,
       {{"UCC_ALLTOALL_LINEAR_MAX", "1K"}},
       "linear@0",
       "linear@0,binomial@65536",
       "linear@0,ring@65536",
       "linear@0,pairwise@1024",
       "linear@0,ring@65536"},
      {4,
       {{"UCC_ALLTOALL_LINEAR_MAX", "0"}},
       "linear@0",
       "linear@0,binomial@65536",
       "linear@0,ring@65536",
       "pairwise@0",
       "linear@0,ring@65536"},
      {4,
       {{"UCC_LINEAR_RANKS", "0"}},
       "dissemination@0",
       "binomial@0",
       "ring@0",
       "pairwise@0",
       "ring@0"},
      {5,
       {{"UCC_LINEAR_RANKS", "4"}},
       "dissemination@0",
       "binomial@0",
       "ring@0",
       "pairwise@0",
       "ring@0"},
      {3,
       {},
       "dissemination@0",
       "binomial@0",
       "ring@0",
       "pairwise@0",
       "ring@0"},
      {4,
       {{"UCC_BARRIER_ALG", "rd"}, {"UCC_BCAST_ALG", "binomial"}},
       "rd@0",
       "binomial@0",
       "linear@0,ring@65536",
       "linear@0,pairwise@1048576",
       "linear@0,ring@65536"},
      {4,
       {{"UCC_ALLGATHER_ALG", "ring"},
        {"UCC_ALLTOALL_ALG", "pairwise"},
        {"UCC_REDUCE_SCATTER_ALG", "ring"}},
       "linear@0",
       "linear@0,binomial@65536",
       "ring@0",
       "pairwise@0",
       "ring@0"},
      // A core per rank: dissemination; one rank too many: linear.
      {4,
       {{"UCC_HOST_CPUS", "4"}},
       "dissemination@0",
       "linear@0,binomial@65536",
       "linear@0,ring@65536",
       "linear@0,pairwise@1048576",
       "linear@0,ring@65536"},
      {5,
       {{"UCC_HOST_CPUS", "4"}},
       "linear@0",
       "linear@0,binomial@65536",
       "linear@0,ring@65536",
       "linear@0,pairwise@1048576",
       "linear@0,ring@65536"},
  };
  for (const Want& want : wants) {
    EXPECT_TRUE(on_every_rank(
        want.n, want.env,
        [&](ucc_team_h team) {
          const std::string b = selection(team, UCC_COLL_TYPE_BARRIER);
          const std::string bc = selection(team, UCC_COLL_TYPE_BCAST);
          const std::string rd = selection(team, UCC_COLL_TYPE_REDUCE);
          const std::string ag = selection(team, UCC_COLL_TYPE_ALLGATHER);
          const std::string aa = selection(team, UCC_COLL_TYPE_ALLTOALL);
          const std::string rs = selection(team, UCC_COLL_TYPE_REDUCE_SCATTER);
          const bool forced_bcast =
              !want.env.empty() && want.env[0].first == "UCC_BARRIER_ALG";
          const bool ok =
              b == want.barrier && bc == want.bcast &&
              rd == (forced_bcast ? "linear@0,binomial@65536" : want.bcast) &&
              ag == want.allgather && aa == want.alltoall &&
              rs == want.reduce_scatter;
          if (!ok)
            std::fprintf(stderr,
                         "n=%d: barrier %s, bcast %s, reduce %s, allgather %s, "
                         "alltoall %s, reduce_scatter %s\n",
                         want.n, b.c_str(), bc.c_str(), rd.c_str(), ag.c_str(),
                         aa.c_str(), rs.c_str());
          return ok;
        }))
        << "n=" << want.n;
  }
}

// Allgatherv and reduce_scatterv take the linear exchanges on the same
// teams, by their largest block (every member passes the same counts);
// alltoallv at every size there, as its ranks' arrays differ.
TEST(Api, SmallOneHostTeamsSelectTheLinearVExchanges) {
  struct Want {
    int n;
    std::vector<std::pair<std::string, std::string>> env;
    const char* allgatherv;
    const char* alltoallv;
    const char* reduce_scatterv;
  };
  const Want wants[] = {
      {4, {}, "linear@0,pairwise@65536", "linear@0", "linear@0,ring@65536"},
      {8,
       {{"UCC_LINEAR_MAX", "1K"}},
       "linear@0,pairwise@1024",
       "linear@0",
       "linear@0,ring@1024"},
      {3, {}, "pairwise@0", "pairwise@0", "ring@0"},
      {4, {{"UCC_LINEAR_RANKS", "0"}}, "pairwise@0", "pairwise@0", "ring@0"},
      {3,
       {{"UCC_ALLTOALLV_ALG", "linear"}},
       "pairwise@0",
       "linear@0",
       "ring@0"},
  };
  for (const Want& want : wants) {
    EXPECT_TRUE(on_every_rank(
        want.n, want.env,
        [&](ucc_team_h team) {
          const std::string ag = selection(team, UCC_COLL_TYPE_ALLGATHERV);
          const std::string aa = selection(team, UCC_COLL_TYPE_ALLTOALLV);
          const std::string rs = selection(team, UCC_COLL_TYPE_REDUCE_SCATTERV);
          const bool ok = ag == want.allgatherv && aa == want.alltoallv &&
                          rs == want.reduce_scatterv;
          if (!ok)
            std::fprintf(stderr,
                         "n=%d: allgatherv %s, alltoallv %s, reduce_scatterv "
                         "%s\n",
                         want.n, ag.c_str(), aa.c_str(), rs.c_str());
          return ok;
        }))
        << "n=" << want.n;
  }
}

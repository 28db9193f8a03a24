// Configuration: defaults, environment and file precedence, validation of
// values, modify and print.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "host/config/config.h"

namespace {

using ucc::base::Status;
using ucc::host::ConfigValues;
using ucc::host::Knob;
using ucc::host::Scope;

std::string value(const ConfigValues& c, Knob k) {
  return c.value[static_cast<int>(k)];
}

TEST(Config, DefaultsParse) {
  unsetenv("UCC_ALLREDUCE_ALG");
  ConfigValues c;
  ASSERT_EQ(ucc::host::config_read(&c, Scope::kContext, nullptr, nullptr),
            Status::kOk);
  EXPECT_EQ(value(c, Knob::kAllreduceAlg), "auto");
  ucc::host::ContextSettings s;
  ASSERT_EQ(ucc::host::context_settings(c, &s), Status::kOk);
  EXPECT_EQ(s.link.engine.slot_size, 64u * 1024);
  EXPECT_EQ(s.link.engine.team_queue & (s.link.engine.team_queue - 1), 0u);
}

TEST(Config, EnvironmentAndPrefix) {
  setenv("UCC_ALLREDUCE_ALG", "ring", 1);
  setenv("XYZ_UCC_SHM_NSEGS", "16", 1);
  ConfigValues c;
  ASSERT_EQ(ucc::host::config_read(&c, Scope::kContext, "XYZ", nullptr),
            Status::kOk);
  EXPECT_EQ(value(c, Knob::kAllreduceAlg), "ring");
  EXPECT_EQ(value(c, Knob::kShmNsegs), "16");
  ucc::host::ContextSettings s;
  ASSERT_EQ(ucc::host::context_settings(c, &s), Status::kOk);
  EXPECT_EQ(s.link.engine.nslots, 16u);
  EXPECT_NE(
      s.link.engine.forced[static_cast<int>(ucc::off::CollType::kAllreduce)],
      0);
  unsetenv("UCC_ALLREDUCE_ALG");
  unsetenv("XYZ_UCC_SHM_NSEGS");
}

TEST(Config, UnknownKnobsInTheEnvironmentAreReported) {
  int before = ucc::host::config_unknown_env();
  setenv("UCC_NO_SUCH_KNOB", "1", 1);
  setenv("UCC_ALLREDUCE_ALG", "ring", 1);  // known: not reported
  EXPECT_EQ(ucc::host::config_unknown_env(), before + 1);
  unsetenv("UCC_NO_SUCH_KNOB");
  unsetenv("UCC_ALLREDUCE_ALG");
  EXPECT_EQ(ucc::host::config_unknown_env(), before);
}

// A runtime's prefix is its own namespace: PyTorch reads the configuration
// with the prefix TORCH and keeps its own TORCH_UCC_* settings beside it.
TEST(Config, PrefixedVariablesOfTheRuntimeAreNotReported) {
  int before = ucc::host::config_unknown_env();
  setenv("TORCH_UCC_BLOCKING_WAIT", "none", 1);
  setenv("TORCH_UCC_PROFILING_ENABLE", "0", 1);
  EXPECT_EQ(ucc::host::config_unknown_env(), before);
  ucc::host::ConfigValues c;
  ASSERT_EQ(ucc::host::config_read(&c, Scope::kLib, "TORCH", nullptr),
            Status::kOk);
  unsetenv("TORCH_UCC_BLOCKING_WAIT");
  unsetenv("TORCH_UCC_PROFILING_ENABLE");
}

TEST(Config, BadValuesAreErrors) {
  for (auto [name, v] :
       std::initializer_list<std::pair<const char*, const char*>>{
           {"UCC_ALLREDUCE_ALG", "fastest"},
           {"UCC_SHM_NSEGS", "3"},
           {"UCC_SHM_SEG_SIZE", "100"},
           {"UCC_MAX_TEAMS", "lots"},
           {"UCC_OFFLOAD", "moon"},
           {"UCC_NET", "rdma"},
           {"UCC_NET_GID_INDEX", "256"},
           {"UCC_NET_GID_INDEX", "first"},
           {"UCC_HOST_CPUS", "0"},
           {"UCC_HOST_CPUS", "65536"},
           {"UCC_HOST_CPUS", "many"}}) {
    setenv(name, v, 1);
    ConfigValues c;
    EXPECT_EQ(ucc::host::config_read(&c, Scope::kContext, nullptr, nullptr),
              Status::kInvalidParam)
        << name << "=" << v;
    unsetenv(name);
  }
}

// UCC_NET=verbs and its knobs reach the link's configuration.
TEST(Config, VerbsKnobsReachTheLink) {
  setenv("UCC_NET", "verbs", 1);
  setenv("UCC_NET_DEVICES", "mlx5_1:2", 1);
  setenv("UCC_NET_GID_INDEX", "3", 1);
  setenv("UCC_NET_PEER_TIMEOUT", "2s", 1);
  ConfigValues c;
  ASSERT_EQ(ucc::host::config_read(&c, Scope::kContext, nullptr, nullptr),
            Status::kOk);
  ucc::host::ContextSettings st;
  ASSERT_EQ(ucc::host::context_settings(c, &st), Status::kOk);
  EXPECT_EQ(st.link.net.kind, ucc::plat::NetKind::kVerbs);
  EXPECT_STREQ(st.link.net.verbs.device, "mlx5_1:2");
  EXPECT_EQ(st.link.net.verbs.gid_index, 3);
  EXPECT_EQ(st.link.net.verbs.peer_timeout_ms, 2000u);
  setenv("UCC_NET_GID_INDEX", "auto", 1);
  ASSERT_EQ(ucc::host::config_read(&c, Scope::kContext, nullptr, nullptr),
            Status::kOk);
  ASSERT_EQ(ucc::host::context_settings(c, &st), Status::kOk);
  EXPECT_EQ(st.link.net.verbs.gid_index, -1);
  for (const char* k : {"UCC_NET", "UCC_NET_DEVICES", "UCC_NET_GID_INDEX",
                        "UCC_NET_PEER_TIMEOUT"})
    unsetenv(k);
}

TEST(Config, ModifyAndFile) {
  ConfigValues c;
  ASSERT_EQ(ucc::host::config_read(&c, Scope::kContext, nullptr, nullptr),
            Status::kOk);
  EXPECT_EQ(ucc::host::config_modify(&c, "ALLREDUCE_RING_MIN", "1M"),
            Status::kOk);
  EXPECT_EQ(ucc::host::config_modify(&c, "UCC_POLL_SPIN", "10"), Status::kOk);
  EXPECT_EQ(ucc::host::config_modify(&c, "NO_SUCH_KNOB", "1"),
            Status::kInvalidParam);
  EXPECT_EQ(ucc::host::config_modify(&c, "POLL_SPIN", "-1"),
            Status::kInvalidParam);
  ucc::host::ContextSettings s;
  ASSERT_EQ(ucc::host::context_settings(c, &s), Status::kOk);
  EXPECT_EQ(s.link.engine.allreduce_ring_min, 1u << 20);
  EXPECT_EQ(s.poll_spin, 10u);
  // UCC_HOST_CPUS: auto is the CPUs online; a number is taken as it is.
  EXPECT_EQ(s.link.engine.cpus,
            static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_EQ(ucc::host::config_modify(&c, "HOST_CPUS", "3"), Status::kOk);
  ASSERT_EQ(ucc::host::context_settings(c, &s), Status::kOk);
  EXPECT_EQ(s.link.engine.cpus, 3u);

  char path[] = "/tmp/ucc_cfg_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FILE* f = fdopen(fd, "w");
  fprintf(f, "# comment\nUCC_SHM_NSEGS = 4\n\nALLREDUCE_ALG=rd  # trailing\n");
  fclose(f);
  ConfigValues fc;
  ASSERT_EQ(ucc::host::config_read(&fc, Scope::kContext, nullptr, path),
            Status::kOk);
  EXPECT_EQ(value(fc, Knob::kShmNsegs), "4");
  EXPECT_EQ(value(fc, Knob::kAllreduceAlg), "rd");
  // The environment overrides the file.
  setenv("UCC_SHM_NSEGS", "32", 1);
  ASSERT_EQ(ucc::host::config_read(&fc, Scope::kContext, nullptr, path),
            Status::kOk);
  EXPECT_EQ(value(fc, Knob::kShmNsegs), "32");
  unsetenv("UCC_SHM_NSEGS");
  remove(path);
  EXPECT_EQ(ucc::host::config_read(&fc, Scope::kContext, nullptr,
                                   "/nonexistent/ucc.conf"),
            Status::kInvalidParam);
}

// The names real runtimes set through ucc_*_config_modify: Open MPI's
// coll/ucc (CLS; ESTIMATED_NUM_EPS, ESTIMATED_NUM_PPN; NODE_LOCAL_ID in
// later 4.1.x), MPICH and UCC's perftest (ESTIMATED_NUM_*), and the rest
// of UCC's core context table. Refusing any of them made coll/ucc switch
// itself off.
TEST(Config, UccStandardNamesAreAccepted) {
  ConfigValues lib;
  ASSERT_EQ(ucc::host::config_read(&lib, Scope::kLib, nullptr, nullptr),
            Status::kOk);
  EXPECT_EQ(ucc::host::config_modify(&lib, "CLS", "basic"), Status::kOk);
  EXPECT_EQ(ucc::host::config_modify(&lib, "CLS", "basic,hier"), Status::kOk);
  EXPECT_EQ(ucc::host::config_modify(&lib, "UCC_CLS", "all"), Status::kOk);
  EXPECT_EQ(value(lib, Knob::kCls), "all");
  EXPECT_EQ(ucc::host::config_modify(&lib, "CLS", ""), Status::kInvalidParam);
  EXPECT_EQ(ucc::host::config_modify(&lib, "CLS", "basic,,hier"),
            Status::kInvalidParam);
  EXPECT_EQ(ucc::host::config_modify(&lib, "CLS", "basic hier"),
            Status::kInvalidParam);
  // Context names are not library names.
  EXPECT_EQ(ucc::host::config_modify(&lib, "ESTIMATED_NUM_EPS", "4"),
            Status::kInvalidParam);

  ConfigValues ctx;
  ASSERT_EQ(ucc::host::config_read(&ctx, Scope::kContext, nullptr, nullptr),
            Status::kOk);
  const char* numeric[] = {"ESTIMATED_NUM_EPS", "ESTIMATED_NUM_PPN",
                           "NODE_LOCAL_ID", "TEAM_IDS_POOL_SIZE",
                           "THROTTLE_PROGRESS"};
  for (const char* n : numeric) {
    EXPECT_EQ(ucc::host::config_modify(&ctx, n, "4"), Status::kOk) << n;
    EXPECT_EQ(ucc::host::config_modify(&ctx, n, "4096"), Status::kOk) << n;
    EXPECT_EQ(ucc::host::config_modify(&ctx, n, "-1"), Status::kInvalidParam)
        << n;
    EXPECT_EQ(ucc::host::config_modify(&ctx, n, "many"), Status::kInvalidParam)
        << n;
  }
  EXPECT_EQ(value(ctx, Knob::kEstimatedNumEps), "4096");
  EXPECT_EQ(ucc::host::config_modify(&ctx, "LOCK_FREE_PROGRESS_Q", "1"),
            Status::kOk);
  EXPECT_EQ(ucc::host::config_modify(&ctx, "LOCK_FREE_PROGRESS_Q", "2"),
            Status::kInvalidParam);
  EXPECT_EQ(ucc::host::config_modify(&ctx, "INTERNAL_OOB", "2"), Status::kOk);
  EXPECT_EQ(ucc::host::config_modify(&ctx, "INTERNAL_OOB", "3"),
            Status::kInvalidParam);
  // Accepted and ignored: the settings a context runs with are those of
  // the defaults.
  ConfigValues plain;
  ASSERT_EQ(ucc::host::config_read(&plain, Scope::kContext, nullptr, nullptr),
            Status::kOk);
  ucc::host::ContextSettings a, b;
  ASSERT_EQ(ucc::host::context_settings(ctx, &a), Status::kOk);
  ASSERT_EQ(ucc::host::context_settings(plain, &b), Status::kOk);
  EXPECT_EQ(a.link.engine.max_teams, b.link.engine.max_teams);
  EXPECT_EQ(a.link.engine.team_queue, b.link.engine.team_queue);
  EXPECT_EQ(a.poll_spin, b.poll_spin);
}

// UCC_MAX_TEAMS=auto: 16384 teams, fewer where deep request pools would
// pass the limit of completion words; an explicit value that passes it
// is refused where the context is made, with the numbers.
TEST(Config, MaxTeamsAutoFitsTheCompletionWords) {
  ConfigValues c;
  ASSERT_EQ(ucc::host::config_read(&c, Scope::kContext, nullptr, nullptr),
            Status::kOk);
  ucc::host::ContextSettings s;
  ASSERT_EQ(ucc::host::context_settings(c, &s), Status::kOk);
  EXPECT_EQ(s.link.engine.max_teams, ucc::off::kAutoMaxTeams);
  EXPECT_TRUE(ucc::off::engine_config_ok(s.link.engine));
  ASSERT_EQ(ucc::host::config_modify(&c, "TEAM_MAX_COLLS", "4096"),
            Status::kOk);
  ASSERT_EQ(ucc::host::context_settings(c, &s), Status::kOk);
  EXPECT_EQ(uint64_t{s.link.engine.max_teams} * s.link.engine.team_queue,
            ucc::off::kMaxCompletionWords);
  EXPECT_TRUE(ucc::off::engine_config_ok(s.link.engine));
  ASSERT_EQ(ucc::host::config_modify(&c, "MAX_TEAMS", "65536"), Status::kOk);
  EXPECT_EQ(ucc::host::context_settings(c, &s), Status::kInvalidParam);
  ASSERT_EQ(ucc::host::config_modify(&c, "TEAM_MAX_COLLS", "128"),
            Status::kOk);
  ASSERT_EQ(ucc::host::context_settings(c, &s), Status::kOk);
  EXPECT_EQ(s.link.engine.max_teams, 65536u);
  EXPECT_TRUE(ucc::off::engine_config_ok(s.link.engine));
  EXPECT_EQ(ucc::host::config_modify(&c, "MAX_TEAMS", "65537"),
            Status::kInvalidParam);
  EXPECT_EQ(ucc::host::config_modify(&c, "MAX_TEAMS", "0"),
            Status::kInvalidParam);
}

TEST(Config, PrintListsEveryKnobOfItsScope) {
  ConfigValues c;
  ASSERT_EQ(ucc::host::config_read(&c, Scope::kContext, nullptr, nullptr),
            Status::kOk);
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  ucc::host::config_print(c, f, "test", true, true);
  fclose(f);
  std::string out(buf, len);
  free(buf);
  for (int i = 0; i < ucc::host::kNumKnobs; ++i) {
    const auto& k = ucc::host::knob_info(static_cast<Knob>(i));
    bool listed =
        out.find(std::string("UCC_") + k.name + "=") != std::string::npos;
    EXPECT_EQ(listed, k.scope == Scope::kContext) << k.name;
  }
}

}  // namespace

namespace {

// docs/configuration.md must list every knob with its default.
TEST(Config, DocumentationListsEveryKnob) {
  std::string path = std::string(UCC_SOURCE_DIR) + "/docs/configuration.md";
  FILE* f = fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr) << path;
  std::string doc;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) doc.append(buf, n);
  fclose(f);
  for (int i = 0; i < ucc::host::kNumKnobs; ++i) {
    const auto& k = ucc::host::knob_info(static_cast<Knob>(i));
    std::string row = std::string("| `UCC_") + k.name + "` | `" + k.def + "` |";
    EXPECT_NE(doc.find(row), std::string::npos)
        << "docs/configuration.md lacks the row for UCC_" << k.name
        << " with default " << k.def;
  }
}

}  // namespace

// Configuration: defaults, environment and file precedence, validation of
// values, modify and print.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "host/config.h"

namespace {

using ucc::host::ConfigValues;
using ucc::host::Knob;
using ucc::host::Scope;
using ucc::off::Status;

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
  int before = ucc::host::config_unknown_env("XYZ");
  setenv("UCC_NO_SUCH_KNOB", "1", 1);
  setenv("XYZ_UCC_ALSO_UNKNOWN", "1", 1);
  setenv("UCC_ALLREDUCE_ALG", "ring", 1);  // known: not reported
  EXPECT_EQ(ucc::host::config_unknown_env("XYZ"), before + 2);
  EXPECT_EQ(ucc::host::config_unknown_env(nullptr), before + 1);
  unsetenv("UCC_NO_SUCH_KNOB");
  unsetenv("XYZ_UCC_ALSO_UNKNOWN");
  unsetenv("UCC_ALLREDUCE_ALG");
  EXPECT_EQ(ucc::host::config_unknown_env("XYZ"), before);
}

TEST(Config, BadValuesAreErrors) {
  for (auto [name, v] :
       std::initializer_list<std::pair<const char*, const char*>>{
           {"UCC_ALLREDUCE_ALG", "fastest"},
           {"UCC_SHM_NSEGS", "3"},
           {"UCC_SHM_SEG_SIZE", "100"},
           {"UCC_MAX_TEAMS", "lots"},
           {"UCC_OFFLOAD", "moon"}}) {
    setenv(name, v, 1);
    ConfigValues c;
    EXPECT_EQ(ucc::host::config_read(&c, Scope::kContext, nullptr, nullptr),
              Status::kInvalidParam)
        << name << "=" << v;
    unsetenv(name);
  }
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

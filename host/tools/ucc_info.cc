// ucc_info: what this installation is and how it is configured, with the
// flags of UCC's tool of the same name (docs/configuration.md, "ucc_info").
//
//   -v  version and the CMake options it was configured with
//   -b  build configuration, one #define per line
//   -c  every configuration knob (library, then context) with its value:
//       the default unless the environment or a config file set it
//   -a  hidden knobs too (there are none: accepted for scripts)
//   -f  -c with headers and each knob's documentation line
//   -s  component scores (there are no components: says so)
//   -A  the algorithms of every collective (UCC_<COLL>_ALG values)
//   -h  usage
//
// The knobs come from the library through ucc_lib_config_print and
// ucc_context_config_print, the same table docs/configuration.md lists
// (tests/unit/test_config.cc keeps the two equal), so the tool cannot
// show a knob the library does not read.
#include <ucc/api/ucc.h>
#include <unistd.h>

#include <cstdio>

#include "offload/coll_traits.h"

namespace {

enum : unsigned {
  kVersion = 1u << 0,
  kBuild = 1u << 1,
  kConfig = 1u << 2,
  kHidden = 1u << 3,
  kDecorated = 1u << 4,
  kScores = 1u << 5,
  kAlgorithms = 1u << 6,
};

void usage() {
  std::printf(
      "Usage: ucc_info [options]\n"
      "Options are:\n"
      "  -v         Show version information\n"
      "  -b         Show build configuration\n"
      "  -c         Show UCC configuration\n"
      "  -a         Show also hidden configuration\n"
      "  -f         Show fully decorated output\n"
      "  -s         Show default components scores\n"
      "  -A         Show collective algorithms available for selection\n"
      "  -h         Show this help message\n");
}

void print_version() {
  std::printf("# UCC version=%s revision %s\n", ucc_get_version_string(),
              UCC_INFO_REVISION);
  std::printf("# Configured with: %s\n", UCC_INFO_CONFIGURED);
}

void print_build() {
  struct Row {
    const char* name;
    const char* value;
  };
  static const Row kRows[] = {
      {"UCC_VERSION", UCC_INFO_VERSION},
      {"UCC_BUILD_TYPE", UCC_INFO_BUILD_TYPE},
      {"UCC_CXX_COMPILER", UCC_INFO_COMPILER},
      {"UCC_SANITIZE", UCC_INFO_SANITIZE},
      {"UCC_INSTALL_PREFIX", UCC_INFO_PREFIX},
      {"UCC_HAVE_VERBS", UCC_INFO_HAVE_VERBS},
      {"UCC_HAVE_DPDK", UCC_INFO_HAVE_DPDK},
      // The CUDA driver is opened at run time (platform/cuda): GPU
      // buffers work wherever libcuda.so.1 loads, with no build option.
      {"UCC_HAVE_CUDA_DRIVER_AT_RUN_TIME", "1"},
      {"UCC_FIRMWARE_SIM", UCC_INFO_FIRMWARE_SIM},
  };
  for (const Row& r : kRows) std::printf("#define %-25s %s\n", r.name, r.value);
}

// Library knobs need no library; context knobs are read through one, as
// UCC's tool does (ucc_init reads nothing the context knobs depend on).
int print_config(unsigned what) {
  ucc_config_print_flags_t flags = UCC_CONFIG_PRINT_CONFIG;
  if (what & kDecorated)
    flags = static_cast<ucc_config_print_flags_t>(
        flags | UCC_CONFIG_PRINT_HEADER | UCC_CONFIG_PRINT_DOC);
  if (what & kHidden)
    flags =
        static_cast<ucc_config_print_flags_t>(flags | UCC_CONFIG_PRINT_HIDDEN);
  ucc_lib_config_h lc = nullptr;
  if (ucc_lib_config_read(nullptr, nullptr, &lc) != UCC_OK) {
    std::fprintf(stderr, "ucc_info: cannot read the library configuration\n");
    return 1;
  }
  ucc_lib_config_print(lc, stdout, "UCC library configuration", flags);
  ucc_lib_params_t lp{};
  lp.mask = UCC_LIB_PARAM_FIELD_THREAD_MODE;
  lp.thread_mode = UCC_THREAD_SINGLE;
  ucc_lib_h lib = nullptr;
  ucc_status_t st = ucc_init(&lp, lc, &lib);
  ucc_lib_config_release(lc);
  if (st != UCC_OK) {
    std::fprintf(stderr, "ucc_info: ucc_init: %s\n", ucc_status_string(st));
    return 1;
  }
  ucc_context_config_h cc = nullptr;
  st = ucc_context_config_read(lib, nullptr, &cc);
  if (st == UCC_OK) {
    ucc_context_config_print(cc, stdout, "UCC context configuration", flags);
    ucc_context_config_release(cc);
  } else {
    std::fprintf(stderr,
                 "ucc_info: cannot read the context configuration: %s\n",
                 ucc_status_string(st));
  }
  ucc_finalize(lib);
  return st == UCC_OK ? 0 : 1;
}

void print_scores() {
  std::printf(
      "# No CL or TL components: one engine runs every collective, and\n"
      "# its selection rules choose the algorithm (ucc_info -A lists them;\n"
      "# UCC_<COLL>_ALG forces one).\n");
}

void print_algorithms() {
  namespace off = ucc::off;
  std::printf("engine algorithms:\n");
  for (int c = 0; c < static_cast<int>(off::CollType::kCount); ++c) {
    const auto t = static_cast<off::CollType>(c);
    const uint8_t n = off::alg_count(t);
    if (n == 0) continue;
    std::printf("  %s\n", off::coll_type_name(t));
    for (uint8_t id = 1; id <= n; ++id) {
      const off::AlgName* a = off::find_alg_id(t, id);
      if (a != nullptr)
        std::printf("    %u : %16s : %s\n", static_cast<unsigned>(a->id),
                    a->name, a->desc);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  unsigned what = 0;
  int c;
  while ((c = getopt(argc, argv, "vbcafhsA")) != -1) {
    switch (c) {
      case 'v':
        what |= kVersion;
        break;
      case 'b':
        what |= kBuild;
        break;
      case 'c':
        what |= kConfig;
        break;
      case 'a':
        what |= kHidden;
        break;
      case 'f':
        what |= kConfig | kDecorated;
        break;
      case 's':
        what |= kScores;
        break;
      case 'A':
        what |= kAlgorithms;
        break;
      case 'h':
        usage();
        return 0;
      default:
        usage();
        return 1;
    }
  }
  if (optind < argc || (what & ~kHidden) == 0) {
    usage();
    return optind < argc ? 1 : 2;
  }
  int rc = 0;
  if (what & kVersion) print_version();
  if (what & kBuild) print_build();
  if (what & kConfig) rc = print_config(what);
  if (what & kScores) print_scores();
  if (what & kAlgorithms) print_algorithms();
  return rc;
}

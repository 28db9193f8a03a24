// A private firmware_sim serving dpu mode (docs/dpu.md) on a loopback
// port of its own, its engines reaching their hosts' memory on
// tests/verbs_loop's provider: for the tests that must own their daemon
// (test_dpu.cc, test_emu_forged.cc).
//
// Threads: the test's main thread.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "platform/os/crypto.h"
#include "platform/os/sock.h"
#include "tests/mp/emu_daemon.h"
#include "tests/unit/free_port.h"

namespace ucct {

#ifdef UCCT_VERBS_LOOP_LIB
inline constexpr const char* kLoopLib = UCCT_VERBS_LOOP_LIB;
#else
inline constexpr const char* kLoopLib = "";
#endif

#define NEEDS_DPU()                                                         \
  do {                                                                      \
    if (!ucct::have_firmware_sim() || *ucct::kLoopLib == 0)                 \
      GTEST_SKIP() << "needs firmware_sim and tests/verbs_loop (rdma-core " \
                      "headers: libibverbs-dev)";                           \
    if (!ucc::plat::crypto_available())                                     \
      GTEST_SKIP() << "needs libcrypto (libssl3)";                          \
  } while (0)

// A key file of the test's (mode 0600) holding `text`.
inline std::string key_file(const char* tag, const char* text) {
  std::string p = std::string("/tmp/ucct-dpu-") + tag + "-" +
                  std::to_string(getpid()) + ".key";
  FILE* f = fopen(p.c_str(), "w");
  if (f == nullptr) return "";
  fputs(text, f);
  fclose(f);
  chmod(p.c_str(), 0600);
  return p;
}

// A daemon serving dpu hosts on a loopback port of its own.
struct DpuDaemon {
  ucct::Daemon d;
  std::string addr, key;
  bool start(const char* tag) {
    key = key_file(tag, "the deployment's secret, for tests only");
    addr = "127.0.0.1:" + std::to_string(ucct::free_loopback_port());
    if (key.empty() ||
        !d.start(tag,
                 {"--verbs", "auto", "--verbs-lib", kLoopLib, "--listen", addr,
                  "--key-file", key, "--node", std::string("ucct-dpu-") + tag}))
      return false;
    // Up once the TCP port answers too.
    for (int i = 0; i < 2500; ++i) {
      const int s = ucc::plat::sock::tcp_connect(addr.c_str(), 100);
      if (s >= 0) {
        close(s);
        return true;
      }
      usleep(2000);
    }
    return false;
  }
  std::vector<std::pair<std::string, std::string>> env(
      const std::string& keyfile) const {
    return {{"UCC_OFFLOAD", "dpu"},
            {"UCC_DPU_ADDR", addr},
            {"UCC_DPU_KEY_FILE", keyfile},
            {"UCC_VERBS_LIB", kLoopLib},
            {"UCC_FIRMWARE_TIMEOUT", "5s"}};
  }
  ~DpuDaemon() {
    d.stop();
    unlink(key.c_str());
  }
};

}  // namespace ucct

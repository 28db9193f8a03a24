// A private firmware_sim serving dpu mode (docs/dpu.md) on a loopback
// port of its own, its engines reaching their hosts' memory on
// tests/verbs_loop's provider, or (tcp) over the TCP fallback: for the
// tests that must own their daemon (test_dpu.cc, test_dpu_tcp.cc,
// test_emu_forged.cc).
//
// Threads: the test's main thread.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "offload/control_auth.h"
#include "offload/proto.h"
#include "platform/mem/remote_mem.h"
#include "platform/os/crypto.h"
#include "platform/os/sock.h"
#include "tests/common/harness.h"
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

// The TCP fallback needs no RDMA provider.
#define NEEDS_DPU_TCP()                                                   \
  do {                                                                    \
    if (!ucct::have_firmware_sim()) GTEST_SKIP() << "needs firmware_sim"; \
    if (!ucc::plat::crypto_available())                                   \
      GTEST_SKIP() << "needs libcrypto (libssl3)";                        \
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
  bool tcp = false;  // the fallback: no --verbs, hosts with UCC_DPU_MEM=tcp
  std::vector<std::string> more;  // further firmware_sim options
  bool start(const char* tag) {
    key = key_file(tag, "the deployment's secret, for tests only");
    addr = "127.0.0.1:" + std::to_string(ucct::free_loopback_port());
    std::vector<std::string> args = {
        "--listen", addr,     "--key-file",
        key,        "--node", std::string("ucct-dpu-") + tag};
    if (!tcp)
      args.insert(args.begin(), {"--verbs", "auto", "--verbs-lib", kLoopLib});
    args.insert(args.end(), more.begin(), more.end());
    if (key.empty() || !d.start(tag, args)) return false;
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
            {"UCC_DPU_MEM", tcp ? "tcp" : "verbs"},
            {"UCC_FIRMWARE_TIMEOUT", "5s"}};
  }
  ~DpuDaemon() {
    d.stop();
    unlink(key.c_str());
  }
};

inline ucc::plat::Secret secret_of(const std::string& path) {
  ucc::plat::Secret k{};
  setenv("UCCT_KEYFILE_FOR_TEST", path.c_str(), 1);
  ucc::plat::load_secret("test", "UCCT_KEYFILE_FOR_TEST", "UCCT_NONE", 0, &k);
  unsetenv("UCCT_KEYFILE_FOR_TEST");
  return k;
}

inline bool recv_msg(int s, ucc::off::proto::MsgHeader* h, void* body,
                     size_t len) {
  return ucc::plat::sock::recv_all(s, h, sizeof(*h), 5000) == 1 &&
         h->len == len && ucc::plat::sock::recv_all(s, body, len, 5000) == 1;
}

// Whether the peer closed the connection (within 5 s) without another
// message.
inline bool closed(int s) {
  char b;
  return ucc::plat::sock::recv_all(s, &b, 1, 5000) == 0;
}

// A raw connection's handshake: the challenge, and our proof (made with
// `k`, or `replay` when given) -> the daemon's verdict.
struct Raw {
  int s = -1;
  ucc::off::proto::AuthChallenge ch{};
  ucc::off::proto::AuthProof proof{};
  ucc::off::proto::AuthReply reply{};
  bool hello(const std::string& addr, const ucc::plat::Secret& k,
             const ucc::off::proto::AuthProof* replay = nullptr) {
    s = ucc::plat::sock::tcp_connect(addr.c_str(), 2000);
    ucc::off::proto::MsgHeader h{};
    if (s < 0 || !recv_msg(s, &h, &ch, sizeof(ch)) ||
        h.type != ucc::off::proto::kChallenge)
      return false;
    if (replay != nullptr) {
      proof = *replay;
    } else {
      ucc::plat::random_bytes(proof.nonce, sizeof(proof.nonce));
      ucc::off::proto::auth_proof(k, ucc::off::proto::End::kHost, ch.nonce,
                                  proof.nonce, proof.mac);
    }
    ucc::off::proto::MsgHeader q{ucc::off::proto::kMagic,
                                 ucc::off::proto::kVersion,
                                 ucc::off::proto::kAuth, sizeof(proof), 1};
    return ucc::plat::sock::send_all(s, &q, sizeof(q), &proof, sizeof(proof)) &&
           recv_msg(s, &h, &reply, sizeof(reply));
  }
  ~Raw() {
    if (s >= 0) close(s);
  }
};

// Two ranks served by dd: allreduces of 1, 1000 and 2^18 int32 (past
// any one transfer's size), every element checked.
inline bool allreduce_served(
    const DpuDaemon& dd,
    const std::vector<std::pair<std::string, std::string>>& more = {}) {
  return ucct::run_ranks(2, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = dd.env(dd.key);
    w.env.insert(w.env.end(), more.begin(), more.end());
    if (w.init(r) != UCC_OK) return 1;
    for (size_t n : {size_t{1}, size_t{1000}, size_t{1} << 18}) {
      std::vector<int32_t> s(n), d(n, -7);
      for (size_t i = 0; i < n; ++i)
        s[i] = static_cast<int32_t>(i % 977) + r.rank;
      ucc_coll_args_t a = allreduce_i32(s, d);
      if (w.run(a, 60) != UCC_OK) return 2;
      for (size_t i = 0; i < n; ++i)
        if (d[i] != 2 * static_cast<int32_t>(i % 977) + 1) return 3;
    }
    return 0;
  });
}

// Whether the daemon counted transfers of every step a collective needs
// (docs/dpu.md, "Measured": the latency by step), each with its time.
// Descriptors pushed by the hosts need no transfer of the engine's.
inline bool steps_counted(const ucc::off::proto::StatsReply& st) {
  using ucc::plat::MemStep;
  for (MemStep s :
       {MemStep::kRingHead, MemStep::kDescriptors, MemStep::kCompletion,
        MemStep::kBufRead, MemStep::kBufWrite}) {
    const auto i = static_cast<uint32_t>(s);
    if (s == MemStep::kDescriptors && st.pushed != 0) continue;
    if (st.step_n[i] == 0 || st.step_bytes[i] == 0 || st.step_ns[i] == 0)
      return false;
  }
  return true;
}

}  // namespace ucct

// A private firmware_sim daemon for emu-mode tests that must own theirs:
// to kill it, or to read its statistics without other tests' clients in
// them. It listens on a socket of its own, and env() points a World's
// contexts at it (UCC_OFFLOAD=emu whatever mode the suite runs in).
//
// Threads: the test's main thread (start/stop); stats() from any process
// (forked ranks too).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <ucc/api/ucc.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "offload/proto.h"
#include "platform/os/sock.h"

#ifndef UCC_FIRMWARE_SIM_BUILD_PATH
#define UCC_FIRMWARE_SIM_BUILD_PATH ""
#endif

namespace ucct {

// The collective the daemon fault tests run: an int32 sum over s into d.
inline ucc_coll_args_t allreduce_i32(std::vector<int32_t>& s,
                                     std::vector<int32_t>& d) {
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
  a.src.info = {s.data(), s.size(), UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
  a.dst.info = {d.data(), d.size(), UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
  a.op = UCC_OP_SUM;
  return a;
}

inline bool have_firmware_sim() { return *UCC_FIRMWARE_SIM_BUILD_PATH != 0; }

struct Daemon {
  std::string sock;
  pid_t pid = -1;

  // Starts the build tree's firmware_sim on /tmp/ucc-<tag>-<pid>.sock and
  // waits until it accepts connections (5 s at most).
  // `extra`: more firmware_sim options (the wire's, say).
  bool start(const char* tag = "faults",
             const std::vector<std::string>& extra = {}) {
    sock = std::string("/tmp/ucc-") + tag + "-" + std::to_string(getpid()) +
           ".sock";
    std::vector<const char*> argv = {"firmware_sim", "--socket", sock.c_str(),
                                     "--sleep-ms", "1"};
    for (const std::string& a : extra) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    pid = fork();
    if (pid == 0) {
      execv(UCC_FIRMWARE_SIM_BUILD_PATH, const_cast<char**>(argv.data()));
      _exit(127);
    }
    for (int i = 0; i < 2500 && pid > 0; ++i) {
      int s = ucc::plat::sock::connect_to(sock.c_str());
      if (s >= 0) {
        close(s);
        return true;
      }
      usleep(2000);
    }
    return false;
  }
  bool alive() const { return pid > 0 && kill(pid, 0) == 0; }
  void stop() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
    pid = -1;
    unlink(sock.c_str());
  }
  std::vector<std::pair<std::string, std::string>> env() const {
    return {{"UCC_OFFLOAD", "emu"},
            {"UCC_FIRMWARE_SOCKET", sock},
            {"UCC_FIRMWARE_SIM", "none"}};
  }

  // The daemon's statistics (kStats over a connection of its own); false
  // when it does not answer.
  bool stats(ucc::off::proto::StatsReply* out) const {
    namespace proto = ucc::off::proto;
    int s = ucc::plat::sock::connect_to(sock.c_str());
    if (s < 0) return false;
    proto::MsgHeader h{proto::kMagic, proto::kVersion, proto::kStats, 0, 1};
    proto::MsgHeader rh{};
    *out = proto::StatsReply{};
    bool ok = ucc::plat::sock::send_all(s, &h, sizeof(h), nullptr, 0) &&
              ucc::plat::sock::recv_all(s, &rh, sizeof(rh), 5000) == 1 &&
              rh.len == sizeof(*out) &&
              ucc::plat::sock::recv_all(s, out, rh.len, 5000) == 1;
    close(s);
    return ok && out->status == 0;
  }
};

}  // namespace ucct

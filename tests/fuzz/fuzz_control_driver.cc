// Standalone driver for the daemon's control-protocol fuzz target
// (fuzz_control.cc), for compilers without libFuzzer (g++): deterministic
// pseudo-random programs, each one hostile client.
//
//   fuzz_control_driver [-r] [-n INPUTS] [-t SECONDS] [-s SEED] [-o CRASH_FILE]
//   fuzz_control_driver [-r] FILE...          replay inputs (e.g. a crash)
//
// -r: the network side (dpu mode) instead of the unix socket's
// (fuzz_remote.cc): a client that must prove the key, tags its requests,
// and whose memory the engine reaches through a NIC of the fuzzer's.
//
// The target reads any bytes as a program. First the seeds run (honest
// programs, below), each of which must get collectives completed by the
// engine: a stale seed is an error, as then mutations would only scratch
// the surface. Then every other input is random bytes (16 to 1024), and
// the others are mutations (bytes changed, cut, inserted, spliced) of a
// pool of programs that went deep: the seeds, and any input that got a
// team connected or a collective completed. A run is reproducible from its
// seed and input count; when the target aborts or crashes, the input is
// written to CRASH_FILE (default fuzz_control_crash.bin) for replay.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_control.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

int usage() {
  fprintf(stderr,
          "usage: fuzz_control_driver [-r] [-n INPUTS] [-t SECONDS] [-s SEED] "
          "[-o CRASH_FILE]\n"
          "       fuzz_control_driver [-r] FILE...\n");
  return 2;
}

using Bytes = std::vector<uint8_t>;

// Honest programs, in the target's opcodes (fuzz_control.cc, run_op): a
// hello, a 1-rank team opened and connected to itself, the arena
// registered, then collectives on them with passes between.
std::vector<Bytes> seeds() {
  const Bytes hello = {3, 10, 1};          // hello, 2 passes
  const Bytes team = {4, 0, 0, 0, 10, 1,   // open size 1 rank 0
                      4, 1, 0, 0, 10, 1};  // connect idx[0] to itself
  const Bytes reg = {5, 0, 0, 0, 0, 0, 0, 0, 4, 0, 10, 1};  // arena, 256K
  const Bytes barrier = {6, 0, 0, 0, 0, 0, 10, 7};
  const Bytes allreduce = {6, 1, 0, 1, 15, 0, 0, 10, 7};
  const Bytes allgather = {7, 3, 0, 2, 63, 0, 0, 10, 7};
  std::vector<Bytes> out;
  Bytes a = hello;
  for (const Bytes* p : {&team, &reg, &barrier, &allreduce, &allgather})
    a.insert(a.end(), p->begin(), p->end());
  out.push_back(a);
  // Then stats, a doorbell, a dropped registration and the team closed
  // while a collective may still run.
  Bytes b = a;
  for (uint8_t x : {9, 0, 9, 1, 5, 3, 0, 6, 1, 0, 3, 3, 0, 0, 4, 3, 0, 10, 3})
    b.push_back(x);
  out.push_back(b);
  return out;
}

// The remote target's honest program (fuzz_remote.cc, run_op): the
// handshake, the RDMA connect, the hello, the arena registered under its
// rkey, a 1-rank team opened and connected, then a barrier and an
// allreduce on the channel with passes between.
std::vector<Bytes> remote_seeds() {
  const Bytes a = {1, 3, 0, 0, 0, 0,  4, 0,  12, 1,  5, 1,  0,
                   0, 0, 0, 1, 1, 12, 1, 6,  12, 1,  6, 12, 1,
                   7, 0, 0, 0, 7, 1,  1, 15, 0,  12, 7, 12, 7};
  Bytes b = a;  // then stats, a doorbell, a forged message
  for (uint8_t x : {11, 0, 11, 1, 12, 1, 10, 12, 1}) b.push_back(x);
  // Then the TCP fallback asked for (refused: too late), and a second
  // connection's attach asked of this one (refused; the connection ends).
  Bytes c = a;
  for (uint8_t x : {11, 4, 12, 1, 11, 5, 0, 12, 1}) c.push_back(x);
  // Last (completes nothing): the TCP fallback granted in place of the
  // RDMA connect, its memory never attached, then the same program: the
  // engine cannot reach the client's memory, and must say so.
  const Bytes d = {1, 11, 4, 12, 1,  4, 0,  12, 1,  5, 1,  0, 0,
                   0, 0,  1, 1,  12, 1, 6,  12, 1,  6, 12, 1, 7,
                   0, 0,  0, 7,  1,  1, 15, 0,  12, 7, 12, 7};
  return {a, b, c, d};
}

struct Target {
  int (*one)(const uint8_t*, size_t);
  const ucc::fuzz::ControlStats& (*stats)();
  std::vector<Bytes> (*seeds)();
  uint64_t seed_completions;  // each seed must get this many done,
  size_t open_seeds;          // but the last open_seeds ones
};

const Target* g_target = nullptr;

void mutate(ucc::fuzz::Rng& r, const std::vector<Bytes>& pool, Bytes* in) {
  *in = pool[r.below(pool.size())];
  for (uint64_t k = 1 + r.below(4); k > 0; --k) {
    switch (r.below(5)) {
      case 0:
      case 1:
        if (!in->empty())
          (*in)[r.below(in->size())] = static_cast<uint8_t>(r.next());
        break;
      case 2:
        if (!in->empty()) in->resize(r.below(in->size()));
        break;
      case 3: {  // random bytes inserted
        const size_t at = r.below(in->size() + 1);
        for (uint64_t j = 1 + r.below(16); j > 0; --j)
          in->insert(in->begin() + static_cast<long>(at),
                     static_cast<uint8_t>(r.next()));
        break;
      }
      default: {  // another program's tail appended
        const Bytes& o = pool[r.below(pool.size())];
        const size_t from = r.below(o.size() + 1);
        in->insert(in->end(), o.begin() + static_cast<long>(from), o.end());
        break;
      }
    }
  }
}

void next_input(ucc::fuzz::Rng& r, const std::vector<Bytes>& pool, Bytes* in) {
  if (r.below(2) == 0) {
    mutate(r, pool, in);
    return;
  }
  in->resize(16 + r.below(1009));
  for (auto& b : *in) b = static_cast<uint8_t>(r.next());
}

void report(uint64_t seed, uint64_t done, double secs) {
  const ucc::fuzz::ControlStats& st = g_target->stats();
  printf(
      "fuzz_control_driver: seed %llu, %llu clients in %.1f s: %llu replies "
      "checked, %llu hellos taken, %llu teams opened, %llu connected, %llu "
      "registrations, %llu descriptors (%llu completed ok), %llu clients "
      "dropped by the daemon, %llu TCP memory fallbacks granted, %llu "
      "descriptors pushed\n",
      static_cast<unsigned long long>(seed),
      static_cast<unsigned long long>(done), secs,
      static_cast<unsigned long long>(st.replies),
      static_cast<unsigned long long>(st.hellos_ok),
      static_cast<unsigned long long>(st.teams_opened),
      static_cast<unsigned long long>(st.teams_connected),
      static_cast<unsigned long long>(st.registrations),
      static_cast<unsigned long long>(st.descriptors),
      static_cast<unsigned long long>(st.completed),
      static_cast<unsigned long long>(st.dropped),
      static_cast<unsigned long long>(st.tcp_mem),
      static_cast<unsigned long long>(st.pushed));
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t inputs = 20000, seed = 1;
  double seconds = 0;
  const char* crash_file = "fuzz_control_crash.bin";
  std::vector<const char*> files;
  static const Target kUnix{&ucc::fuzz::control_one, &ucc::fuzz::control_stats,
                            &seeds, 3, 0};
  static const Target kRemote{&ucc::fuzz::remote_one, &ucc::fuzz::remote_stats,
                              &remote_seeds, 2, 1};
  g_target = &kUnix;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_val = i + 1 < argc;
    if (a == "-r") {
      g_target = &kRemote;
    } else if (a == "-n" && has_val) {
      inputs = strtoull(argv[++i], nullptr, 10);
    } else if (a == "-t" && has_val) {
      seconds = strtod(argv[++i], nullptr);
    } else if (a == "-s" && has_val) {
      seed = strtoull(argv[++i], nullptr, 10);
    } else if (a == "-o" && has_val) {
      crash_file = argv[++i];
    } else if (a[0] == '-') {
      return usage();
    } else {
      files.push_back(argv[i]);
    }
  }
  ucc::fuzz::install_crash_saver(crash_file);

  if (!files.empty()) {
    for (const char* path : files) {
      std::vector<uint8_t> in;
      if (!ucc::fuzz::read_file(path, &in)) {
        fprintf(stderr, "cannot read %s\n", path);
        return 1;
      }
      g_target->one(in.data(), in.size());
    }
    report(0, files.size(), 0);
    printf("replayed %zu input(s): no property violated\n", files.size());
    return 0;
  }

  std::vector<Bytes> pool = g_target->seeds();
  for (size_t i = 0; i < pool.size(); ++i) {
    const Bytes& s = pool[i];
    const uint64_t before = g_target->stats().completed;
    ucc::fuzz::set_current(s.data(), s.size());
    g_target->one(s.data(), s.size());
    if (i + g_target->open_seeds < pool.size() &&
        g_target->stats().completed < before + g_target->seed_completions) {
      fprintf(stderr,
              "fuzz_control_driver: a seed no longer gets its collectives "
              "completed: update seeds()\n");
      return 1;
    }
  }
  const size_t nseeds = pool.size();

  ucc::fuzz::Rng rng{seed * 0x9e3779b97f4a7c15ull + 1};
  const double start = ucc::fuzz::now_s();
  uint64_t done = 0, kept = 0;
  Bytes in;
  for (; done < inputs; ++done) {
    if ((done & 63) == 0 && seconds > 0 && ucc::fuzz::now_s() - start > seconds)
      break;
    next_input(rng, pool, &in);
    const ucc::fuzz::ControlStats before = g_target->stats();
    ucc::fuzz::set_current(in.data(), in.size());
    g_target->one(in.data(), in.size());
    const ucc::fuzz::ControlStats& after = g_target->stats();
    if (after.completed != before.completed ||
        after.teams_connected != before.teams_connected) {
      // Went deep: kept (the pool holds 64, seeds always among them).
      if (pool.size() < nseeds + 64)
        pool.push_back(in);
      else
        pool[nseeds + rng.below(64)] = in;
      ++kept;
    }
  }
  ucc::fuzz::set_current(nullptr, 0);
  report(seed, done, ucc::fuzz::now_s() - start);
  printf("%llu deep inputs kept for mutation\n",
         static_cast<unsigned long long>(kept));
  printf("no property violated\n");
  return 0;
}

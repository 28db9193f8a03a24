// Standalone driver for the engine fuzz target (fuzz_engine.cc), for
// compilers without libFuzzer (g++): deterministic pseudo-random mutation
// of the seed corpus (fuzz_seeds.cc).
//
//   fuzz_engine_driver [-n ITERATIONS] [-t SECONDS] [-s SEED] [-o CRASH_FILE]
//   fuzz_engine_driver --write-corpus DIR     seeds as files, for libFuzzer
//   fuzz_engine_driver FILE...                replay inputs (e.g. a crash)
//
// First every seed runs once and must be accepted exactly where it says
// (otherwise mutations would only scratch the surface: a stale seed is an
// error). Then ITERATIONS mutated inputs (default 200000), stopping early
// after SECONDS (default: no limit). A run is reproducible from its seed
// and iteration count; besides, when the target aborts or crashes the
// input is written to CRASH_FILE (default fuzz_engine_crash.bin) for
// replay.
#include <sys/stat.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "offload/descriptor.h"
#include "tests/fuzz/fuzz_engine.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using ucc::fuzz::Rng;
using ucc::off::CollDesc;

struct Field {
  size_t off, size;
};
const Field kFields[] = {
    {offsetof(CollDesc, magic), 4},        {offsetof(CollDesc, version), 2},
    {offsetof(CollDesc, flags), 2},        {offsetof(CollDesc, coll), 1},
    {offsetof(CollDesc, dtype), 1},        {offsetof(CollDesc, op), 1},
    {offsetof(CollDesc, alg), 1},          {offsetof(CollDesc, team), 4},
    {offsetof(CollDesc, comp_slot), 4},    {offsetof(CollDesc, root), 4},
    {offsetof(CollDesc, count), 8},        {offsetof(CollDesc, src.addr), 8},
    {offsetof(CollDesc, src.bytes), 8},    {offsetof(CollDesc, src.key), 4},
    {offsetof(CollDesc, src.mem_type), 1}, {offsetof(CollDesc, dst.addr), 8},
    {offsetof(CollDesc, dst.bytes), 8},    {offsetof(CollDesc, dst.key), 4},
    {offsetof(CollDesc, dst.mem_type), 1}, {offsetof(CollDesc, src_counts), 8},
    {offsetof(CollDesc, src_displs), 8},   {offsetof(CollDesc, dst_counts), 8},
    {offsetof(CollDesc, dst_displs), 8},   {offsetof(CollDesc, timeout_ns), 8},
    {offsetof(CollDesc, set_start), 4},    {offsetof(CollDesc, set_stride), 4},
    {offsetof(CollDesc, set_size), 4},     {offsetof(CollDesc, tag), 2},
    {offsetof(CollDesc, user_dt), 4},      {offsetof(CollDesc, user_esize), 4},
};

uint64_t get(const std::vector<uint8_t>& v, const Field& f) {
  uint64_t x = 0;
  memcpy(&x, v.data() + f.off, f.size);
  return x;
}
void set(std::vector<uint8_t>* v, const Field& f, uint64_t x) {
  memcpy(v->data() + f.off, &x, f.size);
}

// A value likely to sit on an edge: small numbers, sign and width limits,
// arena boundaries (fuzz_engine.cc), or the current value nudged.
uint64_t interesting(Rng& r, uint64_t cur) {
  static const uint64_t kValues[] = {0,
                                     1,
                                     2,
                                     3,
                                     4,
                                     5,
                                     7,
                                     8,
                                     15,
                                     16,
                                     255,
                                     256,
                                     4096,
                                     0xffff,
                                     0x7fffffff,
                                     0x80000000,
                                     0xffffffff,
                                     uint64_t{1} << 32,
                                     uint64_t{1} << 62,
                                     uint64_t{1} << 63,
                                     ~uint64_t{0},
                                     ~uint64_t{0} - 1,
                                     64 << 10,
                                     (64 << 10) - 4,
                                     (320 << 10) - 4,
                                     320 << 10,
                                     (576 << 10) - 4,
                                     576 << 10,
                                     704 << 10,
                                     768 << 10,
                                     (1088 << 10) - 8,
                                     1088 << 10,
                                     1280 << 10,
                                     (2048 << 10) - 1,
                                     2048 << 10};
  switch (r.below(4)) {
    case 0:
    case 1:
      return kValues[r.below(sizeof(kValues) / sizeof(kValues[0]))];
    case 2: {
      uint64_t d = 1 + r.below(16);
      return r.below(2) != 0 ? cur + d : cur - d;
    }
    default:
      return r.below(2) != 0 ? r.next() : r.next() >> r.below(64);
  }
}

void mutate(Rng& r, const std::vector<ucc::fuzz::Seed>& seeds,
            std::vector<uint8_t>* in) {
  const size_t nf = sizeof(kFields) / sizeof(kFields[0]);
  const uint64_t k = 1 + r.below(4);
  for (uint64_t i = 0; i < k; ++i) {
    switch (r.below(9)) {
      case 0:
        (*in)[r.below(sizeof(CollDesc))] ^= uint8_t(1u << r.below(8));
        break;
      case 1:
        (*in)[r.below(sizeof(CollDesc))] = uint8_t(r.next());
        break;
      case 2:
      case 3:
      case 4: {
        const Field& f = kFields[r.below(nf)];
        set(in, f, interesting(r, get(*in, f)));
        break;
      }
      case 5: {
        const Field& f = kFields[r.below(nf)];
        set(in, f, get(seeds[r.below(seeds.size())].bytes, f));
        break;
      }
      case 6:
        if (in->size() > sizeof(CollDesc))
          (*in)[sizeof(CollDesc) + r.below(in->size() - sizeof(CollDesc))] ^=
              uint8_t(r.next());
        break;
      case 7:
        for (uint64_t j = r.below(48); j > 0; --j)
          in->push_back(uint8_t(r.next()));
        break;
      default:
        // A short input: the descriptor's tail reads as zeros.
        if (r.below(8) == 0) in->resize(r.below(in->size() + 1));
        break;
    }
    if (in->size() < sizeof(CollDesc)) break;
  }
}

int usage() {
  fprintf(stderr,
          "usage: fuzz_engine_driver [-n ITERATIONS] [-t SECONDS] [-s SEED] "
          "[-o CRASH_FILE]\n"
          "       fuzz_engine_driver --write-corpus DIR\n"
          "       fuzz_engine_driver FILE...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t iterations = 200000, seed = 1;
  double seconds = 0;
  const char* corpus_dir = nullptr;
  const char* crash_file = "fuzz_engine_crash.bin";
  std::vector<const char*> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has_val = i + 1 < argc;
    if (a == "-n" && has_val) {
      iterations = strtoull(argv[++i], nullptr, 10);
    } else if (a == "-t" && has_val) {
      seconds = strtod(argv[++i], nullptr);
    } else if (a == "-s" && has_val) {
      seed = strtoull(argv[++i], nullptr, 10);
    } else if (a == "-o" && has_val) {
      crash_file = argv[++i];
    } else if (a == "--write-corpus" && has_val) {
      corpus_dir = argv[++i];
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
      LLVMFuzzerTestOneInput(in.data(), in.size());
    }
    printf("replayed %zu input(s): no property violated\n", files.size());
    return 0;
  }

  const std::vector<ucc::fuzz::Seed> seeds = ucc::fuzz::seeds();
  if (corpus_dir != nullptr) {
    mkdir(corpus_dir, 0755);
    for (const auto& s : seeds) {
      std::string path = std::string(corpus_dir) + "/seed-" + s.name;
      FILE* f = fopen(path.c_str(), "wb");
      if (f == nullptr ||
          fwrite(s.bytes.data(), 1, s.bytes.size(), f) != s.bytes.size()) {
        fprintf(stderr, "cannot write %s\n", path.c_str());
        return 1;
      }
      fclose(f);
    }
    printf("wrote %zu seeds to %s\n", seeds.size(), corpus_dir);
    return 0;
  }

  // The seeds must be accepted where they say they are.
  for (const auto& s : seeds) {
    ucc::fuzz::Stats before = ucc::fuzz::stats();
    ucc::fuzz::set_current(s.bytes.data(), s.bytes.size());
    LLVMFuzzerTestOneInput(s.bytes.data(), s.bytes.size());
    const ucc::fuzz::Stats& after = ucc::fuzz::stats();
    bool t1 = after.accepted_team1 != before.accepted_team1;
    bool t3 = after.accepted_team3 != before.accepted_team3;
    bool ran = after.ran_ok != before.ran_ok;
    if (t1 != s.team1 || t3 != s.team3 || ran != s.team1) {
      fprintf(stderr,
              "seed %s: accepted on 1-rank team %d (want %d), ran ok %d, "
              "on 3-rank team %d (want %d): update fuzz_seeds.cc\n",
              s.name, t1, s.team1, ran, t3, s.team3);
      return 1;
    }
  }

  Rng rng{seed * 0x9e3779b97f4a7c15ull + 1};
  const double start = ucc::fuzz::now_s();
  uint64_t done = 0;
  std::vector<uint8_t> in;
  for (; done < iterations; ++done) {
    if ((done & 255) == 0 && seconds > 0 &&
        ucc::fuzz::now_s() - start > seconds)
      break;
    in = seeds[rng.below(seeds.size())].bytes;
    mutate(rng, seeds, &in);
    ucc::fuzz::set_current(in.data(), in.size());
    LLVMFuzzerTestOneInput(in.data(), in.size());
  }
  ucc::fuzz::set_current(nullptr, 0);
  const ucc::fuzz::Stats& st = ucc::fuzz::stats();
  printf(
      "fuzz_engine_driver: seed %llu, %llu mutated inputs in %.1f s: "
      "accepted on the 3-rank team %llu, on the 1-rank team %llu (ran: %llu "
      "ok, %llu failed), %llu registration lookups compared; no property "
      "violated\n",
      static_cast<unsigned long long>(seed),
      static_cast<unsigned long long>(done), ucc::fuzz::now_s() - start,
      static_cast<unsigned long long>(st.accepted_team3),
      static_cast<unsigned long long>(st.accepted_team1),
      static_cast<unsigned long long>(st.ran_ok),
      static_cast<unsigned long long>(st.ran_failed),
      static_cast<unsigned long long>(st.reg_checks));
  return 0;
}

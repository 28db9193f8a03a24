// The engine's untrusted inputs as a fuzz target (fuzz_engine.cc): what
// the standalone driver (fuzz_driver.cc) and libFuzzer share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace ucc::fuzz {

// What the target saw so far (the driver checks that its seeds go deep).
struct Stats {
  uint64_t inputs = 0;
  uint64_t accepted_team3 = 0;  // validate() kOk on the 3-rank team
  uint64_t accepted_team1 = 0;  // validate() kOk on the 1-rank team
  uint64_t ran_ok = 0;          // ... and the collective then ended kOk
  uint64_t ran_failed = 0;      // ... or ended with an error
  uint64_t reg_checks = 0;      // registration lookups compared
};
const Stats& stats();

// Valid inputs, one or more per collective type (fuzz_seeds.cc): a
// descriptor (addresses relative to the target's arena, see
// fuzz_engine.cc) followed by a short program of registration operations,
// and on which team(s) validate() must accept it.
struct Seed {
  const char* name;
  std::vector<uint8_t> bytes;
  bool team1;  // accepted on the 1-rank team (and run there)
  bool team3;  // accepted on rank 1 of the 3-rank team
};
std::vector<Seed> seeds();

// The arena layout the seeds rely on (fuzz_engine.cc describes it).
namespace arena {
inline constexpr uint64_t kCounts32 = 64 * 1024;       // uint32 {5, 7, 3}
inline constexpr uint64_t kDispls32 = kCounts32 + 16;  // uint32 {0, 5, 12}
inline constexpr uint64_t kCounts64 = kCounts32 + 32;  // uint64 {5, 7, 3}
inline constexpr uint64_t kDispls64 = kCounts32 + 64;  // uint64 {0, 5, 12}
inline constexpr uint64_t kSrc = 68 * 1024;            // room for 32 KiB
inline constexpr uint64_t kDst = 100 * 1024;
inline constexpr uint64_t kRegion2 = 320 * 1024;  // 256 KiB, key index 2
inline constexpr uint64_t kRegion4 = 768 * 1024;  // 64 KiB, key index 4
}  // namespace arena

}  // namespace ucc::fuzz

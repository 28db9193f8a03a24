// What the standalone fuzz drivers share (fuzz_driver.cc for the engine,
// fuzz_control_driver.cc for the daemon's control protocol): a
// reproducible generator, saving the input that crashed the target, and
// small file and clock helpers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ucc::fuzz {

struct Rng {
  uint64_t s;
  uint64_t next() {  // xorshift64*
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545f4914f6cdd1dull;
  }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
};

// The input being tried: written to `crash_file` when the target aborts,
// faults or (ASan builds) reports an error. Call once at start.
void install_crash_saver(const char* crash_file);
void set_current(const uint8_t* data, size_t len);

bool read_file(const char* path, std::vector<uint8_t>* out);
double now_s();

}  // namespace ucc::fuzz

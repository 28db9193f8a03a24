// What the daemon's fuzz targets share (fuzz_control.cc: the unix socket
// and shared channel; fuzz_remote.cc: the network side): an input read as
// a program, and the check that no descriptor outlived a client. Header
// only: the libFuzzer build compiles a target alone.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ucc::fuzz {

// The input, read front to back; zeros once it runs out.
struct Input {
  const uint8_t* p;
  size_t left;
  bool empty() const { return left == 0; }
  uint64_t take(size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n && left != 0; ++i, --left)
      v |= uint64_t{*p++} << (8 * i);
    return v;
  }
  uint8_t u8() { return static_cast<uint8_t>(take(1)); }
  uint16_t u16() { return static_cast<uint16_t>(take(2)); }
  uint32_t u32() { return static_cast<uint32_t>(take(4)); }
  uint64_t u64() { return take(8); }
  // Up to n bytes into out (the rest zero); how many came from the input.
  size_t bytes(void* out, size_t n) {
    const size_t k = n < left ? n : left;
    memcpy(out, p, k);
    memset(static_cast<uint8_t*>(out) + k, 0, n - k);
    p += k;
    left -= k;
    return k;
  }
};

// The lowest free descriptor number (-1: none left). The same before and
// after a client means nothing of it was left open.
inline int lowest_free_fd() {
  const int fd = fcntl(0, F_DUPFD_CLOEXEC, 0);
  if (fd >= 0) close(fd);
  return fd;
}

}  // namespace ucc::fuzz

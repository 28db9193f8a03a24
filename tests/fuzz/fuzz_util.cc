#include "tests/fuzz/fuzz_util.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#if defined(__SANITIZE_ADDRESS__)
#define UCC_FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UCC_FUZZ_ASAN 1
#endif
#endif
#ifdef UCC_FUZZ_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace ucc::fuzz {
namespace {

const uint8_t* g_cur = nullptr;
size_t g_cur_len = 0;
const char* g_crash_file = "fuzz_crash.bin";

// Async-signal-safe: open/write/close only.
void save_current() {
  if (g_cur == nullptr) return;
  int fd = open(g_crash_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  size_t done = 0;
  while (done < g_cur_len) {
    ssize_t n = write(fd, g_cur + done, g_cur_len - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  static const char msg[] = "fuzz driver: input saved\n";
  if (write(2, msg, sizeof(msg) - 1) < 0) return;
}

void on_fatal(int sig) {
  save_current();
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void install_crash_saver(const char* crash_file) {
  g_crash_file = crash_file;
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL})
    signal(sig, on_fatal);
#ifdef UCC_FUZZ_ASAN
  __sanitizer_set_death_callback(save_current);
#endif
}

void set_current(const uint8_t* data, size_t len) {
  g_cur = data;
  g_cur_len = len;
}

bool read_file(const char* path, std::vector<uint8_t>* out) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return false;
  uint8_t b[4096];
  size_t n;
  while ((n = fread(b, 1, sizeof(b), f)) > 0) out->insert(out->end(), b, b + n);
  fclose(f);
  return true;
}

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace ucc::fuzz

#include "platform/os/log.h"

#include <strings.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ucc::plat {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};
std::atomic<bool> g_inited{false};

const char* const kNames[] = {"error", "warn", "info", "debug", "trace"};

}  // namespace

bool log_parse_level(const char* s, LogLevel* out) {
  for (int i = 0; i < 5; ++i) {
    if (strcasecmp(s, kNames[i]) == 0) {
      *out = static_cast<LogLevel>(i);
      return true;
    }
  }
  if (strcasecmp(s, "warning") == 0) {
    *out = LogLevel::kWarn;
    return true;
  }
  return false;
}

void log_init() {
  if (g_inited.exchange(true)) return;
  const char* v = getenv("UCC_LOG_LEVEL");
  LogLevel lvl;
  if (v != nullptr && log_parse_level(v, &lvl)) log_set_level(lvl);
}

void log_set_level(LogLevel lvl) {
  g_level.store(static_cast<int>(lvl), std::memory_order_relaxed);
}

bool log_enabled(LogLevel lvl) {
  return static_cast<int>(lvl) <= g_level.load(std::memory_order_relaxed);
}

void log_line(LogLevel lvl, const char* file, int line, const char* fmt, ...) {
  char buf[512];
  const char* base = strrchr(file, '/');
  base = base != nullptr ? base + 1 : file;
  int n = snprintf(buf, sizeof(buf), "ucc[%d] %s %s:%d: ", (int)getpid(),
                   kNames[static_cast<int>(lvl)], base, line);
  if (n < 0) return;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
  va_end(ap);
  size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
  if (len > sizeof(buf) - 2) len = sizeof(buf) - 2;
  buf[len++] = '\n';
  ssize_t w = write(2, buf, len);
  (void)w;
}

}  // namespace ucc::plat

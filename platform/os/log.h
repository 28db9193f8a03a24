// One-line logging to stderr, filtered by UCC_LOG_LEVEL
// (error|warn|info|debug|trace; default warn). Callable from any thread;
// each call is one write(2) so lines from several ranks do not interleave.
#pragma once

namespace ucc::plat {

// kOff (log_set_level only): nothing at all, for fuzzers that make the
// library log errors by design.
enum class LogLevel : int { kOff = -1, kError = 0, kWarn, kInfo, kDebug, kTrace };

// Reads UCC_LOG_LEVEL once; later calls are no-ops.
void log_init();
bool log_enabled(LogLevel lvl);
void log_set_level(LogLevel lvl);
// Parses a level name; false when unknown.
bool log_parse_level(const char* s, LogLevel* out);
void log_line(LogLevel lvl, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

}  // namespace ucc::plat

#define UCC_LOG(lvl, ...)                                          \
  do {                                                             \
    if (::ucc::plat::log_enabled(lvl))                             \
      ::ucc::plat::log_line(lvl, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define UCC_ERROR(...) UCC_LOG(::ucc::plat::LogLevel::kError, __VA_ARGS__)
#define UCC_WARN(...) UCC_LOG(::ucc::plat::LogLevel::kWarn, __VA_ARGS__)
#define UCC_INFO(...) UCC_LOG(::ucc::plat::LogLevel::kInfo, __VA_ARGS__)
#define UCC_DEBUG(...) UCC_LOG(::ucc::plat::LogLevel::kDebug, __VA_ARGS__)

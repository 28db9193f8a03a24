#include "firmware_sim/crash_report.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#define UCC_FW_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UCC_FW_ASAN 1
#endif
#endif

namespace ucc::fw {
#ifndef UCC_FW_ASAN
namespace {

// Room for the handler to run when the fault is a stack overflow.
alignas(16) char g_alt_stack[64 * 1024];

// Only async-signal-safe calls from here on: write(2), no stdio.
void put(const char* s) {
  size_t n = 0;
  while (s[n] != 0) ++n;
  while (n > 0) {
    ssize_t w = write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

void put_num(uint64_t v, unsigned base) {
  char buf[24];
  char* p = buf + sizeof(buf);
  *--p = 0;
  do {
    *--p = "0123456789abcdef"[v % base];
    v /= base;
  } while (v != 0);
  if (base == 16) put("0x");
  put(p);
}

const char* name_of(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
    default:
      return "?";
  }
}

void on_fatal(int sig, siginfo_t* info, void*) {
  put("firmware_sim[");
  put_num(static_cast<uint64_t>(getpid()), 10);
  put("]: fatal signal ");
  put_num(static_cast<uint64_t>(sig), 10);
  put(" (");
  put(name_of(sig));
  put(") code ");
  put_num(static_cast<uint64_t>(static_cast<uint32_t>(info->si_code)), 10);
  put(" address ");
  put_num(reinterpret_cast<uintptr_t>(info->si_addr), 16);
  put("; backtrace:\n");
  void* frames[48];
  const int n = backtrace(frames, 48);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  // Die of the same signal: the handler was installed with SA_RESETHAND.
  raise(sig);
}

}  // namespace
#endif

void install_crash_report() {
#ifndef UCC_FW_ASAN
  // backtrace() loads libgcc on its first call, which allocates: do that
  // here, not in the handler.
  void* warm[1];
  backtrace(warm, 1);
  stack_t ss{};
  ss.ss_sp = g_alt_stack;
  ss.ss_size = sizeof(g_alt_stack);
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_fatal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  for (int sig : fatal) sigaction(sig, &sa, nullptr);
#endif
}

}  // namespace ucc::fw

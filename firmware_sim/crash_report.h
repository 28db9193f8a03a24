// A daemon that dies says why: on a fatal signal (SIGSEGV, SIGBUS, SIGFPE,
// SIGILL, SIGABRT) firmware_sim writes the signal, the faulting address and
// a backtrace to stderr (its log), then dies of the same signal, so its
// parent still sees the signal as its exit status. Only the daemon installs
// it: the library never touches its host process's signal handlers.
//
// Built under AddressSanitizer it installs nothing (ASan's own handler
// reports better).
//
// Threads: call once from main before any other thread starts.
#pragma once

namespace ucc::fw {

void install_crash_report();

}  // namespace ucc::fw

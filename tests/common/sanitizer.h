// UCCT_SANITIZER: defined when the tests run under ASan or TSan, which own
// malloc and keep freed memory in quarantine (so allocation counts and
// resident-memory growth mean nothing there; LeakSanitizer checks leaks).
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UCCT_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UCCT_SANITIZER 1
#endif
#endif

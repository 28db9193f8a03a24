// Message authentication for everything that meets strangers on a network
// (the TCP rendezvous of ucc_ext.h, the transports' connection hellos):
// HMAC-SHA256 and a constant-time comparison from OpenSSL's libcrypto,
// random bytes from the kernel (getrandom). Nothing here is our own
// cryptography.
//
// libcrypto is loaded at run time (libcrypto.so.3, else .so.1.1), as
// libibverbs and the CUDA driver are: libucc links nothing more, and a
// host without it still runs every single-host job. Where it is missing,
// mac() says so (one error line) and returns false; callers refuse to
// authenticate rather than skip it.
//
// Threads: any; the library is loaded once.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ucc::plat {

inline constexpr size_t kMacBytes = 32;  // HMAC-SHA256
inline constexpr size_t kKeyBytes = 32;  // a secret, as every user holds it

// A job's or an engine's secret. len 0: none given.
struct Secret {
  uint8_t bytes[kKeyBytes];
  uint32_t len;
};

// HMAC-SHA256(key, data) into out. false: libcrypto cannot be loaded.
bool mac(const void* key, size_t key_len, const void* data, size_t len,
         uint8_t out[kMacBytes]);
// a == b in time independent of where they differ.
bool mac_equal(const uint8_t a[kMacBytes], const uint8_t b[kMacBytes]);
// Whether `tag` is the first n (1..kMacBytes) bytes of `full`, a MAC
// truncated to a tag, in the same constant time.
bool tag_equal(const uint8_t full[kMacBytes], const uint8_t* tag, size_t n);
// n bytes from the kernel's generator; false where it fails (never
// replaced by a weaker source).
bool random_bytes(void* out, size_t n);
// Whether libcrypto loads here (for tests and ucc_info).
bool crypto_available();

// The secret of `what` (a name for log lines) from, in order: the file
// named by the variable `file_env` (it must be a regular file of ours that
// nobody else may read or write, 1 to 4096 bytes), the value of the
// variable `value_env` (at least 8 characters), or `fallback` when not 0.
// Whatever the source, the secret is its HMAC under a fixed label, so
// its length is always kKeyBytes. out->len 0: none of them was given.
// false: a variable named a source that is unfit (the error is logged)
// or libcrypto is missing.
bool load_secret(const char* what, const char* file_env, const char* value_env,
                 uint64_t fallback, Secret* out);

}  // namespace ucc::plat

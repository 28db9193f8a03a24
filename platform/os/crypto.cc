#include "platform/os/crypto.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "platform/os/log.h"

namespace ucc::plat {
namespace {

// The few libcrypto entry points used, with the prototypes of OpenSSL
// 1.1 and 3 (both keep them).
using EvpMd = void;
using Sha256Fn = const EvpMd* (*)();
using HmacFn = unsigned char* (*)(const EvpMd*, const void*, int,
                                  const unsigned char*, size_t, unsigned char*,
                                  unsigned int*);
using MemcmpFn = int (*)(const void*, const void*, size_t);

struct Lib {
  Sha256Fn sha256 = nullptr;
  HmacFn hmac = nullptr;
  MemcmpFn memcmp_ct = nullptr;
  bool ok = false;
};

Lib load() {
  Lib l;
  const char* names[] = {"libcrypto.so.3", "libcrypto.so.1.1"};
  void* h = nullptr;
  for (const char* n : names)
    if ((h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  if (h == nullptr) {
    UCC_ERROR(
        "crypto: cannot load libcrypto (libcrypto.so.3 or .so.1.1; Debian: "
        "libssl3): connections between hosts cannot be authenticated");
    return l;
  }
  l.sha256 = reinterpret_cast<Sha256Fn>(dlsym(h, "EVP_sha256"));
  l.hmac = reinterpret_cast<HmacFn>(dlsym(h, "HMAC"));
  l.memcmp_ct = reinterpret_cast<MemcmpFn>(dlsym(h, "CRYPTO_memcmp"));
  l.ok = l.sha256 != nullptr && l.hmac != nullptr && l.memcmp_ct != nullptr;
  if (!l.ok)
    UCC_ERROR("crypto: libcrypto lacks HMAC, EVP_sha256 or CRYPTO_memcmp");
  return l;
}

const Lib& lib() {
  static std::once_flag once;
  static Lib l;
  std::call_once(once, [] { l = load(); });
  return l;
}

// The secret is the HMAC of what the user gave under this label.
constexpr char kLabel[] = "ucc secret v1";

bool derive(const void* given, size_t len, Secret* out) {
  if (!mac(kLabel, sizeof(kLabel) - 1, given, len, out->bytes)) return false;
  out->len = kKeyBytes;
  return true;
}

bool read_key_file(const char* what, const char* var, const char* path,
                   Secret* out) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) {
    UCC_ERROR("%s: %s=%s: %s", what, var, path, strerror(errno));
    if (fd >= 0) close(fd);
    return false;
  }
  const char* unfit = nullptr;
  if (!S_ISREG(st.st_mode))
    unfit = "not a regular file";
  else if (st.st_uid != geteuid())
    unfit = "owned by another user";
  else if ((st.st_mode & 077) != 0)
    unfit = "readable or writable by others (chmod 600 it)";
  else if (st.st_size < 1 || st.st_size > 4096)
    unfit = "not 1 to 4096 bytes long";
  uint8_t buf[4096];
  size_t got = 0;
  while (unfit == nullptr && got < static_cast<size_t>(st.st_size)) {
    const ssize_t r =
        read(fd, buf + got, static_cast<size_t>(st.st_size) - got);
    if (r <= 0)
      unfit = "cannot be read whole";
    else
      got += static_cast<size_t>(r);
  }
  close(fd);
  if (unfit != nullptr) {
    UCC_ERROR("%s: the key file %s=%s is %s", what, var, path, unfit);
    return false;
  }
  const bool ok = derive(buf, got, out);
  memset(buf, 0, sizeof(buf));
  return ok;
}

}  // namespace

bool crypto_available() { return lib().ok; }

bool mac(const void* key, size_t key_len, const void* data, size_t len,
         uint8_t out[kMacBytes]) {
  const Lib& l = lib();
  if (!l.ok || key_len > 1u << 20) return false;
  unsigned int n = 0;
  static const unsigned char kNone = 0;
  const auto* d = len != 0 ? static_cast<const unsigned char*>(data) : &kNone;
  return l.hmac(l.sha256(), key_len != 0 ? key : &kNone,
                static_cast<int>(key_len), d, len, out, &n) != nullptr &&
         n == kMacBytes;
}

bool mac_equal(const uint8_t a[kMacBytes], const uint8_t b[kMacBytes]) {
  const Lib& l = lib();
  if (l.ok) return l.memcmp_ct(a, b, kMacBytes) == 0;
  return false;  // nothing authenticates without libcrypto
}

bool tag_equal(const uint8_t full[kMacBytes], const uint8_t* tag, size_t n) {
  const Lib& l = lib();
  if (l.ok && n != 0 && n <= kMacBytes) return l.memcmp_ct(full, tag, n) == 0;
  return false;
}

bool random_bytes(void* out, size_t n) {
  auto* p = static_cast<uint8_t*>(out);
  while (n != 0) {
    const ssize_t r = getrandom(p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool load_secret(const char* what, const char* file_env, const char* value_env,
                 uint64_t fallback, Secret* out) {
  out->len = 0;
  const char* path = file_env != nullptr ? getenv(file_env) : nullptr;
  if (path != nullptr && path[0] != '\0')
    return read_key_file(what, file_env, path, out);
  const char* value = value_env != nullptr ? getenv(value_env) : nullptr;
  if (value != nullptr && value[0] != '\0') {
    if (strlen(value) < 8) {
      UCC_ERROR("%s: %s is shorter than 8 characters: too easy to guess", what,
                value_env);
      return false;
    }
    return derive(value, strlen(value), out);
  }
  if (fallback != 0) return derive(&fallback, sizeof(fallback), out);
  return true;
}

}  // namespace ucc::plat

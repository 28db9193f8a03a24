#include "platform/os/host_id.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace ucc::plat {
namespace {

// FNV-1a over the bytes of s, from `seed`.
uint64_t fnv(const char* s, size_t n, uint64_t seed) {
  uint64_t h = seed;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(s[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}

constexpr uint64_t kSeedA = 0xcbf29ce484222325ull;
constexpr uint64_t kSeedB = 0x84222325cbf29ce4ull;

}  // namespace

void host_identity(const char* name, uint64_t out[2]) {
  if (name != nullptr && name[0] != '\0') {
    const size_t n = strlen(name);
    out[0] = fnv(name, n, kSeedA);
    out[1] = fnv(name, n, kSeedB);
    return;
  }
  char boot[64] = {0};
  int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  ssize_t got = fd >= 0 ? read(fd, boot, sizeof(boot) - 1) : -1;
  if (fd >= 0) close(fd);
  if (got <= 0) {
    const long id = gethostid();
    memcpy(boot, &id, sizeof(id));
    got = sizeof(id);
  }
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  const size_t hn = strlen(host);
  // out[0] names the kernel alone: namespaces (or containers) of one
  // machine are hosts of their own but share its CPUs (same_kernel).
  out[0] = fnv(boot, static_cast<size_t>(got), kSeedA);
  out[1] = fnv(host, hn, fnv(boot, static_cast<size_t>(got), kSeedB));
}

}  // namespace ucc::plat

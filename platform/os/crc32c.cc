// CRC32C (crc32c.h): reflected polynomial 0x82F63B78, pre- and
// post-inverted.
#include "platform/os/crc32c.h"

#include <cstring>
#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace ucc::plat {
namespace {

struct Table {
  uint32_t t[256];
  constexpr Table() : t() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? 0x82F63B78u : 0);
      t[i] = c;
    }
  }
};
constexpr Table kTable;

uint32_t crc_soft(uint32_t crc, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    crc = kTable.t[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc_hw(uint32_t crc,
                                                  const uint8_t* p, size_t n) {
  uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    c = __builtin_ia32_crc32di(c, w);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; n != 0; --n, ++p) c32 = __builtin_ia32_crc32qi(c32, *p);
  return c32;
}
bool have_hw() {
  static const bool h = __builtin_cpu_supports("sse4.2");
  return h;
}
#elif defined(__aarch64__)
__attribute__((target("+crc"))) uint32_t crc_hw(uint32_t crc, const uint8_t* p,
                                                size_t n) {
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    crc = __builtin_aarch64_crc32cx(crc, w);
  }
  for (; n != 0; --n, ++p) crc = __builtin_aarch64_crc32cb(crc, *p);
  return crc;
}
bool have_hw() {
  static const bool h = (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
  return h;
}
#endif

}  // namespace

uint32_t crc32c(uint32_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(__x86_64__) || defined(__aarch64__)
  if (have_hw()) return ~crc_hw(crc, p, len);
#endif
  return ~crc_soft(crc, p, len);
}

}  // namespace ucc::plat

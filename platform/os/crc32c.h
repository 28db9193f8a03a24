// CRC32C (Castagnoli), as iSCSI and ext4 use it: the checksum of the
// wire between emulated NICs (platform/wire) and of TCP frames
// (platform/tcp). The CPU's instruction where it has one (SSE4.2 on
// x86-64, the CRC extension on aarch64; checked once), else a table.
// Threads: any.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ucc::plat {

// Continues `crc` (0 to start) over len bytes: crc32c(crc32c(0, a), b)
// is the CRC of a then b.
uint32_t crc32c(uint32_t crc, const void* data, size_t len);

}  // namespace ucc::plat

// What the cuda_loop provider's files share: the allocation table every
// entry point checks addresses against (cuda_loop.cc's allocations,
// cuda_loop_ipc.cc's imports, cuda_loop_kernels.cc's twins), its lock and
// the driver's result codes. Nothing here leaves the .so (the target is
// built with hidden visibility; only the extern "C" blocks are exported).
//
// Threads: g_allocs is only touched under g_mu.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace cuda_loop {

// CUresult values (cuda.h's cudaError_enum).
using Res = int;
using DevPtr = unsigned long long;  // CUdeviceptr
constexpr Res kOk = 0;
constexpr Res kInvalidValue = 1;
constexpr Res kOutOfMemory = 2;
constexpr Res kInvalidDevice = 101;
constexpr Res kInvalidContext = 201;
constexpr Res kAlreadyMapped = 208;
constexpr Res kInvalidHandle = 400;
constexpr Res kNotFound = 500;
constexpr Res kNotReady = 600;
constexpr Res kIllegalAddress = 700;
constexpr Res kMisalignedAddress = 716;
constexpr Res kNotSupported = 801;

struct Alloc {
  uintptr_t dev = 0;         // the PROT_NONE address handed out; 0: free slot
  uint8_t* alias = nullptr;  // the same pages, read-write, for copies
  size_t bytes = 0;          // as asked
  size_t mapped = 0;         // page-rounded
  bool managed = false;
  // Own allocations keep their memfd open: a peer's cuIpcOpenMemHandle
  // opens it again through /proc/<pid>/fd. Imports hold none (-1).
  int fd = -1;
  uint64_t serial = 0;  // CU_POINTER_ATTRIBUTE_BUFFER_ID: never reused
  bool imported = false;
  // Imports: whose allocation this is (the exporter's pid and serial).
  pid_t peer_pid = 0;
  uint64_t peer_serial = 0;
  uint64_t peer_base = 0;  // imported: the exporter's address of it
};

constexpr int kMaxAllocs = 4096;
extern Alloc g_allocs[kMaxAllocs];
extern std::mutex g_mu;

// The next serial (under g_mu).
uint64_t next_serial();

size_t page_round(size_t n);

// Maps fd's first `mapped` bytes twice: PROT_NONE (*dev) and read-write
// (*alias). kOk, or kOutOfMemory with nothing mapped.
Res map_twice(int fd, size_t mapped, void** dev, void** alias);

// Under g_mu, all of them:
// The allocation holding [p, p + n), or nullptr (n == 0 also matches a p
// one past the end).
Alloc* find(uintptr_t p, size_t n);
// The allocation whose asked bytes hold p (p < dev + bytes), or nullptr.
Alloc* holding(uintptr_t p);
// The allocation whose pages (padding included) hold p, or nullptr: where
// p points at memory the process cannot touch.
Alloc* mapping_of(uintptr_t p);
// A free slot, or nullptr.
Alloc* free_slot();

}  // namespace cuda_loop

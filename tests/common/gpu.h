// GPU buffers for the tests, through the CUDA driver loaded at run time
// (no CUDA headers or toolkit needed). With UCCT_MEM=cuda (or managed,
// or unknown: device memory declared UCC_MEMORY_TYPE_UNKNOWN) the
// collective suites mirror each case's host buffers, guards included,
// into GPU memory before ucc_collective_init and copy them back after
// completion; the serial-reference checks then run on the host copies
// as always. Every rank uses device 0 (several processes on one GPU).
#pragma once

#include <ucc/api/ucc.h>

#include <cstddef>
#include <cstdint>

namespace ucct::gpu {

enum class Mode { kHost, kCuda, kManaged, kUnknown };

// UCCT_MEM (host when unset); an unknown value aborts the test binary.
Mode mode();

// Whether this machine has a usable CUDA GPU, asked in a child process so
// that the caller (which forks ranks after) never initialises CUDA; the
// reason in *why when not. Cached.
bool available(const char** why);

// The driver calls the tests use. Each returns false (and prints the
// driver's error) on failure. Rank processes only.
bool init();  // device 0's primary context, current on this thread
bool alloc(size_t bytes, bool managed, uint64_t* dev);
void release(uint64_t dev);
bool to_device(uint64_t dev, const void* src, size_t bytes);
bool to_host(void* dst, uint64_t dev, size_t bytes);
// Streams, for the stream engine tests: a non-blocking stream, a memset
// of 32-bit words queued on it, a device-to-host copy queued on it.
// A non-blocking stream (CU_STREAM_NON_BLOCKING), or with `blocking` one
// that the legacy default stream synchronises with.
bool stream_create(void** stream, bool blocking = false);
bool stream_sync(void* stream);
void stream_destroy(void* stream);
bool memset32_async(uint64_t dev, uint32_t value, size_t words, void* stream);
bool to_host_async(void* dst, uint64_t dev, size_t bytes, void* stream);
bool to_device_async(uint64_t dev, const void* src, size_t bytes,
                     void* stream);
bool dtod_async(uint64_t dst, uint64_t src, size_t bytes, void* stream);
// The IPC handle (64 bytes into `handle`) of the allocation holding
// `dev`, its base and size; false where the driver has no IPC.
bool ipc_handle(uint64_t dev, void* handle, uint64_t* base, uint64_t* size);
// Pinned host memory (for asynchronous copies).
void* host_alloc(size_t bytes);
void host_free(void* p);

// One host region (a test buffer with its guards) mirrored on the GPU.
struct Region {
  uint8_t* host = nullptr;
  size_t bytes = 0;
  uint64_t dev = 0;
};

// The mirror of a collective's buffers: `regions` are the host buffers
// (with guards) that args may point into; the args' src and dst buffers
// (plain or v, by the collective's convention) are pointed at the device
// copies with the mode's memory type.
class Mirror {
 public:
  ~Mirror();
  // Copies the regions to the GPU and rewrites args' buffer pointers; false
  // on a CUDA failure.
  bool map(ucc_coll_args_t* args, Region* regions, int n);
  // Copies the regions back to the host.
  bool unmap();

 private:
  Region* r_ = nullptr;
  int n_ = 0;
};

}  // namespace ucct::gpu

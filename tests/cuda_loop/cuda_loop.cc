// A test provider of the CUDA driver API: a libcuda.so.1 that the tests
// put first on LD_LIBRARY_PATH where there is no GPU, so that the
// library's GPU paths (host/exec/gpu_stage.h, platform/cuda) run for real on
// any machine. It implements the entry points the library and the tests
// use, with the driver's names and ABI:
//   - "device memory" is host memory the process cannot touch: each
//     allocation is a memfd mapped twice, PROT_NONE at the address handed
//     out (a load, a store or process_vm_readv there fails, as with real
//     device memory) and read-write at a private alias the copies use;
//   - cuPointerGetAttribute knows those allocations (device or managed),
//     and nothing else (host memory: CUDA_ERROR_INVALID_VALUE);
//   - streams run their work at once (the calls return after it); events
//     are always complete; stream memory operations and host functions
//     are not provided (the library must cope: CUDA stream engines are
//     then refused at the first triggered post).
// Copies check both ranges against the allocation table: a copy that
// leaves its allocation fails with CUDA_ERROR_INVALID_VALUE.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace {

using Res = int;
using DevPtr = unsigned long long;
constexpr Res kOk = 0;
constexpr Res kInvalidValue = 1;
constexpr Res kNotSupported = 801;

struct Alloc {
  uintptr_t dev;   // the PROT_NONE address handed out
  uint8_t* alias;  // the same pages, read-write, for copies
  size_t bytes;    // as asked
  size_t mapped;   // page-rounded
  bool managed;
};

constexpr int kMax = 4096;
Alloc g_allocs[kMax];
std::mutex g_mu;
int g_ctx_token;  // the one context's handle: its address

size_t page_round(size_t n) {
  const auto pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + pg - 1) / pg * pg;
}

// The allocation holding [p, p + n), or nullptr.
Alloc* find(uintptr_t p, size_t n) {
  for (Alloc& a : g_allocs)
    if (a.dev != 0 && p >= a.dev && p - a.dev <= a.bytes &&
        n <= a.bytes - (p - a.dev))
      return &a;
  return nullptr;
}

Res alloc(DevPtr* out, size_t bytes, bool managed) {
  if (out == nullptr || bytes == 0) return kInvalidValue;
  const size_t m = page_round(bytes);
  const int fd = memfd_create("cuda_loop", MFD_CLOEXEC);
  if (fd < 0) return 2;  // CUDA_ERROR_OUT_OF_MEMORY
  if (ftruncate(fd, static_cast<off_t>(m)) != 0) {
    close(fd);
    return 2;
  }
  void* dev = mmap(nullptr, m, PROT_NONE, MAP_SHARED, fd, 0);
  void* alias = mmap(nullptr, m, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (dev == MAP_FAILED || alias == MAP_FAILED) {
    if (dev != MAP_FAILED) munmap(dev, m);
    if (alias != MAP_FAILED) munmap(alias, m);
    return 2;
  }
  std::lock_guard<std::mutex> g(g_mu);
  for (Alloc& a : g_allocs) {
    if (a.dev != 0) continue;
    a = Alloc{reinterpret_cast<uintptr_t>(dev), static_cast<uint8_t*>(alias),
              bytes, m, managed};
    *out = a.dev;
    return kOk;
  }
  munmap(dev, m);
  munmap(alias, m);
  return 2;
}

// Device range -> its read-write alias, or nullptr.
uint8_t* alias_of(DevPtr d, size_t n) {
  std::lock_guard<std::mutex> g(g_mu);
  Alloc* a = find(d, n);
  return a == nullptr ? nullptr : a->alias + (d - a->dev);
}

}  // namespace

extern "C" {

Res cuInit(unsigned) { return kOk; }
Res cuDeviceGetCount(int* n) {
  *n = 1;
  return kOk;
}
Res cuDeviceGet(int* d, int ordinal) {
  if (ordinal != 0) return kInvalidValue;
  *d = 0;
  return kOk;
}
Res cuDevicePrimaryCtxRetain(void** ctx, int) {
  *ctx = &g_ctx_token;
  return kOk;
}
Res cuCtxSetCurrent(void*) { return kOk; }
Res cuCtxPushCurrent_v2(void* ctx) {
  return ctx == &g_ctx_token ? kOk : kInvalidValue;
}
Res cuCtxPopCurrent_v2(void** ctx) {
  if (ctx != nullptr) *ctx = &g_ctx_token;
  return kOk;
}
Res cuStreamGetCtx(void*, void** ctx) {
  *ctx = &g_ctx_token;
  return kOk;
}

Res cuPointerGetAttribute(void* data, int attr, DevPtr p) {
  std::lock_guard<std::mutex> g(g_mu);
  Alloc* a = find(p, 0);
  if (a == nullptr) return kInvalidValue;
  switch (attr) {
    case 1:  // CONTEXT
      *static_cast<void**>(data) = &g_ctx_token;
      return kOk;
    case 2:  // MEMORY_TYPE: device
      *static_cast<unsigned*>(data) = 2;
      return kOk;
    case 8:  // IS_MANAGED
      *static_cast<unsigned*>(data) = a->managed ? 1 : 0;
      return kOk;
    default:
      return kInvalidValue;
  }
}

Res cuMemAlloc_v2(DevPtr* p, size_t n) { return alloc(p, n, false); }
Res cuMemAllocManaged(DevPtr* p, size_t n, unsigned) {
  return alloc(p, n, true);
}
Res cuMemFree_v2(DevPtr p) {
  std::lock_guard<std::mutex> g(g_mu);
  for (Alloc& a : g_allocs) {
    if (a.dev != p || p == 0) continue;
    munmap(reinterpret_cast<void*>(a.dev), a.mapped);
    munmap(a.alias, a.mapped);
    a = Alloc{};
    return kOk;
  }
  return kInvalidValue;
}

Res cuMemcpyHtoD_v2(DevPtr d, const void* s, size_t n) {
  uint8_t* to = alias_of(d, n);
  if (to == nullptr || (n != 0 && s == nullptr)) return kInvalidValue;
  memcpy(to, s, n);
  return kOk;
}
Res cuMemcpyDtoH_v2(void* h, DevPtr d, size_t n) {
  const uint8_t* from = alias_of(d, n);
  if (from == nullptr || (n != 0 && h == nullptr)) return kInvalidValue;
  memcpy(h, from, n);
  return kOk;
}
Res cuMemcpyHtoDAsync_v2(DevPtr d, const void* s, size_t n, void*) {
  return cuMemcpyHtoD_v2(d, s, n);
}
Res cuMemcpyDtoHAsync_v2(void* h, DevPtr d, size_t n, void*) {
  return cuMemcpyDtoH_v2(h, d, n);
}
Res cuMemsetD32Async(DevPtr d, unsigned v, size_t words, void*) {
  auto* to = reinterpret_cast<uint32_t*>(alias_of(d, words * 4));
  if (to == nullptr) return kInvalidValue;
  for (size_t i = 0; i < words; ++i) to[i] = v;
  return kOk;
}

Res cuMemHostRegister_v2(void* p, size_t n, unsigned) {
  return p != nullptr && n != 0 ? kOk : kInvalidValue;
}
Res cuMemHostUnregister(void* p) { return p != nullptr ? kOk : kInvalidValue; }
Res cuMemHostGetDevicePointer_v2(DevPtr* d, void* p, unsigned) {
  *d = reinterpret_cast<DevPtr>(p);
  return kOk;
}
Res cuMemHostAlloc(void** p, size_t n, unsigned) {
  void* m = mmap(nullptr, page_round(n), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 2;
  *p = m;
  return kOk;
}
Res cuMemFreeHost(void*) { return kOk; }  // a test's few pages

int g_stream_token;
Res cuStreamCreate(void** s, unsigned) {
  *s = &g_stream_token;
  return kOk;
}
Res cuStreamDestroy_v2(void*) { return kOk; }
Res cuStreamSynchronize(void*) { return kOk; }

int g_event_token;
Res cuEventCreate(void** e, unsigned) {
  *e = &g_event_token;
  return kOk;
}
Res cuEventDestroy_v2(void*) { return kOk; }
Res cuEventRecord(void*, void*) { return kOk; }
Res cuEventQuery(void*) { return kOk; }
Res cuLaunchHostFunc(void*, void (*)(void*), void*) { return kNotSupported; }

Res cuGetErrorString(Res r, const char** s) {
  switch (r) {
    case kOk: *s = "no error (cuda_loop)"; break;
    case kInvalidValue: *s = "invalid argument (cuda_loop)"; break;
    case 2: *s = "out of memory (cuda_loop)"; break;
    case kNotSupported: *s = "operation not supported (cuda_loop)"; break;
    default: *s = "unknown error (cuda_loop)"; break;
  }
  return kOk;
}

}  // extern "C"

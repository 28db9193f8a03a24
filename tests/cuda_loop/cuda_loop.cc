// A test provider of the CUDA driver API: a libcuda.so.1 that the tests
// put first on LD_LIBRARY_PATH where there is no GPU, so that the
// library's GPU paths (host/exec/gpu_stage.h, host/exec/gpu_direct.cc,
// platform/cuda) run for real on any machine. It implements the entry
// points the library and the tests use, with the driver's names and ABI:
//   - "device memory" is host memory the process cannot touch: each
//     allocation is a memfd mapped twice, PROT_NONE at the address handed
//     out (a load, a store or process_vm_readv there fails, as with real
//     device memory) and read-write at a private alias the copies use;
//   - cuPointerGetAttribute and cuMemGetAddressRange know those
//     allocations (device or managed; buffer id, range, device ordinal
//     too), and nothing else (host memory: CUDA_ERROR_INVALID_VALUE, and
//     CUDA_ERROR_NOT_FOUND from cuMemGetAddressRange, as from the driver);
//   - IPC memory handles (cuda_loop_ipc.cc): a handle names the
//     exporter's memfd, which a peer opens through /proc/<pid>/fd and maps
//     the same way, so both processes see the same pages;
//   - kernels (cuda_loop_kernels.cc): any module image loads, and its
//     functions are host-compiled twins of the library's kernels
//     (device/gpu/gpu_kernels.h), run over the aliases;
//   - streams run their work at once (the calls return after it); events
//     are objects with flags that complete at once, or after
//     CUDA_LOOP_EVENT_LAG=N queries that answer CUDA_ERROR_NOT_READY (a
//     synchronize of the event, its stream or the context ends the lag);
//     stream memory operations and host functions are not provided (the
//     library must cope: CUDA stream engines are then refused at the
//     first triggered post);
//   - CUDA_LOOP_NO_DEVICE_MAP=1 refuses host memory registered for the
//     device to address (the flag pages of the GPU direct path).
// Copies and kernels check every range against the allocation table: one
// that leaves its allocation fails (CUDA_ERROR_INVALID_VALUE for copies,
// CUDA_ERROR_ILLEGAL_ADDRESS for kernels).
// Test hooks (extern "C"): cuda_loop_blocking_calls() and
// cuda_loop_async_host_copies() (cuMemcpy{HtoD,DtoH}Async) here,
// cuda_loop_ipc_opens/closes/open_now() and cuda_loop_launches() beside
// their entry points.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cuda_loop_internal.h"

namespace cuda_loop {

Alloc g_allocs[kMaxAllocs];
std::mutex g_mu;

namespace {
uint64_t g_serial;  // the last serial handed out
}  // namespace

uint64_t next_serial() { return ++g_serial; }

size_t page_round(size_t n) {
  const auto pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + pg - 1) / pg * pg;
}

Res map_twice(int fd, size_t mapped, void** dev, void** alias) {
  *dev = mmap(nullptr, mapped, PROT_NONE, MAP_SHARED, fd, 0);
  *alias = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (*dev != MAP_FAILED && *alias != MAP_FAILED) return kOk;
  if (*dev != MAP_FAILED) munmap(*dev, mapped);
  if (*alias != MAP_FAILED) munmap(*alias, mapped);
  return kOutOfMemory;
}

Alloc* find(uintptr_t p, size_t n) {
  for (Alloc& a : g_allocs)
    if (a.dev != 0 && p >= a.dev && p - a.dev <= a.bytes &&
        n <= a.bytes - (p - a.dev))
      return &a;
  return nullptr;
}

Alloc* holding(uintptr_t p) {
  for (Alloc& a : g_allocs)
    if (a.dev != 0 && p >= a.dev && p - a.dev < a.bytes) return &a;
  return nullptr;
}

Alloc* mapping_of(uintptr_t p) {
  for (Alloc& a : g_allocs)
    if (a.dev != 0 && p >= a.dev && p - a.dev < a.mapped) return &a;
  return nullptr;
}

Alloc* free_slot() {
  for (Alloc& a : g_allocs)
    if (a.dev == 0) return &a;
  return nullptr;
}

namespace {

int g_ctx_token;     // the one context's handle: its address
int g_stream_token;  // every stream's handle (they all run at once)

Res alloc(DevPtr* out, size_t bytes, bool managed) {
  if (out == nullptr || bytes == 0) return kInvalidValue;
  const size_t m = page_round(bytes);
  // Kept open for the allocation's life (closed by cuMemFree): its number
  // and inode are what an IPC handle names. Not inherited across exec;
  // a forked child keeps it, as it keeps the mappings.
  const int fd = memfd_create("cuda_loop", MFD_CLOEXEC);
  if (fd < 0) return kOutOfMemory;
  void* dev = nullptr;
  void* alias = nullptr;
  if (ftruncate(fd, static_cast<off_t>(m)) != 0 ||
      map_twice(fd, m, &dev, &alias) != kOk) {
    close(fd);
    return kOutOfMemory;
  }
  std::lock_guard<std::mutex> g(g_mu);
  Alloc* a = free_slot();
  if (a == nullptr) {
    munmap(dev, m);
    munmap(alias, m);
    close(fd);
    return kOutOfMemory;
  }
  *a = Alloc{};
  a->dev = reinterpret_cast<uintptr_t>(dev);
  a->alias = static_cast<uint8_t*>(alias);
  a->bytes = bytes;
  a->mapped = m;
  a->managed = managed;
  a->fd = fd;
  a->serial = next_serial();
  *out = a->dev;
  return kOk;
}

// Device range -> its read-write alias, or nullptr.
uint8_t* alias_of(DevPtr d, size_t n) {
  std::lock_guard<std::mutex> g(g_mu);
  Alloc* a = find(d, n);
  return a == nullptr ? nullptr : a->alias + (d - a->dev);
}

// Events: objects in a table, so that a handle the library destroyed (or
// never created) is refused, as the driver refuses it, and so that each
// can lag. A handle is the address of its slot.
struct Event {
  bool used;
  unsigned flags;
  void* stream;       // of the last record
  unsigned lag_left;  // queries still to answer CUDA_ERROR_NOT_READY
};
constexpr int kMaxEvents = 4096;
Event g_events[kMaxEvents];

// CUDA_LOOP_EVENT_LAG=N: after each record, the event's first N queries
// answer CUDA_ERROR_NOT_READY, so that the library's polling paths (an
// event not complete yet) run here too. Read once.
unsigned event_lag() {
  static const unsigned lag = [] {
    const char* s = getenv("CUDA_LOOP_EVENT_LAG");
    return s == nullptr ? 0u : static_cast<unsigned>(strtoul(s, nullptr, 10));
  }();
  return lag;
}

// The event a handle names, or nullptr (under g_mu).
Event* event_of(void* e) {
  const auto p = reinterpret_cast<uintptr_t>(e);
  const auto base = reinterpret_cast<uintptr_t>(g_events);
  if (p < base || p >= base + sizeof g_events ||
      (p - base) % sizeof(Event) != 0)
    return nullptr;
  Event* ev = static_cast<Event*>(e);
  return ev->used ? ev : nullptr;
}

// Everything recorded on `s` (nullptr: on any stream) has ended: the
// waits below end the lag of those events, as a wait on a real stream
// would leave its events complete (under g_mu).
void complete_events(void* s) {
  for (Event& ev : g_events)
    if (ev.used && (s == nullptr || ev.stream == nullptr || ev.stream == s))
      ev.lag_left = 0;
}

// Calls that block the host until the GPU has caught up: the tests count
// them (a poll-driven path should make none).
std::atomic<unsigned long long> g_blocking_calls{0};
std::atomic<unsigned long long> g_async_host_copies{0};

}  // namespace
}  // namespace cuda_loop

using namespace cuda_loop;

#pragma GCC visibility push(default)
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
// CUuuid is a struct of 16 chars, passed by address: the same ABI.
Res cuDeviceGetUuid_v2(char* uuid, int dev) {
  if (uuid == nullptr) return kInvalidValue;
  if (dev != 0) return kInvalidDevice;
  memcpy(uuid, "cuda_loop-gpu-00", 16);
  return kOk;
}
Res cuDeviceGetUuid(char* uuid, int dev) {
  return cuDeviceGetUuid_v2(uuid, dev);
}
Res cuDevicePrimaryCtxRetain(void** ctx, int) {
  *ctx = &g_ctx_token;
  return kOk;
}
Res cuCtxSetCurrent(void*) { return kOk; }
Res cuCtxGetCurrent(void** ctx) {
  if (ctx == nullptr) return kInvalidValue;
  *ctx = &g_ctx_token;
  return kOk;
}
Res cuCtxPushCurrent_v2(void* ctx) {
  return ctx == &g_ctx_token ? kOk : kInvalidValue;
}
Res cuCtxPopCurrent_v2(void** ctx) {
  if (ctx != nullptr) *ctx = &g_ctx_token;
  return kOk;
}
Res cuCtxGetDevice(int* d) {
  if (d == nullptr) return kInvalidValue;
  *d = 0;
  return kOk;
}
Res cuCtxSynchronize() {
  g_blocking_calls.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(g_mu);
  complete_events(nullptr);
  return kOk;
}
Res cuStreamGetCtx(void*, void** ctx) {
  *ctx = &g_ctx_token;
  return kOk;
}

Res cuPointerGetAttribute(void* data, int attr, DevPtr p) {
  if (data == nullptr) return kInvalidValue;
  std::lock_guard<std::mutex> g(g_mu);
  // Where allocations abut, p == the end of one is the start of the
  // next: the allocation holding p wins; a p one past the end of an
  // allocation still names it otherwise (a zero-length buffer at its end).
  Alloc* a = holding(p);
  if (a == nullptr) a = find(p, 0);
  if (a == nullptr) return kInvalidValue;
  switch (attr) {
    case 1:  // CONTEXT
      *static_cast<void**>(data) = &g_ctx_token;
      return kOk;
    case 2:  // MEMORY_TYPE: device
      *static_cast<unsigned*>(data) = 2;
      return kOk;
    case 7:  // BUFFER_ID: imports have their own, as with the driver
      *static_cast<unsigned long long*>(data) = a->serial;
      return kOk;
    case 8:  // IS_MANAGED
      *static_cast<unsigned*>(data) = a->managed ? 1 : 0;
      return kOk;
    case 9:  // DEVICE_ORDINAL
      *static_cast<int*>(data) = 0;
      return kOk;
    case 11:  // RANGE_START_ADDR
      *static_cast<DevPtr*>(data) = a->dev;
      return kOk;
    case 12:  // RANGE_SIZE
      *static_cast<size_t*>(data) = a->bytes;
      return kOk;
    default:
      return kInvalidValue;
  }
}

Res cuMemGetAddressRange_v2(DevPtr* base, size_t* size, DevPtr p) {
  std::lock_guard<std::mutex> g(g_mu);
  const Alloc* a = holding(p);
  if (a == nullptr)
    return kNotFound;  // what the driver answers for host memory
  if (base != nullptr) *base = a->dev;
  if (size != nullptr) *size = a->bytes;
  return kOk;
}

Res cuMemAlloc_v2(DevPtr* p, size_t n) { return alloc(p, n, false); }
Res cuMemAllocManaged(DevPtr* p, size_t n, unsigned) {
  return alloc(p, n, true);
}
// Imports are not freed here: cuIpcCloseMemHandle does (the driver also
// refuses them).
Res cuMemFree_v2(DevPtr p) {
  std::lock_guard<std::mutex> g(g_mu);
  for (Alloc& a : g_allocs) {
    if (a.dev != p || p == 0 || a.imported) continue;
    munmap(reinterpret_cast<void*>(a.dev), a.mapped);
    munmap(a.alias, a.mapped);
    close(a.fd);  // a peer's open of its handle now fails (inode check)
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
// Device to device (own allocations or imports): the ranges may overlap.
Res cuMemcpyDtoD_v2(DevPtr d, DevPtr s, size_t n) {
  uint8_t* to = alias_of(d, n);
  const uint8_t* from = alias_of(s, n);
  if (to == nullptr || from == nullptr) return kInvalidValue;
  memmove(to, from, n);
  return kOk;
}
// Asynchronous copies between host and device: counted (staging).
Res cuMemcpyHtoDAsync_v2(DevPtr d, const void* s, size_t n, void*) {
  g_async_host_copies.fetch_add(1, std::memory_order_relaxed);
  return cuMemcpyHtoD_v2(d, s, n);
}
Res cuMemcpyDtoHAsync_v2(void* h, DevPtr d, size_t n, void*) {
  g_async_host_copies.fetch_add(1, std::memory_order_relaxed);
  return cuMemcpyDtoH_v2(h, d, n);
}
Res cuMemcpyDtoDAsync_v2(DevPtr d, DevPtr s, size_t n, void*) {
  return cuMemcpyDtoD_v2(d, s, n);
}
Res cuMemsetD32_v2(DevPtr d, unsigned v, size_t words) {
  if (words > SIZE_MAX / 4) return kInvalidValue;
  auto* to = reinterpret_cast<uint32_t*>(alias_of(d, words * 4));
  if (to == nullptr) return kInvalidValue;
  for (size_t i = 0; i < words; ++i) to[i] = v;
  return kOk;
}
Res cuMemsetD32Async(DevPtr d, unsigned v, size_t words, void*) {
  return cuMemsetD32_v2(d, v, words);
}

// CUDA_LOOP_NO_DEVICE_MAP=1: host memory registered for the device to
// address (CU_MEMHOSTREGISTER_DEVICEMAP) is refused, as a driver out of
// resources might; plain pinning still works.
Res cuMemHostRegister_v2(void* p, size_t n, unsigned flags) {
  const char* no = getenv("CUDA_LOOP_NO_DEVICE_MAP");
  if ((flags & 0x02) != 0 && no != nullptr && strcmp(no, "1") == 0)
    return kInvalidValue;
  return p != nullptr && n != 0 ? kOk : kInvalidValue;
}
Res cuMemHostUnregister(void* p) { return p != nullptr ? kOk : kInvalidValue; }
// Host memory's device address is its own address (kernels here take any
// address outside the allocation table as host memory).
Res cuMemHostGetDevicePointer_v2(DevPtr* d, void* p, unsigned) {
  *d = reinterpret_cast<DevPtr>(p);
  return kOk;
}
Res cuMemHostAlloc(void** p, size_t n, unsigned) {
  void* m = mmap(nullptr, page_round(n), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return kOutOfMemory;
  *p = m;
  return kOk;
}
Res cuMemFreeHost(void*) { return kOk; }  // a test's few pages

Res cuStreamCreate(void** s, unsigned) {
  *s = &g_stream_token;
  return kOk;
}
Res cuStreamDestroy_v2(void*) { return kOk; }
Res cuStreamSynchronize(void* s) {
  g_blocking_calls.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(g_mu);
  complete_events(s);
  return kOk;
}

// Flags: CU_EVENT_BLOCKING_SYNC 1, DISABLE_TIMING 2, INTERPROCESS 4 (which
// the driver takes only with DISABLE_TIMING).
Res cuEventCreate(void** e, unsigned flags) {
  if (e == nullptr || (flags & ~7u) != 0 || ((flags & 4) && !(flags & 2)))
    return kInvalidValue;
  std::lock_guard<std::mutex> g(g_mu);
  for (Event& ev : g_events) {
    if (ev.used) continue;
    ev = Event{true, flags, nullptr, 0};
    *e = &ev;
    return kOk;
  }
  return kOutOfMemory;
}
Res cuEventDestroy_v2(void* e) {
  std::lock_guard<std::mutex> g(g_mu);
  Event* ev = event_of(e);
  if (ev == nullptr) return kInvalidHandle;
  *ev = Event{};
  return kOk;
}
Res cuEventRecord(void* e, void* s) {
  std::lock_guard<std::mutex> g(g_mu);
  Event* ev = event_of(e);
  if (ev == nullptr) return kInvalidHandle;
  ev->stream = s;
  ev->lag_left = event_lag();
  return kOk;
}
Res cuEventQuery(void* e) {
  std::lock_guard<std::mutex> g(g_mu);
  Event* ev = event_of(e);
  if (ev == nullptr) return kInvalidHandle;
  if (ev->lag_left == 0) return kOk;
  --ev->lag_left;
  return kNotReady;
}
Res cuEventSynchronize(void* e) {
  g_blocking_calls.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(g_mu);
  Event* ev = event_of(e);
  if (ev == nullptr) return kInvalidHandle;
  ev->lag_left = 0;
  return kOk;
}
Res cuLaunchHostFunc(void*, void (*)(void*), void*) { return kNotSupported; }

Res cuGetErrorString(Res r, const char** s) {
  switch (r) {
    case kOk: *s = "no error (cuda_loop)"; break;
    case kInvalidValue: *s = "invalid argument (cuda_loop)"; break;
    case kOutOfMemory:
      *s = "out of memory (cuda_loop)";
      break;
    case kInvalidDevice:
      *s = "invalid device ordinal (cuda_loop)";
      break;
    case kInvalidContext:
      *s = "invalid device context (cuda_loop)";
      break;
    case kAlreadyMapped:
      *s = "resource already mapped (cuda_loop)";
      break;
    case kInvalidHandle:
      *s = "invalid resource handle (cuda_loop)";
      break;
    case kNotFound:
      *s = "named symbol not found (cuda_loop)";
      break;
    case kNotReady:
      *s = "device not ready (cuda_loop)";
      break;
    case kIllegalAddress:
      *s = "an illegal memory access was encountered (cuda_loop)";
      break;
    case kMisalignedAddress:
      *s = "misaligned address (cuda_loop)";
      break;
    case kNotSupported: *s = "operation not supported (cuda_loop)"; break;
    default: *s = "unknown error (cuda_loop)"; break;
  }
  return kOk;
}

unsigned long long cuda_loop_blocking_calls(void) {
  return g_blocking_calls.load(std::memory_order_relaxed);
}
unsigned long long cuda_loop_async_host_copies(void) {
  return g_async_host_copies.load(std::memory_order_relaxed);
}

}  // extern "C"
#pragma GCC visibility pop

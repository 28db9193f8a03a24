// GPU buffers for the tests (see gpu.h).
#include "tests/common/gpu.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ucct::gpu {
namespace {

using Res = int;
using DevPtr = unsigned long long;

struct Api {
  Res (*init)(unsigned);
  Res (*device_get_count)(int*);
  Res (*device_get)(int*, int);
  Res (*primary_retain)(void**, int);
  Res (*ctx_set_current)(void*);
  Res (*mem_alloc)(DevPtr*, size_t);
  Res (*mem_alloc_managed)(DevPtr*, size_t, unsigned);
  Res (*mem_free)(DevPtr);
  Res (*htod)(DevPtr, const void*, size_t);
  Res (*dtoh)(void*, DevPtr, size_t);
  Res (*stream_create)(void**, unsigned);
  Res (*stream_sync)(void*);
  Res (*stream_destroy)(void*);
  Res (*memset32_async)(DevPtr, unsigned, size_t, void*);
  Res (*dtoh_async)(void*, DevPtr, size_t, void*);
  Res (*htod_async)(DevPtr, const void*, size_t, void*);
  Res (*dtod_async)(DevPtr, DevPtr, size_t, void*);
  Res (*host_alloc)(void**, size_t, unsigned);
  Res (*host_free)(void*);
  Res (*error_string)(Res, const char**);
  Res (*ipc_get)(void*, DevPtr);                   // optional
  Res (*address_range)(DevPtr*, size_t*, DevPtr);  // optional
};

Api g_api{};
bool g_loaded = false;

template <typename F>
bool sym(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (*out == nullptr) std::fprintf(stderr, "gpu: libcuda has no %s\n", name);
  return *out != nullptr;
}

// Loads the driver's entry points (no cuInit); false with *why.
bool load(const char** why) {
  if (g_loaded) return true;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    *why = "libcuda.so.1 is not installed (no NVIDIA driver)";
    return false;
  }
  Api& a = g_api;
  bool ok = sym(lib, "cuInit", &a.init);
  ok &= sym(lib, "cuDeviceGetCount", &a.device_get_count);
  ok &= sym(lib, "cuDeviceGet", &a.device_get);
  ok &= sym(lib, "cuDevicePrimaryCtxRetain", &a.primary_retain);
  ok &= sym(lib, "cuCtxSetCurrent", &a.ctx_set_current);
  ok &= sym(lib, "cuMemAlloc_v2", &a.mem_alloc);
  ok &= sym(lib, "cuMemAllocManaged", &a.mem_alloc_managed);
  ok &= sym(lib, "cuMemFree_v2", &a.mem_free);
  ok &= sym(lib, "cuMemcpyHtoD_v2", &a.htod);
  ok &= sym(lib, "cuMemcpyDtoH_v2", &a.dtoh);
  ok &= sym(lib, "cuStreamCreate", &a.stream_create);
  ok &= sym(lib, "cuStreamSynchronize", &a.stream_sync);
  ok &= sym(lib, "cuStreamDestroy_v2", &a.stream_destroy);
  ok &= sym(lib, "cuMemsetD32Async", &a.memset32_async);
  ok &= sym(lib, "cuMemcpyDtoHAsync_v2", &a.dtoh_async);
  ok &= sym(lib, "cuMemcpyHtoDAsync_v2", &a.htod_async);
  ok &= sym(lib, "cuMemcpyDtoDAsync_v2", &a.dtod_async);
  ok &= sym(lib, "cuMemHostAlloc", &a.host_alloc);
  ok &= sym(lib, "cuMemFreeHost", &a.host_free);
  ok &= sym(lib, "cuGetErrorString", &a.error_string);
  a.ipc_get =
      reinterpret_cast<decltype(a.ipc_get)>(dlsym(lib, "cuIpcGetMemHandle"));
  a.address_range = reinterpret_cast<decltype(a.address_range)>(
      dlsym(lib, "cuMemGetAddressRange_v2"));
  if (!ok) {
    *why = "libcuda.so.1 lacks entry points the tests use";
    return false;
  }
  g_loaded = true;
  return true;
}

bool check(Res r, const char* what) {
  if (r == 0) return true;
  const char* s = nullptr;
  if (g_api.error_string != nullptr) g_api.error_string(r, &s);
  std::fprintf(stderr, "gpu: %s failed: %s (%d)\n", what, s ? s : "?", r);
  return false;
}

bool is_v_side(ucc_coll_type_t c, bool dst) {
  if (dst)
    return c == UCC_COLL_TYPE_ALLGATHERV || c == UCC_COLL_TYPE_ALLTOALLV ||
           c == UCC_COLL_TYPE_GATHERV || c == UCC_COLL_TYPE_REDUCE_SCATTERV;
  return c == UCC_COLL_TYPE_ALLTOALLV || c == UCC_COLL_TYPE_SCATTERV;
}

}  // namespace

Mode mode() {
  const char* m = getenv("UCCT_MEM");
  if (m == nullptr || *m == '\0' || std::strcmp(m, "host") == 0)
    return Mode::kHost;
  if (std::strcmp(m, "cuda") == 0) return Mode::kCuda;
  if (std::strcmp(m, "managed") == 0) return Mode::kManaged;
  if (std::strcmp(m, "unknown") == 0) return Mode::kUnknown;
  std::fprintf(stderr, "UCCT_MEM=%s: expected host, cuda, managed or unknown\n",
               m);
  abort();
}

bool available(const char** why) {
  static int cached = -1;  // -1 unknown, 0 no, 1 yes
  static const char* reason = "";
  if (cached < 0) {
    const pid_t pid = fork();
    if (pid == 0) {
      const char* w = "";
      int n = 0;
      if (!load(&w)) _exit(2);
      if (g_api.init(0) != 0) _exit(3);
      if (g_api.device_get_count(&n) != 0 || n < 1) _exit(4);
      _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
      cached = 0;
      reason = "the CUDA probe process failed";
    } else {
      switch (WEXITSTATUS(st)) {
        case 0: cached = 1; break;
        case 2: cached = 0; reason = "libcuda.so.1 missing or too old"; break;
        case 3: cached = 0; reason = "cuInit failed (no GPU or no driver)"; break;
        default: cached = 0; reason = "no CUDA device"; break;
      }
    }
  }
  if (why != nullptr) *why = reason;
  return cached == 1;
}

bool init() {
  const char* why = "";
  if (!load(&why)) {
    std::fprintf(stderr, "gpu: %s\n", why);
    return false;
  }
  int dev = 0;
  void* ctx = nullptr;
  return check(g_api.init(0), "cuInit") &&
         check(g_api.device_get(&dev, 0), "cuDeviceGet") &&
         check(g_api.primary_retain(&ctx, dev), "cuDevicePrimaryCtxRetain") &&
         check(g_api.ctx_set_current(ctx), "cuCtxSetCurrent");
}

bool alloc(size_t bytes, bool managed, uint64_t* dev) {
  DevPtr p = 0;
  const size_t n = bytes != 0 ? bytes : 1;
  const bool ok = managed ? check(g_api.mem_alloc_managed(&p, n, 1),
                                  "cuMemAllocManaged")
                          : check(g_api.mem_alloc(&p, n), "cuMemAlloc");
  *dev = p;
  return ok;
}

void release(uint64_t dev) {
  if (dev != 0) check(g_api.mem_free(dev), "cuMemFree");
}

bool to_device(uint64_t dev, const void* src, size_t bytes) {
  return bytes == 0 || check(g_api.htod(dev, src, bytes), "cuMemcpyHtoD");
}

bool to_host(void* dst, uint64_t dev, size_t bytes) {
  return bytes == 0 || check(g_api.dtoh(dst, dev, bytes), "cuMemcpyDtoH");
}

bool stream_create(void** stream, bool blocking) {
  return check(g_api.stream_create(stream, blocking ? 0 : 1), "cuStreamCreate");
}

bool stream_sync(void* stream) {
  return check(g_api.stream_sync(stream), "cuStreamSynchronize");
}

void stream_destroy(void* stream) {
  check(g_api.stream_destroy(stream), "cuStreamDestroy");
}

bool memset32_async(uint64_t dev, uint32_t value, size_t words, void* stream) {
  return check(g_api.memset32_async(dev, value, words, stream),
               "cuMemsetD32Async");
}

bool to_host_async(void* dst, uint64_t dev, size_t bytes, void* stream) {
  return check(g_api.dtoh_async(dst, dev, bytes, stream), "cuMemcpyDtoHAsync");
}

bool to_device_async(uint64_t dev, const void* src, size_t bytes,
                     void* stream) {
  return check(g_api.htod_async(dev, src, bytes, stream), "cuMemcpyHtoDAsync");
}

bool dtod_async(uint64_t dst, uint64_t src, size_t bytes, void* stream) {
  return check(g_api.dtod_async(dst, src, bytes, stream), "cuMemcpyDtoDAsync");
}

bool ipc_handle(uint64_t dev, void* handle, uint64_t* base, uint64_t* size) {
  DevPtr b = 0;
  size_t sz = 0;
  if (g_api.ipc_get == nullptr || g_api.address_range == nullptr ||
      !check(g_api.address_range(&b, &sz, dev), "cuMemGetAddressRange") ||
      !check(g_api.ipc_get(handle, b), "cuIpcGetMemHandle"))
    return false;
  *base = b;
  *size = sz;
  return true;
}

void* host_alloc(size_t bytes) {
  void* p = nullptr;
  return check(g_api.host_alloc(&p, bytes, 0), "cuMemHostAlloc") ? p : nullptr;
}

void host_free(void* p) {
  if (p != nullptr) check(g_api.host_free(p), "cuMemFreeHost");
}

namespace {

// Device buffers the mirrors keep for the next collective of exactly the
// same size (the matrix runs every op on the same buffers, and each
// cuMemFree synchronises the device and each new allocation costs the
// GPU direct path an IPC open), a few of them, the oldest given back
// first. Exact sizes only: an access past a region still leaves the
// allocation (tests/cuda_loop checks every range against it). The
// tests of buffers freed and made again use alloc() and release().
struct Kept {
  uint64_t dev;
  size_t bytes;
  bool managed;
  uint64_t when;
};
constexpr int kKept = 24;
Kept g_kept[kKept];
uint64_t g_kept_clock;

bool take_kept(size_t bytes, bool managed, uint64_t* dev) {
  for (Kept& k : g_kept)
    if (k.dev != 0 && k.bytes == bytes && k.managed == managed) {
      *dev = k.dev;
      k.dev = 0;
      return true;
    }
  return alloc(bytes, managed, dev);
}

void keep(uint64_t dev, size_t bytes, bool managed) {
  if (dev == 0) return;
  Kept* slot = &g_kept[0];
  for (Kept& k : g_kept) {
    if (k.dev == 0) {
      slot = &k;
      break;
    }
    if (k.when < slot->when) slot = &k;
  }
  if (slot->dev != 0) release(slot->dev);
  *slot = Kept{dev, bytes, managed, ++g_kept_clock};
}

}  // namespace

Mirror::~Mirror() {
  const bool managed = mode() == Mode::kManaged;
  for (int i = 0; i < n_; ++i) keep(r_[i].dev, r_[i].bytes, managed);
}

bool Mirror::map(ucc_coll_args_t* args, Region* regions, int n) {
  static const bool ready = init();  // once per rank process
  if (!ready) return false;
  r_ = regions;
  n_ = n;
  const Mode m = mode();
  for (int i = 0; i < n; ++i) {
    regions[i].dev = 0;
    if (regions[i].bytes == 0) continue;
    if (!take_kept(regions[i].bytes, m == Mode::kManaged, &regions[i].dev) ||
        !to_device(regions[i].dev, regions[i].host, regions[i].bytes))
      return false;
  }
  const ucc_memory_type_t mt = m == Mode::kManaged ? UCC_MEMORY_TYPE_CUDA_MANAGED
                               : m == Mode::kUnknown ? UCC_MEMORY_TYPE_UNKNOWN
                                                     : UCC_MEMORY_TYPE_CUDA;
  const ucc_coll_type_t c = args->coll_type;
  for (int dst = 0; dst < 2; ++dst) {
    // info and info_v both start with the buffer pointer.
    ucc_coll_buffer_info_t& plain = dst ? args->dst.info : args->src.info;
    ucc_coll_buffer_info_v_t& v = dst ? args->dst.info_v : args->src.info_v;
    const bool vec = is_v_side(c, dst != 0);
    auto* p = static_cast<uint8_t*>(vec ? v.buffer : plain.buffer);
    if (p == nullptr) continue;
    for (int i = 0; i < n; ++i) {
      const Region& rg = regions[i];
      if (rg.dev == 0 || p < rg.host || p > rg.host + rg.bytes) continue;
      void* d = reinterpret_cast<void*>(rg.dev + static_cast<uint64_t>(p - rg.host));
      if (vec) {
        v.buffer = d;
        v.mem_type = mt;
      } else {
        plain.buffer = d;
        plain.mem_type = mt;
      }
      break;
    }
  }
  return true;
}

bool Mirror::unmap() {
  bool ok = true;
  for (int i = 0; i < n_; ++i)
    if (r_[i].dev != 0)
      ok = to_host(r_[i].host, r_[i].dev, r_[i].bytes) && ok;
  return ok;
}

}  // namespace ucct::gpu

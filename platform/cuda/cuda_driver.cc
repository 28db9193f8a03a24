// Loads the CUDA driver at run time (see cuda_driver.h).
#include "platform/cuda/cuda_driver.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <atomic>
#include <cstring>

#include "platform/os/log.h"

namespace ucc::plat::cuda {
namespace {

constexpr const char* kLib = "libcuda.so.1";

// Driver attribute and memory-type values (cuda.h's CUpointer_attribute
// and CUmemorytype).
constexpr int kAttrContext = 1;
constexpr int kAttrMemoryType = 2;
constexpr int kAttrIsManaged = 8;
constexpr unsigned kMemTypeDevice = 2;
constexpr unsigned kMemTypeUnified = 4;

pthread_once_t g_once = PTHREAD_ONCE_INIT;
Driver g_driver{};
const Driver* g_loaded = nullptr;

template <typename Fn>
bool resolve(void* lib, const char* name, Fn* out) {
  void* sym = dlsym(lib, name);
  *out = reinterpret_cast<Fn>(sym);
  if (sym == nullptr) UCC_INFO("CUDA: %s has no %s", kLib, name);
  return sym != nullptr;
}

// An entry point the library can do without (no log line when missing:
// load() says once what its absence turns off).
template <typename Fn>
bool optional(void* lib, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(lib, name));
  return *out != nullptr;
}

void load() {
  void* lib = dlopen(kLib, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    UCC_INFO("CUDA: %s not loadable (%s): GPU memory is not supported", kLib,
             dlerror());
    return;
  }
  Driver& d = g_driver;
  bool ok = resolve(lib, "cuInit", &d.init);
  ok &= resolve(lib, "cuPointerGetAttribute", &d.pointer_get_attribute);
  ok &= resolve(lib, "cuCtxPushCurrent_v2", &d.ctx_push);
  ok &= resolve(lib, "cuCtxPopCurrent_v2", &d.ctx_pop);
  ok &= resolve(lib, "cuStreamCreate", &d.stream_create);
  ok &= resolve(lib, "cuStreamDestroy_v2", &d.stream_destroy);
  ok &= resolve(lib, "cuStreamSynchronize", &d.stream_synchronize);
  ok &= resolve(lib, "cuMemcpyDtoHAsync_v2", &d.memcpy_dtoh_async);
  ok &= resolve(lib, "cuMemcpyHtoDAsync_v2", &d.memcpy_htod_async);
  ok &= resolve(lib, "cuMemHostRegister_v2", &d.host_register);
  ok &= resolve(lib, "cuMemHostUnregister", &d.host_unregister);
  ok &= resolve(lib, "cuMemHostGetDevicePointer_v2",
                &d.host_get_device_pointer);
  ok &= resolve(lib, "cuEventCreate", &d.event_create);
  ok &= resolve(lib, "cuEventDestroy_v2", &d.event_destroy);
  ok &= resolve(lib, "cuEventRecord", &d.event_record);
  ok &= resolve(lib, "cuEventQuery", &d.event_query);
  ok &= resolve(lib, "cuLaunchHostFunc", &d.launch_host_func);
  ok &= resolve(lib, "cuStreamGetCtx", &d.stream_get_ctx);
  ok &= resolve(lib, "cuGetErrorString", &d.get_error_string);
  // Stream memory operations: the _v2 entry (CUDA 11.7 on) or the first.
  if (dlsym(lib, "cuStreamWaitValue32_v2") != nullptr)
    resolve(lib, "cuStreamWaitValue32_v2", &d.stream_wait_value32);
  else
    resolve(lib, "cuStreamWaitValue32", &d.stream_wait_value32);
  d.direct = optional(lib, "cuIpcGetMemHandle", &d.ipc_get_mem_handle);
  d.direct &= optional(lib, "cuIpcOpenMemHandle_v2", &d.ipc_open_mem_handle);
  d.direct &= optional(lib, "cuIpcCloseMemHandle", &d.ipc_close_mem_handle);
  d.direct &=
      optional(lib, "cuMemGetAddressRange_v2", &d.mem_get_address_range);
  d.direct &= optional(lib, "cuMemcpyDtoDAsync_v2", &d.memcpy_dtod_async);
  d.direct &= optional(lib, "cuModuleLoadData", &d.module_load_data);
  d.direct &= optional(lib, "cuModuleUnload", &d.module_unload);
  d.direct &= optional(lib, "cuModuleGetFunction", &d.module_get_function);
  d.direct &= optional(lib, "cuLaunchKernel", &d.launch_kernel);
  d.direct &= optional(lib, "cuMemAlloc_v2", &d.mem_alloc);
  d.direct &= optional(lib, "cuMemFree_v2", &d.mem_free);
  d.direct &= optional(lib, "cuMemsetD32_v2", &d.memset_d32);
  optional(lib, "cuCtxGetCurrent", &d.ctx_get_current);
  optional(lib, "cuMemGetHandleForAddressRange",
           &d.mem_get_handle_for_address_range);
  if (!d.direct)
    UCC_INFO(
        "CUDA: %s lacks what peers' GPU buffers need (IPC, kernels): "
        "GPU buffers are staged",
        kLib);
  if (!ok) {
    UCC_INFO("CUDA: %s is too old: GPU memory is not supported", kLib);
    return;
  }
  const CuResult r = d.init(0);
  if (r != kSuccess) {
    UCC_INFO("CUDA: cuInit failed (%s): GPU memory is not supported",
             error_name(d, r));
    return;
  }
  g_loaded = &d;
}

}  // namespace

const Driver* driver() {
  pthread_once(&g_once, load);
  return g_loaded;
}

namespace {

// dl_iterate_phdr's count of objects ever loaded, and whether libcuda was
// among the loaded ones when it was last looked at. dlopen(RTLD_NOLOAD)
// would search the library path on every miss (over 100 us here).
std::atomic<unsigned long long> g_seen_adds{~0ull};
std::atomic<bool> g_in_process{false};

int first_adds(dl_phdr_info* info, size_t, void* out) {
  *static_cast<unsigned long long*>(out) = info->dlpi_adds;
  return 1;  // one object is enough: every one carries the counter
}

int is_libcuda(dl_phdr_info* info, size_t, void*) {
  const char* slash = strrchr(info->dlpi_name, '/');
  const char* base = slash != nullptr ? slash + 1 : info->dlpi_name;
  return strncmp(base, "libcuda.so", 10) == 0 ? 1 : 0;
}

}  // namespace

bool driver_in_process() {
  if (g_in_process.load(std::memory_order_relaxed)) return true;
  unsigned long long adds = 0;
  dl_iterate_phdr(first_adds, &adds);
  if (adds == g_seen_adds.load(std::memory_order_relaxed)) return false;
  // Something was loaded since the last look: look through the list.
  const bool found = dl_iterate_phdr(is_libcuda, nullptr) != 0;
  g_in_process.store(found, std::memory_order_relaxed);
  g_seen_adds.store(adds, std::memory_order_relaxed);
  return found;
}

MemKind classify(const Driver& d, const void* p, CuCtx* ctx) {
  const auto ptr = reinterpret_cast<CuDevPtr>(p);
  unsigned type = 0;
  if (d.pointer_get_attribute(&type, kAttrMemoryType, ptr) != kSuccess)
    return MemKind::kHost;  // the driver does not know it: host memory
  if (type != kMemTypeDevice && type != kMemTypeUnified) return MemKind::kHost;
  unsigned managed = 0;
  d.pointer_get_attribute(&managed, kAttrIsManaged, ptr);
  *ctx = nullptr;
  d.pointer_get_attribute(ctx, kAttrContext, ptr);
  return managed != 0 ? MemKind::kManaged : MemKind::kDevice;
}

const char* error_name(const Driver& d, CuResult r) {
  const char* s = nullptr;
  if (d.get_error_string != nullptr && d.get_error_string(r, &s) == kSuccess &&
      s != nullptr)
    return s;
  return "unknown CUDA error";
}

}  // namespace ucc::plat::cuda

// The CUDA driver, loaded at run time (dlopen("libcuda.so.1")) the first
// time a GPU buffer or a CUDA stream engine needs it: libucc.a links, and
// runs unchanged, on machines without CUDA. Only the few driver entry
// points the library uses, declared here with the driver API's types as
// plain integers and pointers (no CUDA headers are needed to build).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ucc::plat::cuda {

using CuResult = int;       // CUresult: 0 is CUDA_SUCCESS
using CuDevPtr = uint64_t;  // CUdeviceptr
using CuCtx = void*;        // CUcontext
using CuStream = void*;     // CUstream (cudaStream_t is the same handle)
using CuEvent = void*;      // CUevent
using CuModule = void*;     // CUmodule
using CuFunction = void*;   // CUfunction

// CUipcMemHandle and CUipcEventHandle: 64 opaque bytes, passed by value.
struct IpcHandle {
  unsigned char bytes[64];
};

inline constexpr CuResult kSuccess = 0;
inline constexpr CuResult kNotReady = 600;  // CUDA_ERROR_NOT_READY

// The driver's entry points, resolved once; the names are the driver's
// own (with their _v2 ABI versions where the driver has them).
struct Driver {
  CuResult (*init)(unsigned flags);
  CuResult (*pointer_get_attribute)(void* data, int attribute, CuDevPtr ptr);
  CuResult (*ctx_push)(CuCtx ctx);
  CuResult (*ctx_pop)(CuCtx* ctx);
  CuResult (*ctx_get_current)(CuCtx* ctx);  // optional: nullptr
  CuResult (*stream_create)(CuStream* s, unsigned flags);
  CuResult (*stream_destroy)(CuStream s);
  CuResult (*stream_synchronize)(CuStream s);
  CuResult (*memcpy_dtoh_async)(void* dst, CuDevPtr src, size_t n,
                                CuStream s);
  CuResult (*memcpy_htod_async)(CuDevPtr dst, const void* src, size_t n,
                                CuStream s);
  CuResult (*host_register)(void* p, size_t n, unsigned flags);
  CuResult (*host_unregister)(void* p);
  CuResult (*host_get_device_pointer)(CuDevPtr* d, void* p, unsigned flags);
  CuResult (*event_create)(CuEvent* e, unsigned flags);
  CuResult (*event_destroy)(CuEvent e);
  CuResult (*event_record)(CuEvent e, CuStream s);
  CuResult (*event_query)(CuEvent e);
  CuResult (*stream_wait_value32)(CuStream s, CuDevPtr addr, uint32_t value,
                                  unsigned flags);
  CuResult (*launch_host_func)(CuStream s, void (*fn)(void*), void* data);
  CuResult (*stream_get_ctx)(CuStream s, CuCtx* ctx);
  CuResult (*get_error_string)(CuResult r, const char** s);
  // Optional: where any is missing the GPU-direct path (peers' buffers
  // through CUDA IPC, reductions by kernels: host/exec/gpu_direct.h) is
  // off and GPU buffers are staged.
  CuResult (*ipc_get_mem_handle)(IpcHandle* h, CuDevPtr p);
  CuResult (*ipc_open_mem_handle)(CuDevPtr* p, IpcHandle h, unsigned flags);
  CuResult (*ipc_close_mem_handle)(CuDevPtr p);
  CuResult (*mem_get_address_range)(CuDevPtr* base, size_t* size, CuDevPtr p);
  CuResult (*memcpy_dtod_async)(CuDevPtr dst, CuDevPtr src, size_t n,
                                CuStream s);
  CuResult (*module_load_data)(CuModule* m, const void* image);
  CuResult (*module_unload)(CuModule m);
  CuResult (*module_get_function)(CuFunction* f, CuModule m, const char* name);
  CuResult (*launch_kernel)(CuFunction f, unsigned gx, unsigned gy, unsigned gz,
                            unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, CuStream s, void** params,
                            void** extra);
  CuResult (*mem_alloc)(CuDevPtr* p, size_t n);
  CuResult (*mem_free)(CuDevPtr p);
  CuResult (*memset_d32)(CuDevPtr p, unsigned v, size_t words);
  bool direct;  // every optional entry above resolved
  // Optional (CUDA 11.7 on): a dma-buf fd of device memory, for GPUDirect
  // RDMA (host/exec/gpu_rdma.h); nullptr where the driver lacks it.
  CuResult (*mem_get_handle_for_address_range)(void* handle, CuDevPtr p,
                                               size_t n, int type,
                                               unsigned long long flags);
};

// Where a pointer lives, as the driver sees it.
enum class MemKind : uint8_t {
  kHost,     // not the driver's, or host memory it pinned
  kDevice,   // device memory (cuMemAlloc / cudaMalloc)
  kManaged,  // managed memory (cuMemAllocManaged / cudaMallocManaged)
};

// The driver, loaded and initialised on the first call (thread-safe);
// nullptr when libcuda.so.1 is missing, lacks an entry point, or cuInit
// fails (no GPU). Logs why once, at info.
const Driver* driver();

// Whether this process has loaded libcuda (nothing is loaded here). A
// process that never loaded the driver holds no GPU pointers, so
// UCC_MEMORY_TYPE_UNKNOWN needs no driver call there: this reads the
// loader's count of loaded objects (one dl_iterate_phdr callback) and
// walks the list only when that count moved.
bool driver_in_process();

// What `p` is, and (for device and managed memory) the context it
// belongs to. kHost when the driver does not know the pointer.
MemKind classify(const Driver& d, const void* p, CuCtx* ctx);

// The driver's name for an error, for log lines.
const char* error_name(const Driver& d, CuResult r);

// Makes a CUDA context current on this thread for a scope; the thread's
// own current context, if any, comes back after.
class CtxScope {
 public:
  CtxScope(const Driver& d, CuCtx ctx) : d_(d) {
    ok_ = d.ctx_push(ctx) == kSuccess;
  }
  ~CtxScope() {
    CuCtx prev = nullptr;
    if (ok_) d_.ctx_pop(&prev);
  }
  CtxScope(const CtxScope&) = delete;
  CtxScope& operator=(const CtxScope&) = delete;
  bool ok() const { return ok_; }

 private:
  const Driver& d_;
  bool ok_;
};

// Flags of the driver API used by the library.
inline constexpr unsigned kStreamNonBlocking = 0x1;  // CU_STREAM_NON_BLOCKING
inline constexpr unsigned kEventDisableTiming = 0x2;  // CU_EVENT_DISABLE_TIMING
inline constexpr unsigned kHostRegisterPortable = 0x1;
inline constexpr unsigned kHostRegisterDeviceMap = 0x2;
inline constexpr unsigned kWaitValueGeq = 0x0;  // CU_STREAM_WAIT_VALUE_GEQ
inline constexpr unsigned kIpcLazyPeerAccess = 0x1;
inline constexpr int kAttrBufferId = 7;  // CU_POINTER_ATTRIBUTE_BUFFER_ID
inline constexpr int kRangeDmaBufFd = 1;  // CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD

}  // namespace ucc::plat::cuda

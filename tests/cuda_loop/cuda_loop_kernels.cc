// Modules and kernel launches of the cuda_loop provider (see cuda_loop.cc).
//
// No GPU code runs here: a module loads from any image, and its functions
// are host-compiled twins of the library's kernels, found by the kernels'
// names and built from the same element bodies (device/gpu/gpu_kernels.h),
// so the arithmetic the tests check is the arithmetic the GPU runs. A
// launch checks its configuration as the driver does, then runs the twin
// at once over every element (streams here run their work at once).
//
// Addresses in a kernel's arguments are device addresses: one inside an
// allocation (own or imported) becomes the same offset in its read-write
// alias, and the whole range the kernel touches must lie in that
// allocation, or the launch fails with CUDA_ERROR_ILLEGAL_ADDRESS (where
// the GPU would fault; the driver reports that at the next synchronizing
// call, this provider at the launch). Any other address is host memory
// (cuMemHostGetDevicePointer hands out host addresses as they are) and is
// used as it is, unless it runs into an allocation or its alias.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <mutex>

#include "cuda_loop_internal.h"
#include "device/gpu/gpu_kernels.h"

namespace cuda_loop {
namespace {

using Twin = Res (*)(const void* args);

// Alignment, then translation of one address the kernel touches over
// [*addr, *addr + bytes) (under g_mu).
Res translate(uint64_t* addr, size_t bytes, size_t align) {
  if (*addr == 0) return kIllegalAddress;
  if (*addr % align != 0) return kMisalignedAddress;
  const Alloc* a = mapping_of(*addr);
  if (a == nullptr) {
    // Host memory: it must not run into device memory, nor into an alias
    // (no address the library holds is in one: an address there is a
    // wrong one that happens to be writable, where a GPU would fault).
    if (bytes > UINTPTR_MAX - *addr) return kIllegalAddress;
    const uintptr_t end = *addr + bytes;
    for (const Alloc& d : g_allocs) {
      if (d.dev == 0) continue;
      const auto al = reinterpret_cast<uintptr_t>(d.alias);
      if ((*addr < d.dev + d.mapped && d.dev < end) ||
          (*addr < al + d.mapped && al < end))
        return kIllegalAddress;
    }
    return kOk;
  }
  const size_t off = *addr - a->dev;
  if (off > a->bytes || bytes > a->bytes - off) return kIllegalAddress;
  *addr = reinterpret_cast<uintptr_t>(a->alias) + off;
  return kOk;
}

// A kernel's flags and its count of finished blocks (under g_mu).
Res translate_flags(ucc::gpu::FlagArgs* f, uint64_t* counter) {
  if (f->n == 0) return kOk;
  if (const Res r = translate(counter, 4, 4); r != kOk) return r;
  for (uint32_t k = 0; k < f->n; ++k)
    if (const Res r = translate(&f->flag[k], 4, 4); r != kOk) return r;
  return kOk;
}

// Flag k < n gets the value, after everything before (translated flags).
void raise_flags(const ucc::gpu::FlagArgs& a) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  for (uint32_t k = 0; k < a.n; ++k)
    __atomic_store_n(reinterpret_cast<uint32_t*>(a.flag[k]), a.value,
                     __ATOMIC_RELEASE);
}

template <typename V, ucc::gpu::Ops K>
Res reduce_twin(const void* args) {
  ucc::gpu::ReduceArgs a;
  memcpy(&a, args, sizeof a);
  if (a.nsrc < 1 || a.nsrc > ucc::gpu::kMaxPeers ||
      a.ndst > ucc::gpu::kMaxPeers)
    return kInvalidValue;
  if (a.count == 0) return kOk;  // no thread touches anything
  constexpr size_t kElem = sizeof(typename V::Store);
  if (a.count > SIZE_MAX / kElem) return kIllegalAddress;
  const size_t bytes = static_cast<size_t>(a.count) * kElem;
  // Under the lock throughout: no buffer is unmapped while the twin runs.
  std::lock_guard<std::mutex> g(g_mu);
  for (uint32_t k = 0; k < a.nsrc; ++k)
    if (const Res r = translate(&a.src[k], bytes, kElem); r != kOk) return r;
  // reduce_scatter: dst[k] takes block k only (or is a whole vector).
  if (a.blk != 0 &&
      (a.ndst == 0 || a.count / a.ndst != a.blk || a.count % a.ndst != 0))
    return kInvalidValue;
  const size_t dst_bytes =
      a.blk == 0 || a.blk_whole ? bytes : static_cast<size_t>(a.blk) * kElem;
  for (uint32_t k = 0; k < a.ndst; ++k)
    if (const Res r = translate(&a.dst[k], dst_bytes, kElem); r != kOk)
      return r;
  if (a.flags.n > ucc::gpu::kMaxPeers) return kInvalidValue;
  if (const Res r = translate_flags(&a.flags, &a.counter); r != kOk) return r;
  for (uint64_t i = 0; i < a.count; ++i) ucc::gpu::reduce_elem<V, K>(a, i);
  // The last block's flags (the counter is the GPU's business: the twin
  // is one block).
  raise_flags(a.flags);
  return kOk;
}

// ucc_gpu_flags_set: __threadfence_system(), then thread k < n stores the
// value to flag k. The fence orders the stream's earlier work (all done
// by now here) before the flags; each store releases.
Res flags_twin(const void* args) {
  ucc::gpu::FlagArgs a;
  memcpy(&a, args, sizeof a);
  if (a.n > ucc::gpu::kMaxPeers) return kInvalidValue;
  std::lock_guard<std::mutex> g(g_mu);
  for (uint32_t k = 0; k < a.n; ++k)
    if (const Res r = translate(&a.flag[k], 4, 4); r != kOk) return r;
  raise_flags(a);
  return kOk;
}

// ucc_gpu_copy: n copies of `bytes`, then the last block's flags.
Res copy_twin(const void* args) {
  ucc::gpu::CopyArgs a;
  memcpy(&a, args, sizeof a);
  if (a.n > ucc::gpu::kMaxCopies || a.flags.n > ucc::gpu::kMaxPeers)
    return kInvalidValue;
  std::lock_guard<std::mutex> g(g_mu);
  for (uint32_t k = 0; k < a.n && a.bytes != 0; ++k) {
    if (const Res r = translate(&a.src[k], a.bytes, 1); r != kOk) return r;
    if (const Res r = translate(&a.dst[k], a.bytes, 1); r != kOk) return r;
  }
  if (const Res r = translate_flags(&a.flags, &a.counter); r != kOk) return r;
  for (uint32_t k = 0; k < a.n && a.bytes != 0; ++k)
    memcpy(reinterpret_cast<void*>(a.dst[k]),
           reinterpret_cast<const void*>(a.src[k]), a.bytes);
  raise_flags(a.flags);
  return kOk;
}

// ucc_gpu_swap: n pairs of ranges exchanged, then the last block's flags.
Res swap_twin(const void* args) {
  ucc::gpu::SwapArgs a;
  memcpy(&a, args, sizeof a);
  if (a.n > ucc::gpu::kMaxSwaps || a.flags.n > ucc::gpu::kMaxPeers)
    return kInvalidValue;
  std::lock_guard<std::mutex> g(g_mu);
  for (uint32_t k = 0; k < a.n; ++k) {
    if (a.len[k] == 0) continue;
    if (const Res r = translate(&a.a[k], a.len[k], 1); r != kOk) return r;
    if (const Res r = translate(&a.b[k], a.len[k], 1); r != kOk) return r;
  }
  if (const Res r = translate_flags(&a.flags, &a.counter); r != kOk) return r;
  for (uint32_t k = 0; k < a.n; ++k) {
    auto* x = reinterpret_cast<uint8_t*>(a.a[k]);
    auto* y = reinterpret_cast<uint8_t*>(a.b[k]);
    for (uint64_t i = 0; i < a.len[k]; ++i) {
      const uint8_t t = x[i];
      x[i] = y[i];
      y[i] = t;
    }
  }
  raise_flags(a.flags);
  return kOk;
}

struct Kernel {
  const char* name;
  Twin run;
};
#define CUDA_LOOP_TWIN(suffix, V, ops) \
  {"ucc_gpu_reduce_" #suffix, &reduce_twin<V, ops>},
const Kernel kKernels[] = {
    UCC_GPU_REDUCE_KERNELS(CUDA_LOOP_TWIN){ucc::gpu::kFlagKernel, &flags_twin},
    {ucc::gpu::kCopyKernel, &copy_twin},
    {ucc::gpu::kSwapKernel, &swap_twin},
};
#undef CUDA_LOOP_TWIN
constexpr int kNumKernels = static_cast<int>(std::size(kKernels));

// Modules and their functions: handles are the addresses of slots, so
// that a function of an unloaded module is refused at launch, as the
// driver refuses it (under g_mu).
constexpr int kMaxModules = 64;
struct Module {
  bool loaded;
};
Module g_modules[kMaxModules];
struct Function {
  int module;
  int kernel;
};
Function g_functions[kMaxModules][kNumKernels];

int module_index(const void* m) {
  const auto p = reinterpret_cast<uintptr_t>(m);
  const auto base = reinterpret_cast<uintptr_t>(g_modules);
  if (p < base || p >= base + sizeof g_modules ||
      (p - base) % sizeof(Module) != 0)
    return -1;
  const int i = static_cast<int>((p - base) / sizeof(Module));
  return g_modules[i].loaded ? i : -1;
}

// The kernel a function handle names, or -1.
int kernel_of(const void* f) {
  const auto p = reinterpret_cast<uintptr_t>(f);
  const auto base = reinterpret_cast<uintptr_t>(g_functions);
  if (p < base || p >= base + sizeof g_functions ||
      (p - base) % sizeof(Function) != 0)
    return -1;
  const Function* fn = static_cast<const Function*>(f);
  return g_modules[fn->module].loaded ? fn->kernel : -1;
}

std::atomic<unsigned long long> g_launches{0};

}  // namespace
}  // namespace cuda_loop

using namespace cuda_loop;

#pragma GCC visibility push(default)
extern "C" {

// Any image: what it holds is code for a GPU, not this host.
Res cuModuleLoadData(void** m, const void* image) {
  if (m == nullptr || image == nullptr) return kInvalidValue;
  std::lock_guard<std::mutex> g(g_mu);
  for (Module& mod : g_modules) {
    if (mod.loaded) continue;
    mod.loaded = true;
    *m = &mod;
    return kOk;
  }
  return kOutOfMemory;
}

Res cuModuleUnload(void* m) {
  std::lock_guard<std::mutex> g(g_mu);
  const int i = module_index(m);
  if (i < 0) return kInvalidHandle;
  g_modules[i].loaded = false;
  return kOk;
}

Res cuModuleGetFunction(void** f, void* m, const char* name) {
  if (f == nullptr || name == nullptr) return kInvalidValue;
  std::lock_guard<std::mutex> g(g_mu);
  const int i = module_index(m);
  if (i < 0) return kInvalidHandle;
  for (int k = 0; k < kNumKernels; ++k) {
    if (strcmp(kKernels[k].name, name) != 0) continue;
    g_functions[i][k] = Function{i, k};
    *f = &g_functions[i][k];
    return kOk;
  }
  return kNotFound;
}

// The launch limits of every GPU the library runs on: 1024 threads a
// block (64 in z), 2^31 - 1 blocks in x, 65535 in y and z, 48 KiB of
// dynamic shared memory without opting in. The library's kernels take one
// parameter, their argument struct: params[0] points at it.
Res cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned shmem, void*,
                   void** params, void** extra) {
  int k;
  {
    std::lock_guard<std::mutex> g(g_mu);
    k = kernel_of(f);
  }
  if (k < 0) return kInvalidHandle;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 ||
      gx > 0x7FFFFFFFu || gy > 65535 || gz > 65535 || bx > 1024 || by > 1024 ||
      bz > 64 || static_cast<uint64_t>(bx) * by * bz > 1024 ||
      shmem > 48 * 1024)
    return kInvalidValue;
  if (extra != nullptr || params == nullptr || params[0] == nullptr)
    return kInvalidValue;
  const Res r = kKernels[k].run(params[0]);
  if (r == kOk) g_launches.fetch_add(1, std::memory_order_relaxed);
  return r;
}

// Test hook: the kernels run so far in this process (failed launches not
// counted).
unsigned long long cuda_loop_launches(void) {
  return g_launches.load(std::memory_order_relaxed);
}

}  // extern "C"
#pragma GCC visibility pop

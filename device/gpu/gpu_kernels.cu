// The GPU kernels (see gpu_kernels.h): grid-stride loops over the shared
// element bodies. Built by nvcc into a fatbin (sm_80, sm_90, and PTX for
// later GPUs) that CMake embeds in libucc.a; the library loads it with
// cuModuleLoadData, so nothing here needs the CUDA runtime at link time.
//
// A reduction reads 16 bytes of every source at a time where every buffer
// is 16-byte aligned (and reduce_scatter's blocks a multiple of 16 bytes):
// one 128-bit load each instead of up to 16 narrow ones, more bytes in
// flight per thread; element by element for the tail and for unaligned
// buffers; the arithmetic is the shared step either way.
#include "device/gpu/gpu_kernels.h"

namespace {

using ucc::gpu::CopyArgs;
using ucc::gpu::FlagArgs;
using ucc::gpu::ReduceArgs;
using ucc::gpu::SwapArgs;

__device__ uint64_t first_index() {
  return static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ uint64_t stride() {
  return static_cast<uint64_t>(gridDim.x) * blockDim.x;
}

template <typename S>
union Vec {
  uint4 q;
  S e[16 / sizeof(S)];
};

template <typename V, typename Op>
__device__ void reduce_all(const ReduceArgs& a) {
  using S = typename V::Store;
  constexpr uint32_t kW = 16 / sizeof(S);
  bool aligned = a.blk % kW == 0;  // no vector straddles two blocks
  for (uint32_t k = 0; k < a.nsrc; ++k) aligned &= a.src[k] % 16 == 0;
  for (uint32_t k = 0; k < a.ndst; ++k) aligned &= a.dst[k] % 16 == 0;
  const uint64_t nvec = aligned ? a.count / kW : 0;
  for (uint64_t v = first_index(); v < nvec; v += stride()) {
    Vec<S> acc, x;
    acc.q = reinterpret_cast<const uint4*>(a.src[0])[v];
    for (uint32_t k = 1; k < a.nsrc; ++k) {
      x.q = reinterpret_cast<const uint4*>(a.src[k])[v];
      for (uint32_t w = 0; w < kW; ++w)
        acc.e[w] = V::template step<Op>(acc.e[w], x.e[w]);
    }
    if (a.div != 0)
      for (uint32_t w = 0; w < kW; ++w) acc.e[w] = V::scale(acc.e[w], a.div);
    if (a.blk == 0) {
      for (uint32_t k = 0; k < a.ndst; ++k)
        reinterpret_cast<uint4*>(a.dst[k])[v] = acc.q;
    } else {
      const uint64_t y = v * kW / a.blk;
      reinterpret_cast<uint4*>(
          a.dst[y])[a.blk_whole ? v : v - y * (a.blk / kW)] = acc.q;
    }
  }
  for (uint64_t i = nvec * kW + first_index(); i < a.count; i += stride())
    ucc::gpu::reduce_elem_op<V, Op>(a, i);
}

// The op's switch once per thread (reduce_elem makes it per element).
template <typename V>
struct ReduceAll {
  const ReduceArgs& a;
  template <typename Op>
  __device__ void operator()(Op) const {
    reduce_all<V, Op>(a);
  }
};

// Thread k < n of the calling block raises flag k, after a system-wide
// fence: whoever sees the flag sees what the stream wrote before it.
__device__ void raise(const FlagArgs& f) {
  __threadfence_system();
  if (threadIdx.x < f.n)
    *reinterpret_cast<volatile uint32_t*>(f.flag[threadIdx.x]) = f.value;
}

// The last block of a reduction to finish raises the flags: each block
// fences its writes and counts itself; the one that counts last knows
// every block's writes are visible, and puts the counter back to 0 for
// the next kernel on the stream.
__device__ void raise_when_last(const FlagArgs& flags, uint64_t counter) {
  if (flags.n == 0) return;
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    auto* c = reinterpret_cast<unsigned*>(counter);
    last = atomicAdd(c, 1u) == gridDim.x - 1;
    if (last) *c = 0;
  }
  __syncthreads();
  if (last) raise(flags);
}

}  // namespace

#define UCC_GPU_KERNEL(sfx, V, ops)                                     \
  extern "C" __global__ void ucc_gpu_reduce_##sfx(const ReduceArgs a) { \
    ::ucc::gpu::with_op<ops>(a.op, ReduceAll<V>{a});                    \
    raise_when_last(a.flags, a.counter);                                \
  }
UCC_GPU_REDUCE_KERNELS(UCC_GPU_KERNEL)
#undef UCC_GPU_KERNEL

// Every copy is spread over the whole grid: 16 bytes a thread where the
// copy's ends allow, a byte a thread otherwise.
extern "C" __global__ void ucc_gpu_copy(const CopyArgs a) {
  for (uint32_t k = 0; k < a.n; ++k) {
    const uint64_t s = a.src[k], d = a.dst[k];
    const bool wide = (s | d | a.bytes) % 16 == 0;
    if (wide) {
      for (uint64_t i = first_index(); i < a.bytes / 16; i += stride())
        reinterpret_cast<uint4*>(d)[i] = reinterpret_cast<const uint4*>(s)[i];
    } else {
      for (uint64_t i = first_index(); i < a.bytes; i += stride())
        reinterpret_cast<uint8_t*>(d)[i] =
            reinterpret_cast<const uint8_t*>(s)[i];
    }
  }
  raise_when_last(a.flags, a.counter);
}

// Every pair is spread over the whole grid, as a copy is.
extern "C" __global__ void ucc_gpu_swap(const SwapArgs s) {
  for (uint32_t k = 0; k < s.n; ++k) {
    const uint64_t a = s.a[k], b = s.b[k], len = s.len[k];
    if ((a | b | len) % 16 == 0) {
      auto* x = reinterpret_cast<uint4*>(a);
      auto* y = reinterpret_cast<uint4*>(b);
      for (uint64_t i = first_index(); i < len / 16; i += stride()) {
        const uint4 t = x[i];
        x[i] = y[i];
        y[i] = t;
      }
    } else {
      auto* x = reinterpret_cast<uint8_t*>(a);
      auto* y = reinterpret_cast<uint8_t*>(b);
      for (uint64_t i = first_index(); i < len; i += stride()) {
        const uint8_t t = x[i];
        x[i] = y[i];
        y[i] = t;
      }
    }
  }
  raise_when_last(s.flags, s.counter);
}

extern "C" __global__ void ucc_gpu_flags_set(const FlagArgs a) {
  // The stream ran everything queued before this kernel.
  raise(a);
}

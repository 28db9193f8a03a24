// The GPU kernels' arguments and element bodies, shared by three
// compilers' worth of code:
//   - nvcc builds gpu_kernels.cu, whose kernels wrap these bodies in
//     grid-stride loops, into the fatbin embedded in libucc.a;
//   - the host library (host/exec/gpu_direct.cc) fills the argument
//     structs and launches the kernels by name through the driver API;
//   - the CUDA test provider (tests/cuda_loop) runs a host-compiled twin
//     of each kernel, found by the same name, over the same bodies.
// The arithmetic is reduce_ops.h's, the host engine's own.
//
// Argument structs are passed by value as the kernels' single parameter
// (well under the 4 KiB parameter limit); every address in them is a
// device address, of this process or opened from a peer's IPC handle.
#pragma once

#include <cstdint>
#include <type_traits>

#include "device/reduce/hd.h"
#include "device/reduce/reduce_ops.h"
#include "offload/types.h"

namespace ucc::gpu {

// The most ranks one GPU collective reads from or writes to.
inline constexpr uint32_t kMaxPeers = 32;

// *flag[k] = value for k < n: tells the peers whose flags these are that
// the work queued before it on the stream has ended.
struct FlagArgs {
  uint64_t flag[kMaxPeers];
  uint32_t n;
  uint32_t value;
};

// dst[k][i] = src[0][i] op src[1][i] op ... op src[nsrc-1][i] for every
// k < ndst and i < count, reduced in rank order, each step rounded as the
// host engine rounds it (16-bit floats widened to float32 and narrowed
// back per step); avg then divides once by `div` in the element's type
// (float32 for the 16-bit floats). A thread reads element i of every
// source before it writes element i anywhere, so a dst may be a src.
// Then, when flags.n > 0, the last block to finish raises the flags (as
// the flag kernel would after it), counting blocks in the 32-bit word at
// `counter` (device memory, 0 before the launch and after it).
struct ReduceArgs {
  uint64_t src[kMaxPeers];
  uint64_t dst[kMaxPeers];
  uint64_t count;  // elements
  uint32_t nsrc;
  uint32_t ndst;
  uint32_t op;   // off::ROp
  uint32_t div;  // avg: the team size; otherwise 0
  uint64_t counter;
  FlagArgs flags;
};

// Up to kMaxCopies copies of `bytes` each, dst[k] <- src[k] (no
// overlap), in one launch: small allgathers and alltoalls, where a copy
// engine call per block costs more than the data. Flags as ReduceArgs.
inline constexpr uint32_t kMaxCopies = 64;
struct CopyArgs {
  uint64_t src[kMaxCopies];
  uint64_t dst[kMaxCopies];
  uint64_t bytes;
  uint32_t n;
  uint32_t pad;
  uint64_t counter;
  FlagArgs flags;
};
inline constexpr const char* kCopyKernel = "ucc_gpu_copy";

// Kernel names, one per element type (the op is an argument); nullptr
// where the type has no kernel (its collectives take the staged path).
inline const char* reduce_kernel_name(off::DType dt) {
  switch (dt) {
    case off::DType::kInt8:
      return "ucc_gpu_reduce_i8";
    case off::DType::kInt16:
      return "ucc_gpu_reduce_i16";
    case off::DType::kInt32:
      return "ucc_gpu_reduce_i32";
    case off::DType::kInt64:
      return "ucc_gpu_reduce_i64";
    case off::DType::kUint8:
      return "ucc_gpu_reduce_u8";
    case off::DType::kUint16:
      return "ucc_gpu_reduce_u16";
    case off::DType::kUint32:
      return "ucc_gpu_reduce_u32";
    case off::DType::kUint64:
      return "ucc_gpu_reduce_u64";
    case off::DType::kFloat16:
      return "ucc_gpu_reduce_f16";
    case off::DType::kBfloat16:
      return "ucc_gpu_reduce_bf16";
    case off::DType::kFloat32:
      return "ucc_gpu_reduce_f32";
    case off::DType::kFloat64:
      return "ucc_gpu_reduce_f64";
    default:
      return nullptr;
  }
}
inline constexpr const char* kFlagKernel = "ucc_gpu_flags_set";

// Whether the kernels reduce `dt` with `op` (a subset of what the host
// engine reduces: the 128-bit, 80-bit and complex types and the pair ops
// are not there yet).
inline bool kernel_reduces(off::DType dt, off::ROp op) {
  if (reduce_kernel_name(dt) == nullptr) return false;
  const bool floating =
      dt == off::DType::kFloat16 || dt == off::DType::kBfloat16 ||
      dt == off::DType::kFloat32 || dt == off::DType::kFloat64;
  switch (op) {
    case off::ROp::kSum:
    case off::ROp::kProd:
    case off::ROp::kMax:
    case off::ROp::kMin:
      return true;
    case off::ROp::kAvg:
      return floating;
    case off::ROp::kLand:
    case off::ROp::kLor:
    case off::ROp::kLxor:
    case off::ROp::kBand:
    case off::ROp::kBor:
    case off::ROp::kBxor:
      return !floating;
    default:
      return false;
  }
}

// How values of T are held while reduced: themselves, or (16-bit floats,
// stored as uint16_t) through a codec.
// Signed integers are reduced on their unsigned twin for every op but max
// and min, as the host engine does (reduce.cc): two's-complement wrap is
// then defined, and the logical and bitwise results are the same bits.
template <typename T>
struct Plain {
  using Store = T;
  template <typename Op>
  UCC_HD static T step(T a, T b) {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T> &&
                  !std::is_same_v<Op, dev::Max> &&
                  !std::is_same_v<Op, dev::Min>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(Op{}(static_cast<U>(a), static_cast<U>(b)));
    } else {
      return Op{}(a, b);
    }
  }
  UCC_HD static T scale(T a, uint32_t div) {
    return static_cast<T>(a / static_cast<T>(div));
  }
};
template <typename Codec>
struct Half {
  using Store = uint16_t;
  template <typename Op>
  UCC_HD static uint16_t step(uint16_t a, uint16_t b) {
    return static_cast<uint16_t>(
        Codec::narrow(Op{}(Codec::widen(a), Codec::widen(b))));
  }
  UCC_HD static uint16_t scale(uint16_t a, uint32_t div) {
    return static_cast<uint16_t>(
        Codec::narrow(Codec::widen(a) / static_cast<float>(div)));
  }
};

template <typename V, typename Op>
UCC_HD inline void reduce_elem_op(const ReduceArgs& a, uint64_t i) {
  using S = typename V::Store;
  S acc = reinterpret_cast<const S*>(a.src[0])[i];
  for (uint32_t k = 1; k < a.nsrc; ++k)
    acc = V::template step<Op>(acc, reinterpret_cast<const S*>(a.src[k])[i]);
  if (a.div != 0) acc = V::scale(acc, a.div);
  for (uint32_t k = 0; k < a.ndst; ++k) reinterpret_cast<S*>(a.dst[k])[i] = acc;
}

// Calls f(Op{}) with the functor of `op`: the one switch over ops, for
// the kernels (once per thread) and the host twins (once per element).
// Ops a type does not take (kernel_reduces) call nothing.
template <bool kInteger, typename F>
UCC_HD inline void with_op(uint32_t op, const F& f) {
  switch (static_cast<off::ROp>(op)) {
    case off::ROp::kSum:
    case off::ROp::kAvg:
      return f(dev::Sum{});
    case off::ROp::kProd:
      return f(dev::Prod{});
    case off::ROp::kMax:
      return f(dev::Max{});
    case off::ROp::kMin:
      return f(dev::Min{});
    default:
      break;
  }
  if constexpr (kInteger) {
    switch (static_cast<off::ROp>(op)) {
      case off::ROp::kLand:
        return f(dev::Land{});
      case off::ROp::kLor:
        return f(dev::Lor{});
      case off::ROp::kLxor:
        return f(dev::Lxor{});
      case off::ROp::kBand:
        return f(dev::Band{});
      case off::ROp::kBor:
        return f(dev::Bor{});
      case off::ROp::kBxor:
        return f(dev::Bxor{});
      default:
        break;
    }
  }
}

// Element i of a reduction (the host twins' loop body).
template <typename V>
struct ReduceElemAt {
  const ReduceArgs& a;
  uint64_t i;
  template <typename Op>
  UCC_HD void operator()(Op) const {
    reduce_elem_op<V, Op>(a, i);
  }
};
template <typename V, bool kInteger>
UCC_HD inline void reduce_elem(const ReduceArgs& a, uint64_t i) {
  with_op<kInteger>(a.op, ReduceElemAt<V>{a, i});
}

// The list of kernels: X(name suffix, value policy, integer?).
#define UCC_GPU_REDUCE_KERNELS(X)                         \
  X(i8, ::ucc::gpu::Plain<int8_t>, true)                  \
  X(i16, ::ucc::gpu::Plain<int16_t>, true)                \
  X(i32, ::ucc::gpu::Plain<int32_t>, true)                \
  X(i64, ::ucc::gpu::Plain<int64_t>, true)                \
  X(u8, ::ucc::gpu::Plain<uint8_t>, true)                 \
  X(u16, ::ucc::gpu::Plain<uint16_t>, true)               \
  X(u32, ::ucc::gpu::Plain<uint32_t>, true)               \
  X(u64, ::ucc::gpu::Plain<uint64_t>, true)               \
  X(f16, ::ucc::gpu::Half<::ucc::dev::Fp16Codec>, false)  \
  X(bf16, ::ucc::gpu::Half<::ucc::dev::Bf16Codec>, false) \
  X(f32, ::ucc::gpu::Plain<float>, false)                 \
  X(f64, ::ucc::gpu::Plain<double>, false)

}  // namespace ucc::gpu

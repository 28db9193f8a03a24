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
#include "device/reduce/reduce_loc.h"
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
// With `blk` > 0 (reduce_scatter) the vector of `count` elements is
// ndst blocks of blk and element i goes to dst[i / blk] only: at its
// place in the block (i % blk), or with `blk_whole` at i (dst[k] is then
// a whole vector: in place).
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
  uint64_t blk;  // 0, or reduce_scatter's block (count == ndst * blk)
  uint32_t blk_whole;
  uint32_t pad;
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

// Up to kMaxSwaps pairs of ranges exchanged in place, a[k] <-> b[k], len[k]
// bytes each (no two ranges overlap): in-place alltoall(v), where block q
// of rank p and block p of rank q trade places. A thread reads both of
// its elements before it writes either. Flags as ReduceArgs.
inline constexpr uint32_t kMaxSwaps = 96;
struct SwapArgs {
  uint64_t a[kMaxSwaps];
  uint64_t b[kMaxSwaps];
  uint64_t len[kMaxSwaps];
  uint32_t n;
  uint32_t pad;
  uint64_t counter;
  FlagArgs flags;
};
inline constexpr const char* kSwapKernel = "ucc_gpu_swap";

// Kernel names, one per element type (the op is an argument), and one
// per type of MAXLOC/MINLOC pairs; nullptr where the type has none (its
// collectives take the staged path).
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
    case off::DType::kFloat32Complex:
      return "ucc_gpu_reduce_c32";
    case off::DType::kFloat64Complex:
      return "ucc_gpu_reduce_c64";
    default:
      return nullptr;
  }
}
inline const char* loc_kernel_name(off::DType dt) {
  switch (dt) {
    case off::DType::kInt8:
      return "ucc_gpu_reduce_loc_i8";
    case off::DType::kInt16:
      return "ucc_gpu_reduce_loc_i16";
    case off::DType::kInt32:
      return "ucc_gpu_reduce_loc_i32";
    case off::DType::kInt64:
      return "ucc_gpu_reduce_loc_i64";
    case off::DType::kUint8:
      return "ucc_gpu_reduce_loc_u8";
    case off::DType::kUint16:
      return "ucc_gpu_reduce_loc_u16";
    case off::DType::kUint32:
      return "ucc_gpu_reduce_loc_u32";
    case off::DType::kUint64:
      return "ucc_gpu_reduce_loc_u64";
    case off::DType::kFloat32:
      return "ucc_gpu_reduce_loc_f32";
    case off::DType::kFloat64:
      return "ucc_gpu_reduce_loc_f64";
    default:
      return nullptr;
  }
}
inline constexpr const char* kFlagKernel = "ucc_gpu_flags_set";

// The ops a kernel's element type takes.
enum class Ops : uint8_t {
  kReal,     // sum, prod, max, min, avg
  kInteger,  // sum, prod, max, min and the logical and bitwise ops
  kComplex,  // sum, prod, avg (complex numbers are not ordered)
  kLoc,      // maxloc, minloc on {value, index} pairs
};

// Whether the kernels reduce `dt` with `op` (a subset of what the host
// engine reduces: the 128-bit and 80-bit types, which CUDA has no
// arithmetic for, are not there).
inline bool kernel_reduces(off::DType dt, off::ROp op) {
  if (op == off::ROp::kMaxloc || op == off::ROp::kMinloc)
    return loc_kernel_name(dt) != nullptr;
  if (reduce_kernel_name(dt) == nullptr) return false;
  const bool complex =
      dt == off::DType::kFloat32Complex || dt == off::DType::kFloat64Complex;
  const bool floating =
      complex || dt == off::DType::kFloat16 || dt == off::DType::kBfloat16 ||
      dt == off::DType::kFloat32 || dt == off::DType::kFloat64;
  switch (op) {
    case off::ROp::kSum:
    case off::ROp::kProd:
      return true;
    case off::ROp::kMax:
    case off::ROp::kMin:
      return !complex;
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

// Complex numbers of T, as the host engine reduces them (reduce_wide.h):
// sum and avg part by part, prod by the plain formula, avg dividing each
// part once by the team size.
template <typename T>
struct Pair2 {
  T a;  // the real part, or a pair's value
  T b;  // the imaginary part, or a pair's index
};
struct LocMax {};
struct LocMin {};
template <typename T>
struct Cplx {
  using Store = Pair2<T>;
  template <typename Op>
  UCC_HD static Store step(Store x, Store y) {
    if constexpr (std::is_same_v<Op, dev::Prod>) {
      return Store{x.a * y.a - x.b * y.b, x.a * y.b + x.b * y.a};
    } else {
      return Store{x.a + y.a, x.b + y.b};  // sum (kernel_reduces: no other)
    }
  }
  UCC_HD static Store scale(Store x, uint32_t div) {
    const T q = static_cast<T>(div);
    return Store{x.a / q, x.b / q};
  }
};
// MAXLOC/MINLOC pairs {value, index} of T (reduce_loc.h's order).
template <typename T>
struct Loc {
  using Store = Pair2<T>;
  template <typename Op>
  UCC_HD static Store step(Store x, Store y) {
    constexpr bool kMax = std::is_same_v<Op, LocMax>;
    return dev::loc::x_wins<T, kMax>(x.a, x.b, y.a, y.b) ? x : y;
  }
  UCC_HD static Store scale(Store x, uint32_t) { return x; }
};

template <typename V, typename Op>
UCC_HD inline void reduce_elem_op(const ReduceArgs& a, uint64_t i) {
  using S = typename V::Store;
  S acc = reinterpret_cast<const S*>(a.src[0])[i];
  for (uint32_t k = 1; k < a.nsrc; ++k)
    acc = V::template step<Op>(acc, reinterpret_cast<const S*>(a.src[k])[i]);
  if (a.div != 0) acc = V::scale(acc, a.div);
  if (a.blk == 0) {
    for (uint32_t k = 0; k < a.ndst; ++k)
      reinterpret_cast<S*>(a.dst[k])[i] = acc;
  } else {
    const uint64_t y = i / a.blk;
    reinterpret_cast<S*>(a.dst[y])[a.blk_whole ? i : i - y * a.blk] = acc;
  }
}

// Calls f(Op{}) with the functor of `op`: the one switch over ops, for
// the kernels (once per thread) and the host twins (once per element).
// Ops a type does not take (kernel_reduces) call nothing.
template <Ops K, typename F>
UCC_HD inline void with_op(uint32_t op, const F& f) {
  const auto o = static_cast<off::ROp>(op);
  if constexpr (K == Ops::kLoc) {
    if (o == off::ROp::kMaxloc) f(LocMax{});
    if (o == off::ROp::kMinloc) f(LocMin{});
  } else if constexpr (K == Ops::kComplex) {
    if (o == off::ROp::kSum || o == off::ROp::kAvg) f(dev::Sum{});
    if (o == off::ROp::kProd) f(dev::Prod{});
  } else {
    switch (o) {
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
    if constexpr (K == Ops::kInteger) {
      switch (o) {
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
template <typename V, Ops K>
UCC_HD inline void reduce_elem(const ReduceArgs& a, uint64_t i) {
  with_op<K>(a.op, ReduceElemAt<V>{a, i});
}

// The list of kernels: X(name suffix, value policy, ops).
#define UCC_GPU_REDUCE_KERNELS(X)                                          \
  X(i8, ::ucc::gpu::Plain<int8_t>, ::ucc::gpu::Ops::kInteger)              \
  X(i16, ::ucc::gpu::Plain<int16_t>, ::ucc::gpu::Ops::kInteger)            \
  X(i32, ::ucc::gpu::Plain<int32_t>, ::ucc::gpu::Ops::kInteger)            \
  X(i64, ::ucc::gpu::Plain<int64_t>, ::ucc::gpu::Ops::kInteger)            \
  X(u8, ::ucc::gpu::Plain<uint8_t>, ::ucc::gpu::Ops::kInteger)             \
  X(u16, ::ucc::gpu::Plain<uint16_t>, ::ucc::gpu::Ops::kInteger)           \
  X(u32, ::ucc::gpu::Plain<uint32_t>, ::ucc::gpu::Ops::kInteger)           \
  X(u64, ::ucc::gpu::Plain<uint64_t>, ::ucc::gpu::Ops::kInteger)           \
  X(f16, ::ucc::gpu::Half<::ucc::dev::Fp16Codec>, ::ucc::gpu::Ops::kReal)  \
  X(bf16, ::ucc::gpu::Half<::ucc::dev::Bf16Codec>, ::ucc::gpu::Ops::kReal) \
  X(f32, ::ucc::gpu::Plain<float>, ::ucc::gpu::Ops::kReal)                 \
  X(f64, ::ucc::gpu::Plain<double>, ::ucc::gpu::Ops::kReal)                \
  X(c32, ::ucc::gpu::Cplx<float>, ::ucc::gpu::Ops::kComplex)               \
  X(c64, ::ucc::gpu::Cplx<double>, ::ucc::gpu::Ops::kComplex)              \
  X(loc_i8, ::ucc::gpu::Loc<int8_t>, ::ucc::gpu::Ops::kLoc)                \
  X(loc_i16, ::ucc::gpu::Loc<int16_t>, ::ucc::gpu::Ops::kLoc)              \
  X(loc_i32, ::ucc::gpu::Loc<int32_t>, ::ucc::gpu::Ops::kLoc)              \
  X(loc_i64, ::ucc::gpu::Loc<int64_t>, ::ucc::gpu::Ops::kLoc)              \
  X(loc_u8, ::ucc::gpu::Loc<uint8_t>, ::ucc::gpu::Ops::kLoc)               \
  X(loc_u16, ::ucc::gpu::Loc<uint16_t>, ::ucc::gpu::Ops::kLoc)             \
  X(loc_u32, ::ucc::gpu::Loc<uint32_t>, ::ucc::gpu::Ops::kLoc)             \
  X(loc_u64, ::ucc::gpu::Loc<uint64_t>, ::ucc::gpu::Ops::kLoc)             \
  X(loc_f32, ::ucc::gpu::Loc<float>, ::ucc::gpu::Ops::kLoc)                \
  X(loc_f64, ::ucc::gpu::Loc<double>, ::ucc::gpu::Ops::kLoc)

}  // namespace ucc::gpu

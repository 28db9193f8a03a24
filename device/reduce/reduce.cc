// Reduction kernels. See reduce.h for the semantics.
//
// Shape of the code: reduce() switches on the dtype, then on the op, and
// lands in one instantiation of a plain indexed loop over a functor. The
// loops carry no branches and no calls, so GCC -O3 vectorises each one.
//
// Pointers are deliberately not __restrict: exact aliasing (dst == a or
// dst == b) is part of the contract, and an element-wise loop is correct
// under it even when vectorised (each lane reads before it writes the same
// slot). GCC versions the loop with a runtime check that accepts distance
// zero, so the in-place call stays on the vector path; only partial
// overlap, which the contract excludes, would take the scalar one.
//
// Signed integers reduce on their unsigned twin for everything but max and
// min: two's-complement wrap is then defined behaviour, logical and bitwise
// results are the same bits, and half the instantiations go away.
//
// The wide types (128-bit integers, binary128, complex) have their loops
// in reduce_wide.h; they join the same single dispatch switch below. The
// pair ops (MAXLOC, MINLOC) have theirs in reduce_loc.h and a switch of
// their own.
#include "device/reduce/reduce.h"

#include <cstring>
#include <type_traits>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "device/reduce/half.h"
#include "device/reduce/reduce_loc.h"
#include "device/reduce/reduce_ops.h"
#include "device/reduce/reduce_wide.h"

namespace ucc::dev {
namespace {

using off::DType;
using off::ROp;

template <typename T, typename Op>
void loop(void* dst, const void* a, const void* b, size_t n) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  const Op op;
  for (size_t i = 0; i < n; ++i) d[i] = op(x[i], y[i]);
}

// U and S are the unsigned and signed integer types of one width.
template <typename U, typename S>
void reduce_int(ROp op, bool is_signed, void* d, const void* a, const void* b,
                size_t n) {
  switch (op) {
    case ROp::kSum:
      return loop<U, Sum>(d, a, b, n);
    case ROp::kProd:
      return loop<U, Prod>(d, a, b, n);
    case ROp::kMax:
      return is_signed ? loop<S, Max>(d, a, b, n) : loop<U, Max>(d, a, b, n);
    case ROp::kMin:
      return is_signed ? loop<S, Min>(d, a, b, n) : loop<U, Min>(d, a, b, n);
    case ROp::kLand:
      return loop<U, Land>(d, a, b, n);
    case ROp::kLor:
      return loop<U, Lor>(d, a, b, n);
    case ROp::kLxor:
      return loop<U, Lxor>(d, a, b, n);
    case ROp::kBand:
      return loop<U, Band>(d, a, b, n);
    case ROp::kBor:
      return loop<U, Bor>(d, a, b, n);
    case ROp::kBxor:
      return loop<U, Bxor>(d, a, b, n);
    default:
      return;  // kAvg, kNone: unsupported on integers
  }
}

template <typename T>
void reduce_float(ROp op, void* d, const void* a, const void* b, size_t n) {
  switch (op) {
    case ROp::kSum:
    case ROp::kAvg:
      return loop<T, Sum>(d, a, b, n);
    case ROp::kProd:
      return loop<T, Prod>(d, a, b, n);
    case ROp::kMax:
      return loop<T, Max>(d, a, b, n);
    case ROp::kMin:
      return loop<T, Min>(d, a, b, n);
    default:
      return;  // logical and bitwise ops are integer-only
  }
}

inline uint32_t load_pair(const uint16_t* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof(w));
  return w;
}

inline void store_pair(uint16_t* p, uint32_t w) {
  std::memcpy(p, &w, sizeof(w));
}

// 16-bit floats go two at a time, as one 32-bit word: the low and high
// halves are widened, reduced and narrowed separately and packed back into
// the same halves. Every step is then a vertical 32-bit lane operation; a
// loop over uint16_t elements instead makes the vectoriser unpack and
// repack 16-bit lanes with chains of shuffles (pre-SSE4.1 x86 has no
// unsigned 32->16 pack): at the SSE2 baseline that layout ran bfloat16 sum
// at 4.0 GB/s against 6.2 for this one. Which element sits in
// which half depends on endianness, but the op is element-wise and each
// half goes back where it came from, so the result does not.
//
// Aliasing: word j of dst is written after word j of a and b is read, the
// same pattern as loop() above.
template <typename Codec, typename Op>
uint32_t reduce_pair(uint32_t x, uint32_t y) {
  const Op op;
  const uint32_t lo =
      Codec::narrow(op(Codec::widen(x & 0xFFFFu), Codec::widen(y & 0xFFFFu)));
  const uint32_t hi =
      Codec::narrow(op(Codec::widen(x >> 16), Codec::widen(y >> 16)));
  return lo | (hi << 16);
}

template <typename Codec, typename Op>
void loop16_pairs(void* dst, const void* a, const void* b, size_t n) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  const size_t pairs = n / 2;
  for (size_t j = 0; j < pairs; ++j) {
    store_pair(d + 2 * j, reduce_pair<Codec, Op>(load_pair(x + 2 * j),
                                                 load_pair(y + 2 * j)));
  }
  if (n & 1) {
    const Op op;
    d[n - 1] = static_cast<uint16_t>(
        Codec::narrow(op(Codec::widen(x[n - 1]), Codec::widen(y[n - 1]))));
  }
}

#if defined(__F16C__)
// Builds for x86-64-v3 and up have F16C: the hardware converts 8 float16
// at a time with the results half.h gives (round to nearest even, taken
// from the instruction rather than MXCSR; NaNs quieted with the top
// payload kept; float16 subnormals exact), about 5x faster than the pair
// loop. The unit tests check this path when built with F16C enabled.
// Widen into stack blocks, reduce with the same
// functor (a plain float loop, vectorised), narrow back. Each block is
// fully read before it is written, so aliasing is harmless.
constexpr size_t kBlock = 256;  // elements: 2 KiB of float32 on the stack

template <typename Op>
void loop16_f16c(void* dst, const void* a, const void* b, size_t n) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  const Op op;
  alignas(32) float fx[kBlock];
  alignas(32) float fy[kBlock];
  for (size_t base = 0; base < n; base += kBlock) {
    const size_t m = n - base < kBlock ? n - base : kBlock;
    const size_t m8 = m & ~size_t{7};
    for (size_t i = 0; i < m8; i += 8) {
      const auto* px = reinterpret_cast<const __m128i*>(x + base + i);
      const auto* py = reinterpret_cast<const __m128i*>(y + base + i);
      _mm256_store_ps(fx + i, _mm256_cvtph_ps(_mm_loadu_si128(px)));
      _mm256_store_ps(fy + i, _mm256_cvtph_ps(_mm_loadu_si128(py)));
    }
    for (size_t i = m8; i < m; ++i) {
      fx[i] = half_to_float(x[base + i]);
      fy[i] = half_to_float(y[base + i]);
    }
    for (size_t i = 0; i < m; ++i) fx[i] = op(fx[i], fy[i]);
    for (size_t i = 0; i < m8; i += 8) {
      const __m128i h =
          _mm256_cvtps_ph(_mm256_load_ps(fx + i), _MM_FROUND_TO_NEAREST_INT);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + base + i), h);
    }
    for (size_t i = m8; i < m; ++i) d[base + i] = float_to_half(fx[i]);
  }
}
#endif

template <typename Codec, typename Op>
void loop16(void* d, const void* a, const void* b, size_t n) {
#if defined(__F16C__)
  if constexpr (std::is_same_v<Codec, Fp16Codec>) {
    return loop16_f16c<Op>(d, a, b, n);
  }
#endif
  loop16_pairs<Codec, Op>(d, a, b, n);
}

template <typename Codec>
void reduce_16(ROp op, void* d, const void* a, const void* b, size_t n) {
  switch (op) {
    case ROp::kSum:
    case ROp::kAvg:
      return loop16<Codec, Sum>(d, a, b, n);
    case ROp::kProd:
      return loop16<Codec, Prod>(d, a, b, n);
    case ROp::kMax:
      return loop16<Codec, Max>(d, a, b, n);
    case ROp::kMin:
      return loop16<Codec, Min>(d, a, b, n);
    default:
      return;
  }
}

template <typename T>
void scale_loop(void* dst, size_t n, T q) {
  T* d = static_cast<T*>(dst);
  // A true division, not a multiply by 1/q: correctly rounded, and this
  // runs once per collective, not once per step.
  for (size_t i = 0; i < n; ++i) d[i] = d[i] / q;
}

// Same two-per-word layout as loop16.
template <typename Codec>
void scale_16(void* dst, size_t n, float q) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const size_t pairs = n / 2;
  for (size_t j = 0; j < pairs; ++j) {
    const uint32_t w = load_pair(d + 2 * j);
    const uint32_t lo = Codec::narrow(Codec::widen(w & 0xFFFFu) / q);
    const uint32_t hi = Codec::narrow(Codec::widen(w >> 16) / q);
    store_pair(d + 2 * j, lo | (hi << 16));
  }
  if (n & 1) {
    d[n - 1] = static_cast<uint16_t>(Codec::narrow(Codec::widen(d[n - 1]) / q));
  }
}

// What the support table needs to know about a dtype. kUnavailable: the
// compiler lacks the type (no __float128 on AArch64, for one; no __int128
// on 32-bit targets), or the value is out of range.
enum class Kind : uint8_t { kInteger, kReal, kComplex, kUnavailable };

Kind kind_of(DType dt) {
  switch (dt) {
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUint8:
    case DType::kUint16:
    case DType::kUint32:
    case DType::kUint64:
      return Kind::kInteger;
    case DType::kInt128:
    case DType::kUint128:
      return wide::kHaveInt128 ? Kind::kInteger : Kind::kUnavailable;
    case DType::kFloat16:
    case DType::kBfloat16:
    case DType::kFloat32:
    case DType::kFloat64:
      return Kind::kReal;
    case DType::kFloat128:
      return wide::kHaveFloat128 ? Kind::kReal : Kind::kUnavailable;
    case DType::kFloat32Complex:
    case DType::kFloat64Complex:
      return Kind::kComplex;
    case DType::kFloat128Complex:
      return wide::kHaveFloat128 ? Kind::kComplex : Kind::kUnavailable;
    case DType::kFloat80:
      return wide::kHaveFloat80 ? Kind::kReal : Kind::kUnavailable;
    case DType::kFloat80Complex:
      return wide::kHaveFloat80 ? Kind::kComplex : Kind::kUnavailable;
    default:
      return Kind::kUnavailable;
  }
}

// MAXLOC / MINLOC on pairs of dt: the 8 narrow integer types, float32 and
// float64. False (nothing written) for any other type; reduce_supported
// asks with n = 0, so the list of types lives here only.
bool reduce_loc(bool is_max, DType dt, void* d, const void* a, const void* b,
                size_t n) {
  switch (dt) {
    case DType::kInt8:
      return loc::reduce_pairs<int8_t>(is_max, d, a, b, n), true;
    case DType::kInt16:
      return loc::reduce_pairs<int16_t>(is_max, d, a, b, n), true;
    case DType::kInt32:
      return loc::reduce_pairs<int32_t>(is_max, d, a, b, n), true;
    case DType::kInt64:
      return loc::reduce_pairs<int64_t>(is_max, d, a, b, n), true;
    case DType::kUint8:
      return loc::reduce_pairs<uint8_t>(is_max, d, a, b, n), true;
    case DType::kUint16:
      return loc::reduce_pairs<uint16_t>(is_max, d, a, b, n), true;
    case DType::kUint32:
      return loc::reduce_pairs<uint32_t>(is_max, d, a, b, n), true;
    case DType::kUint64:
      return loc::reduce_pairs<uint64_t>(is_max, d, a, b, n), true;
    case DType::kFloat32:
      return loc::reduce_pairs<float>(is_max, d, a, b, n), true;
    case DType::kFloat64:
      return loc::reduce_pairs<double>(is_max, d, a, b, n), true;
    default:
      return false;
  }
}

}  // namespace

bool reduce_supported(DType dt, ROp op) {
  if (off::rop_is_loc(op))
    return reduce_loc(true, dt, nullptr, nullptr, nullptr, 0);
  const Kind k = kind_of(dt);
  if (k == Kind::kUnavailable) return false;
  switch (op) {
    case ROp::kSum:
    case ROp::kProd:
      return true;
    case ROp::kMax:
    case ROp::kMin:
      return k != Kind::kComplex;  // complex numbers are not ordered
    case ROp::kLand:
    case ROp::kLor:
    case ROp::kLxor:
    case ROp::kBand:
    case ROp::kBor:
    case ROp::kBxor:
      return k == Kind::kInteger;
    case ROp::kAvg:
      return k != Kind::kInteger;
    default:
      return false;
  }
}

void reduce(ROp op, DType dt, void* dst, const void* a, const void* b,
            size_t count) {
  if (count == 0) return;
  if (off::rop_is_loc(op)) {
    reduce_loc(op == ROp::kMaxloc, dt, dst, a, b, count);
    return;
  }
  switch (dt) {
    case DType::kInt8:
      return reduce_int<uint8_t, int8_t>(op, true, dst, a, b, count);
    case DType::kUint8:
      return reduce_int<uint8_t, int8_t>(op, false, dst, a, b, count);
    case DType::kInt16:
      return reduce_int<uint16_t, int16_t>(op, true, dst, a, b, count);
    case DType::kUint16:
      return reduce_int<uint16_t, int16_t>(op, false, dst, a, b, count);
    case DType::kInt32:
      return reduce_int<uint32_t, int32_t>(op, true, dst, a, b, count);
    case DType::kUint32:
      return reduce_int<uint32_t, int32_t>(op, false, dst, a, b, count);
    case DType::kInt64:
      return reduce_int<uint64_t, int64_t>(op, true, dst, a, b, count);
    case DType::kUint64:
      return reduce_int<uint64_t, int64_t>(op, false, dst, a, b, count);
    case DType::kFloat16:
      return reduce_16<Fp16Codec>(op, dst, a, b, count);
    case DType::kBfloat16:
      return reduce_16<Bf16Codec>(op, dst, a, b, count);
    case DType::kFloat32:
      return reduce_float<float>(op, dst, a, b, count);
    case DType::kFloat64:
      return reduce_float<double>(op, dst, a, b, count);
#if defined(__SIZEOF_INT128__)
    case DType::kInt128:
      return wide::reduce_int128(op, true, dst, a, b, count);
    case DType::kUint128:
      return wide::reduce_int128(op, false, dst, a, b, count);
#endif
#if defined(UCC_HAVE_FLOAT128)
    case DType::kFloat128:
      return wide::reduce_wide_float<wide::Float128>(op, dst, a, b, count);
    case DType::kFloat128Complex:
      return wide::reduce_complex<wide::Float128>(op, dst, a, b, count);
#endif
#if defined(UCC_HAVE_FLOAT80)
    case DType::kFloat80:
      return wide::reduce_wide_float<long double>(op, dst, a, b, count);
    case DType::kFloat80Complex:
      return wide::reduce_complex<long double>(op, dst, a, b, count);
#endif
    case DType::kFloat32Complex:
      return wide::reduce_complex<float>(op, dst, a, b, count);
    case DType::kFloat64Complex:
      return wide::reduce_complex<double>(op, dst, a, b, count);
    default:
      return;
  }
}

void scale_div(DType dt, void* dst, size_t count, uint32_t divisor) {
  if (count == 0 || divisor == 0) return;
  // float32 holds every divisor below 2^24 exactly: any real team size.
  switch (dt) {
    case DType::kFloat16:
      return scale_16<Fp16Codec>(dst, count, static_cast<float>(divisor));
    case DType::kBfloat16:
      return scale_16<Bf16Codec>(dst, count, static_cast<float>(divisor));
    case DType::kFloat32:
      return scale_loop<float>(dst, count, static_cast<float>(divisor));
    case DType::kFloat64:
      return scale_loop<double>(dst, count, static_cast<double>(divisor));
#if defined(UCC_HAVE_FLOAT128)
    case DType::kFloat128:
      return wide::scale_components(dst, count,
                                    static_cast<wide::Float128>(divisor));
    case DType::kFloat128Complex:
      return wide::scale_components(dst, 2 * count,
                                    static_cast<wide::Float128>(divisor));
#endif
#if defined(UCC_HAVE_FLOAT80)
    case DType::kFloat80:
      return wide::scale_components(dst, count,
                                    static_cast<long double>(divisor));
    case DType::kFloat80Complex:
      return wide::scale_components(dst, 2 * count,
                                    static_cast<long double>(divisor));
#endif
    case DType::kFloat32Complex:
      return wide::scale_components(dst, 2 * count,
                                    static_cast<float>(divisor));
    case DType::kFloat64Complex:
      return wide::scale_components(dst, 2 * count,
                                    static_cast<double>(divisor));
    default:
      return;  // integers: AVG is not defined on them
  }
}

}  // namespace ucc::dev

// The element operations of every reduction, written once for the host
// engine (reduce.cc) and the GPU kernels (device/gpu/gpu_kernels.cu): the
// host tests of reduce() check the arithmetic the kernels run. See
// reduce.h for the semantics.
#pragma once

#include <cstdint>
#include <type_traits>

#include "device/reduce/half.h"
#include "device/reduce/hd.h"

namespace ucc::dev {

// Arithmetic type for T: narrow unsigned types would promote to (signed)
// int, where uint16 * uint16 can overflow; widen them to unsigned instead.
template <typename T>
using Arith =
    std::conditional_t<std::is_integral_v<T> && (sizeof(T) < sizeof(unsigned)),
                       unsigned, T>;

struct Sum {
  template <typename T>
  UCC_HD T operator()(T a, T b) const {
    return static_cast<T>(static_cast<Arith<T>>(a) + static_cast<Arith<T>>(b));
  }
};
struct Prod {
  template <typename T>
  UCC_HD T operator()(T a, T b) const {
    return static_cast<T>(static_cast<Arith<T>>(a) * static_cast<Arith<T>>(b));
  }
};
struct Max {
  template <typename T>
  UCC_HD T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};
struct Min {
  template <typename T>
  UCC_HD T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};
// Logical ops use non-short-circuit & | ^ on bools: no branch to vectorise.
struct Land {
  template <typename T>
  UCC_HD T operator()(T a, T b) const {
    return static_cast<T>((a != 0) & (b != 0));
  }
};
struct Lor {
  template <typename T>
  UCC_HD T operator()(T a, T b) const {
    return static_cast<T>((a != 0) | (b != 0));
  }
};
struct Lxor {
  template <typename T>
  UCC_HD T operator()(T a, T b) const {
    return static_cast<T>((a != 0) ^ (b != 0));
  }
};
struct Band {
  template <typename T>
  UCC_HD T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};
struct Bor {
  template <typename T>
  UCC_HD T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
};
struct Bxor {
  template <typename T>
  UCC_HD T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
};

// Codecs see a 16-bit value in the low half of a uint32 and return one
// there: the loops below keep every lane 32 bits wide.
struct Fp16Codec {
  UCC_HD static float widen(uint32_t v) { return half_bits_to_float(v); }
  UCC_HD static uint32_t narrow(float f) { return float_to_half_bits(f); }
};
struct Bf16Codec {
  UCC_HD static float widen(uint32_t v) { return bf16_bits_to_float(v); }
  UCC_HD static uint32_t narrow(float f) { return float_to_bf16_bits(f); }
};

}  // namespace ucc::dev

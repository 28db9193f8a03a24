// The vocabulary shared by the host library and the device engine.
//
// These enums are ours, not ucc.h's: the host translates ucc_* values into
// them once, at collective init, so the engine never depends on the public
// API's encoding (which a DPU firmware build would not even include).
// Values are stable: they travel inside versioned descriptors.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/base/status.h"

namespace ucc::off {

// Outcome of every internal call (platform/base/status.h, below every
// layer), named here too so that the contract's users write off::Status.
using base::failed;
using base::ok;
using base::Status;

// Data types the engine knows how to move and reduce. New types are
// appended after kFloat64 so that the values above never change.
//
// The wide types: kInt128/kUint128 are two's-complement 128-bit integers
// in native byte order (GCC/Clang's __int128); kFloat128 is IEEE 754
// binary128 (reducible only where the compiler has it: see
// dev::reduce_supported); the complex types are two components of the
// named width, real part first, as C's `float _Complex` and
// std::complex<float> lay them out.
//
// kGeneric is a user-defined contiguous type (ucc_dt_create_generic): its
// element size is the descriptor's user_esize, the engine moves it as
// bytes and reduces it only through the host's callback (see
// off::UserReduce); kDTypeSize has 0 for it.
//
// kFloat80 is the x87 80-bit extended format in a 16-byte slot (value in
// the first 10 bytes, little-endian), as x86-64's C long double lays it
// out; kFloat80Complex two of them. UCC's FLOAT128 is C long double, so a
// host maps it to kFloat128 where long double is binary128 (AArch64) and
// to kFloat80 where it is x87 (x86-64): the descriptor says which format
// the bytes are in, and an engine of another architecture refuses what it
// cannot reduce instead of misreading it.
enum class DType : uint8_t {
  kInt8 = 0,
  kInt16,
  kInt32,
  kInt64,
  kUint8,
  kUint16,
  kUint32,
  kUint64,
  kFloat16,
  kBfloat16,
  kFloat32,
  kFloat64,
  kInt128,
  kUint128,
  kFloat128,
  kFloat32Complex,
  kFloat64Complex,
  kFloat128Complex,
  kGeneric,
  kFloat80,  // appended after kGeneric: the values above never change
  kFloat80Complex,
  kCount  // number of entries; not a type
};

inline constexpr size_t kDTypeSize[] = {
    1,  2,  4,  8,  // int8 int16 int32 int64
    1,  2,  4,  8,  // uint8 uint16 uint32 uint64
    2,  2,  4,  8,  // float16 bfloat16 float32 float64
    16, 16, 16,     // int128 uint128 float128
    8,  16, 32,     // float32_complex float64_complex float128_complex
    0,              // generic: CollDesc::user_esize
    16, 32,         // float80 float80_complex (16-byte slots)
};
static_assert(sizeof(kDTypeSize) / sizeof(kDTypeSize[0]) ==
              static_cast<size_t>(DType::kCount));
// Values travel in descriptors: the first appended type must follow the
// last original one.
static_assert(static_cast<int>(DType::kFloat64) == 11 &&
              static_cast<int>(DType::kInt128) == 12 &&
              static_cast<int>(DType::kGeneric) == 18 &&
              static_cast<int>(DType::kFloat80) == 19);

inline constexpr size_t dtype_size(DType t) {
  return kDTypeSize[static_cast<size_t>(t)];
}

// Reduction operators. kAvg is reduced as kSum and scaled once by the team
// size by whichever rank produces the final value.
//
// kMaxloc and kMinloc reduce pairs {T value; T index} of a predefined type
// T (value first, as MPI's 2INT): an element of the descriptor is then one
// pair (elem_size in descriptor.h) and the result keeps the larger (smaller)
// value and, among equal values, the smaller index (dev::reduce has the
// rule for NaN).
enum class ROp : uint8_t {
  kSum = 0,
  kProd,
  kMax,
  kMin,
  kLand,
  kLor,
  kLxor,
  kBand,
  kBor,
  kBxor,
  kAvg,
  kMaxloc,  // appended: the values above never change
  kMinloc,
  kNone,  // not a reduction (data movement only)
  kCount = kNone
};
static_assert(static_cast<int>(ROp::kAvg) == 10 &&
              static_cast<int>(ROp::kMaxloc) == 11);

constexpr bool rop_is_loc(ROp op) {
  return op == ROp::kMaxloc || op == ROp::kMinloc;
}

// Collective operations the engine executes.
enum class CollType : uint8_t {
  kBarrier = 0,
  kBcast,
  kReduce,
  kAllreduce,
  kAllgather,
  kAlltoall,
  kReduceScatter,
  kGather,
  kGatherv,
  kScatter,
  kScatterv,
  kAllgatherv,
  kAlltoallv,
  kReduceScatterv,
  kFanin,
  kFanout,
  kCount
};

// The collective's name; its other traits: coll_traits.h.
const char* coll_type_name(CollType t);
const char* dtype_name(DType t);
const char* rop_name(ROp op);

}  // namespace ucc::off

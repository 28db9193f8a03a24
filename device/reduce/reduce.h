// Element-wise reduction kernels: the inner loop of every reducing
// collective (allreduce, reduce, reduce-scatter).
//
// Words: an "element" is one value of the DType; "count" is a number of
// elements, never bytes. Each call dispatches on (op, dtype) once and then
// runs a simple indexed loop that the compiler vectorises; 16-bit floats
// are widened to float32, reduced, and rounded back once per operation,
// which is correctly rounded for +, *, max, min (float32 has at least
// 2p+2 bits for both p = 11 and p = 8, so the double rounding is
// innocuous).
//
// Semantics:
//  - integers wrap (two's complement) on sum and prod;
//  - land/lor/lxor yield 0 or 1; band/bor/bxor are bitwise;
//  - max/min are `a > b ? a : b` / `a < b ? a : b`: when either side is a
//    NaN the comparison is false and `b` is returned;
//  - kAvg reduces as kSum; the producer of the final value calls scale_div
//    once with the team size;
//  - 128-bit integers follow the same rules as the narrow ones;
//  - float128 (IEEE binary128) is reduced in software, correctly rounded;
//  - float80 (x87 extended, x86-64's long double) is reduced as long
//    double, in the x87 unit, each operation rounded once to 64 bits of
//    mantissa; results have the 6 padding bytes of their slot zero;
//  - complex types: sum and avg are per component; prod is the plain
//    formula (a+bi)(c+di) = (ac-bd) + (ad+bc)i, without C99 Annex G's
//    recovery of infinities, so (inf+inf i)(1+0i) gives NaN+NaN i;
//  - maxloc/minloc: an element is a pair {T value; T index} (value first);
//    the pair with the larger (smaller) value wins, on equal values the one
//    with the smaller index; a NaN value wins over any number, two NaNs
//    tie; the winner is copied whole (reduce_loc.h).
//
// Threads: pure functions on caller-owned memory; callable from any thread.
// No allocation; at most 2 KiB of stack (float16 blocks on F16C builds).
#pragma once

#include <cstddef>
#include <cstdint>

#include "offload/types.h"

namespace ucc::dev {

// True when `op` is defined for `dt`:
//   sum, prod:    every type;
//   max, min:     every type but the complex ones;
//   land lor lxor
//   band bor bxor: the 10 integer types (int128 and uint128 included) only;
//   avg:          the 6 real floating types and the 4 complex ones;
//   maxloc minloc: pairs of int8..int64, uint8..uint64, float32, float64;
//   kNone, kGeneric (and out-of-range values): never (generic types are
//   reduced by the user's callback, see off::UserReduce).
// float128 and float128_complex are unsupported for every op where the
// compiler has no binary128 type (no __float128 and long double is not
// binary128), float80 and float80_complex where long double is not x87,
// and int128/uint128 where it has no __int128.
bool reduce_supported(off::DType dt, off::ROp op);

// dst[i] = a[i] op b[i] for i < count. `dst` may equal `a` or `b` (or both)
// exactly; partial overlap is not allowed. Buffers need only the natural
// alignment of the element type; the 128-bit and complex types need none
// (they are accessed by memcpy). An unsupported (dt, op) pair does
// nothing. For maxloc/minloc `count` counts pairs (2 * count values).
void reduce(off::ROp op, off::DType dt, void* dst, const void* a, const void* b,
            size_t count);

// dst[i] = dst[i] / divisor: AVG's final step. Floating and complex types
// only (others are left untouched), as is divisor 0 (no value to
// produce). The division is done in the element's type (float32 for the
// 16-bit floats; each component's type for complex, both parts divided)
// and rounded once.
void scale_div(off::DType dt, void* dst, size_t count, uint32_t divisor);

}  // namespace ucc::dev

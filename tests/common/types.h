// Name tables and element access for tests and benchmarks.
//
// Datatypes, reduction ops and collective types are data tables: one row per
// entry, looked up by name (command-line flags, test names) or by value
// (printing). Element access reads and writes one element of any predefined
// datatype through a double or through its raw bits, so that tests and the
// perftest can fill inputs and check results without a template per type.
//
// Threads: everything here is stateless and may be called from any thread.
#pragma once

#include <ucc/api/ucc.h>

#include <cstddef>
#include <cstdint>

namespace ucct {

// How the bits of an element are interpreted.
enum class DtKind : uint8_t {
  kSigned,    // two's complement integer, 1..8 bytes
  kUnsigned,  // unsigned integer, 1..8 bytes
  kFloat,     // IEEE binary32 / binary64
  kHalf,      // IEEE binary16
  kBfloat16,  // upper half of a binary32
  kOther,     // 128-bit and complex types: no element access here
};

struct DtypeInfo {
  const char* name;  // as on the perftest command line: "float32"
  ucc_datatype_t dt;
  size_t size;  // bytes per element
  DtKind kind;
};

struct OpInfo {
  const char* name;  // "sum"
  ucc_reduction_op_t op;
  bool bitwise;  // band/bor/bxor: integer types only
  bool logical;  // land/lor/lxor: result is 0 or 1
};

struct CollInfo {
  const char* name;  // "allreduce"
  ucc_coll_type_t type;
};

// Whole tables (for iterating in parameterised tests); *n gets the length.
const DtypeInfo* dtype_table(size_t* n);
const OpInfo* op_table(size_t* n);
const CollInfo* coll_table(size_t* n);

// Look-ups. Return nullptr when unknown.
const DtypeInfo* dtype_by_name(const char* name);
const DtypeInfo* dtype_info(ucc_datatype_t dt);
const OpInfo* op_by_name(const char* name);
const OpInfo* op_info(ucc_reduction_op_t op);
const CollInfo* coll_by_name(const char* name);
const CollInfo* coll_info(ucc_coll_type_t type);

// Names for printing; "unknown" when not in the tables. Never nullptr.
const char* dtype_name(ucc_datatype_t dt);
const char* op_name(ucc_reduction_op_t op);
const char* coll_name(ucc_coll_type_t type);

// True when element access below works for this type (kind != kOther).
bool has_element_access(const DtypeInfo& t);

// Element i of buf as a double: integers are converted (exact up to 2^53),
// half and bfloat16 are widened. kOther gives 0.
double load_value(const DtypeInfo& t, const void* buf, size_t i);
// Writes v into element i: integers take (int64_t)v (or (uint64_t)v for
// unsigned) truncated to the element width; floats are rounded to nearest
// even. kOther writes nothing.
void store_value(const DtypeInfo& t, void* buf, size_t i, double v);

// Raw bits of element i, zero-extended to 64 bits (elements of 1..8 bytes;
// kOther gives 0).
uint64_t load_bits(const DtypeInfo& t, const void* buf, size_t i);
// Writes the low t.size bytes of bits into element i (1..8 byte elements).
void store_bits(const DtypeInfo& t, void* buf, size_t i, uint64_t bits);
// The low t.size bytes of bits, zero-extended (what store+load gives back).
uint64_t truncate_bits(const DtypeInfo& t, uint64_t bits);

// IEEE binary16 and bfloat16 conversions (round to nearest even; NaN stays
// NaN, overflow goes to infinity).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);

}  // namespace ucct

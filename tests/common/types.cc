#include "tests/common/types.h"

#include <cmath>
#include <cstring>

namespace ucct {
namespace {

const DtypeInfo kDtypes[] = {
    {"int8", UCC_DT_INT8, 1, DtKind::kSigned},
    {"int16", UCC_DT_INT16, 2, DtKind::kSigned},
    {"int32", UCC_DT_INT32, 4, DtKind::kSigned},
    {"int64", UCC_DT_INT64, 8, DtKind::kSigned},
    {"uint8", UCC_DT_UINT8, 1, DtKind::kUnsigned},
    {"uint16", UCC_DT_UINT16, 2, DtKind::kUnsigned},
    {"uint32", UCC_DT_UINT32, 4, DtKind::kUnsigned},
    {"uint64", UCC_DT_UINT64, 8, DtKind::kUnsigned},
    {"float16", UCC_DT_FLOAT16, 2, DtKind::kHalf},
    {"bfloat16", UCC_DT_BFLOAT16, 2, DtKind::kBfloat16},
    {"float32", UCC_DT_FLOAT32, 4, DtKind::kFloat},
    {"float64", UCC_DT_FLOAT64, 8, DtKind::kFloat},
    {"int128", UCC_DT_INT128, 16, DtKind::kOther},
    {"uint128", UCC_DT_UINT128, 16, DtKind::kOther},
    {"float128", UCC_DT_FLOAT128, 16, DtKind::kOther},
    {"float32_complex", UCC_DT_FLOAT32_COMPLEX, 8, DtKind::kOther},
    {"float64_complex", UCC_DT_FLOAT64_COMPLEX, 16, DtKind::kOther},
    {"float128_complex", UCC_DT_FLOAT128_COMPLEX, 32, DtKind::kOther},
};

// {name, op, bitwise, logical}
const OpInfo kOps[] = {
    {"sum", UCC_OP_SUM, false, false},  {"prod", UCC_OP_PROD, false, false},
    {"max", UCC_OP_MAX, false, false},  {"min", UCC_OP_MIN, false, false},
    {"land", UCC_OP_LAND, false, true}, {"lor", UCC_OP_LOR, false, true},
    {"lxor", UCC_OP_LXOR, false, true}, {"band", UCC_OP_BAND, true, false},
    {"bor", UCC_OP_BOR, true, false},   {"bxor", UCC_OP_BXOR, true, false},
    {"avg", UCC_OP_AVG, false, false},
};

const CollInfo kColls[] = {
    {"allgather", UCC_COLL_TYPE_ALLGATHER},
    {"allgatherv", UCC_COLL_TYPE_ALLGATHERV},
    {"allreduce", UCC_COLL_TYPE_ALLREDUCE},
    {"alltoall", UCC_COLL_TYPE_ALLTOALL},
    {"alltoallv", UCC_COLL_TYPE_ALLTOALLV},
    {"barrier", UCC_COLL_TYPE_BARRIER},
    {"bcast", UCC_COLL_TYPE_BCAST},
    {"fanin", UCC_COLL_TYPE_FANIN},
    {"fanout", UCC_COLL_TYPE_FANOUT},
    {"gather", UCC_COLL_TYPE_GATHER},
    {"gatherv", UCC_COLL_TYPE_GATHERV},
    {"reduce", UCC_COLL_TYPE_REDUCE},
    {"reduce_scatter", UCC_COLL_TYPE_REDUCE_SCATTER},
    {"reduce_scatterv", UCC_COLL_TYPE_REDUCE_SCATTERV},
    {"scatter", UCC_COLL_TYPE_SCATTER},
    {"scatterv", UCC_COLL_TYPE_SCATTERV},
};

template <typename T, size_t N>
constexpr size_t count_of(const T (&)[N]) {
  return N;
}

template <typename T, size_t N, typename Pred>
const T* find_row(const T (&table)[N], Pred pred) {
  for (const T& row : table) {
    if (pred(row)) return &row;
  }
  return nullptr;
}

uint32_t float_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}

float bits_float(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

// Sign-extends the low `bytes` bytes of v.
int64_t sign_extend(uint64_t v, size_t bytes) {
  if (bytes >= 8) return static_cast<int64_t>(v);
  const unsigned shift = static_cast<unsigned>(64 - 8 * bytes);
  return static_cast<int64_t>(v << shift) >> shift;
}

}  // namespace

const DtypeInfo* dtype_table(size_t* n) {
  *n = count_of(kDtypes);
  return kDtypes;
}
const OpInfo* op_table(size_t* n) {
  *n = count_of(kOps);
  return kOps;
}
const CollInfo* coll_table(size_t* n) {
  *n = count_of(kColls);
  return kColls;
}

const DtypeInfo* dtype_by_name(const char* name) {
  return find_row(
      kDtypes, [&](const DtypeInfo& r) { return !std::strcmp(r.name, name); });
}
const DtypeInfo* dtype_info(ucc_datatype_t dt) {
  return find_row(kDtypes, [&](const DtypeInfo& r) { return r.dt == dt; });
}
const OpInfo* op_by_name(const char* name) {
  return find_row(kOps,
                  [&](const OpInfo& r) { return !std::strcmp(r.name, name); });
}
const OpInfo* op_info(ucc_reduction_op_t op) {
  return find_row(kOps, [&](const OpInfo& r) { return r.op == op; });
}
const CollInfo* coll_by_name(const char* name) {
  return find_row(
      kColls, [&](const CollInfo& r) { return !std::strcmp(r.name, name); });
}
const CollInfo* coll_info(ucc_coll_type_t type) {
  return find_row(kColls, [&](const CollInfo& r) { return r.type == type; });
}

const char* dtype_name(ucc_datatype_t dt) {
  const DtypeInfo* r = dtype_info(dt);
  return r ? r->name : "unknown";
}
const char* op_name(ucc_reduction_op_t op) {
  const OpInfo* r = op_info(op);
  return r ? r->name : "unknown";
}
const char* coll_name(ucc_coll_type_t type) {
  const CollInfo* r = coll_info(type);
  return r ? r->name : "unknown";
}

bool has_element_access(const DtypeInfo& t) {
  return t.kind != DtKind::kOther && t.size <= 8;
}

uint64_t truncate_bits(const DtypeInfo& t, uint64_t bits) {
  return t.size >= 8 ? bits : bits & ((uint64_t{1} << (8 * t.size)) - 1);
}

// Little-endian hosts only (x86-64, aarch64): the low bytes of a uint64_t
// are its first bytes in memory.
uint64_t load_bits(const DtypeInfo& t, const void* buf, size_t i) {
  if (!has_element_access(t)) return 0;
  uint64_t v = 0;
  std::memcpy(&v, static_cast<const char*>(buf) + i * t.size, t.size);
  return v;
}

void store_bits(const DtypeInfo& t, void* buf, size_t i, uint64_t bits) {
  if (!has_element_access(t)) return;
  std::memcpy(static_cast<char*>(buf) + i * t.size, &bits, t.size);
}

double load_value(const DtypeInfo& t, const void* buf, size_t i) {
  const uint64_t b = load_bits(t, buf, i);
  switch (t.kind) {
    case DtKind::kSigned:
      return static_cast<double>(sign_extend(b, t.size));
    case DtKind::kUnsigned:
      return static_cast<double>(b);
    case DtKind::kHalf:
      return half_to_float(static_cast<uint16_t>(b));
    case DtKind::kBfloat16:
      return bfloat16_to_float(static_cast<uint16_t>(b));
    case DtKind::kFloat:
      if (t.size == 4) return bits_float(static_cast<uint32_t>(b));
      {
        double d;
        std::memcpy(&d, &b, sizeof d);
        return d;
      }
    case DtKind::kOther:
      break;
  }
  return 0;
}

void store_value(const DtypeInfo& t, void* buf, size_t i, double v) {
  uint64_t b = 0;
  switch (t.kind) {
    case DtKind::kSigned:
      b = static_cast<uint64_t>(static_cast<int64_t>(v));
      break;
    case DtKind::kUnsigned:
      b = v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v))
                : static_cast<uint64_t>(v);
      break;
    case DtKind::kHalf:
      b = float_to_half(static_cast<float>(v));
      break;
    case DtKind::kBfloat16:
      b = float_to_bfloat16(static_cast<float>(v));
      break;
    case DtKind::kFloat:
      if (t.size == 4) {
        b = float_bits(static_cast<float>(v));
      } else {
        std::memcpy(&b, &v, sizeof b);
      }
      break;
    case DtKind::kOther:
      return;
  }
  store_bits(t, buf, i, b);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in binary32.
    const float mag = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -mag : mag;
  }
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t float_to_half(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) {  // inf, or NaN (kept quiet)
    return static_cast<uint16_t>(sign | 0x7c00u |
                                 (mant ? 0x200u | (mant >> 13) : 0));
  }
  const int e = static_cast<int>(exp) - 127 + 15;  // biased half exponent
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    // Half subnormal: value = M * 2^(e - 38) with the implicit bit in M,
    // the half mantissa is M >> (14 - e). Below 2^-25 everything is zero.
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const unsigned shift = static_cast<unsigned>(14 - e);
    uint32_t hm = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (hm & 1u)))
      ++hm;  // may carry to exp 1
    return static_cast<uint16_t>(sign | hm);
  }
  uint32_t h = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry to inf
  return static_cast<uint16_t>(h);
}

float bfloat16_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

uint16_t float_to_bfloat16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  const uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

}  // namespace ucct

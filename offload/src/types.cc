// Short lowercase names for the shared vocabulary, for logs and for the
// string overrides that select algorithms by name.
#include "offload/types.h"

namespace ucc::off {
namespace {

// One row per family, in DType order.
// clang-format off
constexpr const char* kDTypeNames[] = {
    "int8",    "int16",    "int32",    "int64",
    "uint8",   "uint16",   "uint32",   "uint64",
    "float16", "bfloat16", "float32",  "float64",
    "int128",  "uint128",  "float128",
    "float32_complex", "float64_complex", "float128_complex",
    "generic",
    "float128(x87)", "float128_complex(x87)",
};
// clang-format on
static_assert(sizeof(kDTypeNames) / sizeof(kDTypeNames[0]) ==
              static_cast<size_t>(DType::kCount));

// kNone has a name too: it appears in descriptors of non-reducing
// collectives and is worth printing.
constexpr const char* kROpNames[] = {
    "sum",  "prod", "max",  "min", "land",   "lor",    "lxor",
    "band", "bor",  "bxor", "avg", "maxloc", "minloc", "none",
};
static_assert(sizeof(kROpNames) / sizeof(kROpNames[0]) ==
              static_cast<size_t>(ROp::kNone) + 1);

constexpr const char* kUnknown = "unknown";

}  // namespace

const char* dtype_name(DType t) {
  const auto i = static_cast<size_t>(t);
  return i < static_cast<size_t>(DType::kCount) ? kDTypeNames[i] : kUnknown;
}

const char* rop_name(ROp op) {
  const auto i = static_cast<size_t>(op);
  return i <= static_cast<size_t>(ROp::kNone) ? kROpNames[i] : kUnknown;
}

}  // namespace ucc::off

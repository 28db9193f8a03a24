#include "device/select/select.h"

#include <strings.h>

#include "device/coll/algorithms.h"

namespace ucc::dev {
namespace {

using off::CollType;

const AlgInfo* const kBarrier[] = {&kBarrierDissemination,
                                   &kBarrierRecursiveDoubling};
const AlgInfo* const kBcast[] = {&kBcastBinomial, &kBcastSingleCopy};
const AlgInfo* const kReduce[] = {&kReduceBinomial};
const AlgInfo* const kAllreduce[] = {&kAllreduceRecursiveDoubling,
                                     &kAllreduceRing};
const AlgInfo* const kAllgather[] = {&kAllgatherRing, &kAllgatherSingleCopy};
const AlgInfo* const kAlltoall[] = {&kAlltoallPairwise, &kAlltoallSingleCopy};
const AlgInfo* const kReduceScatter[] = {&kReduceScatterRing};
const AlgInfo* const kGather[] = {&kGatherLinear};
const AlgInfo* const kGatherv[] = {&kGathervLinear};
const AlgInfo* const kScatter[] = {&kScatterLinear};
const AlgInfo* const kScatterv[] = {&kScattervLinear};
const AlgInfo* const kAllgatherv[] = {&kAllgathervPairwise};
const AlgInfo* const kAlltoallv[] = {&kAlltoallvPairwise};
const AlgInfo* const kReduceScatterv[] = {&kReduceScattervRing};
const AlgInfo* const kFanin[] = {&kFaninBinomial};
const AlgInfo* const kFanout[] = {&kFanoutBinomial};

template <size_t N>
constexpr AlgTable table(const AlgInfo* const (&a)[N]) {
  return AlgTable{a, static_cast<uint32_t>(N)};
}

const AlgInfo* by_id(AlgTable t, uint8_t id) {
  for (uint32_t i = 0; i < t.n; ++i)
    if (t.algs[i]->id == id) return t.algs[i];
  return nullptr;
}

}  // namespace

AlgTable algorithms_of(CollType coll) {
  // Indexed by CollType.
  static const AlgTable kTables[] = {
      table(kBarrier),       table(kBcast),          table(kReduce),
      table(kAllreduce),     table(kAllgather),      table(kAlltoall),
      table(kReduceScatter), table(kGather),         table(kGatherv),
      table(kScatter),       table(kScatterv),       table(kAllgatherv),
      table(kAlltoallv),     table(kReduceScatterv), table(kFanin),
      table(kFanout),
  };
  static_assert(sizeof(kTables) / sizeof(kTables[0]) ==
                static_cast<size_t>(CollType::kCount));
  auto i = static_cast<size_t>(coll);
  return i < static_cast<size_t>(CollType::kCount) ? kTables[i]
                                                   : AlgTable{nullptr, 0};
}

const AlgInfo* find_alg(CollType coll, const char* name) {
  AlgTable t = algorithms_of(coll);
  for (uint32_t i = 0; i < t.n; ++i)
    if (strcasecmp(t.algs[i]->name, name) == 0) return t.algs[i];
  return nullptr;
}

bool parse_alg(CollType coll, const char* name, uint8_t* id) {
  if (strcasecmp(name, "auto") == 0 || name[0] == '\0') {
    *id = 0;
    return true;
  }
  const AlgInfo* a = find_alg(coll, name);
  if (a == nullptr) return false;
  *id = a->id;
  return true;
}

namespace {

// Whether a single-copy algorithm can run d: single copy is on, both
// buffers are host memory, and (alltoall) not in place, where the block a
// peer reads from us is where we receive its block.
bool single_copy_ok(const SelectConfig& cfg, const off::CollDesc& d) {
  return cfg.cma_min_bytes != 0 && d.src.mem_type == 0 && d.dst.mem_type == 0 &&
         !(d.coll == CollType::kAlltoall && (d.flags & off::kDescInPlace));
}

// The single-copy algorithm for d when its blocks are large enough, else
// nullptr.
const AlgInfo* single_copy_rule(const SelectConfig& cfg,
                                const off::CollDesc& d) {
  if (!single_copy_ok(cfg, d) ||
      d.count * off::elem_size(d) < cfg.cma_min_bytes)
    return nullptr;
  switch (d.coll) {
    case CollType::kBcast:
      return &kBcastSingleCopy;
    case CollType::kAllgather:
      return &kAllgatherSingleCopy;
    case CollType::kAlltoall:
      return &kAlltoallSingleCopy;
    default:
      return nullptr;
  }
}

}  // namespace

const AlgInfo* select_alg(const SelectConfig& cfg, const off::CollDesc& d,
                          uint32_t size) {
  (void)size;
  AlgTable t = algorithms_of(d.coll);
  if (t.n == 0) return nullptr;
  uint8_t id = d.alg != 0 ? d.alg : cfg.forced[static_cast<int>(d.coll)];
  if (id != 0) {
    // A forced single-copy algorithm runs only where single copy can.
    const AlgInfo* a = by_id(t, id);
    if (a == nullptr || !a->single_copy || single_copy_ok(cfg, d)) return a;
  }
  if (const AlgInfo* a = single_copy_rule(cfg, d)) return a;
  if (d.coll == CollType::kAllreduce) {
    uint64_t bytes = d.count * off::elem_size(d);
    return bytes >= cfg.allreduce_ring_min_bytes ? &kAllreduceRing
                                                 : &kAllreduceRecursiveDoubling;
  }
  return t.algs[0];
}

}  // namespace ucc::dev

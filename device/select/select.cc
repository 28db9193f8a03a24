#include "device/select/select.h"

#include <strings.h>

#include "device/coll/algorithms.h"

namespace ucc::dev {
namespace {

using off::CollType;

const AlgInfo* const kBarrier[] = {&kBarrierDissemination,
                                   &kBarrierRecursiveDoubling};
const AlgInfo* const kBcast[] = {&kBcastBinomial};
const AlgInfo* const kReduce[] = {&kReduceBinomial};
const AlgInfo* const kAllreduce[] = {&kAllreduceRecursiveDoubling,
                                     &kAllreduceRing};
const AlgInfo* const kAllgather[] = {&kAllgatherRing};
const AlgInfo* const kAlltoall[] = {&kAlltoallPairwise};
const AlgInfo* const kReduceScatter[] = {&kReduceScatterRing};

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
  switch (coll) {
    case CollType::kBarrier:
      return table(kBarrier);
    case CollType::kBcast:
      return table(kBcast);
    case CollType::kReduce:
      return table(kReduce);
    case CollType::kAllreduce:
      return table(kAllreduce);
    case CollType::kAllgather:
      return table(kAllgather);
    case CollType::kAlltoall:
      return table(kAlltoall);
    case CollType::kReduceScatter:
      return table(kReduceScatter);
    case CollType::kCount:
      break;
  }
  return AlgTable{nullptr, 0};
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

const AlgInfo* select_alg(const SelectConfig& cfg, const off::CollDesc& d,
                          uint32_t size) {
  (void)size;
  AlgTable t = algorithms_of(d.coll);
  if (t.n == 0) return nullptr;
  uint8_t id = d.alg != 0 ? d.alg : cfg.forced[static_cast<int>(d.coll)];
  if (id != 0) return by_id(t, id);
  if (d.coll == CollType::kAllreduce) {
    uint64_t bytes = d.count * off::dtype_size(d.dtype);
    return bytes >= cfg.allreduce_ring_min_bytes ? &kAllreduceRing
                                                 : &kAllreduceRecursiveDoubling;
  }
  return t.algs[0];
}

}  // namespace ucc::dev

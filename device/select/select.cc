#include "device/select/select.h"

#include "device/coll/algorithms.h"
#include "offload/coll_traits.h"

namespace ucc::dev {
namespace {

using off::CollType;

// --- what this engine implements, per collective ---------------------------

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

struct Impls {
  const AlgInfo* const* algs;
  uint32_t n;
};

template <size_t N>
constexpr Impls impls(const AlgInfo* const (&a)[N]) {
  return Impls{a, static_cast<uint32_t>(N)};
}

// Indexed by CollType.
constexpr Impls kImpls[] = {
    impls(kBarrier),       impls(kBcast),          impls(kReduce),
    impls(kAllreduce),     impls(kAllgather),      impls(kAlltoall),
    impls(kReduceScatter), impls(kGather),         impls(kGatherv),
    impls(kScatter),       impls(kScatterv),       impls(kAllgatherv),
    impls(kAlltoallv),     impls(kReduceScatterv), impls(kFanin),
    impls(kFanout),
};
static_assert(sizeof(kImpls) / sizeof(kImpls[0]) ==
              static_cast<size_t>(CollType::kCount));

// --- the rules ---------------------------------------------------------------
// Per collective, in order (first match wins); a collective without a
// matching rule runs its first implementation (id 1). A rule starts at a
// size the configuration gives.

enum class From : uint8_t { kAllreduceRingMin, kCmaMin };

struct Rule {
  CollType coll;
  From from;
  off::When when;
  uint8_t alg;
};

constexpr Rule kRules[] = {
    {CollType::kBcast, From::kCmaMin, off::When::kSingleCopy, 2},
    {CollType::kAllgather, From::kCmaMin, off::When::kSingleCopy, 2},
    {CollType::kAlltoall, From::kCmaMin, off::When::kSingleCopy, 2},
    {CollType::kAllreduce, From::kAllreduceRingMin, off::When::kAlways, 2},
};

uint64_t threshold(const off::EngineConfig& cfg, From f) {
  return f == From::kCmaMin ? cfg.cma_min : cfg.allreduce_ring_min;
}

// Whether single copy can run d: the engine allows it, both buffers are
// host memory, and (alltoall) not in place, where the block a peer
// reads from us is where we receive its block.
bool single_copy_ok(const off::EngineCaps& caps, const off::CollDesc& d) {
  return caps.single_copy != 0 && d.src.mem_type == 0 && d.dst.mem_type == 0 &&
         !(d.coll == CollType::kAlltoall && (d.flags & off::kDescInPlace));
}

}  // namespace

const AlgInfo* find_impl(CollType coll, uint8_t id) {
  const auto c = static_cast<size_t>(coll);
  if (c >= static_cast<size_t>(CollType::kCount)) return nullptr;
  for (uint32_t i = 0; i < kImpls[c].n; ++i)
    if (kImpls[c].algs[i]->id == id) return kImpls[c].algs[i];
  return nullptr;
}

void fill_select_caps(const off::EngineConfig& cfg, off::EngineCaps* caps) {
  caps->single_copy = cfg.cma_min != 0 ? 1 : 0;
  for (size_t c = 0; c < off::kNumColls; ++c) {
    off::CollCaps& cc = caps->coll[c];
    cc = off::CollCaps{};
    for (uint32_t i = 0; i < kImpls[c].n; ++i) {
      const AlgInfo* a = kImpls[c].algs[i];
      cc.algs |= static_cast<uint8_t>(1u << (a->id - 1));
      if (a->single_copy)
        cc.single_copy |= static_cast<uint8_t>(1u << (a->id - 1));
    }
    cc.def_alg = kImpls[c].n != 0 ? kImpls[c].algs[0]->id : 0;
    cc.forced = cfg.forced[c];
    for (const Rule& r : kRules) {
      if (static_cast<size_t>(r.coll) != c || cc.nrules == off::kMaxRules)
        continue;
      // A single-copy rule where single copy never runs is left out.
      if (r.when == off::When::kSingleCopy && caps->single_copy == 0) continue;
      cc.rules[cc.nrules++] =
          off::SelectRule{threshold(cfg, r.from), r.alg, r.when, {}};
    }
  }
}

const AlgInfo* select_alg(const off::EngineCaps& caps, const off::CollDesc& d) {
  const auto c = static_cast<size_t>(d.coll);
  if (c >= off::kNumColls) return nullptr;
  const off::SelectInput in{d.alg, off::select_bytes(d),
                            single_copy_ok(caps, d)};
  return find_impl(d.coll, off::select_alg_id(caps.coll[c], in));
}

}  // namespace ucc::dev

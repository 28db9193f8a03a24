// The algorithm tables: every algorithm of every collective, by id. The
// selection rules (device/select/) pick among them by message size.
#pragma once

#include "device/engine/alg.h"

namespace ucc::dev {

extern const AlgInfo kBarrierDissemination;
extern const AlgInfo kBarrierRecursiveDoubling;
extern const AlgInfo kBarrierLinear;
extern const AlgInfo kBcastBinomial;
extern const AlgInfo kBcastSingleCopy;
extern const AlgInfo kBcastLinear;
extern const AlgInfo kAllgatherSingleCopy;
extern const AlgInfo kAlltoallSingleCopy;
extern const AlgInfo kReduceBinomial;
extern const AlgInfo kReduceLinear;
extern const AlgInfo kAllreduceRecursiveDoubling;
extern const AlgInfo kAllreduceRing;
extern const AlgInfo kAllgatherRing;
extern const AlgInfo kAlltoallPairwise;
extern const AlgInfo kAllgatherLinear;
extern const AlgInfo kAlltoallLinear;
extern const AlgInfo kReduceScatterRing;
extern const AlgInfo kReduceScatterLinear;
extern const AlgInfo kReduceScattervRing;
extern const AlgInfo kReduceScattervLinear;
extern const AlgInfo kAlltoallvPairwise;
extern const AlgInfo kAlltoallvLinear;
extern const AlgInfo kAllgathervPairwise;
extern const AlgInfo kAllgathervLinear;
extern const AlgInfo kGatherLinear;
extern const AlgInfo kGathervLinear;
extern const AlgInfo kScatterLinear;
extern const AlgInfo kScattervLinear;
extern const AlgInfo kFaninBinomial;
extern const AlgInfo kFanoutBinomial;
// Node-aware (hier.cc).
extern const AlgInfo kBarrierHier;
extern const AlgInfo kBcastHier;
extern const AlgInfo kReduceHier;
extern const AlgInfo kAllreduceHier;
extern const AlgInfo kAllreduceHierRing;
extern const AlgInfo kAllgatherHier;
extern const AlgInfo kAllgathervHier;
extern const AlgInfo kReduceScatterHier;
extern const AlgInfo kReduceScattervHier;

}  // namespace ucc::dev

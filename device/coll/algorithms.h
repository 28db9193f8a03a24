// The algorithms' registry entries (run/alg.h), one per row of
// offload/algorithms.def, each defined in its file here; the selection
// (device/select) files them under their ids.
#pragma once

#include "device/run/alg.h"

namespace ucc::dev {

#define UCC_ALG(coll, id, name, desc, impl, from, when) \
  extern const AlgInfo impl;
#include "offload/algorithms.def"

}  // namespace ucc::dev

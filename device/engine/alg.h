// Algorithm registry entries. An algorithm is a resumable state machine: a
// trivially-destructible struct with
//   Status start(CollRun&)     first step; may already finish
//   Status progress(CollRun&)  later steps
// each returning kInProgress, kOk or an error. Its state lives in the
// engine team's fixed storage (kMaxAlgState bytes), never on the heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#include "device/engine/coll_run.h"

namespace ucc::dev {

inline constexpr size_t kMaxAlgState = 512;

struct AlgInfo {
  uint8_t id;        // stable id within its collective, 1-based
  const char* name;  // what UCC_<COLL>_ALG accepts
  const char* desc;
  Status (*start)(void* state, CollRun& run);
  Status (*progress)(void* state, CollRun& run);
  // Reads peers' memory with cross-memory attach: runs only where
  // SelectConfig::cma_min_bytes is nonzero.
  bool single_copy;
};

template <typename T>
Status alg_start(void* state, CollRun& run) {
  static_assert(sizeof(T) <= kMaxAlgState, "algorithm state too large");
  static_assert(alignof(T) <= 64);
  static_assert(std::is_trivially_destructible_v<T>);
  return (new (state) T())->start(run);
}

template <typename T>
Status alg_progress(void* state, CollRun& run) {
  return static_cast<T*>(state)->progress(run);
}

template <typename T>
constexpr AlgInfo make_alg(uint8_t id, const char* name, const char* desc,
                           bool single_copy = false) {
  return AlgInfo{id, name, desc, &alg_start<T>, &alg_progress<T>, single_copy};
}

}  // namespace ucc::dev

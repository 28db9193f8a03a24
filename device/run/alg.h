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

#include "device/run/coll_run.h"
#include "platform/base/hot.h"

namespace ucc::dev {

// A flat algorithm's state fits kFlatAlgState bytes, so that a node-aware
// one (device/coll/hier.cc) can hold one of them per phase; an instance
// has room for the largest.
inline constexpr size_t kFlatAlgState = 512;
inline constexpr size_t kMaxAlgState = 1152;

// A rank's whole part of a collective when it is one message of its src
// to one peer and nothing more (the root of a small bcast over two
// ranks, a leaf of a small reduce): the engine may send a known
// descriptor's message at its post without an instance
// (Engine::send_known).
struct SendPlan {
  uint32_t peer = 0;  // team rank
  uint32_t len = 0;   // bytes [0, len) of src
};

// The implementation of one entry of a collective's algorithm catalogue
// (off::CollTraits::algs: the id the descriptor's `alg` field names, and
// the name and description UCC_<COLL>_ALG and the capability answers
// show). device/select/select.cc files each under its id.
struct AlgInfo {
  Status (*start)(void* state, CollRun& run);
  Status (*progress)(void* state, CollRun& run);
  // Reads peers' memory with cross-memory attach: runs only where single
  // copy can (EngineConfig::cma_min nonzero, an engine in the rank's own
  // process).
  bool single_copy;
  // Runs phases over the team's node map (device/coll/hier.cc): only for
  // collectives over the whole team.
  bool node_aware;
  // Reads the block tables (CollRun::src_cnt...): the engine fills them
  // before start() for collectives whose traits lay out blocks.
  bool blocks = true;
  // Where not null: whether `run` (prepared, its descriptor set) is, at
  // this rank, nothing but the message *plan names, sent in start()
  // before it ends; the algorithm's own reading of its shape.
  bool (*sends)(const CollRun& run, SendPlan* plan) = nullptr;
  // Where not null: whether it can run descriptor d of `bytes`
  // (off::select_bytes) on a team of n ranks whose runs have `scratch`
  // bytes of CollRun::scratch; selection chooses without it where not
  // (device/select/select.cc).
  bool (*fits)(const off::CollDesc& d, uint64_t bytes, uint32_t n,
               uint64_t scratch) = nullptr;
};

// An entry whose algorithm never reads the block tables: they are not
// filled for it (recursive doubling moves whole vectors).
constexpr AlgInfo without_blocks(AlgInfo a) {
  a.blocks = false;
  return a;
}

template <typename T, size_t Cap = kFlatAlgState>
UCC_HOT Status alg_start(void* state, CollRun& run) {
  static_assert(Cap <= kMaxAlgState);
  static_assert(sizeof(T) <= Cap, "algorithm state too large");
  static_assert(alignof(T) <= 64);
  static_assert(std::is_trivially_destructible_v<T>);
  return (new (state) T())->start(run);
}

template <typename T>
UCC_HOT Status alg_progress(void* state, CollRun& run) {
  return static_cast<T*>(state)->progress(run);
}

template <typename T>
bool alg_sends(const CollRun& run, SendPlan* plan) {
  return T().plan_sends(run, plan);
}

template <typename T, size_t Cap = kFlatAlgState>
constexpr AlgInfo make_alg(bool single_copy = false) {
  return AlgInfo{&alg_start<T, Cap>, &alg_progress<T>, single_copy, false};
}

// An entry of an algorithm with T::fits (AlgInfo::fits).
template <typename T>
constexpr AlgInfo make_alg_fits() {
  AlgInfo a = make_alg<T>();
  a.fits = &T::fits;
  return a;
}

// An entry of an algorithm with T::plan_sends(const CollRun&, SendPlan*).
template <typename T>
constexpr AlgInfo make_alg_sends() {
  AlgInfo a = make_alg<T>();
  a.sends = &alg_sends<T>;
  return a;
}

}  // namespace ucc::dev

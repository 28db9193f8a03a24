// Engine-side state of one team: its fabric, its queue of validated
// descriptors (run strictly in posting order, which every member shares),
// and the storage of the collective that is running.
#pragma once

#include <cstdint>

#include "device/engine/alg.h"
#include "device/engine/engine.h"

namespace ucc::dev {

struct Engine::Team {
  enum class State : uint8_t { kFree, kOpen, kConnected };
  State state = State::kFree;
  uint32_t size = 0;
  uint32_t rank = 0;
  uint32_t seq = 0;  // collectives started so far
  Fabric fab;
  off::CollDesc* queue = nullptr;  // team_queue entries
  uint64_t* blocks = nullptr;      // 4 * size: block tables (blocks.h)
  uint32_t qhead = 0, qtail = 0;   // free-running; qtail - qhead queued
  bool running = false;
  const AlgInfo* alg = nullptr;
  off::CollDesc cur{};
  CollRun run{};
  alignas(64) unsigned char alg_state[kMaxAlgState];
};

}  // namespace ucc::dev

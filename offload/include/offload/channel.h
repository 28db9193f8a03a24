// The host <-> engine channel: a submission ring of descriptors (host
// produces, engine consumes) and an array of completion words (engine
// writes, host reads). Everything lives in one caller-provided block so the
// same layout serves inline mode (process memory) and an engine in another
// process (a shared segment mapped at a different address on each side).
//
// Threads: the host side calls submit() from one thread at a time (the
// context serialises posting); the engine side calls next()/done()/complete()
// from its progress thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "offload/descriptor.h"
#include "offload/spsc_ring.h"

namespace ucc::off {

struct ChannelHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t pad;
  uint32_t sq_capacity;
  uint32_t ncomp;
};

class Channel {
 public:
  // Bytes of the block for a ring of `sq_capacity` (power of two)
  // descriptors and `ncomp` completion words.
  static size_t bytes_needed(uint32_t sq_capacity, uint32_t ncomp);

  // Lays the channel out in `mem` (64-byte aligned, bytes_needed() long).
  void init(void* mem, uint32_t sq_capacity, uint32_t ncomp);
  // Attaches to a block another party laid out; kInvalidParam when the
  // header does not match this build's layout.
  Status attach(void* mem, size_t bytes);

  // Host: queue a descriptor; false when the ring is full.
  bool submit(const CollDesc& d) { return sq_.push(d); }
  // Engine: the next descriptor or nullptr; done() releases it.
  const CollDesc* next() const { return sq_.peek(); }
  void done() { sq_.release(); }

  uint32_t ncomp() const { return ncomp_; }
  // Engine: publish the end of generation `gen` in slot `slot`.
  void complete(uint32_t slot, uint32_t gen, Status st) {
    // E1 pairs with H1: the collective's writes to user memory happen
    // before the host can see it completed.
    comp_[slot].store(completion_word(gen, st), std::memory_order_release);
  }
  // Host: the current word of a slot.
  uint64_t read(uint32_t slot) const {
    return comp_[slot].load(std::memory_order_acquire);  // H1
  }
  // Host: reset a slot before a new generation is posted.
  void arm(uint32_t slot, uint32_t gen) {
    comp_[slot].store(completion_word(gen, Status::kInProgress),
                      std::memory_order_relaxed);
  }

 private:
  SpscRing<CollDesc> sq_;
  std::atomic<uint64_t>* comp_ = nullptr;
  uint32_t ncomp_ = 0;
};

}  // namespace ucc::off

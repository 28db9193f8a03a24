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
  // Nonzero while an engine in another process is about to sleep: the
  // host then rings its doorbell after submitting (see host/link.cc).
  std::atomic<uint32_t> engine_idle;
};

class Channel {
 public:
  // Bytes of the block for a ring of `sq_capacity` (power of two)
  // descriptors and `ncomp` completion words.
  static size_t bytes_needed(uint32_t sq_capacity, uint32_t ncomp);

  // Lays the channel out in `mem` (64-byte aligned, bytes_needed() long,
  // zero-filled: fresh anonymous or memfd pages, whose completion words
  // are then touched only where used).
  void init(void* mem, uint32_t sq_capacity, uint32_t ncomp);
  // Attaches to a block another party laid out; kInvalidParam when the
  // header does not match this build's layout.
  Status attach(void* mem, size_t bytes);

  // Host: queue a descriptor; false when the ring is full.
  bool submit(const CollDesc& d) { return sq_.push(d); }
  // Engine: the next descriptor or nullptr; done() releases it.
  const CollDesc* next() { return sq_.peek(); }
  void done() { sq_.release(); }
  uint32_t sq_capacity() const { return sq_.capacity(); }
  // Engine: the host wrote ring indices it could not have (a hostile or
  // broken host); nothing more is taken from the ring.
  bool corrupt() const { return sq_.corrupt(); }

  uint32_t ncomp() const { return ncomp_; }

  // Engine: about to sleep (true) or awake again (false). Host: whether
  // the engine asked for a doorbell since the last call (clears the
  // request). Both are atomic read-modify-writes, so a descriptor
  // submitted just before the host's call is seen by an engine that set
  // the flag before looking at the ring once more.
  void set_engine_idle(bool idle) {
    hdr_->engine_idle.exchange(idle ? 1 : 0, std::memory_order_seq_cst);
  }
  bool take_doorbell() {
    return hdr_->engine_idle.load(std::memory_order_relaxed) != 0 &&
           hdr_->engine_idle.exchange(0, std::memory_order_seq_cst) != 0;
  }
  // Engine: publish the end of generation `gen` in slot `slot`.
  void complete(uint32_t slot, uint32_t gen, Status st) {
    // E1 pairs with H1: the collective's writes to user memory happen
    // before the host can see it completed.
    comp_[slot].store(completion_word(gen, st),
                      base::release_of(base::kCompletion));
  }
  // Host: the current word of a slot.
  uint64_t read(uint32_t slot) const {
    return comp_[slot].load(base::acquire_of(base::kCompletion));  // H1
  }
  // Host: reset a slot before a new generation is posted.
  void arm(uint32_t slot, uint32_t gen) {
    comp_[slot].store(completion_word(gen, Status::kInProgress),
                      std::memory_order_relaxed);
  }

 private:
  SpscRing<CollDesc> sq_;
  ChannelHeader* hdr_ = nullptr;
  std::atomic<uint64_t>* comp_ = nullptr;
  uint32_t ncomp_ = 0;
};

}  // namespace ucc::off

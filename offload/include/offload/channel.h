// The host <-> engine channel: a submission ring of descriptors (host
// produces, engine consumes), an array of completion words (engine
// writes, host reads) and, where the host asks for one, a result area of
// kInlineBytes per completion slot for inline results (descriptor.h,
// kDescInline). Everything lives in one caller-provided block so the
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
  // Completion slots [0, nres) have a result area (0 or ncomp).
  uint32_t nres;
};

// Where each part of a channel block lies (bytes from its start): what an
// engine that reaches the block only by RDMA (dpu mode) reads and writes.
struct ChannelLayout {
  size_t idle;  // ChannelHeader::engine_idle (uint32)
  size_t head;  // the ring's producer index (uint32)
  size_t tail;  // the ring's consumer index (uint32)
  size_t sq;    // sq_capacity CollDesc entries
  size_t comp;  // ncomp completion words (uint64)
  size_t res;   // nres result areas of kInlineBytes
  size_t total;
};

// dpu mode with host-written descriptors (docs/dpu.md, "How the engine
// learns of descriptors"): the engine's inbox, in the engine's memory,
// which the host writes by RDMA only. The producer index the host last
// pushed (uint32) at kHead, then sq_capacity descriptor slots from
// kSlots, slot i holding ring entry i mod sq_capacity. Everything in it
// is untrusted: the engine copies descriptors out before it checks them.
// Ring entries [from, from + n) of a ring of `cap` slots (a power of
// two) lie in at most two runs: from slot from & (cap - 1), then from
// slot 0. The first run's length.
inline uint32_t first_run(uint32_t from, uint32_t n, uint32_t cap) {
  const uint32_t room = cap - (from & (cap - 1));
  return n < room ? n : room;
}

struct InboxLayout {
  static constexpr size_t kHead = 0;
  static constexpr size_t kSlots = 64;
  static size_t bytes(uint32_t sq_capacity) {
    return kSlots + size_t{sq_capacity} * sizeof(CollDesc);
  }
};

// Engine side, dpu mode: told of each completion word once it is written
// in the engine's own copy of the channel, to carry it to the host's.
class CompletionSink {
 public:
  virtual void completed(uint32_t slot) = 0;

 protected:
  ~CompletionSink() = default;
};

class Channel {
 public:
  static ChannelLayout layout(uint32_t sq_capacity, uint32_t ncomp,
                              uint32_t nres = 0);
  // Bytes of the block for a ring of `sq_capacity` (power of two)
  // descriptors, `ncomp` completion words and the result areas of the
  // first `nres` (0 or ncomp) of them.
  static size_t bytes_needed(uint32_t sq_capacity, uint32_t ncomp,
                             uint32_t nres = 0);

  // Lays the channel out in `mem` (64-byte aligned, bytes_needed() long,
  // zero-filled: fresh anonymous or memfd pages, whose completion words
  // are then touched only where used).
  void init(void* mem, uint32_t sq_capacity, uint32_t ncomp, uint32_t nres = 0);
  // Attaches to a block another party laid out; kInvalidParam when the
  // header does not match this build's layout.
  Status attach(void* mem, size_t bytes);

  // Host: queue a descriptor; false when the ring is full.
  bool submit(const CollDesc& d) { return sq_.push(d); }
  // Host: descriptors submitted so far (the ring's producer index).
  uint32_t sq_produced() const { return sq_.produced(); }
  // Engine: the next descriptor or nullptr; done() releases it.
  const CollDesc* next() { return sq_.peek(); }
  void done() { sq_.release(); }
  uint32_t sq_capacity() const { return sq_.capacity(); }
  // Engine: the host wrote ring indices it could not have (a hostile or
  // broken host); nothing more is taken from the ring.
  bool corrupt() const { return sq_.corrupt(); }

  uint32_t ncomp() const { return ncomp_; }
  // Completion slots with a result area: [0, nres()).
  uint32_t nres() const { return nres_; }
  // The result area of a slot below nres(): the engine writes an inline
  // result there before the slot's completion word, the host reads it
  // after.
  unsigned char* result(uint32_t slot) const {
    return res_ + size_t{slot} * kInlineBytes;
  }

  // Engine: about to sleep (true) or awake again (false). Host: whether
  // the engine asked for a doorbell since the last call (clears the
  // request). The engine sets the flag (a seq_cst exchange, or an RDMA
  // write it waits for) before it looks at the ring once more; the host
  // published its descriptor (a release store of the head) before it
  // takes the flag, by a read-modify-write every time: a plain load could
  // be taken before the store is visible (x86 lets a load pass an earlier
  // store), and both sides miss each other. The two exchanges are ordered
  // on the flag: the host's reads the engine's 1, or the engine's
  // (acquire) follows the host's (release, after the head's store) and
  // its look at the ring sees the head. No descriptor is left behind a
  // sleeping engine.
  // (base::kDoorbell: what tests/order/order_doorbell.cc weakens.)
  void set_engine_idle(bool idle) {
    if (base::weakened(base::kDoorbell, 0)) {
      hdr_->engine_idle.store(idle ? 1 : 0, std::memory_order_release);
      return;
    }
    hdr_->engine_idle.exchange(idle ? 1 : 0, std::memory_order_seq_cst);
  }
  bool take_doorbell() {
    if (base::weakened(base::kDoorbell, 1) &&
        hdr_->engine_idle.load(std::memory_order_acquire) == 0)
      return false;
    return hdr_->engine_idle.exchange(0, std::memory_order_seq_cst) != 0;
  }
  // Engine: publish the end of generation `gen` in slot `slot`
  // (result_inline: its result is in the slot's result area).
  void complete(uint32_t slot, uint32_t gen, Status st,
                bool result_inline = false) {
    // E1 pairs with H1: the collective's writes to user memory (or the
    // result area) happen before the host can see it completed.
    comp_[slot].store(completion_word(gen, st, result_inline),
                      base::release_of(base::kCompletion));
    if (sink_ != nullptr) sink_->completed(slot);
  }
  // Engine, dpu mode: this copy of the channel mirrors the host's
  // (firmware_sim/remote_channel.h).
  void set_sink(CompletionSink* s) { sink_ = s; }
  // Descriptors in the ring not yet released by the engine (the engine's
  // thread; in dpu mode it is the producer too).
  uint32_t sq_pending() const { return sq_.size(); }
  // The engine's copy of a completion word, for its sink.
  uint64_t word(uint32_t slot) const {
    return comp_[slot].load(std::memory_order_relaxed);
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
  unsigned char* res_ = nullptr;
  uint32_t ncomp_ = 0;
  uint32_t nres_ = 0;
  CompletionSink* sink_ = nullptr;
};

}  // namespace ucc::off

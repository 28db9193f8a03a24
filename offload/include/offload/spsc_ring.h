// Single-producer single-consumer ring of fixed-size entries.
//
// Free-running 32-bit indices, masked on access; capacity is a power of
// two. Producer and consumer indices live on separate cache lines. The
// ring is pointer-free apart from `slots_`, which each side sets to its own
// mapping of the entry array, so the same layout works in-process and in a
// shared segment mapped at different addresses.
//
// Shared memory is written by the other side, which may be hostile (a
// host process serving a daemon's engine): each side keeps the geometry
// (the mask) and its own index privately, writes its index out for the
// other, and reads only the other's index, which it bounds by the
// capacity. A consumer that sees more entries than the ring holds marks
// the ring corrupt() and takes nothing more.
//
// Threads: exactly one producer thread calls reserve/commit, exactly one
// consumer thread calls peek/release, at any one time.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "platform/base/order.h"

namespace ucc::off {

struct alignas(64) RingIndices {
  alignas(64) std::atomic<uint32_t> head;  // written by the producer
  alignas(64) std::atomic<uint32_t> tail;  // written by the consumer
  alignas(64) uint32_t mask;               // capacity - 1, set at init
};
static_assert(sizeof(RingIndices) == 192);

template <typename T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  // `capacity` must be a power of two; `slots` holds `capacity` entries.
  void init(RingIndices* idx, T* slots, uint32_t capacity) {
    idx_ = idx;
    slots_ = slots;
    mask_ = capacity - 1;
    head_ = tail_ = 0;
    corrupt_ = false;
    idx_->head.store(0, std::memory_order_relaxed);
    idx_->tail.store(0, std::memory_order_relaxed);
    idx_->mask = mask_;  // for the layout; never read back
  }
  // Attaches to a ring another party initialised, with the capacity the
  // attaching side has checked (not read from the ring).
  void attach(RingIndices* idx, T* slots, uint32_t capacity) {
    idx_ = idx;
    slots_ = slots;
    mask_ = capacity - 1;
    head_ = idx_->head.load(std::memory_order_relaxed);
    tail_ = idx_->tail.load(std::memory_order_relaxed);
    corrupt_ = false;
  }

  uint32_t capacity() const { return mask_ + 1; }
  // The consumer saw an index the producer could not have written.
  bool corrupt() const { return corrupt_; }

  // Producer: a slot to write in place, or nullptr when full.
  T* reserve() {
    // C1 pairs with R1: the consumer is done with the slot we reuse.
    uint32_t t = idx_->tail.load(base::acquire_of(base::kRingReuse));
    if (head_ - t > mask_) return nullptr;
    return &slots_[head_ & mask_];
  }
  // Producer: publish the slot returned by reserve().
  void commit() {
    ++head_;
    // P1 pairs with C2: the entry's bytes are visible before the index.
    idx_->head.store(head_, base::release_of(base::kRingPublish));
  }
  // Producer: entries published so far (the index commit() last stored).
  uint32_t produced() const { return head_; }
  bool push(const T& v) {
    T* s = reserve();
    if (s == nullptr) return false;
    *s = v;
    commit();
    return true;
  }

  // Consumer: the oldest entry, or nullptr when empty (or corrupt).
  const T* peek() {
    // C2 pairs with P1.
    uint32_t h = idx_->head.load(base::acquire_of(base::kRingPublish));
    if (h == tail_ || corrupt_) return nullptr;
    if (h - tail_ > mask_ + 1) {
      corrupt_ = true;
      return nullptr;
    }
    return &slots_[tail_ & mask_];
  }
  // Consumer: drop the entry returned by peek().
  void release() {
    ++tail_;
    // R1 pairs with C1: our reads of the slot are done.
    idx_->tail.store(tail_, base::release_of(base::kRingReuse));
  }
  bool pop(T* out) {
    const T* s = peek();
    if (s == nullptr) return false;
    *out = *s;
    release();
    return true;
  }
  // Consumer: entries waiting (at most the capacity).
  uint32_t size() const {
    const uint32_t n =
        idx_->head.load(base::acquire_of(base::kRingPublish)) - tail_;
    return n > mask_ + 1 ? mask_ + 1 : n;
  }

 private:
  RingIndices* idx_ = nullptr;
  T* slots_ = nullptr;
  uint32_t mask_ = 0;
  uint32_t head_ = 0;  // the producer's own
  uint32_t tail_ = 0;  // the consumer's own
  bool corrupt_ = false;
};

}  // namespace ucc::off

// Single-producer single-consumer ring of fixed-size entries.
//
// Free-running 32-bit indices, masked on access; capacity is a power of
// two. Producer and consumer indices live on separate cache lines. The
// ring is pointer-free apart from `slots_`, which each side sets to its own
// mapping of the entry array, so the same layout works in-process and in a
// shared segment mapped at different addresses.
//
// Threads: exactly one producer thread calls reserve/commit, exactly one
// consumer thread calls peek/release, at any one time.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

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
    idx_->head.store(0, std::memory_order_relaxed);
    idx_->tail.store(0, std::memory_order_relaxed);
    idx_->mask = capacity - 1;
  }
  // Attaches to a ring another party initialised.
  void attach(RingIndices* idx, T* slots) {
    idx_ = idx;
    slots_ = slots;
  }

  uint32_t capacity() const { return idx_->mask + 1; }

  // Producer: a slot to write in place, or nullptr when full.
  T* reserve() {
    uint32_t h = idx_->head.load(std::memory_order_relaxed);
    // C1 pairs with R1: the consumer is done with the slot we reuse.
    uint32_t t = idx_->tail.load(std::memory_order_acquire);
    if (h - t > idx_->mask) return nullptr;
    return &slots_[h & idx_->mask];
  }
  // Producer: publish the slot returned by reserve().
  void commit() {
    uint32_t h = idx_->head.load(std::memory_order_relaxed);
    // P1 pairs with C2: the entry's bytes are visible before the index.
    idx_->head.store(h + 1, std::memory_order_release);
  }
  bool push(const T& v) {
    T* s = reserve();
    if (s == nullptr) return false;
    *s = v;
    commit();
    return true;
  }

  // Consumer: the oldest entry, or nullptr when empty.
  const T* peek() const {
    uint32_t t = idx_->tail.load(std::memory_order_relaxed);
    // C2 pairs with P1.
    uint32_t h = idx_->head.load(std::memory_order_acquire);
    if (h == t) return nullptr;
    return &slots_[t & idx_->mask];
  }
  // Consumer: drop the entry returned by peek().
  void release() {
    uint32_t t = idx_->tail.load(std::memory_order_relaxed);
    // R1 pairs with C1: our reads of the slot are done.
    idx_->tail.store(t + 1, std::memory_order_release);
  }
  bool pop(T* out) {
    const T* s = peek();
    if (s == nullptr) return false;
    *out = *s;
    release();
    return true;
  }

  uint32_t size() const {
    return idx_->head.load(std::memory_order_acquire) -
           idx_->tail.load(std::memory_order_acquire);
  }

 private:
  RingIndices* idx_ = nullptr;
  T* slots_ = nullptr;
};

}  // namespace ucc::off

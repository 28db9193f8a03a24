// Memory taken once and handed out in pieces: the one way the library's
// layers hold arrays sized by configuration (STYLE.md: fixed pools, no
// allocation after creation), in place of malloc/free pairs kept by hand.
//
//   Arena     one block for many pieces of different types (a team's
//             queues, instances and tables; a fabric's inboxes and links),
//             sized by running the same sequence of take()s twice: first
//             counting (nothing held), then, after commit(), for real.
//             Released at once, by release() or the destructor.
//   Array<T>  one array of T, for an owner with a single table.
//
// Memory comes zeroed and aligned (64 bytes for the block, or more; each
// piece to its type, or more when asked). Pieces are raw storage: a piece of a
// type that is not trivially constructible is constructed by its owner
// (placement new), and destroyed by it before release. No exceptions: a
// failed allocation is a false from commit()/init().
//
// Threads: one owner. Neither type is copyable; both may move only by
// release and a new commit.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ucc::base {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

class Arena {
 public:
  static constexpr size_t kAlign = 64;
  static constexpr size_t kMapMin = 256 * 1024;

  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena() { release(); }

  // n objects of T (n may be 0), aligned to `align` (at least alignof(T),
  // a power of two; the block is aligned to the largest asked). While
  // counting: nullptr, and the bytes are counted. Committed: the next
  // piece, or nullptr when the pieces taken do not match those counted (a
  // bug of the owner's: checked).
  template <typename T>
  T* take(size_t n, size_t align = alignof(T)) {
    if (align < alignof(T)) align = alignof(T);
    if (base_ == nullptr && align > align_) align_ = align;
    const size_t at = (used_ + align - 1) & ~(align - 1);
    if (n > (SIZE_MAX - at) / sizeof(T)) {
      overflow_ = true;
      return nullptr;
    }
    const size_t end = at + n * sizeof(T);
    if (base_ == nullptr) {
      used_ = end;
      return nullptr;
    }
    if (end > counted_) return nullptr;
    used_ = end;
    return reinterpret_cast<T*>(base_ + at);
  }

  // Takes the bytes counted so far in one block, zeroed, and starts
  // handing them out again from the first piece. A large block (kMapMin
  // and up) is a mapping of its own: fresh pages, zero and untouched
  // until used, whatever malloc's state (calloc hands out recycled heap
  // memory, zeroed by a memset that touches every page, once its mmap
  // threshold has grown), so that a team's tables for ranks it never
  // hears from cost no memory. Smaller blocks, and every block under
  // AddressSanitizer (whose leak checker sees heap blocks only), are
  // calloc's. false: no memory, or a count that overflowed (the arena
  // then counts afresh).
  bool commit() {
    const size_t counted = used_;
    const size_t align = align_;
    const bool overflow = overflow_;
    release();
    if (overflow || counted > SIZE_MAX - 2 * align) return false;
    const size_t bytes = (counted + kAlign - 1) & ~(kAlign - 1);
    const size_t want = (bytes == 0 ? kAlign : bytes) + align - 1;
    void* raw = nullptr;
    if (want >= kMapMin && !kSanitized) {
      raw = mmap(nullptr, want, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (raw == MAP_FAILED) return false;
      mapped_ = want;
    } else {
      raw = calloc(1, want);
      if (raw == nullptr) return false;
    }
    const uintptr_t at = reinterpret_cast<uintptr_t>(raw);
    raw_ = raw;
    base_ = reinterpret_cast<char*>((at + align - 1) & ~uintptr_t{align - 1});
    size_ = bytes == 0 ? kAlign : bytes;
    counted_ = counted;
    return true;
  }

  // Gives the block back; the arena counts from zero again.
  void release() {
    if (mapped_ != 0)
      munmap(raw_, mapped_);
    else
      free(raw_);
    raw_ = nullptr;
    mapped_ = 0;
    base_ = nullptr;
    size_ = used_ = counted_ = 0;
    align_ = kAlign;
    overflow_ = false;
  }

  bool committed() const { return base_ != nullptr; }
  size_t bytes() const { return size_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;        // counted so far, or handed out so far
  size_t counted_ = 0;     // committed: what the counting pass took
  size_t align_ = kAlign;  // the block's: the largest a piece asked
  bool overflow_ = false;
  void* raw_ = nullptr;  // base_ before rounding up to the alignment
  size_t mapped_ = 0;    // raw_'s mapping's bytes, or 0: calloc's
};

template <typename T>
class Array {
 public:
  Array() = default;
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;
  ~Array() { release(); }

  // n zeroed elements (raw storage: see above), aligned to `align`.
  // false: no memory (the array is then empty).
  bool init(size_t n, size_t align = alignof(T)) {
    release();
    arena_.take<T>(n, align);
    if (!arena_.commit()) return false;
    data_ = arena_.take<T>(n, align);
    n_ = n;
    return true;
  }
  void release() {
    arena_.release();
    data_ = nullptr;
    n_ = 0;
  }

  T* data() const { return data_; }
  size_t size() const { return n_; }
  T& operator[](size_t i) const { return data_[i]; }
  explicit operator bool() const { return data_ != nullptr; }

 private:
  Arena arena_;
  T* data_ = nullptr;
  size_t n_ = 0;
};

}  // namespace ucc::base

// The orderings of the lock-free protocols that cross threads or
// processes, one name per labelled acquire/release pair
// (docs/architecture.md, "Memory ordering", has each pair's argument).
// Both ends of a pair take their order from here, so that a check can
// build a protocol with one end of one pair weakened to relaxed and show
// that the check notices (tests/order/): UCC_WEAKEN_PAIR=<Pair> and
// UCC_WEAKEN_END=0 (the release side) or 1 (the acquire side). Library
// builds never define them.
#pragma once

#include <atomic>

#ifndef UCC_WEAKEN_PAIR
#define UCC_WEAKEN_PAIR 0
#endif
#ifndef UCC_WEAKEN_END
#define UCC_WEAKEN_END 0
#endif

namespace ucc::base {

enum OrderPair : int {
  kRingPublish = 1,  // SpscRing P1/C2: an entry before the head index
  kRingReuse = 2,    // SpscRing R1/C1: reads of an entry before its reuse
  kInboxHead = 3,    // inbox P1/C2: a slot and its order entry before head
  kInboxStamp = 4,   // inbox P2/C3: a slot's header and payload before its
                     // stamp
  kInboxReuse = 5,   // inbox R1/C1: reads of a slot before its done count
  kCompletion = 6,   // channel E1/H1: a collective's writes before its
                     // completion word
  kMboxHandoff = 7,  // mailbox W2/R1: a cell's message before its state
  kMboxReuse = 8,    // mailbox R2/W1: reads of a cell before it is empty
  // Not a pair: the doorbell's two sequentially consistent exchanges
  // (offload/channel.h), store-to-load order on both sides. End 0 weakens
  // the engine's to a release store, end 1 the host's to an acquire load
  // first (exchanging only when set). Checked natively, not under
  // ThreadSanitizer (tests/order/order_doorbell.cc).
  kDoorbell = 9,
};

// Whether end `end` of `pair` is the one a check weakened.
constexpr bool weakened(OrderPair pair, int end) {
  return pair == UCC_WEAKEN_PAIR && UCC_WEAKEN_END == end;
}

// The release side of `pair`.
constexpr std::memory_order release_of(OrderPair pair) {
  return weakened(pair, 0) ? std::memory_order_relaxed
                           : std::memory_order_release;
}
// The acquire side of `pair`.
constexpr std::memory_order acquire_of(OrderPair pair) {
  return weakened(pair, 1) ? std::memory_order_relaxed
                           : std::memory_order_acquire;
}

}  // namespace ucc::base

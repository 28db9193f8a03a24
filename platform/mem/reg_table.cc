#include "platform/mem/reg_table.h"

#include <cstring>

namespace ucc::plat {

using base::Status;

Status RegTable::init(uint32_t capacity) {
  if (capacity == 0 || capacity > kMaxCapacity || entries_ != nullptr)
    return Status::kInvalidParam;
  for (int pass = 0; pass < 2; ++pass) {
    entries_ = mem_.take<Entry>(capacity);
    free_ = mem_.take<uint32_t>(capacity);
    order_ = mem_.take<uint32_t>(capacity);
    maxend_ = mem_.take<uint64_t>(capacity);
    if (pass == 0 && !mem_.commit()) return Status::kNoMemory;
  }
  cap_ = capacity;
  slot_bits_ = 0;
  while ((uint64_t{1} << slot_bits_) < capacity) ++slot_bits_;
  // Lowest slots are handed out first (the stack pops from the end).
  for (uint32_t i = 0; i < capacity; ++i) {
    entries_[i].gen = 1;
    free_[i] = capacity - 1 - i;
  }
  nfree_ = capacity;
  n_ = 0;
  return Status::kOk;
}

void RegTable::fini() {
  mem_.release();
  entries_ = nullptr;
  free_ = nullptr;
  order_ = nullptr;
  maxend_ = nullptr;
  cap_ = n_ = nfree_ = slot_bits_ = 0;
}

uint32_t RegTable::slot_of(uint32_t key) const {
  if (key == 0 || cap_ == 0) return UINT32_MAX;
  uint32_t slot = key & ((uint32_t{1} << slot_bits_) - 1);
  if (slot >= cap_) return UINT32_MAX;
  const Entry& e = entries_[slot];
  return e.used && key_of(slot) == key ? slot : UINT32_MAX;
}

uint32_t RegTable::upper(uint64_t addr) const {
  uint32_t lo = 0, hi = n_;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (entries_[order_[mid]].base <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

void RegTable::rescan(uint32_t from) {
  uint64_t m = from == 0 ? 0 : maxend_[from - 1];
  for (uint32_t i = from; i < n_; ++i) {
    uint64_t e = entries_[order_[i]].end;
    if (e > m) m = e;
    maxend_[i] = m;
  }
}

uint32_t RegTable::insert(uint64_t base, uint64_t len, uint32_t rkey) {
  uint64_t end;
  if (len == 0 || __builtin_add_overflow(base, len, &end) || nfree_ == 0)
    return 0;
  uint32_t slot = free_[--nfree_];
  Entry& e = entries_[slot];
  e.base = base;
  e.end = end;
  e.rkey = rkey;
  e.used = true;
  // After entries with the same base: equal bases keep insertion order.
  uint32_t pos = upper(base);
  memmove(&order_[pos + 1], &order_[pos], sizeof(uint32_t) * (n_ - pos));
  order_[pos] = slot;
  ++n_;
  rescan(pos);
  return key_of(slot);
}

bool RegTable::remove(uint32_t key) {
  uint32_t slot = slot_of(key);
  if (slot == UINT32_MAX) return false;
  Entry& e = entries_[slot];
  // Entries with this base sit just below upper(base).
  uint32_t pos = upper(e.base);
  while (order_[pos - 1] != slot) --pos;
  --pos;
  memmove(&order_[pos], &order_[pos + 1], sizeof(uint32_t) * (n_ - pos - 1));
  --n_;
  rescan(pos);
  e.used = false;
  ++removals_;
  const uint32_t gen_max = UINT32_MAX >> slot_bits_;
  e.gen = e.gen == gen_max ? 1 : e.gen + 1;
  free_[nfree_++] = slot;
  return true;
}

bool RegTable::contains(uint32_t key, uint64_t addr, uint64_t len) const {
  uint32_t rkey;
  if (key != 0) return lookup(key, addr, len, &rkey);
  uint64_t end;
  if (__builtin_add_overflow(addr, len, &end)) return false;
  // Every entry at positions < upper(addr) starts at or below addr.
  uint32_t pos = upper(addr);
  return pos != 0 && maxend_[pos - 1] >= end;
}

bool RegTable::lookup(uint32_t key, uint64_t addr, uint64_t len,
                      uint32_t* rkey) const {
  uint64_t end;
  if (__builtin_add_overflow(addr, len, &end)) return false;
  if (key != 0) {
    uint32_t slot = slot_of(key);
    if (slot == UINT32_MAX) return false;
    const Entry& e = entries_[slot];
    *rkey = e.rkey;
    return e.base <= addr && end <= e.end;
  }
  // The entry itself: walk down from the last base at or below addr while
  // some entry below can still reach `end` (maxend_ says so).
  for (uint32_t pos = upper(addr); pos != 0 && maxend_[pos - 1] >= end;
       --pos) {
    const Entry& e = entries_[order_[pos - 1]];
    if (e.end >= end) {
      *rkey = e.rkey;
      return true;
    }
  }
  return false;
}

}  // namespace ucc::plat

// Memory registrations of one host process, as an engine outside that
// process (firmware_sim, later a DPU) keeps them: entries (key, base,
// length) of host virtual memory the host allowed the engine to reach.
// Every cross-process access to host memory is checked against this table
// before a byte is touched (MemAccess, mem_access.h).
//
// Words:
//   entry     one registration [base, base + len), len > 0, not wrapping
//             past the top of the address space.
//   key       what insert() returns and a BufRef's `key` names: the entry's
//             slot in the low `slot_bits` bits, a per-slot generation above
//             them. A removed entry's key stops matching at once, and a
//             reused slot answers only to its new key (until the
//             generation wraps: 2^(32 - slot_bits) reuses of one slot).
//             Keys are never 0.
//   key 0     the implicit registration: a range is accepted when it lies
//             inside any one entry.
//
// Choice of structure: lookups happen on every access, registrations
// rarely (team or buffer setup), so lookups are cheap and updates may
// shift arrays. By key: O(1) (slot index and generation compare). For
// key 0: the entries' slots are kept sorted by base, with a running
// maximum of the entries' ends alongside; a binary search finds the last
// entry starting at or below the address, and the range is inside some
// entry iff the largest end among the entries up to there reaches the
// range's end (all of them start at or below it). Overlapping entries are
// therefore allowed (a buffer may be registered twice, e.g. by two teams);
// a range that straddles two entries without lying inside one of them is
// rejected. insert() and remove() are O(n) (a memmove of the sorted index
// and a rescan of the running maximum): about 16 KiB at 4096 entries.
//
// A range of length 0 at addr is inside an entry when base <= addr <= end:
// an empty range touches nothing, but it must still name the entry.
//
// Memory: init() takes all of it; insert/remove/contains never allocate.
// Threads: not synchronised. One thread uses a table: the engine thread
// that serves the host process (it handles the host's registration
// requests between progress passes).
#pragma once

#include <cstdint>

#include "platform/base/arena.h"
#include "platform/base/status.h"

namespace ucc::plat {

using base::Status;

class RegTable {
 public:
  static constexpr uint32_t kDefaultCapacity = 4096;
  static constexpr uint32_t kMaxCapacity = 1u << 20;

  RegTable() = default;
  RegTable(const RegTable&) = delete;
  RegTable& operator=(const RegTable&) = delete;
  ~RegTable() { fini(); }

  // Takes memory for `capacity` entries (1..kMaxCapacity). kInvalidParam
  // for a capacity out of range or a second init, kNoMemory.
  Status init(uint32_t capacity = kDefaultCapacity);
  // Frees everything; the table is empty and uninitialised again.
  void fini();

  // Registers [base, base + len). Returns the new entry's key, or 0 when
  // len is 0, the range wraps past 2^64 - 1, or the table is full (or not
  // initialised). `rkey`: the host's remote key of the range, where the
  // engine reaches it by RDMA (0 otherwise).
  uint32_t insert(uint64_t base, uint64_t len, uint32_t rkey = 0);
  // Removes the entry named by `key`; false when no entry has that key.
  bool remove(uint32_t key);
  // Whether [addr, addr + len) lies inside the entry named by `key`, or
  // for key 0 inside any one entry. false when addr + len wraps.
  bool contains(uint32_t key, uint64_t addr, uint64_t len) const;
  // contains(), and the remote key of an entry that holds the range.
  bool lookup(uint32_t key, uint64_t addr, uint64_t len,
              uint32_t* rkey) const;

  uint32_t size() const { return n_; }
  uint32_t capacity() const { return cap_; }
  // Entries removed so far: a range found inside the table stays inside
  // while this is unchanged (what the engine's cache of validated
  // descriptors relies on).
  uint64_t removals() const { return removals_; }

 private:
  struct Entry {
    uint64_t base;
    uint64_t end;  // exclusive; base < end
    uint32_t gen;  // >= 1; bumped when the entry is removed
    uint32_t rkey;
    bool used;
  };

  uint32_t key_of(uint32_t slot) const {
    return (entries_[slot].gen << slot_bits_) | slot;
  }
  // The slot of a live entry named by `key`, or UINT32_MAX.
  uint32_t slot_of(uint32_t key) const;
  // First position in order_ whose entry's base is > addr.
  uint32_t upper(uint64_t addr) const;
  // Recomputes maxend_ from position `from` on.
  void rescan(uint32_t from);

  base::Arena mem_;             // the four tables below
  Entry* entries_ = nullptr;    // by slot
  uint64_t removals_ = 0;
  uint32_t* free_ = nullptr;    // stack of free slots
  uint32_t* order_ = nullptr;   // live slots sorted by base
  uint64_t* maxend_ = nullptr;  // maxend_[i]: largest end in order_[0..i]
  uint32_t cap_ = 0;
  uint32_t n_ = 0;      // live entries
  uint32_t nfree_ = 0;  // entries in free_
  uint32_t slot_bits_ = 0;
};

}  // namespace ucc::plat

// The sending half of the linear exchanges (exchange_linear.cc,
// reduce_scatter_linear.cc): in round j, segment j of src block p (the
// run's block tables) goes straight to rank p, for every peer p whose
// block has that many segments, each as soon as p's inbox has room; the
// next round starts once all of this one has left, whatever the receiving
// half is doing (run_ahead). Also which peers a round concerns (due()),
// for the receiving half too.
#pragma once

#include <cstdint>
#include <cstring>

#include "device/coll/streams.h"
#include "device/run/coll_run.h"
#include "device/run/patterns.h"

namespace ucc::dev {

struct RoundSends {
  // Set positions this state can track.
  static constexpr uint32_t kMaxRanks = 1024;
  static constexpr uint32_t kWords = kMaxRanks / 64;

  uint32_t round = 0;     // the round being sent
  uint32_t left = 0;      // sends of this round still to go
  uint64_t sent[kWords];  // bit p: this round's send to p done, or none

  static bool has(const uint64_t* m, uint32_t p) {
    return ((m[p / 64] >> (p % 64)) & 1) != 0;
  }
  static void set(uint64_t* m, uint32_t p) {
    m[p / 64] |= uint64_t{1} << (p % 64);
  }
  // Bytes of src block p.
  static uint64_t bytes(const CollRun& run, uint32_t p) {
    return run.src_cnt[run.tab(p)] * run.esize;
  }
  bool done(uint32_t p) const { return has(sent, p); }

  // Marks in m every position with nothing due in round `round` (this
  // rank, and peers whose block of block_bytes(run, p) bytes has fewer
  // segments) and returns how many are due.
  template <typename BlockBytes>
  static uint32_t due(const CollRun& run, uint32_t round, uint64_t* m,
                      BlockBytes block_bytes) {
    memset(m, 0, sizeof(uint64_t) * ((run.size + 63) / 64));
    uint32_t n = 0;
    for (uint32_t p = 0; p < run.size; ++p) {
      if (p != run.rank && round < pat::nmsgs(block_bytes(run, p), run.slot))
        ++n;
      else
        set(m, p);
    }
    return n;
  }

  // Round r's sends: to every peer whose block reaches that far.
  void begin(const CollRun& run, uint32_t r) {
    round = r;
    left = due(run, r, sent, bytes);
  }

  // Sends what has room, from the next rank up (the one that takes from
  // us first), and goes on to the next round, up to `rounds`, each time
  // all of one has left; a full inbox is tried again on the next call.
  // kOk, or the error of a copy.
  Status run_ahead(CollRun& run, uint32_t rounds) {
    for (;;) {
      Status st = push(run);
      if (failed(st) || left != 0 || round + 1 >= rounds) return st;
      begin(run, round + 1);
    }
  }

 private:
  Status push(CollRun& run) {
    const uint64_t at = uint64_t{round} * run.slot;
    for (uint32_t i = 1; i < run.size && left != 0; ++i) {
      const uint32_t p = pat::mod(int64_t{run.rank} + i, run.size);
      if (has(sent, p)) continue;
      void* out = run.reserve(p);
      if (out == nullptr) continue;
      const uint32_t len = msg_len(bytes(run, p), run.slot, round);
      Status st = run.copy_in(out, Buf::kSrc,
                              run.src_off[run.tab(p)] * run.esize + at, len);
      if (failed(st)) return st;
      run.commit(p, len);
      set(sent, p);
      --left;
    }
    return Status::kOk;
  }
};

}  // namespace ucc::dev

// Allgather by Bruck's algorithm: the latency algorithm for small blocks
// on wide teams, ceil(log2 n) rounds where the ring takes n - 1 steps.
//
// After round k rank r holds the 2^(k+1) blocks r, r + 1, ... (mod n),
// each already at its place in dst. In round k it sends the first
// c = min(2^k, n - 2^k) of the blocks it holds, r .. r + c - 1, to
// rank r - 2^k, and receives blocks r + 2^k .. r + 2^k + c - 1 from rank
// r + 2^k: what that rank sends in the same round. The two ranges are
// disjoint (2^k + c <= n), so a round moves bytes no other stream of it
// touches, and Bruck's final rotation is not needed: the blocks land
// where they belong. A range that passes rank n - 1 wraps to rank 0: it
// travels as two streams, the part up to n - 1 first, and the receiver,
// which computes the same range, splits it alike.
//
// In round k the partners are r - 2^k and r + 2^k; 2^k differs from
// round to round modulo n, so no two rounds share a sender and a
// receiver, and the streams of one pair never mix. Every rank sends and
// receives in every round, so bounded inboxes cannot deadlock: each
// round's sends are received in that round.
//
// Blocks come from the run's block tables (allgather: the same count per
// rank, in rank order), so a range of blocks is one byte range of dst.
#include "device/coll/algorithms.h"
#include "device/coll/streams.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

struct Bruck {
  uint32_t dist = 1;                 // 2^k of the current round
  uint8_t tx_part = 0, rx_part = 0;  // the range's part under way (0, 1)
  bool started = false;
  SendStream tx;
  RecvStream rx;

  // Byte offset and length in dst of blocks [a, a + c), which must not
  // pass block n - 1.
  void span(const CollRun& run, uint32_t a, uint32_t c, uint64_t* off,
            uint64_t* len) const {
    const uint32_t first = run.tab(a), last = run.tab(a + c - 1);
    *off = run.dst_off[first] * run.esize;
    *len = (run.dst_off[last] + run.dst_cnt[last] - run.dst_off[first]) *
           run.esize;
  }
  // Part `part` of the range of c blocks from block a (mod n): its bytes,
  // or false where the range has no such part (it does not wrap).
  bool part_of(const CollRun& run, uint32_t a, uint32_t c, uint8_t part,
               uint64_t* off, uint64_t* len) const {
    const uint32_t n = run.size;
    const uint32_t head = a + c <= n ? c : n - a;  // blocks before the wrap
    if (part == 0) {
      span(run, a, head, off, len);
      return true;
    }
    if (head == c) return false;
    span(run, 0, c - head, off, len);
    return true;
  }

  Status start(CollRun& run) {
    const uint32_t r = run.tab(run.rank);
    // Our block goes to its place in dst (a no-op in place).
    Status st =
        run.copy_uu(Buf::kDst, run.dst_off[r] * run.esize, Buf::kSrc,
                    run.src_off[r] * run.esize, run.dst_cnt[r] * run.esize);
    if (failed(st)) return st;
    return progress(run);
  }

  Status progress(CollRun& run) {
    const uint32_t n = run.size;
    while (dist < n) {
      const uint32_t c = dist < n - dist ? dist : n - dist;
      const uint32_t to = pat::mod(int64_t{run.rank} - dist, n);
      const uint32_t from = pat::mod(int64_t{run.rank} + dist, n);
      if (!started) {
        uint64_t off = 0, len = 0;
        part_of(run, run.rank, c, 0, &off, &len);
        tx.init(run, to, Buf::kDst, off, len, true);
        part_of(run, from, c, 0, &off, &len);
        rx.init(run, from, Buf::kDst, off, len, false, true);
        tx_part = rx_part = 0;
        started = true;
      }
      Status st = tx.progress(run);
      if (failed(st)) return st;
      uint64_t off = 0, len = 0;
      if (tx.finished() && tx_part == 0 &&
          part_of(run, run.rank, c, 1, &off, &len)) {
        tx_part = 1;
        tx.init(run, to, Buf::kDst, off, len, true);
        st = tx.progress(run);
        if (failed(st)) return st;
      }
      st = rx.progress(run, UINT32_MAX);
      if (failed(st)) return st;
      if (rx.finished() && rx_part == 0 &&
          part_of(run, from, c, 1, &off, &len)) {
        rx_part = 1;
        rx.init(run, from, Buf::kDst, off, len, false, true);
        st = rx.progress(run, UINT32_MAX);
        if (failed(st)) return st;
      }
      // A finished part 0 has started part 1 above, where there is one.
      if (!tx.finished() || !rx.finished()) return Status::kInProgress;
      started = false;
      dist <<= 1;
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kAllgatherBruck = make_alg<Bruck>();

}  // namespace ucc::dev

// The pipelined ring: the bandwidth algorithm for allreduce, allgather and
// reduce-scatter.
//
// Words: the vector is cut into n "blocks", one per rank; each block is cut
// into the same number of "segments" (at most one message each), and
// segment k of every block forms "column" k. Columns are processed one
// after another; within a column each rank first sends one segment of its
// own ("injection"), then handles the 2n-2 (allreduce) or n-1 segments that
// arrive from its left neighbour, each of which may produce one segment
// towards its right neighbour:
//
//   reduce-scatter part  segment of block b arrives; combine with our input
//                        block b; pass the sum on, until the sum is complete
//                        (allreduce keeps it as result and starts the
//                        allgather part with it; reduce-scatter stores it)
//   allgather part       segment of a finished block arrives; store it; pass
//                        it on unless our right neighbour already has it
//
// Each rank has at most one segment more sent than received per column,
// so any inbox with >= 2 slots keeps the ring moving (no deadlock), and
// every segment crosses every link once per part: the bandwidth optimum.
// The blocks come from the run's block tables: balanced for allreduce
// (sizes differ by at most one element, so any count works, including
// counts smaller than n), the user's counts for reduce_scatterv.
//
// Steps. An allgather whose largest block is kStepsMin bytes or more, on a
// team spanning hosts, runs the same ring block by block instead: in step
// s (0..n-2) a rank sends block rank - s of dst to its right neighbour and
// receives block rank - s - 1 from its left one into its place in dst,
// each as one stream (streams.h). A block that moves whole can go
// one-sided over a network link (read straight from the neighbour's dst
// into ours, no slot and no CPU copy), which a column's segments cannot;
// each link still carries n - 1 blocks in turn. Every rank of the team
// takes the same choice (the block sizes and the host count are the same
// everywhere), so both ends of a link agree on the messages. (Only the
// gathers: a reduction's segment is combined as it arrives, which
// one-sided reads into a user buffer would not save a copy of.)
#include "device/coll/algorithms.h"
#include "device/coll/streams.h"
#include "device/run/links.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

enum class RingMode : uint8_t { kAllreduce, kAllgather, kReduceScatter };

// The smallest largest block of an allgather by steps.
inline constexpr uint64_t kStepsMin = 256 * 1024;

template <RingMode kMode>
struct Ring {
  uint32_t nseg = 0;      // segments per block
  uint32_t k = 0;         // current column
  uint32_t j = 0;         // arrivals handled in the current column
  uint32_t arrivals = 0;  // arrivals per column
  uint32_t left = 0, right = 0;
  bool injected = false;
  // By steps: the current one (of n - 1) and its two streams.
  bool by_steps = false;
  uint32_t step = 0;
  SendStream tx;
  RecvStream rx;

  // Element offset and count of block b of the vector that travels: the
  // input blocks when reducing, the output blocks when gathering (the run's
  // block tables, blocks.h).
  uint64_t block_off(const CollRun& run, uint32_t b) const {
    const uint32_t i = run.tab(b);
    return kMode == RingMode::kAllgather ? run.dst_off[i] : run.src_off[i];
  }
  uint64_t block_cnt(const CollRun& run, uint32_t b) const {
    const uint32_t i = run.tab(b);
    return kMode == RingMode::kAllgather ? run.dst_cnt[i] : run.src_cnt[i];
  }
  // Byte offset (in the vector) and length of segment k of block b.
  void seg(const CollRun& run, uint32_t b, uint64_t* off, uint32_t* len) const {
    uint64_t bc = block_cnt(run, b);
    *off = (block_off(run, b) + pat::block_offset(bc, nseg, k)) * run.esize;
    *len = static_cast<uint32_t>(pat::block_count(bc, nseg, k) * run.esize);
  }
  uint32_t blk(const CollRun& run, int64_t v) const {
    return pat::mod(v, run.size);
  }

  Status start(CollRun& run) {
    uint32_t n = run.size;
    uint64_t max_block = 0;
    for (uint32_t b = 0; b < n; ++b)
      if (block_cnt(run, b) > max_block) max_block = block_cnt(run, b);
    uint64_t per_msg = run.slot / run.esize;
    nseg = static_cast<uint32_t>(
        max_block == 0 ? 1 : (max_block + per_msg - 1) / per_msg);
    left = blk(run, int64_t{run.rank} - 1);
    right = blk(run, int64_t{run.rank} + 1);
    arrivals = kMode == RingMode::kAllreduce ? 2 * n - 2 : n - 1;
    Status st = Status::kOk;
    const uint32_t r = run.tab(run.rank);
    if (kMode == RingMode::kAllgather) {
      // Our contribution goes to its place in dst (a no-op in place).
      st = run.copy_uu(Buf::kDst, run.dst_off[r] * run.esize, Buf::kSrc,
                       run.src_off[r] * run.esize, run.dst_cnt[r] * run.esize);
    } else if (n == 1) {
      st = run.copy_uu(Buf::kDst, run.dst_off[0] * run.esize, Buf::kSrc,
                       run.src_off[0] * run.esize, run.src_cnt[0] * run.esize);
      if (!failed(st))
        st = run.finish_avg(Buf::kDst, run.dst_off[0] * run.esize,
                            run.src_cnt[0]);
    }
    if (failed(st) || n == 1) return st;
    if (kMode == RingMode::kAllgather && max_block * run.esize >= kStepsMin &&
        run.port->links().nodes().nnodes > 1) {
      by_steps = true;
      start_step(run);
    }
    return progress(run);
  }

  // Step `step`'s streams: block rank - step out, rank - step - 1 in.
  void start_step(const CollRun& run) {
    const uint32_t out = run.tab(blk(run, int64_t{run.rank} - step));
    const uint32_t in = run.tab(blk(run, int64_t{run.rank} - step - 1));
    tx.init(run, right, Buf::kDst, run.dst_off[out] * run.esize,
            run.dst_cnt[out] * run.esize, true);
    rx.init(run, left, Buf::kDst, run.dst_off[in] * run.esize,
            run.dst_cnt[in] * run.esize, false, true);
  }

  Status progress_steps(CollRun& run) {
    for (;;) {
      Status st = tx.progress(run);
      if (failed(st)) return st;
      Status sr = rx.progress(run);
      if (failed(sr)) return sr;
      if (st != Status::kOk || sr != Status::kOk) return Status::kInProgress;
      if (++step == run.size - 1) return Status::kOk;
      start_step(run);
    }
  }

  // Where a segment of our finished reduce-scatter block goes in dst.
  uint64_t rs_result_off(const CollRun& run, uint64_t vec_off) const {
    const uint32_t r = run.tab(run.rank);
    return run.dst_off[r] * run.esize + (vec_off - run.src_off[r] * run.esize);
  }

  Status inject(CollRun& run) {
    void* out = run.reserve(right);
    if (out == nullptr) return Status::kInProgress;
    uint32_t b = kMode == RingMode::kReduceScatter
                     ? blk(run, int64_t{run.rank} - 1)
                     : run.rank;
    uint64_t off;
    uint32_t len;
    seg(run, b, &off, &len);
    Status st = run.copy_in(
        out, kMode == RingMode::kAllgather ? Buf::kDst : Buf::kSrc, off, len);
    if (failed(st)) return st;
    run.commit(right, len);
    return Status::kOk;
  }

  // Handles arrival j of the current column.
  Status arrive(CollRun& run) {
    uint32_t n = run.size;
    bool gather_part;
    uint32_t b;
    uint32_t t = 0;  // index within the part
    if (kMode == RingMode::kAllreduce) {
      gather_part = j >= n - 1;
      t = gather_part ? j - (n - 1) : j;
      b = gather_part ? blk(run, int64_t{run.rank} - t)
                      : blk(run, int64_t{run.rank} - 1 - t);
    } else if (kMode == RingMode::kAllgather) {
      gather_part = true;
      t = j;
      b = blk(run, int64_t{run.rank} - 1 - t);
    } else {
      gather_part = false;
      t = j;
      b = blk(run, int64_t{run.rank} - 2 - t);
    }
    uint64_t off;
    uint32_t len;
    seg(run, b, &off, &len);
    uint64_t cnt = len / run.esize;
    Status err = Status::kOk;
    const void* in = run.peek(left, len, &err);
    if (in == nullptr) return failed(err) ? err : Status::kInProgress;

    bool last_of_part = t == n - 2;
    bool forward =
        !(last_of_part && (gather_part || kMode == RingMode::kReduceScatter));
    void* out = nullptr;
    if (forward) {
      out = run.reserve(right);
      if (out == nullptr) return Status::kInProgress;
    }
    Status st = Status::kOk;
    if (gather_part) {
      st = run.copy_out(Buf::kDst, off, in, len);
      if (forward) memcpy(out, in, len);
    } else if (!last_of_part) {
      st = run.reduce_in(out, in, Buf::kSrc, off, cnt);
    } else if (kMode == RingMode::kAllreduce) {
      // The block is complete: keep it and start passing it round.
      st = run.reduce_in(out, in, Buf::kSrc, off, cnt);
      run.finish_avg_eng(out, cnt);
      if (!failed(st)) st = run.copy_out(Buf::kDst, off, out, len);
    } else {
      uint64_t doff = rs_result_off(run, off);
      st = run.reduce_out(Buf::kDst, doff, in, Buf::kSrc, off, cnt);
      if (!failed(st)) st = run.finish_avg(Buf::kDst, doff, cnt);
    }
    if (failed(st)) return st;
    if (forward) run.commit(right, len);
    run.release(left);
    return Status::kOk;
  }

  Status progress(CollRun& run) {
    if (kMode == RingMode::kAllgather && by_steps) return progress_steps(run);
    while (k < nseg) {
      if (!injected) {
        Status st = inject(run);
        if (st != Status::kOk) return st;
        injected = true;
      }
      while (j < arrivals) {
        Status st = arrive(run);
        if (st != Status::kOk) return st;
        ++j;
      }
      j = 0;
      injected = false;
      ++k;
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kAllreduceRing = make_alg<Ring<RingMode::kAllreduce>>();
const AlgInfo kAllgatherRing = make_alg<Ring<RingMode::kAllgather>>();
const AlgInfo kReduceScatterRing = make_alg<Ring<RingMode::kReduceScatter>>();
// The same ring over the blocks the user's counts give.
const AlgInfo kReduceScattervRing = make_alg<Ring<RingMode::kReduceScatter>>();

}  // namespace ucc::dev

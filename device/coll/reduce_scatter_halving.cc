// Reduce-scatter by recursive halving: the latency algorithm for wide
// teams, log2 n rounds where the ring takes n - 1 steps, and the same
// bytes in all (half the vector, then a quarter, ...: n - 1 blocks per
// rank, as the ring moves).
//
// With p = n a power of two, virtual rank v starts with the window of all
// p blocks. With mask m = p/2, p/4, ..., 1 it keeps the half of its
// aligned window of 2m blocks that contains block v, sends the other half
// to partner v ^ m, and combines the partner's copy of its own half with
// its partial sums. After mask 1 it holds block v, reduced over all ranks.
// The sent and kept halves are disjoint, so a round's send and receive
// need no ordering between them, and each round ends before the next
// reads what it combined.
//
// Where partial sums live. dst holds one block and src is the user's, so
// the sums go to the run's scratch (CollRun::scratch, engine memory taken
// at team creation on wide teams): the first round reads the kept half
// from src and writes the sums to scratch, later ones combine there, and
// the last writes the rank's block to dst. The algorithm runs only where
// the whole vector fits (fits(), which the selection asks): a fold's
// receiver holds all of it.
//
// Non-powers of two fold as recursive doubling does (pat::rd_role): each
// even rank of the first 2 rem hands its whole src to the odd one above,
// which combines it with its own into scratch and takes virtual rank
// (r - 1) / 2, owning the blocks of both (virtual rank v owns real blocks
// first(v) .. first(v + 1) - 1, contiguous and in order, so a window of
// virtual ranks is a range of real blocks); at the end it sends the
// folded rank its block. Every sum is built along one fixed chain, so a
// result is the same from run to run. AVG divides each block once, by
// the rank that completes it.
#include <cstring>

#include "device/coll/algorithms.h"
#include "device/coll/streams.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

struct ReduceScatterHalving {
  enum class Phase : uint8_t { kFold, kHalve, kUnfold, kDone };
  // What a step sends: nothing, src bytes (the stream), or partial sums
  // from scratch; and what it receives: nothing, sums to combine (with
  // src's blocks where there are none yet), or the block into dst.
  enum class Out : uint8_t { kNone, kSrc, kSums };
  enum class In : uint8_t { kNone, kSrcSums, kSums, kDst };

  Phase phase = Phase::kFold;
  pat::RdRole role{};
  uint32_t p = 0, rem = 0;
  uint32_t mask = 0;
  uint64_t block = 0;  // bytes per block
  // Scratch holds the partial sums of real blocks from `base` on (block t
  // at (t - base) * block); none yet while !summed.
  bool summed = false;
  uint32_t base = 0;
  // The current step (started: its fields are set).
  bool started = false;
  Out out = Out::kNone;
  In in = In::kNone;
  uint32_t peer = 0;
  uint32_t out_t = 0, in_t = 0;  // first real block sent, received
  uint64_t in_bytes = 0, out_bytes = 0;
  uint32_t sent = 0, nsend = 0, got = 0, nrecv = 0;  // nsend: Out::kSums
  SendStream tx;                                     // Out::kSrc

  uint32_t first(uint32_t v) const { return v < rem ? 2 * v : v + rem; }
  char* sums(const CollRun& run, uint32_t t) const {
    return static_cast<char*>(run.scratch) + uint64_t{t - base} * block;
  }
  uint64_t src_at(const CollRun& run, uint32_t t) const {
    return run.src_off[run.tab(t)] * run.esize;
  }
  uint64_t dst_at(const CollRun& run) const {
    return run.dst_off[run.tab(run.rank)] * run.esize;
  }

  // The whole vector, n blocks of `bytes`, fits the scratch.
  static bool fits(const off::CollDesc&, uint64_t bytes, uint32_t n,
                   uint64_t scratch) {
    uint64_t all = 0;
    return !__builtin_mul_overflow(bytes, uint64_t{n}, &all) && all <= scratch;
  }

  Status start(CollRun& run) {
    const uint32_t n = run.size, me = run.tab(run.rank);
    block = run.src_cnt[me] * run.esize;
    if (run.dst_cnt[me] * run.esize != block) return Status::kInvalidParam;
    if (block == 0) return Status::kOk;
    if (!fits(*run.d, block, n, run.scratch_bytes))
      return Status::kNotSupported;  // selection keeps us from here
    role = pat::rd_role(run.rank, n);
    p = pat::pow2_floor(n);
    rem = n - p;
    mask = p / 2;
    return progress(run);
  }

  // Sets the step up: `o` of out_bytes from real block ot to `to`, `i` of
  // in_bytes for real blocks from it on from `to`.
  void begin(CollRun& run, uint32_t to, Out o, uint32_t ot, uint64_t obytes,
             In i, uint32_t it, uint64_t ibytes) {
    peer = to;
    out = o;
    out_t = ot;
    out_bytes = obytes;
    in = i;
    in_t = it;
    in_bytes = ibytes;
    sent = got = 0;
    nsend = o == Out::kSums ? pat::nmsgs(obytes, run.slot) : 0;
    nrecv = i == In::kNone ? 0 : pat::nmsgs(ibytes, run.slot);
    if (o == Out::kSrc) tx.init(run, to, Buf::kSrc, src_at(run, ot), obytes);
    started = true;
  }

  // Moves the step on; kOk once both its halves are done.
  Status step(CollRun& run) {
    if (out == Out::kSrc) {
      Status st = tx.progress(run);
      if (failed(st)) return st;
    }
    while (sent < nsend) {
      void* m = run.reserve(peer);
      if (m == nullptr) break;
      const uint32_t len = msg_len(out_bytes, run.slot, sent);
      memcpy(m, sums(run, out_t) + uint64_t{sent} * run.slot, len);
      run.commit(peer, len);
      ++sent;
    }
    while (got < nrecv) {
      const uint32_t len = msg_len(in_bytes, run.slot, got);
      Status err = Status::kOk;
      const void* m = run.peek(peer, len, &err);
      if (m == nullptr) {
        if (failed(err)) return err;
        break;
      }
      const uint64_t at = uint64_t{got} * run.slot;
      const uint64_t cnt = len / run.esize;
      Status st;
      if (in == In::kSrcSums)  // the first sums: they start at in_t
        st = run.reduce_in(static_cast<char*>(run.scratch) + at, m, Buf::kSrc,
                           src_at(run, in_t) + at, cnt);
      else if (in == In::kSums)
        st = run.combine(sums(run, in_t) + at, sums(run, in_t) + at, m, cnt);
      else
        st = run.copy_out(Buf::kDst, dst_at(run) + at, m, len);
      if (failed(st)) return st;
      run.release(peer);
      ++got;
    }
    const bool out_done = out == Out::kSrc ? tx.finished() : sent == nsend;
    if (!out_done || got < nrecv) return Status::kInProgress;
    started = false;
    if (in == In::kSrcSums) {
      summed = true;
      base = in_t;
    }
    return Status::kOk;
  }

  UCC_HOT Status progress(CollRun& run) {
    Status st = Status::kOk;
    switch (phase) {
      case Phase::kFold:
        if (role.partner < run.size) {
          // The folded rank's whole src, combined by its partner.
          if (!started) {
            const uint64_t all = block * run.size;
            if (role.folded)
              begin(run, role.partner, Out::kSrc, 0, all, In::kNone, 0, 0);
            else
              begin(run, role.partner, Out::kNone, 0, 0, In::kSrcSums, 0, all);
          }
          st = step(run);
          if (st != Status::kOk) return st;
        }
        phase = role.folded ? Phase::kUnfold : Phase::kHalve;
        return progress(run);
      case Phase::kHalve:
        while (mask != 0) {
          if (!started) {
            const uint32_t v = role.vrank, partner = v ^ mask;
            const uint32_t keep = v & ~(mask - 1);
            const uint32_t give = partner & ~(mask - 1);
            const uint32_t k0 = first(keep), k1 = first(keep + mask);
            const uint32_t g0 = first(give), g1 = first(give + mask);
            begin(run, pat::rd_real(partner, run.size),
                  summed ? Out::kSums : Out::kSrc, g0,
                  uint64_t{g1 - g0} * block, summed ? In::kSums : In::kSrcSums,
                  k0, uint64_t{k1 - k0} * block);
          }
          st = step(run);
          if (st != Status::kOk) return st;
          mask >>= 1;
        }
        st = finish(run);
        if (failed(st)) return st;
        phase = Phase::kUnfold;
        [[fallthrough]];
      case Phase::kUnfold:
        if (role.partner < run.size) {
          // The folded rank's complete block, from its partner.
          if (!started) {
            if (role.folded)
              begin(run, role.partner, Out::kNone, 0, 0, In::kDst, 0, block);
            else
              begin(run, role.partner, Out::kSums, role.partner, block,
                    In::kNone, 0, 0);
          }
          st = step(run);
          if (st != Status::kOk) return st;
        }
        phase = Phase::kDone;
        [[fallthrough]];
      case Phase::kDone:
        break;
    }
    return Status::kOk;
  }

  // Our block (and a folded rank's, which we hold too) is complete: AVG
  // divides it, and ours goes to dst.
  Status finish(CollRun& run) {
    const uint64_t cnt = block / run.esize;
    if (!summed) {  // one rank: nothing combined
      Status st = run.copy_uu(Buf::kDst, dst_at(run), Buf::kSrc,
                              src_at(run, run.rank), block);
      if (failed(st)) return st;
      return run.finish_avg(Buf::kDst, dst_at(run), cnt);
    }
    run.finish_avg_eng(sums(run, run.rank), cnt);
    if (role.partner < run.size)
      run.finish_avg_eng(sums(run, role.partner), cnt);
    return run.copy_out(Buf::kDst, dst_at(run), sums(run, run.rank), block);
  }
};

}  // namespace

const AlgInfo kReduceScatterHalving = make_alg_fits<ReduceScatterHalving>();

}  // namespace ucc::dev

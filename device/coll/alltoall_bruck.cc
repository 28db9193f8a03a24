// Alltoall by Bruck's algorithm: the latency algorithm for small blocks on
// wide teams, ceil(log2 n) rounds where the pairwise exchange takes n - 1
// steps, at the price of moving each block up to log2 n times (about
// n / 2 blocks a round).
//
// A block travels from its source s to its destination d = s + i (mod
// n); i, its distance, names it. In round k every block whose distance
// has bit k set moves 2^k ranks on: rank r sends those it holds to
// r + 2^k and receives the same distances from r - 2^k. After the rounds
// every block has moved by its distance, so it is at its destination.
//
// Where a block waits. Bruck's original keeps the blocks a rank holds at
// their distance in a scratch vector and rotates that into place at the
// end. Here a block of distance i held by rank h lives at dst block
// h - i (mod n) from the round it first moves in: distinct distances get
// distinct places, and at its destination that place is d - i = s, its
// source, where alltoall wants it. So no scratch and no final rotation.
// Before its first move (the rounds below i's lowest set bit) a block
// stays where the user put it, src block h + i; the block of distance 0
// is copied to dst at the start.
//
// Packing. A round's blocks (distances with bit k set, in increasing
// order) travel as one packed stream in slot-sized messages, which the
// receiver unpacks in the same order to its own places. A rank receives
// into the places of the blocks it sends (the same distances), so it
// unpacks message j only once its own message j has left: a message
// covers the same distances at both ends (equal blocks, equal slots).
// That cannot deadlock: every rank's first message fits its partner's
// inbox, and each message a rank sends lets its partner unpack one.
//
// Partners differ from round to round (2^k mod n does), so the streams of
// one ordered pair never mix. Alltoall's blocks are all the same length;
// in place (src is dst) the places collide: fits() says no, and the
// selection runs the pairwise exchange instead (select.cc).
#include "device/coll/algorithms.h"
#include "device/coll/streams.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

struct AlltoallBruck {
  uint32_t k = 0;  // the round: distance 2^k
  bool started = false;
  uint64_t block = 0;  // bytes per block
  uint64_t bytes = 0;  // this round's packed stream
  uint32_t msgs = 0;   // its messages
  uint32_t sent = 0;   // messages sent
  uint32_t got = 0;    // messages received

  // Distances in [1, n) with bit k set.
  static uint32_t count(uint32_t n, uint32_t k) {
    const uint64_t period = uint64_t{2} << k, half = uint64_t{1} << k;
    const uint64_t full = (n / period) * half, rest = n % period;
    return static_cast<uint32_t>(full + (rest > half ? rest - half : 0));
  }
  // The m-th distance with bit k set.
  static uint32_t nth(uint32_t m, uint32_t k) {
    return ((m >> k) << (k + 1)) | (1u << k) | (m & ((1u << k) - 1));
  }

  static bool fits(const off::CollDesc& d, uint64_t, uint32_t, uint64_t) {
    return (d.flags & off::kDescInPlace) == 0;
  }

  // Where the block of distance i lies at this rank for round k's send
  // (*b, byte offset) and where a received one goes (dst).
  void held(const CollRun& run, uint32_t i, Buf* b, uint64_t* off) const {
    if ((i & ((1u << k) - 1)) == 0) {  // not moved yet: the user's src block
      *b = Buf::kSrc;
      *off = run.src_off[run.tab(pat::mod(int64_t{run.rank} + i, run.size))] *
             run.esize;
    } else {
      *b = Buf::kDst;
      *off = place(run, i);
    }
  }
  uint64_t place(const CollRun& run, uint32_t i) const {
    return run.dst_off[run.tab(pat::mod(int64_t{run.rank} - i, run.size))] *
           run.esize;
  }

  // Calls f(i, in, piece, pos) for each piece of packed bytes [at, at +
  // len) of this round: `piece` bytes from byte `in` of the block of
  // distance i, at byte `pos` of the message.
  template <typename F>
  Status pieces(uint64_t at, uint32_t len, F f) const {
    for (uint32_t pos = 0; pos < len;) {
      const uint32_t i = nth(static_cast<uint32_t>(at / block), k);
      const uint64_t in = at % block, rest = block - in;
      const uint32_t piece =
          rest < len - pos ? static_cast<uint32_t>(rest) : len - pos;
      Status st = f(i, in, piece, pos);
      if (failed(st)) return st;
      pos += piece;
      at += piece;
    }
    return Status::kOk;
  }

  Status start(CollRun& run) {
    if (!fits(*run.d, 0, run.size, 0)) return Status::kNotSupported;
    const uint32_t r = run.tab(run.rank);
    block = run.src_cnt[r] * run.esize;
    if (run.dst_cnt[r] * run.esize != block) return Status::kInvalidParam;
    Status st = run.copy_uu(Buf::kDst, run.dst_off[r] * run.esize, Buf::kSrc,
                            run.src_off[r] * run.esize, block);
    if (failed(st)) return st;
    return progress(run);
  }

  Status progress(CollRun& run) {
    const uint32_t n = run.size;
    while ((uint64_t{1} << k) < n) {
      const uint32_t to = pat::mod(int64_t{run.rank} + (int64_t{1} << k), n);
      const uint32_t from = pat::mod(int64_t{run.rank} - (int64_t{1} << k), n);
      if (!started) {
        bytes = uint64_t{count(n, k)} * block;
        msgs = pat::nmsgs(bytes, run.slot);
        sent = got = 0;
        started = true;
      }
      while (sent < msgs) {
        void* m = run.reserve(to);
        if (m == nullptr) break;
        const uint32_t len = msg_len(bytes, run.slot, sent);
        auto* out = static_cast<char*>(m);
        Status st =
            pieces(uint64_t{sent} * run.slot, len,
                   [&](uint32_t i, uint64_t in, uint32_t piece, uint32_t pos) {
                     Buf b;
                     uint64_t off;
                     held(run, i, &b, &off);
                     return run.copy_in(out + pos, b, off + in, piece);
                   });
        if (failed(st)) return st;
        run.commit(to, len);
        ++sent;
      }
      while (got < sent) {
        const uint32_t len = msg_len(bytes, run.slot, got);
        Status err = Status::kOk;
        const void* m = run.peek(from, len, &err);
        if (m == nullptr) {
          if (failed(err)) return err;
          break;
        }
        const auto* msg = static_cast<const char*>(m);
        Status st =
            pieces(uint64_t{got} * run.slot, len,
                   [&](uint32_t i, uint64_t in, uint32_t piece, uint32_t pos) {
                     return run.copy_out(Buf::kDst, place(run, i) + in,
                                         msg + pos, piece);
                   });
        if (failed(st)) return st;
        run.release(from);
        ++got;
      }
      if (got < msgs) return Status::kInProgress;
      started = false;
      ++k;
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kAlltoallBruck = make_alg_fits<AlltoallBruck>();

}  // namespace ucc::dev

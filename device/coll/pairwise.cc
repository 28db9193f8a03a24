// Pairwise exchange: alltoall, alltoallv and allgatherv; one-sided
// alltoallv (below).
//
// In step s (0 <= s < n) rank r exchanges with partner r XOR s on teams of
// a power of two, (s - r) mod n on others (pat::pair_partner): it
// sends the block of its src meant for the partner and receives the
// partner's block into its place in dst (the run's block tables say where
// those are; for allgatherv every partner gets the same block, ours). The
// pairing is symmetric, so when the exchange is in place the block we send
// to p and the block we receive from p occupy the same bytes; a received
// message overwrites them only after our own copy of them has left. The
// step whose partner is ourselves is the local copy. Every pair meets in
// the same step on both sides, so bounded inboxes cannot deadlock.
#include <cstring>

#include "device/coll/algorithms.h"
#include "device/coll/streams.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

// One-sided alltoallv (off::kDescOneSided, kPuts): the same pairing, but
// each block's place in the receiver's dst is the sender's to give (its
// dst_displs[p], UCC's put convention), so every block travels behind a
// header naming its place and length. The receiver reads the header,
// checks it (whole elements; the placing copy checks the range against
// its dst, the mapped room the host gave it) and receives the block
// there. A peer whose header is wrong ends the collective with
// kInvalidParam, as an RDMA put outside the registered range would fail.
struct PutHeader {
  uint64_t off;    // bytes into the receiver's dst
  uint64_t bytes;  // the block's length
};
static_assert(sizeof(PutHeader) == 16);

template <bool kPuts>
struct Pairwise {
  uint32_t step = 0;
  bool started = false;
  bool told = false;   // kPuts: our header to the partner is sent
  bool heard = false;  // kPuts: the partner's header is read
  SendStream tx;
  RecvStream rx;

  Status start(CollRun& run) { return progress(run); }

  Status progress(CollRun& run) {
    const uint64_t es = run.esize;
    while (step < run.size) {
      const uint32_t p = pat::pair_partner(run.rank, run.size, step);
      const uint32_t t = run.tab(p);
      const uint64_t soff = run.src_off[t] * es, doff = run.dst_off[t] * es;
      const uint64_t sbytes = run.src_cnt[t] * es, dbytes = run.dst_cnt[t] * es;
      if (p == run.rank) {
        // Ours goes where our own displacement says (kPuts: the place we
        // give ourselves as a peer), and is as long as we send.
        if (!kPuts && sbytes != dbytes) return Status::kInvalidParam;
        Status st = run.copy_uu(Buf::kDst, doff, Buf::kSrc, soff, sbytes);
        if (failed(st)) return st;
        ++step;
        continue;
      }
      // Receiving into bytes we still have to send (in place): never
      // overtake our own sending.
      const bool aliased = !kPuts && run.overlap(Buf::kSrc, soff, sbytes,
                                                 Buf::kDst, doff, dbytes);
      if (!started) {
        // One-sided where the link allows, but not in place: the peer
        // would read the bytes our own get overwrites (streams.h).
        const bool zcopy = !kPuts && !aliased;
        tx.init(run, p, Buf::kSrc, soff, sbytes, zcopy);
        if (!kPuts) rx.init(run, p, Buf::kDst, doff, dbytes, false, zcopy);
        told = heard = !kPuts;
        started = true;
      }
      if (kPuts && !told) {
        void* m = run.reserve(p);
        if (m == nullptr) return Status::kInProgress;
        const PutHeader h{doff, sbytes};
        std::memcpy(m, &h, sizeof(h));
        run.commit(p, sizeof(h));
        told = true;
      }
      Status st = tx.progress(run);
      if (failed(st)) return st;
      if (kPuts && !heard) {
        Status err = Status::kOk;
        const void* m = run.peek(p, sizeof(PutHeader), &err);
        if (m == nullptr) return failed(err) ? err : Status::kInProgress;
        PutHeader h;
        std::memcpy(&h, m, sizeof(h));
        run.release(p);
        if (h.off % es != 0 || h.bytes % es != 0) return Status::kInvalidParam;
        rx.init(run, p, Buf::kDst, h.off, h.bytes, false);
        heard = true;
      }
      st = rx.progress(run, aliased ? tx.done : UINT32_MAX);
      if (failed(st)) return st;
      if (!tx.finished() || !rx.finished()) return Status::kInProgress;
      started = false;
      ++step;
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kAlltoallPairwise = make_alg<Pairwise<false>>();
const AlgInfo kAlltoallvPairwise = make_alg<Pairwise<false>>();
const AlgInfo kAllgathervPairwise = make_alg<Pairwise<false>>();
const AlgInfo kAlltoallvOneSided = make_alg<Pairwise<true>>();

}  // namespace ucc::dev

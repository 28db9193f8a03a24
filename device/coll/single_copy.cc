// Single-copy algorithms for large messages (inline engine): a rank reads
// the bytes it needs straight from its peer's user buffer into its own with
// cross-memory attach (CollRun::read_peer), instead of the peer copying them
// into a shared-memory slot and the rank copying them out again. Each byte
// crosses memory once.
//
// Per pair, with the collective's key:
//   exposer -> reader   offer {address, bytes}: where the reader's bytes are
//   reader              reads them (process_vm_readv) into its own buffer
//   reader -> exposer   done (empty): the exposer's buffer is free again
// An exposer completes only after each of its readers said done, so the
// user may reuse a buffer as soon as its collective completes. Every pair
// exchanges at most one offer and one done each way, so two inbox slots
// always suffice, and no rank waits for a read before making its own
// offers: no cycle.
//
//   bcast      the root offers its vector to every other rank
//   allgather  every rank offers its block to every other rank
//   alltoall   every rank offers block p of its src to rank p (never in
//              place: select.cc keeps those on the pairwise exchange)
//
// An offer whose length is not what this rank expects of the collective
// ends it with kNoMessage, as any mismatched message does. Its address is
// the peer's to choose: the kernel refuses memory the peer has not mapped
// (kError), and the bytes land only in this rank's own bounds-checked
// buffer.
#include <cstring>

#include "device/coll/algorithms.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

enum class Pattern : uint8_t { kBcast, kAllgather, kAlltoall };

struct Offer {
  uint64_t addr;
  uint64_t bytes;
};

// A byte range of one of this rank's user buffers.
struct Range {
  Buf buf;
  uint64_t off;
  uint64_t len;
};

template <Pattern kP>
struct SingleCopy {
  uint32_t next_offer = 1;  // peers are visited as rank + i, i = 1..n-1
  uint32_t next_read = 1;
  uint32_t next_done = 1;
  bool read = false;  // the current peer's bytes are in; done not yet sent

  static uint32_t peer(const CollRun& run, uint32_t i) {
    return (run.rank + i) % run.size;
  }
  static bool offers_to(const CollRun& run, uint32_t) {
    return kP != Pattern::kBcast || run.rank == run.d->root;
  }
  static bool reads_from(const CollRun& run, uint32_t p) {
    return kP != Pattern::kBcast || p == run.d->root;
  }
  // Our bytes that peer p reads.
  static Range offered(const CollRun& run, uint32_t p) {
    const uint64_t es = run.esize;
    const uint32_t r = run.rank;
    switch (kP) {
      case Pattern::kBcast:
        return {Buf::kSrc, 0, run.d->count * es};
      case Pattern::kAllgather:
        // In place our block already sits in dst.
        if (run.d->flags & off::kDescInPlace)
          return {Buf::kDst, run.dst_off[r] * es, run.dst_cnt[r] * es};
        return {Buf::kSrc, run.src_off[r] * es, run.src_cnt[r] * es};
      default:
        return {Buf::kSrc, run.src_off[p] * es, run.src_cnt[p] * es};
    }
  }
  // Where peer p's bytes go here.
  static Range target(const CollRun& run, uint32_t p) {
    const uint64_t es = run.esize;
    if (kP == Pattern::kBcast) return {Buf::kSrc, 0, run.d->count * es};
    return {Buf::kDst, run.dst_off[p] * es, run.dst_cnt[p] * es};
  }

  Status start(CollRun& run) {
    // Our own block of allgather / alltoall: a local copy (a no-op in
    // place).
    if (kP != Pattern::kBcast) {
      const uint32_t r = run.rank;
      const uint64_t es = run.esize;
      const Range from = offered(run, r);
      Status st = run.copy_uu(Buf::kDst, run.dst_off[r] * es, from.buf,
                              from.off, run.dst_cnt[r] * es);
      if (failed(st)) return st;
    }
    return progress(run);
  }

  Status progress(CollRun& run) {
    const uint32_t n = run.size;
    for (; next_offer < n; ++next_offer) {
      const uint32_t p = peer(run, next_offer);
      if (!offers_to(run, p)) continue;
      const Range o = offered(run, p);
      const void* at = run.at(o.buf, o.off, o.len);
      if (at == nullptr && o.len != 0) return Status::kInvalidParam;
      void* out = run.reserve(p);
      if (out == nullptr) return Status::kInProgress;
      const Offer m{reinterpret_cast<uintptr_t>(at), o.len};
      memcpy(out, &m, sizeof m);
      run.commit(p, sizeof m);
    }
    // Reads go the other way round the ranks than offers, so that the
    // first peer we read from is one whose offer went out first.
    for (; next_read < n; ++next_read) {
      const uint32_t p = peer(run, n - next_read);
      if (!reads_from(run, p)) continue;
      if (!read) {
        Status err = Status::kOk;
        const void* msg = run.peek(p, sizeof(Offer), &err);
        if (msg == nullptr) return failed(err) ? err : Status::kInProgress;
        Offer m;
        memcpy(&m, msg, sizeof m);
        const Range t = target(run, p);
        if (m.bytes != t.len) return Status::kNoMessage;
        Status st = run.read_peer(p, m.addr, t.buf, t.off, t.len);
        if (failed(st)) return st;
        run.release(p);
        read = true;
      }
      if (run.reserve(p) == nullptr) return Status::kInProgress;
      run.commit(p, 0);
      read = false;
    }
    for (; next_done < n; ++next_done) {
      const uint32_t p = peer(run, next_done);
      if (!offers_to(run, p)) continue;
      Status err = Status::kOk;
      if (run.peek(p, 0, &err) == nullptr)
        return failed(err) ? err : Status::kInProgress;
      run.release(p);
    }
    return Status::kOk;
  }
};

}  // namespace

const AlgInfo kBcastSingleCopy = make_alg<SingleCopy<Pattern::kBcast>>(true);
const AlgInfo kAllgatherSingleCopy =
    make_alg<SingleCopy<Pattern::kAllgather>>(true);
const AlgInfo kAlltoallSingleCopy =
    make_alg<SingleCopy<Pattern::kAlltoall>>(true);

}  // namespace ucc::dev

// The worker's part of a v-collective on the direct path (allgatherv,
// alltoallv, gatherv, scatterv) and of any in-place alltoall(v): block
// copies (or swaps), taken in batches of peer allocations (see
// gpu_direct.h).
//
// A v side may lie in one allocation per block (a list of tensors), so a
// collective of n ranks may name up to 2n(n - 1) peer allocations, more
// than the IPC cache holds. The collective is a list of moves, each of
// one block between two ends; a batch takes moves in order while the
// collective holds no more than half the cache (and at most
// GpuDirectReq::refs), queues them and records `done`. Once that event
// has completed, the batch's entries are let go and the next batch
// starts where it stopped; the last raises the peers' flags.
//
// Every batch first copies the ranks' tables out of their pages again
// and checks them whole, lengths agreeing between every pair of ends,
// then resolves every end of its moves, each block's entries read again
// and required to say what was checked (its length, an allocation of the
// table's), and only then queues them: a rank that rewrites its table
// mid-collective fails it on every rank, with nothing of that batch on
// the stream. Each block is checked against the allocation it names,
// through an IPC handle the worker cannot tie to its owner (as a token's:
// the ranks are one job's processes, docs/gpu.md, "Trust").
#include <cstddef>
#include <cstring>

#include "host/api/objects.h"
#include "host/coll/request.h"
#include "host/exec/gpu_direct_impl.h"
#include "platform/os/log.h"

namespace ucc::host::gd {
namespace {

// One end of a move: block `at` of rank `rank`'s table of its side
// (`table`), or bytes from offset `at` of the side its token names.
struct End {
  uint32_t rank;
  bool dst;
  bool table;
  uint64_t at;
};
struct Move {
  End from, to;
  uint64_t len;  // bytes (0: nothing to move)
};

// Rank p's block table (the worker's own: its own page).
const uint8_t* table_of(const Request* r, const Token* tok, uint32_t p) {
  GpuDirectTeam& t = *r->team->gd;
  if (p == r->team->rank)
    return vtable_at(t.page, t.page_bytes, t.words_bytes, tok[p].slot);
  const PeerPage& pp = t.peers[p];
  return vtable_at(pp.map, pp.bytes, pp.words, tok[p].slot);
}

// Rank p's table of its side `dst`, copied out and checked entry by
// entry, its blocks' lengths into len[0, n). Nothing is opened. False
// (logged) when it does not fit.
bool v_lens(const Request* r, const Token* tok, uint32_t p, bool dst,
            uint64_t* len) {
  const uint32_t n = r->team->size;
  const uint8_t* vt = table_of(r, tok, p);
  VSide& vs = *r->team->gd->vside;
  if (vt != nullptr) memcpy(&vs, vt + (dst ? sizeof(VSide) : 0), sizeof(VSide));
  bool ok = vt != nullptr && vs.nblk == n && vs.nalloc <= gpu::kMaxPeers;
  for (uint32_t j = 0; ok && j < n; ++j) {
    const VBlock& b = vs.blk[j];
    len[j] = b.len;
    if (b.len == 0) continue;
    ok = b.alloc < vs.nalloc && b.off <= vs.alloc[b.alloc].size &&
         b.len <= vs.alloc[b.alloc].size - b.off;
  }
  if (!ok)
    UCC_ERROR("GPU direct: rank %u's blocks of its %s do not fit", p,
              dst ? "dst" : "src");
  return ok;
}

// An end's `len` bytes as the worker's GPU addresses them, its peer
// allocation opened and held for the collective.
bool resolve_end(GpuDirectCtx& g, Request* r, const Token* tok, const End& e,
                 uint64_t len, uint64_t* out) {
  if (!e.table) {
    uint64_t base = 0;
    if (!resolve(g, r->gd, tok[e.rank], e.dst, e.at + len, &base)) return false;
    *out = base + e.at;
    return true;
  }
  // Only this block's entries, copied out, then checked against what
  // check() read (the owner may have rewritten its table since) and the
  // allocation they name.
  const uint8_t* vt = table_of(r, tok, e.rank);
  if (vt == nullptr || e.at >= gpu::kMaxPeers) return false;
  const uint8_t* side = vt + (e.dst ? sizeof(VSide) : 0);
  VBlock b{};
  memcpy(&b, side + offsetof(VSide, blk) + e.at * sizeof(VBlock), sizeof(b));
  uint32_t nalloc = 0;
  memcpy(&nalloc, side + offsetof(VSide, nalloc), sizeof(nalloc));
  if (b.len != len || nalloc > gpu::kMaxPeers || b.alloc >= nalloc) {
    UCC_ERROR("GPU direct: rank %u changed its block table mid-collective",
              e.rank);
    return false;
  }
  VAlloc a{};
  memcpy(&a, side + offsetof(VSide, alloc) + b.alloc * sizeof(VAlloc),
         sizeof(a));
  return resolve_in(g, r->gd, tok[e.rank].pid, a, b.off, len, out);
}

// In-place alltoall(v): block q of rank p and block p of rank q trade
// places (the diagonal stays), up to kMaxSwaps pairs a launch, the last
// launch of the collective raising the peers' flags.
class Swaps {
 public:
  Swaps(const GpuDirectCtx& g, cu::CuStream s) : g_(g), s_(s) {}
  void add(uint64_t a, uint64_t b, uint64_t len) {
    if (a_.n == gpu::kMaxSwaps) launch(false);
    a_.a[a_.n] = a;
    a_.b[a_.n] = b;
    a_.len[a_.n++] = len;
  }
  // The batch's last launch; `raise`: the collective's (*flagged).
  cu::CuResult end(const Request* r, const Token* tok, uint32_t n, bool raise,
                   bool* flagged) {
    if (a_.n == 0 || cr_ != cu::kSuccess) return cr_;
    if (raise) {
      peer_flags(r, tok, n, &a_.flags);
      *flagged = true;
    }
    launch(raise);
    return cr_;
  }

 private:
  void launch(bool raise) {
    uint64_t most = 0;
    for (uint32_t k = 0; k < a_.n; ++k)
      most = a_.len[k] > most ? a_.len[k] : most;
    if (!raise) a_.flags.n = 0;
    a_.counter = g_.counter;
    void* params[] = {&a_};
    if (cr_ == cu::kSuccess)
      cr_ = drv().launch_kernel(g_.swap_fn, blocks_for((most + 15) / 16 * 4), 1,
                                1, 256, 1, 1, 0, s_, params, nullptr);
    a_.n = 0;
  }
  const GpuDirectCtx& g_;
  cu::CuStream s_;
  cu::CuResult cr_ = cu::kSuccess;
  gpu::SwapArgs a_{};
};

// The collective's moves from the ranks' tables and tokens: check()
// reads and checks them (lengths into rows of n: dl[p * n + j] for rank
// p's dst, sl for its src), then at(k) is move k of count().
class Plan {
 public:
  explicit Plan(const Request* r)
      : r_(r),
        u_(r->gd.user),
        n_(r->team->size),
        dl_(r->team->gd->vblk),
        sl_(dl_ + size_t{n_} * n_),
        in_place_((u_.flags & off::kDescInPlace) != 0) {}

  bool swaps() const {
    return in_place_ && (u_.coll == off::CollType::kAlltoall ||
                         u_.coll == off::CollType::kAlltoallv);
  }

  bool check(const Token* tok) {
    const uint32_t n = n_, me = r_->team->rank;
    switch (u_.coll) {
      case off::CollType::kAlltoall: {  // in place only
        const uint64_t b = u_.count * off::elem_size(u_);
        for (uint32_t p = 0; p < n; ++p) {
          if (tok[p].dst_len != b * n) return disagree(p, me, p);
          for (uint32_t q = 0; q < n; ++q) dl_[p * n + q] = b;
        }
        return true;
      }
      case off::CollType::kAllgatherv:
        // Rank p's block into block p of every rank's dst; in place it
        // is already in block p of its own.
        for (uint32_t q = 0; q < n; ++q)
          if (!v_lens(r_, tok, q, true, dl_ + q * n)) return false;
        for (uint32_t p = 0; p < n; ++p) {
          const uint64_t len = dl_[me * n + p];
          for (uint32_t q = 0; q < n; ++q)
            if (dl_[q * n + p] != len) return disagree(me, q, p);
          if (!in_place_ && tok[p].src_len != len) return disagree(p, me, p);
        }
        return true;
      case off::CollType::kAlltoallv:
        // Block q of rank p's src into block p of rank q's dst; in place
        // (swaps) the counts must be symmetric.
        for (uint32_t q = 0; q < n; ++q)
          if (!v_lens(r_, tok, q, true, dl_ + q * n) ||
              (!in_place_ && !v_lens(r_, tok, q, false, sl_ + q * n)))
            return false;
        for (uint32_t p = 0; p < n; ++p)
          for (uint32_t q = 0; q < n; ++q)
            if ((in_place_ ? dl_[p * n + q] : sl_[p * n + q]) != dl_[q * n + p])
              return disagree(p, q, q);
        return true;
      case off::CollType::kGatherv:
      case off::CollType::kScatterv: {
        // Rank p's buffer to or from block p of the root's; the root's
        // own block stays where it is in place (its token says so).
        const bool gather = u_.coll == off::CollType::kGatherv;
        const uint32_t root = u_.root;
        if (root >= n || !v_lens(r_, tok, root, gather, sl_)) return false;
        keep_ = (tok[root].flags & kTokInPlace) != 0;
        for (uint32_t p = 0; p < n; ++p)
          if (!(keep_ && p == root) &&
              (gather ? tok[p].src_len : tok[p].dst_len) != sl_[p])
            return disagree(p, root, p);
        return true;
      }
      default:
        return false;
    }
  }

  uint32_t count() const {
    const bool rooted = u_.coll == off::CollType::kGatherv ||
                        u_.coll == off::CollType::kScatterv;
    return rooted ? n_ : n_ * n_;
  }

  Move at(uint32_t k) const {
    const uint32_t n = n_;
    Move m{};
    if (u_.coll == off::CollType::kGatherv ||
        u_.coll == off::CollType::kScatterv) {
      const uint32_t root = u_.root;
      if (keep_ && k == root) return m;
      const End mine{k, u_.coll == off::CollType::kScatterv, false, 0};
      const End whole{root, u_.coll == off::CollType::kGatherv, true, k};
      m.from = u_.coll == off::CollType::kGatherv ? mine : whole;
      m.to = u_.coll == off::CollType::kGatherv ? whole : mine;
      m.len = sl_[k];
      return m;
    }
    const uint32_t p = k / n, q = k % n;
    if (swaps()) {
      // Block q of p and block p of q, each pair once.
      if (p >= q) return m;
      const bool v = u_.coll == off::CollType::kAlltoallv;
      const uint64_t b = dl_[p * n + q];
      m.from = End{p, true, v, v ? q : q * b};
      m.to = End{q, true, v, v ? p : p * b};
      m.len = b;
    } else if (u_.coll == off::CollType::kAllgatherv) {
      if (in_place_ && p == q) return m;
      m.from = in_place_ ? End{p, true, true, p} : End{p, false, false, 0};
      m.to = End{q, true, true, p};
      m.len = dl_[q * n + p];
    } else {  // alltoallv
      m.from = End{p, false, true, q};
      m.to = End{q, true, true, p};
      m.len = sl_[p * n + q];
    }
    return m;
  }

 private:
  const Request* r_;
  const off::CollDesc& u_;
  uint32_t n_;
  uint64_t* dl_;
  uint64_t* sl_;
  bool in_place_;
  bool keep_ = false;
};

// Whether the batch may take a move's two ends: at most `most` entries
// held by this collective, and two free ones in the cache.
bool room(const GpuDirectCtx& g, const GpuDirectReq& q, uint32_t most) {
  return q.nrefs + 2u <= most && g.held + 2u <= g.cap;
}

}  // namespace

bool v_path(const Request* r) {
  const off::CollDesc& u = r->gd.user;
  switch (u.coll) {
    case off::CollType::kAllgatherv:
    case off::CollType::kAlltoallv:
    case off::CollType::kGatherv:
    case off::CollType::kScatterv:
      return true;
    case off::CollType::kAlltoall:
      return (u.flags & off::kDescInPlace) != 0;
    default:
      return false;
  }
}

Queued queue_moves(GpuDirectCtx& g, Request* r, const Token* tok,
                   cu::CuStream s, cu::CuResult* cr, bool* flagged) {
  GpuDirectReq& q = r->gd;
  // Half of the cache, so that other collectives in flight find room.
  constexpr uint32_t kRefs = sizeof(q.refs) / sizeof(q.refs[0]);
  const uint32_t half = g.cap / 2 < 4 ? 4 : g.cap / 2;
  const uint32_t most = half < kRefs ? half : kRefs;
  // No room at all (collectives in flight hold the cache): none is
  // taken, the next progress looks again.
  if (!room(g, q, most)) return Queued::kMore;
  Plan plan(r);
  if (!plan.check(tok)) return Queued::kFailed;
  const uint32_t n = r->team->size, total = plan.count();
  // Every end of the batch is resolved before the first move is queued:
  // a move that cannot be made fails the collective with nothing of the
  // batch on the stream (earlier batches have completed).
  uint64_t* const from = r->team->gd->vblk + 2 * size_t{n} * n;
  uint64_t* const to = from + size_t{n} * n;
  uint32_t end = q.next;
  for (; end < total; ++end) {
    const Move m = plan.at(end);
    if (m.len == 0) continue;
    if (!room(g, q, most)) break;
    if (!resolve_end(g, r, tok, m.from, m.len, &from[end]) ||
        !resolve_end(g, r, tok, m.to, m.len, &to[end])) {
      UCC_ERROR("GPU direct: move %u of collective %llu cannot be made", end,
                static_cast<unsigned long long>(q.seq));
      return Queued::kFailed;
    }
  }
  const bool swaps = plan.swaps();
  Swaps sw(g, s);
  for (uint32_t k = q.next; k < end && *cr == cu::kSuccess; ++k) {
    const Move m = plan.at(k);
    if (m.len == 0) continue;
    if (swaps)
      sw.add(from[k], to[k], m.len);
    else
      *cr = drv().memcpy_dtod_async(to[k], from[k], m.len, s);
  }
  q.next = end;
  const bool last = end == total;
  if (swaps && *cr == cu::kSuccess) *cr = sw.end(r, tok, n, last, flagged);
  if (!last) ++g.stats.batches;
  return last ? Queued::kDone : Queued::kMore;
}

}  // namespace ucc::host::gd

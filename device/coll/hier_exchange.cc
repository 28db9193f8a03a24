// Node-aware packed exchanges, alltoall and allgather: every block meant
// for another host crosses the network in one message per pair of hosts'
// ranks of the same place, packed with the other blocks for that host,
// and is handed on within the destination host. A rank then exchanges
// with hosts - 1 peers over the network and ppn - 1 on its own host,
// where the pairwise exchange and the rings take n - 1 steps, (hosts - 1)
// ppn of them across the network for the pairwise exchange; on clusters
// where a network message costs far more than a copy in shared memory,
// that is the point (small and middle blocks).
//
// Words: a host's ranks sit at places 0..ppn-1 (their local rank);
// R(h, k) is the team rank at place k of host h. We are R(H, L). Every
// host holds the same number of ranks (else a flat algorithm runs, as
// one phase of its own: start()).
//
// Alltoall. Phase 0, among the hosts: with R(h, L) for every host h, we
// send the blocks of our src meant for R(h, 0..ppn-1), packed in that
// order, and receive R(h, L)'s blocks for R(H, 0..ppn-1), which go to our
// dst at the places of R(h, 0..ppn-1). The one at R(h, L)'s place is ours
// and final; the others wait there for their rank on our host. Our own
// host's part is a local copy of src blocks R(H, k) to dst places R(H, k).
// Phase 1, within our host: with R(H, k) for every place k != L, we send
// the blocks waiting at the places R(0..hosts-1, k), which are R(h, L)'s
// blocks for R(H, k), and receive into the same places R(H, k)'s blocks
// R(h, k) -> us, which is where alltoall wants them (place R(h, k) holds
// the block from R(h, k)). So the waiting blocks need no scratch: the
// places they borrow are exactly the ones phase 1 fills. Phase 0 reads
// src and writes dst, which must not be the same bytes: in place, fits()
// says no and the selection runs the pairwise exchange instead.
//
// Allgather. Phase 0: our block to R(h, L) for every host h, and R(h, L)'s
// into its place in dst (ours copied to our place first). Phase 1: with
// R(H, k), we send the hosts' blocks of place L (dst places R(0..hosts-1,
// L)) and receive those of place k into their places. Nothing waits in a
// borrowed place, and in place is fine (our block is already at its
// place; phase 0 only reads it).
//
// Allgather by Bruck among the hosts (hier_bruck, wide teams): phase 0
// runs Bruck's algorithm (bruck.cc) over R(0..hosts-1, L) instead of the
// linear exchange: in round k, with d = 2^k and c = min(d, hosts - d), we
// send the blocks of place L of hosts H .. H + c - 1 (mod hosts), held
// at their places in dst, to R(H - d, L), and receive those of hosts
// H + d .. H + d + c - 1 from R(H + d, L) into their places: ceil(log2
// hosts) rounds where the exchange has hosts - 1 partners, and each block
// crosses the network once per host. Phase 1 is the allgather's. The two
// ranges of a round are disjoint, one partner sends to us per round and a
// different one each round (d differs modulo hosts), so a round's stream
// is the only one from its sender; we finish receiving a round before we
// send the next, which sends what it brought.
//
// Each phase is a linear exchange of packed streams (exchange_linear.cc):
// round j moves message j of every partner's stream, all at once as the
// inboxes take them. In alltoall's phase 1 the places we send from are
// the places we receive into, so message j from a partner is taken only
// once our message j to it has left (both cover the same blocks: equal
// streams, equal slots); that cannot deadlock (two ranks whose inboxes
// are both full would each have taken all the other sent).
//
// Phases of one collective share its key; their partners differ (other
// hosts, then our host), so a phase-1 message that arrives while we are
// still in phase 0 waits in its inbox.
#include <cstring>

#include "device/coll/algorithms.h"
#include "device/coll/round_sends.h"
#include "device/coll/streams.h"
#include "device/run/links.h"
#include "device/run/patterns.h"

namespace ucc::dev {
namespace {

enum class Kind : uint8_t { kAlltoall, kAllgather, kAllgatherBruck };

// hier_bruck on hosts of unequal size runs flat Bruck's below this many
// bytes per block (UCC_WIDE_MAX's default, where selection passes flat
// Bruck's to the ring on such teams) and the ring from there.
inline constexpr uint64_t kBruckFallbackMax = 512;

template <Kind K>
struct HierExchange {
  static constexpr bool kAlltoall = K == Kind::kAlltoall;
  static constexpr bool kBruck = K == Kind::kAllgatherBruck;
  // Partners we can track, in RoundSends' bitmaps.
  static constexpr uint32_t kMaxGroup = RoundSends::kMaxRanks;
  static constexpr uint32_t kWords = RoundSends::kWords;

  const NodeMap* nm = nullptr;
  uint32_t hosts = 0, ppn = 0, host = 0, place = 0;
  uint32_t phase = 0;
  uint64_t block = 0;   // bytes per block
  uint64_t stream = 0;  // bytes to (and from) each partner in this phase
  uint32_t rounds = 0;  // messages per stream
  uint32_t n = 0;       // this phase's group (us included)
  uint32_t me = 0;      // our index in it
  uint32_t txr = 0, txleft = 0;  // the round being sent, sends left in it
  uint32_t rxr = 0, rxleft = 0;  // likewise received
  uint64_t tx[kWords];           // bit p: round txr's send to p done
  uint64_t rx[kWords];           // bit p: round rxr's message from p taken
  uint32_t dist = 0;             // Bruck's phase 0: 2^k of round k
  // Where the shape is not uniform: a flat algorithm runs instead.
  const AlgInfo* flat = nullptr;
  alignas(64) unsigned char flat_state[kFlatAlgState];

  static bool fits(const off::CollDesc& d, uint64_t, uint32_t, uint64_t) {
    return !kAlltoall || (d.flags & off::kDescInPlace) == 0;
  }

  uint32_t rank_at(uint32_t h, uint32_t k) const {
    return nm->order[nm->node_first[h] + k];
  }
  // The team rank of group member p.
  uint32_t member(uint32_t p) const {
    return phase == 0 ? rank_at(p, place) : rank_at(host, p);
  }
  uint64_t src_at(const CollRun& run, uint32_t r) const {
    return run.src_off[run.tab(r)] * run.esize;
  }
  uint64_t dst_at(const CollRun& run, uint32_t r) const {
    return run.dst_off[run.tab(r)] * run.esize;
  }

  // Clears m for a round: every member is due but us.
  uint32_t due(uint64_t* m) const {
    memset(m, 0, sizeof(uint64_t) * ((n + 63) / 64));
    RoundSends::set(m, me);
    return n - 1;
  }

  // Calls f(buf, off, piece, pos) for each piece of bytes [at, at + len)
  // of the stream to (sending) or from partner p: `piece` bytes at byte
  // `off` of the user's buffer, at byte `pos` of the message.
  template <typename F>
  Status pieces(const CollRun& run, uint32_t p, bool sending, uint64_t at,
                uint32_t len, F f) const {
    for (uint32_t pos = 0; pos < len;) {
      const auto i = static_cast<uint32_t>(at / block);
      const uint64_t in = at % block, rest = block - in;
      const uint32_t piece =
          rest < len - pos ? static_cast<uint32_t>(rest) : len - pos;
      Buf b = Buf::kDst;
      uint64_t off;
      if (kBruck && phase == 0) {
        // Block i of the round's range: host me + i (sending) or me +
        // dist + i (receiving), mod n.
        const uint64_t g = (uint64_t{me} + (sending ? 0 : dist) + i) % n;
        off = dst_at(run, rank_at(static_cast<uint32_t>(g), place));
      } else if (phase == 0 && sending) {
        b = Buf::kSrc;  // allgather: every src block is ours
        off = src_at(run, rank_at(p, i));
      } else if (phase == 0) {
        off = dst_at(run, rank_at(p, kAlltoall ? i : place));
      } else {
        off = dst_at(run, rank_at(i, kAlltoall || !sending ? p : place));
      }
      Status st = f(b, off + in, piece, pos);
      if (failed(st)) return st;
      pos += piece;
      at += piece;
    }
    return Status::kOk;
  }

  void begin(const CollRun& run, uint32_t ph) {
    phase = ph;
    n = ph == 0 ? hosts : ppn;
    me = ph == 0 ? host : place;
    stream = uint64_t{ph == 0 ? (kAlltoall ? ppn : 1) : hosts} * block;
    if (kBruck && ph == 0) {
      dist = 1;
      begin_round(run);
      return;
    }
    rounds = pat::nmsgs(stream, run.slot);
    txr = rxr = 0;
    txleft = due(tx);
    rxleft = due(rx);
  }

  // Bruck's round (dist): one stream to R(me - dist), one from R(me +
  // dist), of c blocks each.
  void begin_round(const CollRun& run) {
    const uint32_t c = dist < n - dist ? dist : n - dist;
    stream = uint64_t{c} * block;
    rounds = pat::nmsgs(stream, run.slot);
    txr = rxr = 0;
  }
  uint32_t to() const { return me >= dist ? me - dist : me + n - dist; }
  uint32_t from() const { return me + dist < n ? me + dist : me + dist - n; }

  // Bruck's phase 0: its rounds, each sent and received whole before the
  // next (which sends what it brought).
  Status bruck(CollRun& run) {
    while (dist < n) {
      for (; txr < rounds; ++txr) {
        void* m = run.reserve(member(to()));
        if (m == nullptr) break;
        const uint32_t len = msg_len(stream, run.slot, txr);
        auto* out = static_cast<char*>(m);
        Status st =
            pieces(run, to(), true, uint64_t{txr} * run.slot, len,
                   [&](Buf b, uint64_t off, uint32_t piece, uint32_t pos) {
                     return run.copy_in(out + pos, b, off, piece);
                   });
        if (failed(st)) return st;
        run.commit(member(to()), len);
      }
      for (; rxr < rounds; ++rxr) {
        const uint32_t len = msg_len(stream, run.slot, rxr);
        Status err = Status::kOk;
        const void* m = run.peek(member(from()), len, &err);
        if (m == nullptr) {
          if (failed(err)) return err;
          break;
        }
        const auto* msg = static_cast<const char*>(m);
        Status st =
            pieces(run, from(), false, uint64_t{rxr} * run.slot, len,
                   [&](Buf b, uint64_t off, uint32_t piece, uint32_t pos) {
                     return run.copy_out(b, off, msg + pos, piece);
                   });
        if (failed(st)) return st;
        run.release(member(from()));
      }
      if (txr < rounds || rxr < rounds) return Status::kInProgress;
      dist <<= 1;
      if (dist < n) begin_round(run);
    }
    return Status::kOk;
  }

  Status start(CollRun& run) {
    if (!fits(*run.d, 0, run.size, 0)) return Status::kNotSupported;
    nm = &run.port->links().nodes();
    // (Bruck's phase 0 tracks one partner a round: any number of hosts.)
    // hier_bruck's fallback: flat Bruck's for blocks below
    // kBruckFallbackMax, the ring above (every rank sees the same block).
    if (!nm->uniform() || (!kBruck && nm->nnodes > kMaxGroup) ||
        nm->node_size[0] > kMaxGroup) {
      const uint32_t me = run.tab(run.rank);
      const bool small = run.dst_cnt[me] * run.esize < kBruckFallbackMax;
      flat = kAlltoall         ? &kAlltoallPairwise
             : kBruck && small ? &kAllgatherBruck
                               : &kAllgatherRing;
      return flat->start(flat_state, run);
    }
    const uint32_t r = run.tab(run.rank);
    block = run.src_cnt[r] * run.esize;
    if (run.dst_cnt[r] * run.esize != block) return Status::kInvalidParam;
    hosts = nm->nnodes;
    ppn = nm->node_size[0];
    host = nm->node[run.rank];
    place = nm->local_rank[run.rank];
    for (uint32_t k = 0; k < ppn; ++k) {
      const uint32_t to = rank_at(host, kAlltoall ? k : place);
      Status st = run.copy_uu(Buf::kDst, dst_at(run, to), Buf::kSrc,
                              src_at(run, to), block);
      if (failed(st)) return st;
      if (!kAlltoall) break;
    }
    begin(run, 0);
    return progress(run);
  }

  Status send(CollRun& run) {
    const uint64_t at = uint64_t{txr} * run.slot;
    for (uint32_t i = 1; i < n && txleft != 0; ++i) {
      const uint32_t p = me + i < n ? me + i : me + i - n;
      if (RoundSends::has(tx, p)) continue;
      void* m = run.reserve(member(p));
      if (m == nullptr) continue;
      const uint32_t len = msg_len(stream, run.slot, txr);
      auto* out = static_cast<char*>(m);
      Status st =
          pieces(run, p, true, at, len,
                 [&](Buf b, uint64_t off, uint32_t piece, uint32_t pos) {
                   return run.copy_in(out + pos, b, off, piece);
                 });
      if (failed(st)) return st;
      run.commit(member(p), len);
      RoundSends::set(tx, p);
      --txleft;
    }
    return Status::kOk;
  }

  Status receive(CollRun& run) {
    const uint64_t at = uint64_t{rxr} * run.slot;
    for (uint32_t i = 1; i < n && rxleft != 0; ++i) {
      const uint32_t p = me >= i ? me - i : me + n - i;
      if (RoundSends::has(rx, p)) continue;
      if (kAlltoall && txr == rxr && !RoundSends::has(tx, p))
        continue;  // ours first
      const uint32_t len = msg_len(stream, run.slot, rxr);
      Status err = Status::kOk;
      const void* m = run.peek(member(p), len, &err);
      if (m == nullptr) {
        if (failed(err)) return err;
        continue;
      }
      const auto* msg = static_cast<const char*>(m);
      Status st =
          pieces(run, p, false, at, len,
                 [&](Buf b, uint64_t off, uint32_t piece, uint32_t pos) {
                   return run.copy_out(b, off, msg + pos, piece);
                 });
      if (failed(st)) return st;
      run.release(member(p));
      RoundSends::set(rx, p);
      --rxleft;
    }
    return Status::kOk;
  }

  Status progress(CollRun& run) {
    if (flat != nullptr) return flat->progress(flat_state, run);
    if (kBruck && phase == 0) {
      Status st = bruck(run);
      if (st != Status::kOk) return st;
      begin(run, 1);
    }
    for (;;) {
      for (;;) {
        Status st = send(run);
        if (failed(st)) return st;
        if (txleft != 0 || txr + 1 >= rounds) break;
        ++txr;
        txleft = due(tx);
      }
      while (rxr < rounds && rxr <= txr) {
        Status st = receive(run);
        if (failed(st)) return st;
        if (rxleft != 0) break;
        if (++rxr < rounds) rxleft = due(rx);
      }
      if (rxr < rounds || txleft != 0) return Status::kInProgress;
      if (phase == 1) return Status::kOk;
      begin(run, 1);
    }
  }
};

template <Kind K>
constexpr AlgInfo make_exchange() {
  AlgInfo a{&alg_start<HierExchange<K>, kMaxAlgState>,
            &alg_progress<HierExchange<K>>, false, true};
  a.fits = &HierExchange<K>::fits;
  return a;
}

}  // namespace

const AlgInfo kAlltoallHier = make_exchange<Kind::kAlltoall>();
const AlgInfo kAllgatherHierExchange = make_exchange<Kind::kAllgather>();
const AlgInfo kAllgatherHierBruck = make_exchange<Kind::kAllgatherBruck>();

}  // namespace ucc::dev

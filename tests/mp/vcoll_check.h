// One rooted or v-collective of the multi-process correctness tests:
// gather, scatter, gatherv, scatterv, allgatherv, alltoallv and
// reduce_scatterv. Their arguments, buffers, inputs and checks (VCase,
// VSlot, VChecker) and the environment a family runs in (VEnv), for
// test_collectives_v.cc and test_collectives_v_families.cc. The first seven
// collectives live in coll_check.h; the words (input, raw input, reference,
// poison) are those of mp_util.h.
//
// More words:
//   block     - what one rank contributes (gather(v), allgatherv), gets
//               (scatter(v), reduce_scatterv), or sends to one peer
//               (alltoallv); its element count comes from vcount().
//   layout    - where the blocks of one v-buffer lie: a rank's own count
//               and displacement arrays (VSide). Gaps between blocks are
//               poisoned and must stay so.
//   packed    - blocks back to back in rank order: what a NULL
//               displacement array means, and the global index of a
//               block's first element in scatter(v) and reduce_scatterv
//               inputs.
//   ignored   - a buffer the API tells the library to leave alone (the
//               root's src of an in-place gather, a non-root's dst of a
//               gather, ...). Cases pass either a zeroed buffer info (NULL,
//               no arrays) or a poisoned buffer that must stay poisoned.
//
// Inputs, so that every rank can compute every other rank's: rank r's
// block of gather(v) / allgatherv holds raw(r, i); the root's block for p
// of scatter(v) holds raw(root, packed(p) + i); what a sends b in
// alltoallv holds raw(a, (b << 32) + i); reduce_scatterv reduces inputs
// at global index i < total.
//
// Threads: a rank's own single thread.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/coll_check.h"
#include "tests/mp/mp_util.h"

namespace ucct::mp::vcoll {

using ucct::mp::coll::Config;

// How the element counts of a case are chosen (vcount()).
enum class Counts : uint8_t {
  kSame,       // base everywhere
  kZeroThird,  // ranks 1, 4, 7 contribute 0; the others base + a + 2b
  kVaried,     // base + (7a + 3b) % 11
};

// Where the blocks of one v-buffer lie.
enum class Displs : uint8_t {
  kNull,     // displacements = NULL: packed in rank order
  kPacked,   // the same, spelled out
  kGaps,     // rank order, 1..3 poisoned elements before each block, 3 after
  kReverse,  // rank n-1 first, 0..1 element gaps, 1 after
};
inline constexpr int kDisplModes = 4;

inline const char* displs_name(Displs d) {
  static const char* const kN[] = {"null", "packed", "gaps", "reverse"};
  return kN[static_cast<int>(d)];
}
inline const char* counts_name(Counts c) {
  static const char* const kN[] = {"same", "zero3rd", "varied"};
  return kN[static_cast<int>(c)];
}

struct VCase {
  ucc_coll_type_t coll;
  const DtypeInfo* t;
  ucc_reduction_op_t op;  // reduce_scatterv only
  Counts counts;
  size_t base;    // elements (gather / scatter: the block of every rank)
  Displs displs;  // rank 0's layout; with `mixed` rank r uses displs + r
  bool mixed;     // layouts differ per rank (they are local arrays)
  bool count64;   // UCC_COLL_ARGS_FLAG_COUNT_64BIT
  bool displ64;   // UCC_COLL_ARGS_FLAG_DISPLACEMENTS_64BIT
  int root;       // gather(v), scatter(v)
  bool inplace;
  bool ignored_bufs;  // ignored buffers get poisoned memory, not zeroed info
};

// Elements rank a contributes to rank b (alltoallv), or a's block (b = 0).
inline size_t vcount(const VCase& c, int a, int b) {
  switch (c.counts) {
    case Counts::kZeroThird:
      return a % 3 == 1 ? 0 : c.base + a + 2 * b;
    case Counts::kVaried:
      return c.base + (7 * a + 3 * b) % 11;
    default:
      return c.base;
  }
}

inline bool is_v(ucc_coll_type_t c) {
  return c == UCC_COLL_TYPE_GATHERV || c == UCC_COLL_TYPE_SCATTERV ||
         c == UCC_COLL_TYPE_ALLGATHERV || c == UCC_COLL_TYPE_ALLTOALLV ||
         c == UCC_COLL_TYPE_REDUCE_SCATTERV;
}
inline bool is_rooted(ucc_coll_type_t c) {
  return c == UCC_COLL_TYPE_GATHER || c == UCC_COLL_TYPE_GATHERV ||
         c == UCC_COLL_TYPE_SCATTER || c == UCC_COLL_TYPE_SCATTERV;
}

// A count or displacement array of team size, 32 or 64 bits an entry.
// Refilling with the same length keeps its address (persistent requests).
class VArr {
 public:
  void set(const std::vector<size_t>& v, bool wide) {
    mem_.assign(v.size(), 0);
    for (size_t i = 0; i < v.size(); ++i) {
      if (wide) {
        mem_[i] = v[i];
      } else {
        const uint32_t x = static_cast<uint32_t>(v[i]);
        std::memcpy(reinterpret_cast<char*>(mem_.data()) + 4 * i, &x, 4);
      }
    }
    copy_ = mem_;
  }
  uint64_t* ptr() { return mem_.data(); }
  bool intact() const { return mem_ == copy_; }

 private:
  std::vector<uint64_t> mem_, copy_;
};

// One rank's layout of a v-buffer.
struct VSide {
  std::vector<size_t> cnt, off;  // per rank, in elements
  size_t extent = 0;             // elements the buffer holds, gaps included
  Displs mode = Displs::kNull;
  VArr counts, displs;

  void layout(const std::vector<size_t>& c, Displs m, bool c64, bool d64) {
    const int n = static_cast<int>(c.size());
    cnt = c;
    off.assign(n, 0);
    mode = m;
    size_t pos = 0;
    switch (m) {
      case Displs::kGaps:
        for (int p = 0; p < n; ++p) {
          pos += 1 + p % 3;
          off[p] = pos;
          pos += c[p];
        }
        pos += 3;
        break;
      case Displs::kReverse:
        for (int p = n - 1; p >= 0; --p) {
          pos += p % 2;
          off[p] = pos;
          pos += c[p];
        }
        pos += 1;
        break;
      default:
        for (int p = 0; p < n; ++p) {
          off[p] = pos;
          pos += c[p];
        }
        break;
    }
    extent = pos;
    counts.set(cnt, c64);
    displs.set(off, d64);
  }
  ucc_coll_buffer_info_v_t info(void* buf, const DtypeInfo& t) {
    ucc_coll_buffer_info_v_t v{};
    v.buffer = buf;
    v.counts = counts.ptr();
    v.displacements = mode == Displs::kNull ? nullptr : displs.ptr();
    v.datatype = t.dt;
    v.mem_type = UCC_MEMORY_TYPE_HOST;
    return v;
  }
  bool intact() const { return counts.intact() && displs.intact(); }
};

struct VSlot {
  VCase c{};
  uint64_t seed = 0;
  Buf src, dst;
  VSide sv, dv;               // the v-sides this rank passes (else unused)
  std::vector<size_t> blk;    // 1-D collectives: every rank's block
  std::vector<size_t> pk;     // packed offsets of blk
  std::vector<uint8_t> orig;  // inputs held in src, to check src untouched
  bool src_used = false;      // src is read by this rank
  bool src_ignored = false;   // a buffer that must stay poisoned
  bool dst_ignored = false;
  ucc_coll_args_t args{};
};

class VChecker {
 public:
  VChecker(int n, int rank, const char* cfg, Report& rep)
      : n_(n), rank_(rank), cfg_(cfg), rep_(rep) {}

  // This rank's layout mode in case c.
  Displs mode(const VCase& c, int shift = 0) const {
    const int m = static_cast<int>(c.displs) + (c.mixed ? rank_ : 0) + shift;
    return static_cast<Displs>(m % kDisplModes);
  }

  std::string describe(const VCase& c) const {
    char b[384];
    std::string blocks;
    if (c.coll != UCC_COLL_TYPE_ALLTOALLV) {
      for (int p = 0; p < n_ && p < 8; ++p)
        blocks += (p ? "," : "") + std::to_string(vcount(c, p, 0));
    }
    const bool red = c.coll == UCC_COLL_TYPE_REDUCE_SCATTERV;
    snprintf(b, sizeof b,
             "%s %s%s%s n=%d counts=%s base=%zu [%s] displs=%s%s c%d/d%d "
             "root=%s inplace=%d ignored=%s cfg=%s",
             ucct::coll_name(c.coll), c.t->name, red ? " " : "",
             red ? ucct::op_name(c.op) : "", n_, counts_name(c.counts), c.base,
             blocks.c_str(), displs_name(c.displs), c.mixed ? "+rank" : "",
             c.count64 ? 64 : 32, c.displ64 ? 64 : 32,
             is_rooted(c.coll) ? std::to_string(c.root).c_str() : "-",
             c.inplace ? 1 : 0, c.ignored_bufs ? "poisoned" : "zeroed", cfg_);
    return b;
  }

  // Sizes the buffers and arrays, writes inputs and poison, and builds the
  // arguments. With resize false nothing moves (persistent requests).
  void fill(VSlot& s, uint64_t seed, bool resize) {
    const VCase& c = s.c;
    const DtypeInfo& t = *c.t;
    const size_t sz = t.size;
    const int me = rank_, n = n_;
    const bool root = me == c.root;
    s.seed = seed;
    s.src_used = s.src_ignored = s.dst_ignored = false;
    ucc_coll_args_t& a = s.args;
    a = ucc_coll_args_t{};
    a.coll_type = c.coll;
    a.op = c.op;
    a.root = static_cast<uint64_t>(c.root);
    bool inplace = c.inplace;
    // Non-roots may pass IN_PLACE or not: it means nothing for them.
    if (is_rooted(c.coll) && !root && !c.ignored_bufs) inplace = false;
    if (inplace) a.flags |= UCC_COLL_ARGS_FLAG_IN_PLACE;
    if (c.count64) a.flags |= UCC_COLL_ARGS_FLAG_COUNT_64BIT;
    if (c.displ64) a.flags |= UCC_COLL_ARGS_FLAG_DISPLACEMENTS_64BIT;
    if (a.flags != 0) a.mask |= UCC_COLL_ARGS_FIELD_FLAGS;

    s.blk.assign(n, 0);
    s.pk.assign(n, 0);
    size_t total = 0;
    for (int p = 0; p < n; ++p) {
      s.blk[p] = vcount(c, p, 0);
      s.pk[p] = total;
      total += s.blk[p];
    }
    const size_t mine = s.blk[me];
    const size_t shift = sz * ((seed + me) % 4);
    auto size = [&](Buf& b, size_t elems) {
      if (resize)
        b.resize(elems * sz, shift);
      else
        b.poison();
    };
    auto raw_in = [&](void* buf, size_t pos, int r, size_t idx) {
      ucct::store_bits(t, buf, pos, ucct::mp::raw_input(t, seed, r, idx));
    };
    auto use_src = [&](size_t elems) {  // src holding my raw block
      size(s.src, elems);
      for (size_t i = 0; i < elems; ++i) raw_in(s.src.data(), i, me, i);
      a.src.info = ucct::mp::binfo(s.src.data(), elems, t);
      s.src_used = true;
    };
    // An ignored plain buffer: poisoned memory or a zeroed info.
    auto ignored = [&](Buf& b, ucc_coll_buffer_info_t& info, size_t elems,
                       bool& flag) {
      size(b, c.ignored_bufs ? elems : 0);
      if (!c.ignored_bufs) return;
      info = ucct::mp::binfo(b.data(), elems, t);
      flag = true;
    };
    const bool root_ip = root && c.inplace;
    switch (c.coll) {
      case UCC_COLL_TYPE_GATHER:
      case UCC_COLL_TYPE_GATHERV: {
        const bool v = c.coll == UCC_COLL_TYPE_GATHERV;
        if (root_ip)
          ignored(s.src, a.src.info, mine, s.src_ignored);
        else
          use_src(mine);
        if (v && (root || c.ignored_bufs))
          s.dv.layout(s.blk, mode(c), c.count64, c.displ64);
        if (root || c.ignored_bufs) {
          const size_t ext = v ? s.dv.extent : n * c.base;
          size(s.dst, ext);
          if (v)
            a.dst.info_v = s.dv.info(s.dst.data(), t);
          else
            a.dst.info = ucct::mp::binfo(s.dst.data(), ext, t);
          s.dst_ignored = !root;
        } else {
          size(s.dst, 0);
        }
        if (root_ip) {
          const size_t at = v ? s.dv.off[me] : me * c.base;
          for (size_t i = 0; i < mine; ++i) raw_in(s.dst.data(), at + i, me, i);
        }
        break;
      }
      case UCC_COLL_TYPE_SCATTER:
      case UCC_COLL_TYPE_SCATTERV: {
        const bool v = c.coll == UCC_COLL_TYPE_SCATTERV;
        if (v && (root || c.ignored_bufs))
          s.sv.layout(s.blk, mode(c), c.count64, c.displ64);
        if (root || c.ignored_bufs) {
          const size_t ext = v ? s.sv.extent : n * c.base;
          size(s.src, ext);
          if (v)
            a.src.info_v = s.sv.info(s.src.data(), t);
          else
            a.src.info = ucct::mp::binfo(s.src.data(), ext, t);
          s.src_used = root;
          s.src_ignored = !root;
        } else {
          size(s.src, 0);
        }
        if (root) {
          for (int p = 0; p < n; ++p) {
            const size_t at = v ? s.sv.off[p] : p * c.base;
            for (size_t i = 0; i < s.blk[p]; ++i)
              raw_in(s.src.data(), at + i, me, s.pk[p] + i);
          }
        }
        if (root_ip) {
          ignored(s.dst, a.dst.info, mine, s.dst_ignored);
        } else {
          size(s.dst, mine);
          a.dst.info = ucct::mp::binfo(s.dst.data(), mine, t);
        }
        break;
      }
      case UCC_COLL_TYPE_ALLGATHERV:
        s.dv.layout(s.blk, mode(c), c.count64, c.displ64);
        size(s.dst, s.dv.extent);
        a.dst.info_v = s.dv.info(s.dst.data(), t);
        if (c.inplace) {
          ignored(s.src, a.src.info, mine, s.src_ignored);
          for (size_t i = 0; i < mine; ++i)
            raw_in(s.dst.data(), s.dv.off[me] + i, me, i);
        } else {
          use_src(mine);
        }
        break;
      case UCC_COLL_TYPE_ALLTOALLV: {
        // In place, what we send p leaves from where p's block comes in,
        // so the counts are symmetric (MPI's rule).
        auto cnt = [&](int x, int y) {
          return c.inplace ? vcount(c, std::min(x, y), std::max(x, y))
                           : vcount(c, x, y);
        };
        std::vector<size_t> sc(n), rc(n);
        for (int p = 0; p < n; ++p) {
          sc[p] = cnt(me, p);
          rc[p] = cnt(p, me);
        }
        s.dv.layout(rc, mode(c, c.mixed ? 2 : 0), c.count64, c.displ64);
        size(s.dst, s.dv.extent);
        a.dst.info_v = s.dv.info(s.dst.data(), t);
        if (c.inplace && !c.ignored_bufs) {
          size(s.src, 0);
        } else {
          s.sv.layout(sc, mode(c), c.count64, c.displ64);
          size(s.src, s.sv.extent);
          a.src.info_v = s.sv.info(s.src.data(), t);
        }
        Buf& in = c.inplace ? s.dst : s.src;
        const VSide& lay = c.inplace ? s.dv : s.sv;
        for (int p = 0; p < n; ++p) {
          for (size_t i = 0; i < sc[p]; ++i)
            raw_in(in.data(), lay.off[p] + i, me,
                   (static_cast<size_t>(p) << 32) + i);
        }
        s.src_used = !c.inplace;
        s.src_ignored = c.inplace && c.ignored_bufs;
        break;
      }
      case UCC_COLL_TYPE_REDUCE_SCATTERV: {
        // The displacements (any layout, or NULL) must be ignored.
        s.dv.layout(s.blk, mode(c), c.count64, c.displ64);
        Buf& in = c.inplace ? s.dst : s.src;
        size(in, total);
        for (size_t i = 0; i < total; ++i)
          ucct::mp::put_red_input(t, c.op, seed, me, i, in.data(), i);
        if (c.inplace) {
          ignored(s.src, a.src.info, total, s.src_ignored);
        } else {
          a.src.info = ucct::mp::binfo(s.src.data(), total, t);
          s.src_used = true;
          size(s.dst, mine);
        }
        a.dst.info_v = s.dv.info(s.dst.data(), t);
        break;
      }
      default:
        break;
    }
    if (s.src_used) s.orig.assign(s.src.data(), s.src.data() + s.src.bytes());
  }

  // Checks the outcome of the collective in s; false on any mismatch.
  bool check(const VSlot& s) {
    const VCase& c = s.c;
    const long before = rep_.failures();
    const DtypeInfo& t = *c.t;
    const int me = rank_;
    const bool root = me == c.root;
    const uint64_t seed = s.seed;
    std::string d;  // built on the first failure only
    auto desc = [&]() -> const char* {
      if (d.empty()) d = describe(c);
      return d.c_str();
    };
    int shown = 0;
    // Compares cnt elements of b from element pos0 on with want(i).
    auto elems = [&](const Buf& b, const char* what, size_t pos0, size_t cnt,
                     auto want) {
      compare_elems(rep_, t, b.data(), desc, what, pos0, cnt, want, &shown);
    };
    // Every byte of b outside the blocks of v must still be poison.
    auto gaps = [&](const Buf& b, const VSide& v, const char* what) {
      std::vector<uint8_t> cov(v.extent, 0);
      for (size_t p = 0; p < v.cnt.size(); ++p)
        if (v.cnt[p] != 0) std::memset(cov.data() + v.off[p], 1, v.cnt[p]);
      for (size_t e = 0; e < v.extent; ++e) {
        if (cov[e]) continue;
        const size_t q = b.first_unpoisoned(e * t.size, (e + 1) * t.size);
        if (q == SIZE_MAX) continue;
        rep_.fail("%s: %s gap byte %zu (elem %zu) written (0x%02x)", desc(),
                  what, q, e, b.data()[q]);
        return;
      }
    };
    auto untouched = [&](const Buf& b, const char* what) {
      const size_t p = b.first_unpoisoned(0, b.bytes());
      if (p != SIZE_MAX)
        rep_.fail("%s: ignored %s byte %zu written (0x%02x)", desc(), what, p,
                  b.data()[p]);
    };
    auto raw = [&](int r, size_t idx) {
      return ucct::mp::raw_input(t, seed, r, idx);
    };

    switch (c.coll) {
      case UCC_COLL_TYPE_GATHER:
        if (!root) break;
        for (int j = 0; j < n_; ++j)
          elems(s.dst, "dst", j * c.base, c.base,
                [&](size_t i) { return raw(j, i); });
        break;
      case UCC_COLL_TYPE_GATHERV:
      case UCC_COLL_TYPE_ALLGATHERV:
        if (c.coll == UCC_COLL_TYPE_GATHERV && !root) break;
        for (int j = 0; j < n_; ++j)
          elems(s.dst, "dst", s.dv.off[j], s.blk[j],
                [&](size_t i) { return raw(j, i); });
        gaps(s.dst, s.dv, "dst");
        break;
      case UCC_COLL_TYPE_SCATTER:
      case UCC_COLL_TYPE_SCATTERV:
        if (root && c.inplace) break;
        elems(s.dst, "dst", 0, s.blk[me],
              [&](size_t i) { return raw(c.root, s.pk[me] + i); });
        break;
      case UCC_COLL_TYPE_ALLTOALLV:
        for (int p = 0; p < n_; ++p)
          elems(s.dst, "dst", s.dv.off[p], s.dv.cnt[p], [&](size_t i) {
            return raw(p, (static_cast<size_t>(me) << 32) + i);
          });
        gaps(s.dst, s.dv, "dst");
        break;
      case UCC_COLL_TYPE_REDUCE_SCATTERV:
        // In place, the rest of dst is scratch: only my block is checked.
        elems(s.dst, "dst", c.inplace ? s.pk[me] : 0, s.blk[me], [&](size_t i) {
          return ucct::mp::red_expect(t, c.op, seed, n_, s.pk[me] + i);
        });
        break;
      default:
        break;
    }
    if (s.src_ignored) untouched(s.src, "src");
    if (s.dst_ignored) untouched(s.dst, "dst");
    if (!s.src.guards_ok()) rep_.fail("%s: write outside src", desc());
    if (!s.dst.guards_ok()) rep_.fail("%s: write outside dst", desc());
    if (s.src_used && !s.orig.empty() &&
        std::memcmp(s.orig.data(), s.src.data(), s.orig.size()) != 0)
      rep_.fail("%s: src was modified", desc());
    if (!s.sv.intact() || !s.dv.intact())
      rep_.fail("%s: count or displacement array modified", desc());
    return rep_.failures() == before;
  }

  int n() const { return n_; }
  int rank() const { return rank_; }
  Report& rep() { return rep_; }

 private:
  int n_, rank_;
  const char* cfg_;
  Report& rep_;
};

// ---------------------------------------------------------------------------
// Families.

struct VEnv {
  ucct::World& w;
  VChecker& ck;
  const Config& cfg;
  uint64_t next_seed = 1;
  bool fatal = false;     // an API call failed: ranks may be out of step
  double timeout_s = 30;  // per case (the largest take well under 1 s)

  uint64_t seed() { return ucct::mp::mix64(next_seed++); }

  // init + post + wait + check + finalize of one case.
  void run(VSlot& s) {
    ck.fill(s, seed(), true);
    ucc_coll_req_h req = nullptr;
    ucc_status_t st =
        ucct::mp::run_case(w, s.args, s.src, s.dst, timeout_s, &req);
    if (st != UCC_OK) {
      ck.rep().fail("%s: status %s", ck.describe(s.c).c_str(),
                    ucct::status_name(st));
      fatal = true;
      return;
    }
    ck.check(s);
    st = ucc_collective_finalize(req);
    if (st != UCC_OK) {
      ck.rep().fail("%s: finalize %s", ck.describe(s.c).c_str(),
                    ucct::status_name(st));
      fatal = true;
    }
  }
};

// The families of test_collectives_v_families.cc (fanin, fanout, and
// persistent / in-flight v-collectives); each records failures in
// e.ck.rep() and sets e.fatal when the ranks may be out of step.
void family_fan(VEnv& e, ucc_coll_type_t coll);
void family_vpersistent(VEnv& e);

}  // namespace ucct::mp::vcoll

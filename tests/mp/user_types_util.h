// The cases of test_user_types.cc: configurations, the per-rank run of a
// sequence of collectives, element comparison, the reducing collectives
// driven by an element type given as functions (inputs and a serial
// reference), so that the MAXLOC/MINLOC pairs and the generic types go
// through the same cases, and the generic test types with the ten
// data-moving collectives on one of them.
//
// Threads: a rank's own single thread.
#pragma once

#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/mp_util.h"

namespace ucct::mp::ut {

using Env = std::vector<std::pair<std::string, std::string>>;

struct Config {
  const char* name;
  Env env;
  bool big;  // run the 70000-element cases
};

inline const Config kConfigs[] = {
    {"default", {}, true},
    {"smallseg",
     {{"UCC_SHM_SEG_SIZE", "256"},
      {"UCC_SHM_NSEGS", "2"},
      {"UCC_ALLREDUCE_ALG", "ring"}},
     false},
};

inline constexpr size_t kCounts[] = {0, 1, 7, 1000};
inline constexpr size_t kBig = 70000;

// What one rank runs: a sequence of collectives that every rank builds in
// the same order. `seed` changes per collective; failures land in `rep`;
// `fatal` stops the sequence when an API call fails (ranks may then be
// out of step).
struct Seq {
  ucct::World& w;
  Report& rep;
  const Config& cfg;
  int n, rank;
  uint64_t next = 1;
  bool fatal = false;

  uint64_t seed() { return ucct::mp::mix64(next++); }

  // init + post + wait + finalize; false (and fatal) on any error.
  bool coll(ucc_coll_args_t& a, const std::string& what) {
    const ucc_status_t st = w.run(a);
    if (st == UCC_OK) return true;
    rep.fail("%s cfg=%s: status %s", what.c_str(), cfg.name,
             ucct::status_name(st));
    fatal = true;
    return false;
  }
};

inline std::string fmt(const char* f, ...)
    __attribute__((format(printf, 1, 2)));
inline std::string fmt(const char* f, ...) {
  char b[256];
  va_list ap;
  va_start(ap, f);
  vsnprintf(b, sizeof b, f, ap);
  va_end(ap);
  return b;
}

// Compares cnt elements of esize bytes at data + pos0 * esize with
// want(i, out); reports the first three mismatches and the total.
template <typename Want>
inline void compare(Report& rep, const std::string& what, const uint8_t* data,
                    size_t esize, size_t pos0, size_t cnt, Want want) {
  std::vector<uint8_t> w(esize);
  size_t bad = 0;
  for (size_t i = 0; i < cnt; ++i) {
    want(i, w.data());
    const uint8_t* got = data + (pos0 + i) * esize;
    if (std::memcmp(got, w.data(), esize) == 0) continue;
    if (++bad > 3) continue;
    std::string g, e;
    for (size_t k = 0; k < esize && k < 16; ++k) {
      g += fmt("%02x", got[k]);
      e += fmt("%02x", w[k]);
    }
    rep.fail("%s: element %zu is %s, want %s", what.c_str(), pos0 + i,
             g.c_str(), e.c_str());
  }
  if (bad > 3) rep.fail("%s: %zu elements differ", what.c_str(), bad);
}

inline void check_guards(Report& rep, const std::string& what, const Buf& src,
                         const Buf& dst) {
  if (!src.guards_ok()) rep.fail("%s: wrote outside src", what.c_str());
  if (!dst.guards_ok()) rep.fail("%s: wrote outside dst", what.c_str());
}

inline ucc_coll_buffer_info_t info(void* p, size_t count, ucc_datatype_t dt) {
  return ucc_coll_buffer_info_t{p, count, dt, UCC_MEMORY_TYPE_HOST};
}

inline ucc_coll_buffer_info_v_t info_v(void* p, std::vector<uint64_t>& counts,
                                       std::vector<uint64_t>& displs,
                                       ucc_datatype_t dt) {
  return ucc_coll_buffer_info_v_t{p, counts.data(), displs.data(), dt,
                                  UCC_MEMORY_TYPE_HOST};
}

// ucct::op_name knows the ops of the common tables; the pair ops are ours.
inline const char* op_str(ucc_reduction_op_t op) {
  if (op == UCC_OP_MAXLOC) return "maxloc";
  if (op == UCC_OP_MINLOC) return "minloc";
  return ucct::op_name(op);
}

inline constexpr uint64_t kFlags64 =
    UCC_COLL_ARGS_FLAG_COUNT_64BIT | UCC_COLL_ARGS_FLAG_DISPLACEMENTS_64BIT;

// ===========================================================================
// The reducing collectives, shared by the pair and the generic cases: an
// element type of `esize` bytes, inputs and the reference of one global
// index given as functions.

struct ReduceSpec {
  ucc_datatype_t dt;
  ucc_reduction_op_t op;
  size_t esize;
  const char* name;
  // Writes rank r's input element at global index i.
  std::function<void(uint64_t seed, int r, size_t i, void* out)> input;
  // Writes the reduction over all ranks at global index i.
  std::function<void(uint64_t seed, size_t i, void* out)> expect;
};

inline void fill_inputs(const ReduceSpec& s, uint64_t seed, int rank,
                        uint8_t* p, size_t first, size_t cnt) {
  for (size_t i = 0; i < cnt; ++i)
    s.input(seed, rank, first + i, p + i * s.esize);
}

inline void allreduce(Seq& run, const ReduceSpec& s, size_t count,
                      bool in_place) {
  const uint64_t seed = run.seed();
  const std::string what =
      fmt("allreduce %s %s n=%d count=%zu inplace=%d", s.name, op_str(s.op),
          run.n, count, in_place ? 1 : 0);
  Buf src, dst;
  src.resize(count * s.esize);
  dst.resize(count * s.esize);
  fill_inputs(s, seed, run.rank, in_place ? dst.data() : src.data(), 0, count);
  std::vector<uint8_t> orig(src.data(), src.data() + src.bytes());
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
  a.op = s.op;
  a.dst.info = info(dst.data(), count, s.dt);
  if (in_place) {
    a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
  } else {
    a.src.info = info(src.data(), count, s.dt);
  }
  if (!run.coll(a, what)) return;
  compare(run.rep, what, dst.data(), s.esize, 0, count,
          [&](size_t i, void* out) { s.expect(seed, i, out); });
  check_guards(run.rep, what, src, dst);
  if (!orig.empty() && std::memcmp(orig.data(), src.data(), orig.size()) != 0)
    run.rep.fail("%s: src was modified", what.c_str());
}

inline void reduce(Seq& run, const ReduceSpec& s, size_t count, int root) {
  const uint64_t seed = run.seed();
  const std::string what = fmt("reduce %s %s n=%d count=%zu root=%d", s.name,
                               op_str(s.op), run.n, count, root);
  const bool me = run.rank == root;
  Buf src, dst;
  src.resize(count * s.esize);
  dst.resize(me ? count * s.esize : 0);
  fill_inputs(s, seed, run.rank, src.data(), 0, count);
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_REDUCE;
  a.op = s.op;
  a.root = static_cast<uint64_t>(root);
  a.src.info = info(src.data(), count, s.dt);
  if (me) a.dst.info = info(dst.data(), count, s.dt);
  if (!run.coll(a, what)) return;
  if (me)
    compare(run.rep, what, dst.data(), s.esize, 0, count,
            [&](size_t i, void* out) { s.expect(seed, i, out); });
  check_guards(run.rep, what, src, dst);
}

inline void reduce_scatter(Seq& run, const ReduceSpec& s, size_t block) {
  const uint64_t seed = run.seed();
  const std::string what = fmt("reduce_scatter %s %s n=%d block=%zu", s.name,
                               op_str(s.op), run.n, block);
  const size_t total = block * run.n;
  Buf src, dst;
  src.resize(total * s.esize);
  dst.resize(block * s.esize);
  fill_inputs(s, seed, run.rank, src.data(), 0, total);
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_REDUCE_SCATTER;
  a.op = s.op;
  a.src.info = info(src.data(), total, s.dt);
  a.dst.info = info(dst.data(), block, s.dt);
  if (!run.coll(a, what)) return;
  const size_t first = block * run.rank;
  compare(run.rep, what, dst.data(), s.esize, 0, block,
          [&](size_t i, void* out) { s.expect(seed, first + i, out); });
  check_guards(run.rep, what, src, dst);
}

// Blocks of different sizes (some empty): rank r gets (base + 3r) % 11.
inline void reduce_scatterv(Seq& run, const ReduceSpec& s, size_t base) {
  const uint64_t seed = run.seed();
  const std::string what = fmt("reduce_scatterv %s %s n=%d base=%zu", s.name,
                               op_str(s.op), run.n, base);
  std::vector<uint64_t> counts(run.n), displs(run.n);
  size_t total = 0, first = 0;
  for (int r = 0; r < run.n; ++r) {
    counts[r] =
        (base + 3 * static_cast<size_t>(r)) % 11 + (base > 100 ? base : 0);
    if (r == run.rank) first = total;
    total += counts[r];
  }
  const size_t mine = counts[run.rank];
  Buf src, dst;
  src.resize(total * s.esize);
  dst.resize(mine * s.esize);
  fill_inputs(s, seed, run.rank, src.data(), 0, total);
  ucc_coll_args_t a{};
  a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
  a.flags = UCC_COLL_ARGS_FLAG_COUNT_64BIT;
  a.coll_type = UCC_COLL_TYPE_REDUCE_SCATTERV;
  a.op = s.op;
  a.src.info = info(src.data(), total, s.dt);
  a.dst.info_v = ucc_coll_buffer_info_v_t{dst.data(), counts.data(), nullptr,
                                          s.dt, UCC_MEMORY_TYPE_HOST};
  if (!run.coll(a, what)) return;
  compare(run.rep, what, dst.data(), s.esize, 0, mine,
          [&](size_t i, void* out) { s.expect(seed, first + i, out); });
  check_guards(run.rep, what, src, dst);
}

// The whole reduction matrix of one element type and op: counts 0, 1, 7,
// 1000 (and `big` when the configuration runs big cases), every root.
inline void reductions(Seq& run, const ReduceSpec& s, size_t big) {
  for (size_t count : kCounts) {
    if (run.fatal) return;
    allreduce(run, s, count, false);
    if (count == 7) allreduce(run, s, count, true);
    for (int root = 0; root < run.n && !run.fatal; ++root)
      reduce(run, s, count, root);
    reduce_scatter(run, s, count);
    reduce_scatterv(run, s, count);
  }
  if (big == 0 || !run.cfg.big || run.fatal) return;
  allreduce(run, s, big, false);
  reduce(run, s, big, run.n - 1);
  // Blocks of big / n pairs: still more than one message each for n <= 8.
  reduce_scatter(run, s, big / run.n + 1);
}

// ===========================================================================
// Generic datatypes: "tri", a 12-byte struct reduced per field (a: sum,
// b: max, c: xor), and "gauss", an 8-byte Gaussian integer reduced by
// multiplication mod 2^32; both ops are associative and commutative with
// exact results. Then the ten data-moving collectives on tri.

struct Tri {
  int32_t a, b, c;
};
static_assert(sizeof(Tri) == 12);
struct Gauss {
  int32_t re, im;
};
static_assert(sizeof(Gauss) == 8);

inline int32_t wrap(uint32_t v) { return static_cast<int32_t>(v); }

inline Tri tri_op(const Tri& x, const Tri& y) {
  return Tri{wrap(static_cast<uint32_t>(x.a) + static_cast<uint32_t>(y.a)),
             x.b > y.b ? x.b : y.b, x.c ^ y.c};
}

// (a + bi)(c + di) in the integers mod 2^32: commutative and associative.
inline Gauss gauss_op(const Gauss& x, const Gauss& y) {
  const auto a = static_cast<uint32_t>(x.re), b = static_cast<uint32_t>(x.im);
  const auto c = static_cast<uint32_t>(y.re), d = static_cast<uint32_t>(y.im);
  return Gauss{wrap(a * c - b * d), wrap(a * d + b * c)};
}

inline Tri tri_in(uint64_t seed, int r, uint64_t i) {
  const uint64_t x = rnd(seed, static_cast<uint64_t>(r), i);
  const uint64_t y = ucct::mp::mix64(x);
  return Tri{wrap(static_cast<uint32_t>(x)),
             wrap(static_cast<uint32_t>(x >> 32)),
             wrap(static_cast<uint32_t>(y))};
}

inline Gauss gauss_in(uint64_t seed, int r, uint64_t i) {
  const uint64_t x = rnd(seed, static_cast<uint64_t>(r), i);
  return Gauss{wrap(static_cast<uint32_t>(x)),
               wrap(static_cast<uint32_t>(x >> 32))};
}

// --- data movement with tri ----------------------------------------------
// Element i of the block that rank `from` sends to rank `to`; collectives
// that send one block to everyone use to = 0.
inline void tri_elem(uint64_t seed, int from, int to, size_t i, uint8_t* out) {
  const Tri t = tri_in(seed, from, (static_cast<uint64_t>(to) << 32) | i);
  std::memcpy(out, &t, sizeof(Tri));
}

// The expected image of a whole buffer: poison, then blocks placed.
struct Image {
  std::vector<uint8_t> bytes;
  explicit Image(size_t n) : bytes(n, ucct::mp::kPoison) {}
  void block(uint64_t seed, int from, int to, size_t at, size_t cnt) {
    for (size_t i = 0; i < cnt; ++i)
      tri_elem(seed, from, to, i, &bytes[(at + i) * sizeof(Tri)]);
  }
};

inline void check_image(Seq& run, const std::string& what, const Buf& b,
                        const Image& want) {
  compare(run.rep, what, b.data(), sizeof(Tri), 0, b.bytes() / sizeof(Tri),
          [&](size_t i, void* out) {
            std::memcpy(out, &want.bytes[i * sizeof(Tri)], sizeof(Tri));
          });
  if (!b.guards_ok()) run.rep.fail("%s: wrote outside a buffer", what.c_str());
}

inline void fill(Buf& b, uint64_t seed, int from, int to, size_t at,
                 size_t cnt) {
  for (size_t i = 0; i < cnt; ++i)
    tri_elem(seed, from, to, i, b.data() + (at + i) * sizeof(Tri));
}

// Per-rank block sizes of the v-collectives: different per rank (and per
// peer), some empty; `base` >= 1000 makes them large.
inline size_t vcount(size_t base, int r, int peer) {
  return (base + 3 * static_cast<size_t>(r) + 5 * static_cast<size_t>(peer)) %
             7 +
         (base >= 1000 ? base : 0);
}

// Displacements with a one-element gap before every block.
inline size_t gapped(std::vector<uint64_t>& counts,
                     std::vector<uint64_t>& displs) {
  size_t at = 0;
  for (size_t j = 0; j < counts.size(); ++j) {
    displs[j] = at + 1;
    at += 1 + counts[j];
  }
  return at;
}

inline void movement(Seq& run, ucc_datatype_t dt, size_t count) {
  const int n = run.n, me = run.rank;
  const size_t es = sizeof(Tri);
  auto what = [&](const char* c, int root) {
    return fmt("%s tri n=%d count=%zu root=%d", c, n, count, root);
  };
  for (int root = 0; root < n && !run.fatal; ++root) {  // bcast
    const uint64_t seed = run.seed();
    Buf b;
    b.resize(count * es);
    if (me == root) fill(b, seed, root, 0, 0, count);
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_BCAST;
    a.root = static_cast<uint64_t>(root);
    a.src.info = info(b.data(), count, dt);
    if (!run.coll(a, what("bcast", root))) return;
    Image want(b.bytes());
    want.block(seed, root, 0, 0, count);
    check_image(run, what("bcast", root), b, want);
  }
  {  // allgather
    const uint64_t seed = run.seed();
    Buf src, dst;
    src.resize(count * es);
    dst.resize(n * count * es);
    fill(src, seed, me, 0, 0, count);
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_ALLGATHER;
    a.src.info = info(src.data(), count, dt);
    a.dst.info = info(dst.data(), n * count, dt);
    if (!run.coll(a, what("allgather", -1))) return;
    Image want(dst.bytes());
    for (int j = 0; j < n; ++j) want.block(seed, j, 0, j * count, count);
    check_image(run, what("allgather", -1), dst, want);
  }
  {  // alltoall
    const uint64_t seed = run.seed();
    Buf src, dst;
    src.resize(n * count * es);
    dst.resize(n * count * es);
    for (int j = 0; j < n; ++j) fill(src, seed, me, j, j * count, count);
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_ALLTOALL;
    a.src.info = info(src.data(), n * count, dt);
    a.dst.info = info(dst.data(), n * count, dt);
    if (!run.coll(a, what("alltoall", -1))) return;
    Image want(dst.bytes());
    for (int j = 0; j < n; ++j) want.block(seed, j, me, j * count, count);
    check_image(run, what("alltoall", -1), dst, want);
  }
  const int root = static_cast<int>(count % static_cast<size_t>(n));
  {  // gather
    const uint64_t seed = run.seed();
    Buf src, dst;
    src.resize(count * es);
    dst.resize(me == root ? n * count * es : 0);
    fill(src, seed, me, 0, 0, count);
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_GATHER;
    a.root = static_cast<uint64_t>(root);
    a.src.info = info(src.data(), count, dt);
    a.dst.info = info(dst.data(), n * count, dt);
    if (!run.coll(a, what("gather", root))) return;
    Image want(dst.bytes());
    if (me == root)
      for (int j = 0; j < n; ++j) want.block(seed, j, 0, j * count, count);
    check_image(run, what("gather", root), dst, want);
  }
  {  // scatter
    const uint64_t seed = run.seed();
    Buf src, dst;
    src.resize(me == root ? n * count * es : 0);
    dst.resize(count * es);
    if (me == root)
      for (int j = 0; j < n; ++j) fill(src, seed, root, j, j * count, count);
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_SCATTER;
    a.root = static_cast<uint64_t>(root);
    a.src.info = info(src.data(), n * count, dt);
    a.dst.info = info(dst.data(), count, dt);
    if (!run.coll(a, what("scatter", root))) return;
    Image want(dst.bytes());
    want.block(seed, root, me, 0, count);
    check_image(run, what("scatter", root), dst, want);
  }
  // The v-collectives: blocks of vcount(), gapped displacements.
  std::vector<uint64_t> counts(n), displs(n);
  {  // allgatherv
    const uint64_t seed = run.seed();
    for (int j = 0; j < n; ++j) counts[j] = vcount(count, j, 0);
    const size_t total = gapped(counts, displs);
    Buf src, dst;
    src.resize(counts[me] * es);
    dst.resize(total * es);
    fill(src, seed, me, 0, 0, counts[me]);
    ucc_coll_args_t a{};
    a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags = kFlags64;
    a.coll_type = UCC_COLL_TYPE_ALLGATHERV;
    a.src.info = info(src.data(), counts[me], dt);
    a.dst.info_v = info_v(dst.data(), counts, displs, dt);
    if (!run.coll(a, what("allgatherv", -1))) return;
    Image want(dst.bytes());
    for (int j = 0; j < n; ++j) want.block(seed, j, 0, displs[j], counts[j]);
    check_image(run, what("allgatherv", -1), dst, want);
  }
  {  // alltoallv: rank i sends vcount(count, i, j) elements to rank j
    const uint64_t seed = run.seed();
    std::vector<uint64_t> rcounts(n), rdispls(n);
    for (int j = 0; j < n; ++j) {
      counts[j] = vcount(count, me, j);
      rcounts[j] = vcount(count, j, me);
    }
    const size_t stotal = gapped(counts, displs);
    const size_t rtotal = gapped(rcounts, rdispls);
    Buf src, dst;
    src.resize(stotal * es);
    dst.resize(rtotal * es);
    for (int j = 0; j < n; ++j) fill(src, seed, me, j, displs[j], counts[j]);
    ucc_coll_args_t a{};
    a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags = kFlags64;
    a.coll_type = UCC_COLL_TYPE_ALLTOALLV;
    a.src.info_v = info_v(src.data(), counts, displs, dt);
    a.dst.info_v = info_v(dst.data(), rcounts, rdispls, dt);
    if (!run.coll(a, what("alltoallv", -1))) return;
    Image want(dst.bytes());
    for (int j = 0; j < n; ++j) want.block(seed, j, me, rdispls[j], rcounts[j]);
    check_image(run, what("alltoallv", -1), dst, want);
  }
  {  // gatherv
    const uint64_t seed = run.seed();
    for (int j = 0; j < n; ++j) counts[j] = vcount(count, j, 1);
    const size_t total = gapped(counts, displs);
    Buf src, dst;
    src.resize(counts[me] * es);
    dst.resize(me == root ? total * es : 0);
    fill(src, seed, me, 0, 0, counts[me]);
    ucc_coll_args_t a{};
    a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags = kFlags64;
    a.coll_type = UCC_COLL_TYPE_GATHERV;
    a.root = static_cast<uint64_t>(root);
    a.src.info = info(src.data(), counts[me], dt);
    a.dst.info_v = info_v(dst.data(), counts, displs, dt);
    if (!run.coll(a, what("gatherv", root))) return;
    Image want(dst.bytes());
    if (me == root)
      for (int j = 0; j < n; ++j) want.block(seed, j, 0, displs[j], counts[j]);
    check_image(run, what("gatherv", root), dst, want);
  }
  {  // scatterv
    const uint64_t seed = run.seed();
    for (int j = 0; j < n; ++j) counts[j] = vcount(count, j, 2);
    const size_t total = gapped(counts, displs);
    Buf src, dst;
    src.resize(me == root ? total * es : 0);
    dst.resize(counts[me] * es);
    if (me == root)
      for (int j = 0; j < n; ++j)
        fill(src, seed, root, j, displs[j], counts[j]);
    ucc_coll_args_t a{};
    a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags = kFlags64;
    a.coll_type = UCC_COLL_TYPE_SCATTERV;
    a.root = static_cast<uint64_t>(root);
    a.src.info_v = info_v(src.data(), counts, displs, dt);
    a.dst.info = info(dst.data(), counts[me], dt);
    if (!run.coll(a, what("scatterv", root))) return;
    Image want(dst.bytes());
    want.block(seed, root, me, 0, counts[me]);
    check_image(run, what("scatterv", root), dst, want);
  }
}

}  // namespace ucct::mp::ut

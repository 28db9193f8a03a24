// Shared helpers of the multi-process tests: deterministic inputs, serial
// reference reductions, guarded buffers and small wrappers around the
// request life cycle. Header-only so that every mp binary can use it
// without a library of its own.
//
// Words used below:
//   input     - what rank r contributes at global element index i. It is a
//               pure function of (seed, r, i), so every rank can compute
//               every other rank's input and check its own result alone.
//   raw input - random bits, for collectives that only move data.
//   reference - the reduction of all ranks' inputs at one index, computed
//               serially here. Inputs are chosen so that the result is
//               exact in every datatype and in every order of evaluation:
//               integers wrap (mod 2^bits, order free); floats are small
//               multiples of 1/4 for sum/avg/max/min and products of
//               {+-1/2, +-1, +-2, 0} for prod (exact even in bfloat16 with
//               8 ranks).
//   poison    - the byte kPoison, written over every output (and around
//               every buffer, the guards) before a collective.
//
// Threads: a rank's own single thread.
#pragma once

#include <sched.h>

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/common/gpu.h"
#include "tests/common/harness.h"
#include "tests/common/types.h"

namespace ucct::mp {

// The team sizes the collective matrices run at: 1, 2, 3, 4, 5, 8, then
// those of UCCT_EXTRA_RANKS (comma-separated, 1..64), e.g. 6 for two hosts
// of three ranks (docs/network.md). Read when the tests are registered.
inline std::vector<int> matrix_ranks() {
  std::vector<int> out{1, 2, 3, 4, 5, 8};
  const char* extra = getenv("UCCT_EXTRA_RANKS");
  for (const char* c = extra; c != nullptr && *c != '\0';) {
    char* end = nullptr;
    const long n = strtol(c, &end, 10);
    if (end == c) break;
    if (n >= 1 && n <= 64 &&
        std::find(out.begin(), out.end(), static_cast<int>(n)) == out.end())
      out.push_back(static_cast<int>(n));
    c = *end == ',' ? end + 1 : end;
  }
  return out;
}

inline constexpr uint8_t kPoison = 0xA5;

// --- deterministic data ------------------------------------------------

inline uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline uint64_t rnd(uint64_t seed, uint64_t rank, uint64_t idx) {
  return mix64(seed ^ mix64((rank << 40) ^ idx));
}

// Whether a datatype is one of the transport subset: one per element size
// (1, 2, 4, 8 bytes) with integer and float arithmetic at 4 bytes.
inline bool transport_dtype(const DtypeInfo& t) {
  return t.dt == UCC_DT_INT8 || t.dt == UCC_DT_BFLOAT16 ||
         t.dt == UCC_DT_INT32 || t.dt == UCC_DT_FLOAT32 ||
         t.dt == UCC_DT_FLOAT64;
}

// UCCT_DTYPES=transport: the matrices take the transport subset, and of
// the reduction ops only sum and max (matrix_op below). The suites that
// run the collectives matrix again over another transport (hosts_*,
// wire_* in tests/CMakeLists.txt) test the bytes moved; the arithmetic of
// every datatype is the mp and emu suites' job. Unset or "all": all.
inline bool transport_subset() {
  const char* sel = getenv("UCCT_DTYPES");
  return sel != nullptr && strcmp(sel, "transport") == 0;
}

// The 12 datatypes the library supports, in table order (or the
// transport subset of them, above).
inline std::vector<const DtypeInfo*> supported_dtypes() {
  const bool subset = transport_subset();
  size_t n = 0;
  const DtypeInfo* t = dtype_table(&n);
  std::vector<const DtypeInfo*> out;
  for (size_t i = 0; i < n; ++i) {
    if (has_element_access(t[i]) && (!subset || transport_dtype(t[i])))
      out.push_back(&t[i]);
  }
  return out;
}

inline bool is_int(const DtypeInfo& t) {
  return t.kind == DtKind::kSigned || t.kind == DtKind::kUnsigned;
}

// The library's op/dtype matrix: sum prod max min everywhere, logical and
// bitwise ops on integers, avg on floats.
inline bool op_defined(const DtypeInfo& t, ucc_reduction_op_t op) {
  switch (op) {
    case UCC_OP_SUM:
    case UCC_OP_PROD:
    case UCC_OP_MAX:
    case UCC_OP_MIN:
      return true;
    case UCC_OP_LAND:
    case UCC_OP_LOR:
    case UCC_OP_LXOR:
    case UCC_OP_BAND:
    case UCC_OP_BOR:
    case UCC_OP_BXOR:
      return is_int(t);
    case UCC_OP_AVG:
      return !is_int(t);
    default:
      return false;
  }
}

// The ops the collectives matrices run on a datatype: every defined one,
// or sum and max under UCCT_DTYPES=transport.
inline bool matrix_op(const DtypeInfo& t, ucc_reduction_op_t op) {
  if (transport_subset() && op != UCC_OP_SUM && op != UCC_OP_MAX) return false;
  return op_defined(t, op);
}

inline const ucc_reduction_op_t kAllOps[] = {
    UCC_OP_SUM,  UCC_OP_PROD, UCC_OP_MAX, UCC_OP_MIN,  UCC_OP_LAND, UCC_OP_LOR,
    UCC_OP_LXOR, UCC_OP_BAND, UCC_OP_BOR, UCC_OP_BXOR, UCC_OP_AVG};

inline int64_t sext(uint64_t v, size_t bytes) {
  if (bytes >= 8) return static_cast<int64_t>(v);
  const unsigned s = static_cast<unsigned>(64 - 8 * bytes);
  return static_cast<int64_t>(v << s) >> s;
}

// Integer input bits (already truncated to the element width).
inline uint64_t int_input(const DtypeInfo& t, ucc_reduction_op_t op,
                          uint64_t r) {
  if (op == UCC_OP_LAND || op == UCC_OP_LOR || op == UCC_OP_LXOR) {
    r = (r & 3) == 0 ? 0 : (r >> 2);  // a quarter of the inputs are 0
  } else if (op == UCC_OP_PROD && (r & 0x70) != 0) {
    r |= 1;  // mostly odd factors, or narrow products would all wrap to 0
  }
  return truncate_bits(t, r);
}

// Float input value (exactly representable in every float type).
inline double float_input(ucc_reduction_op_t op, uint64_t r) {
  switch (op) {
    case UCC_OP_PROD: {
      static const double kF[8] = {-2, -1, -0.5, 0.5, 1, 2, 1, -1};
      if (((r >> 3) & 15) == 0) return 0.0;
      return kF[r & 7];
    }
    case UCC_OP_MAX:
    case UCC_OP_MIN:
      return (static_cast<int>(r % 511) - 255) / 4.0;
    default:  // sum, avg
      return (static_cast<int>(r % 33) - 16) / 4.0;
  }
}

// Stores rank's reduction input for global index idx at buf[pos].
inline void put_red_input(const DtypeInfo& t, ucc_reduction_op_t op,
                          uint64_t seed, int rank, size_t idx, void* buf,
                          size_t pos) {
  const uint64_t r = rnd(seed, static_cast<uint64_t>(rank), idx);
  if (is_int(t)) {
    store_bits(t, buf, pos, int_input(t, op, r));
  } else {
    store_value(t, buf, pos, float_input(op, r));
  }
}

// Bits of the reduction over ranks 0..n-1 at global index idx.
inline uint64_t red_expect(const DtypeInfo& t, ucc_reduction_op_t op,
                           uint64_t seed, int n, size_t idx) {
  if (is_int(t)) {
    const bool sgn = t.kind == DtKind::kSigned;
    uint64_t acc = 0;
    for (int r = 0; r < n; ++r) {
      const uint64_t v =
          int_input(t, op, rnd(seed, static_cast<uint64_t>(r), idx));
      if (r == 0) {
        // The op is applied n - 1 times: a team of one gets its input back
        // unchanged, even for the logical ops (as MPI and UCC's self
        // transport do).
        acc = v;
        continue;
      }
      switch (op) {
        case UCC_OP_SUM:
          acc += v;
          break;
        case UCC_OP_PROD:
          acc *= v;
          break;
        case UCC_OP_MAX:
          if (sgn ? sext(v, t.size) > sext(acc, t.size) : v > acc) acc = v;
          break;
        case UCC_OP_MIN:
          if (sgn ? sext(v, t.size) < sext(acc, t.size) : v < acc) acc = v;
          break;
        case UCC_OP_LAND:
          acc = (acc != 0) && (v != 0);
          break;
        case UCC_OP_LOR:
          acc = (acc != 0) || (v != 0);
          break;
        case UCC_OP_LXOR:
          acc = (acc != 0) != (v != 0);
          break;
        case UCC_OP_BAND:
          acc &= v;
          break;
        case UCC_OP_BOR:
          acc |= v;
          break;
        case UCC_OP_BXOR:
          acc ^= v;
          break;
        default:
          break;
      }
      acc = truncate_bits(t, acc);
    }
    return truncate_bits(t, acc);
  }
  double acc = 0;
  for (int r = 0; r < n; ++r) {
    const double v = float_input(op, rnd(seed, static_cast<uint64_t>(r), idx));
    if (r == 0) {
      acc = v;
      continue;
    }
    switch (op) {
      case UCC_OP_PROD:
        acc *= v;
        break;
      case UCC_OP_MAX:
        acc = v > acc ? v : acc;
        break;
      case UCC_OP_MIN:
        acc = v < acc ? v : acc;
        break;
      default:
        acc += v;
        break;  // sum, avg
    }
  }
  if (op == UCC_OP_AVG) acc /= n;
  uint64_t tmp = 0;
  store_value(t, &tmp, 0, acc);
  return load_bits(t, &tmp, 0);
}

// Raw input bits of rank at index idx (collectives that move data only).
inline uint64_t raw_input(const DtypeInfo& t, uint64_t seed, int rank,
                          size_t idx) {
  return truncate_bits(t, rnd(seed, static_cast<uint64_t>(rank), idx));
}

// --- guarded buffers ------------------------------------------------------

// A byte buffer with kGuard poisoned bytes on each side; guards_ok() tells
// whether a collective wrote outside it. Resizing may move it; filling does
// not (persistent requests keep their addresses).
class Buf {
 public:
  static constexpr size_t kGuard = 64;

  // shift (< kGuard) moves the start off the 64-byte boundary; keep it a
  // multiple of the element size (natural alignment is all UCC promises).
  void resize(size_t bytes, size_t shift = 0) {
    const size_t need = bytes + shift + 2 * kGuard + 64;
    if (mem_.size() < need) mem_.resize(need);
    // Start of the leading guard, 64-byte aligned, then shifted.
    const uintptr_t p = reinterpret_cast<uintptr_t>(mem_.data());
    base_ = static_cast<size_t>(((p + 63) & ~uintptr_t{63}) - p) + shift;
    bytes_ = bytes;
    poison();
  }
  void poison() {
    std::memset(mem_.data() + base_, kPoison, bytes_ + 2 * kGuard);
  }
  uint8_t* data() { return mem_.data() + base_ + kGuard; }
  const uint8_t* data() const { return mem_.data() + base_ + kGuard; }
  size_t bytes() const { return bytes_; }
  bool guards_ok() const {
    const uint8_t* g = mem_.data() + base_;
    for (size_t i = 0; i < kGuard; ++i) {
      if (g[i] != kPoison || g[kGuard + bytes_ + i] != kPoison) return false;
    }
    return true;
  }
  // The whole buffer with its guards (nothing before the first resize).
  uint8_t* raw() { return mem_.empty() ? nullptr : mem_.data() + base_; }
  size_t raw_bytes() const { return mem_.empty() ? 0 : bytes_ + 2 * kGuard; }
  // Index of the first byte in [from, to) that is not kPoison, or SIZE_MAX.
  size_t first_unpoisoned(size_t from, size_t to) const {
    for (size_t i = from; i < to; ++i) {
      if (data()[i] != kPoison) return i;
    }
    return SIZE_MAX;
  }

 private:
  std::vector<uint8_t> mem_;
  size_t base_ = 0;  // offset of the leading guard in mem_
  size_t bytes_ = 0;
};

// --- failure reports ---------------------------------------------------------

// Prints a rank's failure lines (the first kMaxLines only) and counts them.
class Report {
 public:
  static constexpr int kMaxLines = 40;
  explicit Report(int rank) : rank_(rank) {}

  void fail(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    ++failures_;
    if (++lines_ > kMaxLines) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "rank %d: %s\n", rank_, line);
    if (lines_ == kMaxLines)
      std::fprintf(stderr, "rank %d: (further failures not printed)\n", rank_);
  }
  long failures() const { return failures_; }
  int rank() const { return rank_; }

 private:
  int rank_;
  long failures_ = 0;
  int lines_ = 0;
};

// Compares cnt elements of `data` (datatype t) from element pos0 on with
// want(i) bit for bit; reports the first three mismatches (at most three
// per caller, counted in *shown) and the total. desc() names the case; it
// is called on failures only.
template <typename Desc, typename Want>
void compare_elems(Report& rep, const DtypeInfo& t, const void* data, Desc desc,
                   const char* what, size_t pos0, size_t cnt, Want want,
                   int* shown) {
  size_t bad = 0;
  for (size_t i = 0; i < cnt; ++i) {
    const uint64_t got = ucct::load_bits(t, data, pos0 + i);
    const uint64_t exp = want(i);
    if (got == exp) continue;
    if (++bad <= 3 && (*shown)++ < 3) {
      uint64_t e = exp;
      rep.fail("%s: %s elem %zu got 0x%" PRIx64 " (%g) want 0x%" PRIx64 " (%g)",
               desc(), what, pos0 + i, got, ucct::load_value(t, data, pos0 + i),
               exp, ucct::load_value(t, &e, 0));
    }
  }
  if (bad > 3)
    rep.fail("%s: %s: %zu mismatching elements in all", desc(), what, bad);
}

// --- request helpers ------------------------------------------------------

// Progresses ctx until every request in reqs has left UCC_INPROGRESS.
// Returns UCC_OK when all ended UCC_OK, the first error otherwise, or
// UCC_ERR_TIMED_OUT once timeout_s has passed with none of them ending: a
// hang, where a slow machine only moves the deadline on. (Under ctest -j2
// beside tests whose ranks never yield, each hand-over between ranks waits
// for a scheduler slice: 18 collectives of 256-byte slots in flight took
// 60 s on the CI VM once, though every few seconds one of them ended.)
inline ucc_status_t wait_all(ucc_context_h ctx, ucc_coll_req_h* reqs, size_t n,
                             double timeout_s = 60) {
  double deadline = now_s() + timeout_s;
  size_t last_busy = n + 1;
  unsigned polls = 0;
  for (;;) {
    size_t busy = 0;
    ucc_status_t worst = UCC_OK;
    for (size_t i = 0; i < n; ++i) {
      const ucc_status_t st = ucc_collective_test(reqs[i]);
      if (st == UCC_INPROGRESS)
        ++busy;
      else if (st != UCC_OK && worst == UCC_OK)
        worst = st;
    }
    if (busy == 0) return worst;
    if (busy < last_busy) {
      last_busy = busy;
      deadline = now_s() + timeout_s;
    }
    const ucc_status_t pst = ucc_context_progress(ctx);
    if (pst < 0) return pst;
    if ((++polls & 127) == 0) {
      if (now_s() > deadline) return UCC_ERR_TIMED_OUT;
      sched_yield();
    }
  }
}

// init + post + wait of one collective on w's team (*req set once init
// succeeded). With UCCT_MEM=cuda|managed|unknown (tests/common/gpu.h) the
// buffers, guards included, go to the GPU first and come back after
// completion, so the caller checks src and dst as in host runs.
inline ucc_status_t run_case(ucct::World& w, const ucc_coll_args_t& args,
                             Buf& src, Buf& dst, double timeout_s,
                             ucc_coll_req_h* req) {
  ucc_coll_args_t a = args;
  ucct::gpu::Region regs[2] = {{src.raw(), src.raw_bytes(), 0},
                               {dst.raw(), dst.raw_bytes(), 0}};
  ucct::gpu::Mirror mirror;
  const bool on_gpu = ucct::gpu::mode() != ucct::gpu::Mode::kHost;
  if (on_gpu && !mirror.map(&a, regs, 2)) return UCC_ERR_NO_MESSAGE;
  *req = nullptr;
  ucc_status_t st = ucc_collective_init(&a, req, w.team);
  if (st == UCC_OK) st = ucc_collective_post(*req);
  if (st == UCC_OK) st = w.wait(*req, timeout_s);
  if (st == UCC_OK && on_gpu && !mirror.unmap()) st = UCC_ERR_NO_MESSAGE;
  return st;
}

inline ucc_coll_buffer_info_t binfo(void* p, size_t count, const DtypeInfo& t) {
  ucc_coll_buffer_info_t b{};
  b.buffer = p;
  b.count = count;
  b.datatype = t.dt;
  b.mem_type = UCC_MEMORY_TYPE_HOST;
  return b;
}

}  // namespace ucct::mp

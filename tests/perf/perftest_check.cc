#include "tests/perf/perftest_check.h"

#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace ucct::perf {
namespace {

bool is_integer(const DtypeInfo& t) {
  return t.kind == DtKind::kSigned || t.kind == DtKind::kUnsigned;
}

bool is_reduction(ucc_coll_type_t c) {
  return c == UCC_COLL_TYPE_ALLREDUCE || c == UCC_COLL_TYPE_REDUCE ||
         c == UCC_COLL_TYPE_REDUCE_SCATTER;
}

// Element j of the block that rank `from` sends to rank `to` (allgather:
// to = 0; bcast: from = root, to = 0). 0..100: fits int8 and is exact in
// bfloat16.
double move_value(int from, int to, uint64_t j) {
  return static_cast<double>((static_cast<uint64_t>(from) * 37 +
                              static_cast<uint64_t>(to) * 11 + (j % 101) * 3) %
                             101);
}

// Rank r's input at vector index i for reduction op over n ranks.
int64_t red_value(ucc_reduction_op_t op, int r, uint64_t i, int n) {
  const uint64_t ur = static_cast<uint64_t>(r), un = static_cast<uint64_t>(n);
  switch (op) {
    case UCC_OP_SUM:
    case UCC_OP_AVG:
      return static_cast<int64_t>((ur + i) % 4 + 1);
    case UCC_OP_PROD: {
      const uint64_t k = (i + ur) % un;  // one rank gives 2, the next 3
      return k == 0 ? 2 : (k == 1 ? 3 : 1);
    }
    case UCC_OP_MAX:
    case UCC_OP_MIN:
      return static_cast<int64_t>((ur * 7 + (i % 11) * 3) % 11 + 1);
    case UCC_OP_LAND:
      return i % (un + 1) == ur
                 ? 0
                 : 1;  // one rank says false, except every (n+1)th
    case UCC_OP_LOR:
      return i % (un + 1) == ur ? 1 : 0;
    case UCC_OP_LXOR:
      return (ur + i) % 3 == 0 ? 1 : 0;
    default:
      return 0;
  }
}

// Bit pattern of rank r at index i for band / bor / bxor (splitmix64).
uint64_t red_bits(int r, uint64_t i) {
  uint64_t z = (static_cast<uint64_t>(r) << 40) ^ i;
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool is_bitwise(ucc_reduction_op_t op) {
  return op == UCC_OP_BAND || op == UCC_OP_BOR || op == UCC_OP_BXOR;
}

void put_red(const Setup& s, void* buf, uint64_t k, uint64_t idx) {
  if (is_bitwise(s.op)) {
    store_bits(*s.dt, buf, k, red_bits(s.rank, idx));
  } else {
    store_value(*s.dt, buf, k,
                static_cast<double>(red_value(s.op, s.rank, idx, s.size)));
  }
}

void* elem(const Setup& s, void* buf, uint64_t k) {
  return static_cast<char*>(buf) + k * s.dt->size;
}

uint64_t expected_bits(const DtypeInfo& t, double v) {
  uint64_t tmp = 0;
  store_value(t, &tmp, 0, v);
  return load_bits(t, &tmp, 0);
}

std::string show(const DtypeInfo& t, const void* buf, uint64_t k) {
  char out[64];
  if (t.kind == DtKind::kSigned) {
    std::snprintf(out, sizeof out, "%" PRId64,
                  static_cast<int64_t>(load_value(t, buf, k)));
  } else if (t.kind == DtKind::kUnsigned) {
    std::snprintf(out, sizeof out, "%" PRIu64, load_bits(t, buf, k));
  } else {
    std::snprintf(out, sizeof out, "%.6g", load_value(t, buf, k));
  }
  return out;
}

std::string show_expected_bits(const DtypeInfo& t, uint64_t bits) {
  return show(t, &bits, 0);
}

// Significand bits of a floating type.
int precision(const DtypeInfo& t) {
  if (t.kind == DtKind::kHalf) return 11;
  if (t.kind == DtKind::kBfloat16) return 8;
  return t.size == 4 ? 24 : 53;
}

// Rounding tolerance of a floating reduction over n ranks. Inputs are small
// non-negative integers, so every partial sum or product is an integer no
// larger than the result: while the result is below 2^precision, any order
// of evaluation is exact. Above that, and for avg, each of the n steps may
// round by one unit in the last place of the result.
double tolerance(const DtypeInfo& t, ucc_reduction_op_t op, int n,
                 double expect) {
  const double mag = std::fabs(expect);
  if (op != UCC_OP_AVG && mag <= std::ldexp(1.0, precision(t))) return 0;
  return 2.0 * std::ldexp(1.0, -precision(t)) * n * std::fmax(1.0, mag);
}

// The reduction over n ranks' inputs at vector index idx (not bitwise):
// in integers (wrapping, as the element width then truncates) and in
// floating point. O(n) per index, so it is remembered: the inputs repeat
// in idx with period 132 (red_value: i % 4, i % 11, i % 3; prod's pair
// moves but its product does not), and land / lor depend only on whether
// idx % (n + 1) names a rank. A job of thousands of ranks (tests/sim)
// checks each rank's vector in O(count) instead of O(count * n).
struct Reduced {
  int64_t i;
  double f;
};
Reduced reduce_ranks(ucc_reduction_op_t op, int n, uint64_t idx) {
  int64_t sum = 0, prod = 1, mx = INT64_MIN, mn = INT64_MAX, truths = 0;
  double fsum = 0, fprod = 1, fmx = -INFINITY, fmn = INFINITY;
  for (int q = 0; q < n; ++q) {
    const int64_t v = red_value(op, q, idx, n);
    sum += v;
    prod *= v;
    mx = v > mx ? v : mx;
    mn = v < mn ? v : mn;
    truths += v != 0;
    const double d = static_cast<double>(v);
    fsum += d;
    fprod *= d;
    fmx = std::fmax(fmx, d);
    fmn = std::fmin(fmn, d);
  }
  switch (op) {
    case UCC_OP_SUM:
      return {sum, fsum};
    case UCC_OP_AVG:
      return {0, fsum / n};
    case UCC_OP_PROD:
      return {prod, fprod};
    case UCC_OP_MAX:
      return {mx, fmx};
    case UCC_OP_MIN:
      return {mn, fmn};
    case UCC_OP_LAND:
      return {truths == n, 0};
    case UCC_OP_LOR:
      return {truths > 0, 0};
    case UCC_OP_LXOR:
      return {truths % 2, 0};
    default:
      return {0, 0};
  }
}
Reduced reduced(ucc_reduction_op_t op, int n, uint64_t idx) {
  constexpr uint64_t kPeriod = 132;
  static struct {
    ucc_reduction_op_t op;
    int n = 0;
    bool known[kPeriod];
    Reduced val[kPeriod];
  } memo;
  const uint64_t un = static_cast<uint64_t>(n);
  const uint64_t cls = op == UCC_OP_LAND || op == UCC_OP_LOR
                           ? (idx % (un + 1) == un ? 1 : 0)
                           : (op == UCC_OP_PROD ? 0 : idx % kPeriod);
  if (memo.n != n || memo.op != op) {
    memo.op = op;
    memo.n = n;
    memset(memo.known, 0, sizeof memo.known);
  }
  if (!memo.known[cls]) {
    memo.val[cls] = reduce_ranks(op, n, idx);
    memo.known[cls] = true;
  }
  return memo.val[cls];
}

// Checks out[k] against the reduction over all ranks of their inputs at
// vector index idx.
bool check_red(const Setup& s, const void* out, uint64_t k, uint64_t idx,
               std::string* why) {
  const DtypeInfo& t = *s.dt;
  const int n = s.size;
  char msg[256];
  if (is_integer(t)) {
    uint64_t acc;
    if (is_bitwise(s.op)) {
      acc = red_bits(0, idx);
      for (int q = 1; q < n; ++q) {
        const uint64_t v = red_bits(q, idx);
        acc = s.op == UCC_OP_BAND  ? (acc & v)
              : s.op == UCC_OP_BOR ? (acc | v)
                                   : (acc ^ v);
      }
    } else {
      const int64_t a = reduced(s.op, n, idx).i;
      acc = static_cast<uint64_t>(a);  // wraps like the element width does
    }
    acc = truncate_bits(t, acc);
    if (load_bits(t, out, k) == acc) return true;
    std::snprintf(msg, sizeof msg, "element %" PRIu64 ": got %s, expected %s",
                  k, show(t, out, k).c_str(),
                  show_expected_bits(t, acc).c_str());
    *why = msg;
    return false;
  }
  if (s.op != UCC_OP_SUM && s.op != UCC_OP_AVG && s.op != UCC_OP_PROD &&
      s.op != UCC_OP_MAX && s.op != UCC_OP_MIN)
    return true;  // not checked (see check_skip_reason)
  const double expect = reduced(s.op, n, idx).f;
  const double got = load_value(t, out, k);
  if (std::fabs(got - expect) <= tolerance(t, s.op, n, expect))
    return true;  // false for NaN
  std::snprintf(msg, sizeof msg, "element %" PRIu64 ": got %.6g, expected %.6g",
                k, got, expect);
  *why = msg;
  return false;
}

bool check_move(const Setup& s, const void* out, uint64_t k, double v, int from,
                std::string* why) {
  const uint64_t want = expected_bits(*s.dt, v);
  if (load_bits(*s.dt, out, k) == want) return true;
  char msg[256];
  std::snprintf(msg, sizeof msg,
                "element %" PRIu64 " (data of rank %d): got %s, expected %s", k,
                from, show(*s.dt, out, k).c_str(),
                show_expected_bits(*s.dt, want).c_str());
  *why = msg;
  return false;
}

}  // namespace

const char* check_skip_reason(const Setup& s) {
  const DtypeInfo& t = *s.dt;
  if (s.coll == UCC_COLL_TYPE_BARRIER) return "barrier moves no data";
  if (!has_element_access(t)) return "no reference for this datatype";
  if (!is_reduction(s.coll)) return nullptr;
  const OpInfo* op = op_info(s.op);
  if (!op || s.op == UCC_OP_MAXLOC || s.op == UCC_OP_MINLOC)
    return "no reference for this op";
  if (op->bitwise && !is_integer(t)) return "bitwise op on a floating type";
  if (op->logical && !is_integer(t)) return "logical op on a floating type";
  if (s.op == UCC_OP_AVG && is_integer(t)) return "avg on an integer type";
  return nullptr;
}

void fill_inputs(const Setup& s, void* src, uint64_t src_count, void* dst,
                 uint64_t dst_count) {
  const size_t es = s.dt->size;
  if (dst) std::memset(dst, 0xFF, dst_count * es);
  if (!has_element_access(*s.dt)) {
    if (src) std::memset(src, 0, src_count * es);
    return;
  }
  const uint64_t c = s.count;
  const int r = s.rank, n = s.size;
  switch (s.coll) {
    case UCC_COLL_TYPE_ALLREDUCE:
    case UCC_COLL_TYPE_REDUCE: {
      const bool in_dst = s.inplace && (s.coll == UCC_COLL_TYPE_ALLREDUCE ||
                                        static_cast<uint64_t>(r) == s.root);
      void* buf = in_dst ? dst : src;
      for (uint64_t i = 0; i < c; ++i) put_red(s, buf, i, i);
      break;
    }
    case UCC_COLL_TYPE_REDUCE_SCATTER: {
      void* buf = s.inplace ? dst : src;
      for (uint64_t k = 0; k < c * n; ++k) put_red(s, buf, k, k);
      break;
    }
    case UCC_COLL_TYPE_BCAST:
      if (static_cast<uint64_t>(r) != s.root) {
        std::memset(src, 0xFF, c * es);
        break;
      }
      for (uint64_t j = 0; j < c; ++j)
        store_value(*s.dt, src, j, move_value(r, 0, j));
      break;
    case UCC_COLL_TYPE_ALLGATHER: {
      void* own = s.inplace ? elem(s, dst, static_cast<uint64_t>(r) * c) : src;
      for (uint64_t j = 0; j < c; ++j)
        store_value(*s.dt, own, j, move_value(r, 0, j));
      break;
    }
    case UCC_COLL_TYPE_ALLTOALL: {
      void* buf = s.inplace ? dst : src;
      for (int q = 0; q < n; ++q) {
        for (uint64_t j = 0; j < c; ++j) {
          store_value(*s.dt, buf, static_cast<uint64_t>(q) * c + j,
                      move_value(r, q, j));
        }
      }
      break;
    }
    default:
      break;
  }
}

bool check_result(const Setup& s, const void* src, const void* dst,
                  std::string* why) {
  if (check_skip_reason(s)) return true;
  const uint64_t c = s.count;
  const int r = s.rank, n = s.size;
  const uint64_t ur = static_cast<uint64_t>(r);
  switch (s.coll) {
    case UCC_COLL_TYPE_ALLREDUCE:
      for (uint64_t i = 0; i < c; ++i) {
        if (!check_red(s, dst, i, i, why)) return false;
      }
      return true;
    case UCC_COLL_TYPE_REDUCE:
      if (ur != s.root) return true;
      for (uint64_t i = 0; i < c; ++i) {
        if (!check_red(s, dst, i, i, why)) return false;
      }
      return true;
    case UCC_COLL_TYPE_REDUCE_SCATTER: {
      const uint64_t base =
          s.inplace ? ur * c : 0;  // in place: our block of dst
      for (uint64_t j = 0; j < c; ++j) {
        if (!check_red(s, dst, base + j, ur * c + j, why)) return false;
      }
      return true;
    }
    case UCC_COLL_TYPE_BCAST:
      for (uint64_t j = 0; j < c; ++j) {
        if (!check_move(s, src, j, move_value(static_cast<int>(s.root), 0, j),
                        static_cast<int>(s.root), why)) {
          return false;
        }
      }
      return true;
    case UCC_COLL_TYPE_ALLGATHER:
    case UCC_COLL_TYPE_ALLTOALL:
      for (int q = 0; q < n; ++q) {
        const int to = s.coll == UCC_COLL_TYPE_ALLGATHER ? 0 : r;
        for (uint64_t j = 0; j < c; ++j) {
          if (!check_move(s, dst, static_cast<uint64_t>(q) * c + j,
                          move_value(q, to, j), q, why)) {
            return false;
          }
        }
      }
      return true;
    default:
      return true;
  }
}

Shape shape_of(const Setup& s, ucc_coll_type_t type) {
  Shape sh;
  const uint64_t nc = s.count * static_cast<uint64_t>(s.size);
  const bool is_root = static_cast<uint64_t>(s.rank) == s.root;
  switch (s.coll) {
    case UCC_COLL_TYPE_ALLREDUCE:
    case UCC_COLL_TYPE_REDUCE:
      sh.src_count = sh.dst_count = s.count;
      break;
    case UCC_COLL_TYPE_BCAST:
      sh.src_count = s.count;
      break;
    case UCC_COLL_TYPE_ALLGATHER:
      sh.src_count = s.count;
      sh.dst_count = nc;
      break;
    case UCC_COLL_TYPE_ALLTOALL:
      sh.src_count = sh.dst_count = nc;
      break;
    case UCC_COLL_TYPE_REDUCE_SCATTER:
      sh.src_count = nc;
      // In place: dst holds the whole vector.
      sh.dst_count = s.inplace ? nc : s.count;
      break;
    default:
      break;
  }
  if (type != UCC_COLL_TYPE_BARRIER) {
    sh.src_here = type == UCC_COLL_TYPE_BCAST || !s.inplace ||
                  (type == UCC_COLL_TYPE_REDUCE && !is_root);
    sh.dst_here = type != UCC_COLL_TYPE_BCAST &&
                  (type != UCC_COLL_TYPE_REDUCE || is_root);
  }
  return sh;
}

ucc_coll_args_t coll_args(const Setup& s, ucc_coll_type_t type, const Shape& sh,
                          void* src, void* dst, ucc_memory_type_t mt,
                          VArrays* v) {
  ucc_coll_args_t args{};
  args.mask = UCC_COLL_ARGS_FIELD_FLAGS;
  args.flags = UCC_COLL_ARGS_FLAG_PERSISTENT |
               (s.inplace ? UCC_COLL_ARGS_FLAG_IN_PLACE : 0);
  args.coll_type = type;
  if (type != UCC_COLL_TYPE_BARRIER) {
    args.src.info = {src, sh.src_count, s.dt->dt, mt};
    args.dst.info = {dst, sh.dst_count, s.dt->dt, mt};
  }
  if (s.coll != type) {
    v->counts.assign(static_cast<size_t>(s.size), s.count);
    v->displs.clear();
    for (int q = 0; q < s.size; ++q) v->displs.push_back(s.count * q);
    args.flags |=
        UCC_COLL_ARGS_FLAG_COUNT_64BIT | UCC_COLL_ARGS_FLAG_DISPLACEMENTS_64BIT;
    ucc_count_t* cnt = v->counts.data();
    ucc_aint_t* dsp = v->displs.data();
    const ucc_coll_buffer_info_t sb = args.src.info, db = args.dst.info;
    if (type == UCC_COLL_TYPE_ALLTOALLV)
      args.src.info_v = {sb.buffer, cnt, dsp, sb.datatype, sb.mem_type};
    if (type != UCC_COLL_TYPE_REDUCE_SCATTERV)
      args.dst.info_v = {db.buffer, cnt, dsp, db.datatype, db.mem_type};
    else
      args.dst.info_v = {db.buffer, cnt, nullptr, db.datatype, db.mem_type};
  }
  const bool reduction = s.coll == UCC_COLL_TYPE_ALLREDUCE ||
                         s.coll == UCC_COLL_TYPE_REDUCE ||
                         s.coll == UCC_COLL_TYPE_REDUCE_SCATTER;
  const bool rooted =
      s.coll == UCC_COLL_TYPE_BCAST || s.coll == UCC_COLL_TYPE_REDUCE;
  if (reduction) args.op = s.op;
  if (rooted) args.root = s.root;
  return args;
}

}  // namespace ucct::perf

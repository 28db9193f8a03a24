// One collective of the multi-process correctness tests: its arguments,
// buffers, inputs and checks (Case, Slot, Checker), and the environment a
// family runs in (Env). Shared by test_collectives.cc (the per-collective
// matrix and the gtest suite) and test_collectives_families.cc (barrier
// timing, persistent and in-flight families).
//
// Threads: a rank's own single thread.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/mp_util.h"

namespace ucct::mp::coll {

struct Config {
  const char* name;
  std::vector<std::pair<std::string, std::string>> env;
  bool small_slots;                   // keep the large-count subset tiny
  std::vector<const char*> families;  // empty: every family
};

// ---------------------------------------------------------------------------
// One collective: its arguments, buffers, inputs and checks.

struct Case {
  ucc_coll_type_t coll;
  const DtypeInfo* t;
  ucc_reduction_op_t op;  // reductions only
  size_t count;           // vector (allreduce, reduce, bcast) or block per rank
  int root;               // bcast, reduce
  bool inplace;
  bool nonroot_dst;  // reduce: non-roots pass a (poisoned) dst buffer
};

inline bool is_reduction(ucc_coll_type_t c) {
  return c == UCC_COLL_TYPE_ALLREDUCE || c == UCC_COLL_TYPE_REDUCE ||
         c == UCC_COLL_TYPE_REDUCE_SCATTER;
}

struct Slot {
  Case c{};
  uint64_t seed = 0;
  Buf src, dst;
  std::vector<uint8_t> orig;  // inputs held in src, to check src untouched
  bool src_used = false;      // src is read by this rank (not in place)
  ucc_coll_args_t args{};
  int cb_calls = 0;  // completion callback: calls and last status
  ucc_status_t cb_status = UCC_INPROGRESS;
};

class Checker {
 public:
  Checker(int n, int rank, const char* cfg, Report& rep)
      : n_(n), rank_(rank), cfg_(cfg), rep_(rep) {}

  std::string describe(const Case& c) const {
    char b[256];
    const bool red = is_reduction(c.coll);
    const bool rooted =
        c.coll == UCC_COLL_TYPE_BCAST || c.coll == UCC_COLL_TYPE_REDUCE;
    snprintf(b, sizeof b,
             "%s %s%s%s n=%d count=%zu inplace=%d root=%s%s cfg=%s",
             ucct::coll_name(c.coll), c.t ? c.t->name : "-", red ? " " : "",
             red ? ucct::op_name(c.op) : "", n_, c.count, c.inplace ? 1 : 0,
             rooted ? std::to_string(c.root).c_str() : "-",
             c.coll == UCC_COLL_TYPE_REDUCE && !c.nonroot_dst
                 ? " (non-roots: no dst, no in-place flag)"
                 : "",
             cfg_);
    return b;
  }

  // Sizes the buffers, writes inputs and poison, and builds the arguments.
  // Buffers move only when they must grow (call once before a persistent
  // init; later fills keep the addresses).
  void fill(Slot& s, uint64_t seed, bool resize) {
    const Case& c = s.c;
    s.seed = seed;
    s.src_used = false;
    ucc_coll_args_t& a = s.args;
    a = ucc_coll_args_t{};
    a.coll_type = c.coll;
    a.op = c.op;
    if (c.inplace) {
      a.mask |= UCC_COLL_ARGS_FIELD_FLAGS;
      a.flags |= UCC_COLL_ARGS_FLAG_IN_PLACE;
    }
    if (c.coll == UCC_COLL_TYPE_BARRIER) return;
    const DtypeInfo& t = *c.t;
    const size_t sz = t.size, k = c.count, nk = k * n_;
    const bool root = rank_ == c.root;
    // Buffers start 0..3 elements past a 64-byte boundary, case by case.
    const size_t shift = sz * ((seed + rank_) % 4);
    auto size = [&](Buf& b, size_t bytes) {
      if (resize)
        b.resize(bytes, shift);
      else
        b.poison();
    };
    auto red_in = [&](void* buf, size_t pos, size_t idx) {
      ucct::mp::put_red_input(t, c.op, seed, rank_, idx, buf, pos);
    };
    auto raw_in = [&](void* buf, size_t pos, int r, size_t idx) {
      ucct::store_bits(t, buf, pos, ucct::mp::raw_input(t, seed, r, idx));
    };
    switch (c.coll) {
      case UCC_COLL_TYPE_ALLREDUCE:
        size(s.src, k * sz);
        size(s.dst, k * sz);
        for (size_t i = 0; i < k; ++i)
          red_in(c.inplace ? s.dst.data() : s.src.data(), i, i);
        a.dst.info = ucct::mp::binfo(s.dst.data(), k, t);
        if (!c.inplace) {
          a.src.info = ucct::mp::binfo(k ? s.src.data() : nullptr, k, t);
          s.src_used = true;
        }
        break;
      case UCC_COLL_TYPE_BCAST:
        size(s.src, k * sz);
        size(s.dst, 0);
        if (root) {
          for (size_t i = 0; i < k; ++i) raw_in(s.src.data(), i, rank_, i);
        }
        a.src.info = ucct::mp::binfo(s.src.data(), k, t);
        a.root = static_cast<uint64_t>(c.root);
        break;
      case UCC_COLL_TYPE_REDUCE: {
        // IN_PLACE matters at the root only; non-roots pass it or not
        // (with the same parity as their dst buffer).
        if (!root && !c.nonroot_dst)
          a.flags &= ~uint64_t{UCC_COLL_ARGS_FLAG_IN_PLACE};
        const bool dst_in = c.inplace && root;
        size(s.src, k * sz);
        size(s.dst, (root || c.nonroot_dst) ? k * sz : 0);
        for (size_t i = 0; i < k; ++i)
          red_in(dst_in ? s.dst.data() : s.src.data(), i, i);
        if (!dst_in) {
          a.src.info = ucct::mp::binfo(s.src.data(), k, t);
          s.src_used = true;
        }
        if (root || c.nonroot_dst)
          a.dst.info = ucct::mp::binfo(s.dst.data(), k, t);
        a.root = static_cast<uint64_t>(c.root);
        break;
      }
      case UCC_COLL_TYPE_ALLGATHER:
        size(s.src, k * sz);
        size(s.dst, nk * sz);
        for (size_t i = 0; i < k; ++i) {
          if (c.inplace)
            raw_in(s.dst.data(), rank_ * k + i, rank_, i);
          else
            raw_in(s.src.data(), i, rank_, i);
        }
        a.dst.info = ucct::mp::binfo(s.dst.data(), nk, t);
        if (!c.inplace) {
          a.src.info = ucct::mp::binfo(s.src.data(), k, t);
          s.src_used = true;
        }
        break;
      case UCC_COLL_TYPE_ALLTOALL:
        size(s.src, nk * sz);
        size(s.dst, nk * sz);
        for (size_t i = 0; i < nk; ++i)
          raw_in(c.inplace ? s.dst.data() : s.src.data(), i, rank_, i);
        a.dst.info = ucct::mp::binfo(s.dst.data(), nk, t);
        if (!c.inplace) {
          a.src.info = ucct::mp::binfo(s.src.data(), nk, t);
          s.src_used = true;
        }
        break;
      case UCC_COLL_TYPE_REDUCE_SCATTER:
        size(s.src, nk * sz);
        size(s.dst, (c.inplace ? nk : k) * sz);
        for (size_t i = 0; i < nk; ++i)
          red_in(c.inplace ? s.dst.data() : s.src.data(), i, i);
        if (c.inplace) {
          a.dst.info = ucct::mp::binfo(s.dst.data(), nk, t);
        } else {
          a.src.info = ucct::mp::binfo(s.src.data(), nk, t);
          a.dst.info = ucct::mp::binfo(s.dst.data(), k, t);
          s.src_used = true;
        }
        break;
      default:
        break;
    }
    if (s.src_used) s.orig.assign(s.src.data(), s.src.data() + s.src.bytes());
  }

  // Checks the outcome of the collective in s; false on any mismatch.
  bool check(const Slot& s) {
    const Case& c = s.c;
    if (c.coll == UCC_COLL_TYPE_BARRIER) return true;
    const long before = rep_.failures();
    const DtypeInfo& t = *c.t;
    const size_t k = c.count;
    const bool root = rank_ == c.root;
    const uint64_t seed = s.seed;
    std::string d;  // built on the first failure only
    auto desc = [&]() -> const char* {
      if (d.empty()) d = describe(c);
      return d.c_str();
    };
    int shown = 0;
    // Compares count elements of b from element `pos0` on with want(i).
    auto elems = [&](const Buf& b, const char* what, size_t pos0, size_t cnt,
                     auto want) {
      compare_elems(rep_, t, b.data(), desc, what, pos0, cnt, want, &shown);
    };
    auto red = [&](size_t idx) {
      return ucct::mp::red_expect(t, c.op, seed, n_, idx);
    };
    auto raw = [&](int r, size_t idx) {
      return ucct::mp::raw_input(t, seed, r, idx);
    };

    switch (c.coll) {
      case UCC_COLL_TYPE_ALLREDUCE:
        elems(s.dst, "dst", 0, k, [&](size_t i) { return red(i); });
        break;
      case UCC_COLL_TYPE_BCAST:
        elems(s.src, "buffer", 0, k, [&](size_t i) { return raw(c.root, i); });
        break;
      case UCC_COLL_TYPE_REDUCE:
        if (root) {
          elems(s.dst, "dst", 0, k, [&](size_t i) { return red(i); });
        } else if (c.nonroot_dst) {
          const size_t p = s.dst.first_unpoisoned(0, s.dst.bytes());
          if (p != SIZE_MAX)
            rep_.fail("%s: non-root dst byte %zu written (0x%02x)", desc(), p,
                      s.dst.data()[p]);
        }
        break;
      case UCC_COLL_TYPE_ALLGATHER:
        for (int j = 0; j < n_; ++j)
          elems(s.dst, "dst", j * k, k, [&](size_t i) { return raw(j, i); });
        break;
      case UCC_COLL_TYPE_ALLTOALL:
        for (int j = 0; j < n_; ++j)
          elems(s.dst, "dst", j * k, k,
                [&](size_t i) { return raw(j, rank_ * k + i); });
        break;
      case UCC_COLL_TYPE_REDUCE_SCATTER:
        elems(s.dst, "dst", c.inplace ? rank_ * k : 0, k,
              [&](size_t i) { return red(rank_ * k + i); });
        break;
      default:
        break;
    }
    if (!s.src.guards_ok()) rep_.fail("%s: write outside src", desc());
    if (!s.dst.guards_ok()) rep_.fail("%s: write outside dst", desc());
    if (s.src_used && c.coll != UCC_COLL_TYPE_BCAST && !s.orig.empty() &&
        std::memcmp(s.orig.data(), s.src.data(), s.orig.size()) != 0)
      rep_.fail("%s: src was modified", desc());
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

struct Env {
  ucct::World& w;
  Checker& ck;
  const Config& cfg;
  uint64_t next_seed = 1;
  bool fatal = false;  // an API call failed: ranks may be out of step

  uint64_t seed() { return ucct::mp::mix64(next_seed++); }

  // init + post + wait + check + finalize of one case.
  void run(Slot& s) {
    ck.fill(s, seed(), true);
    ucc_coll_req_h req = nullptr;
    ucc_status_t st = ucct::mp::run_case(w, s.args, s.src, s.dst, 60, &req);
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

// The families of test_collectives_families.cc; each runs its whole set of
// cases on e's team and records failures in e.ck.rep(), setting e.fatal when
// the ranks may be out of step.
void family_barrier(Env& e);
void family_persistent(Env& e);
void family_inflight(Env& e);

}  // namespace ucct::mp::coll

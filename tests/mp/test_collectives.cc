// Correctness of every supported collective across forked ranks, through
// the public API only.
//
// One gtest case per (family, configuration, team size): it forks the ranks
// once, creates one team, and runs the family's whole matrix of datatype x
// op x count x in-place x root inside it. Each rank fills its inputs from
// (seed, rank, index) (mp_util.h), poisons every output and checks every
// element of its own result against a serial reference it computes alone,
// plus the guards around each buffer, that inputs stay untouched, and that
// buffers the API leaves alone (non-root dst of reduce) stay poisoned.
// Failures are printed by the rank ("rank 2: allreduce float32 sum n=3
// ...: elem 5 got ... want ...") and turn into a nonzero exit.
//
// Families: the seven collectives, "persistent" (one request posted three
// times with new inputs each time) and "inflight" (many collectives posted
// before the first wait). Configurations select the allreduce algorithm and
// the shared-memory slot size (256-byte slots and 2 of them per peer force
// segmentation and back-pressure at small counts).
#include <gtest/gtest.h>
#include <time.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/mp_util.h"

namespace {

using ucct::DtypeInfo;
using ucct::mp::Buf;
using ucct::mp::Report;

constexpr size_t kLarge = 262147;  // ~1 MiB of float32, odd
const size_t kCounts[] = {0, 1, 7, 1000, 4099, kLarge};

struct Config {
  const char* name;
  std::vector<std::pair<std::string, std::string>> env;
  bool small_slots;                   // keep the large-count subset tiny
  std::vector<const char*> families;  // empty: every family
};

const std::vector<const char*> kAllreduceOnly = {"allreduce", "inflight"};

const Config kConfigs[] = {
    {"default", {}, false, {}},
    {"rd", {{"UCC_ALLREDUCE_ALG", "rd"}}, false, kAllreduceOnly},
    {"ring", {{"UCC_ALLREDUCE_ALG", "ring"}}, false, kAllreduceOnly},
    {"auto_ringmin1k",
     {{"UCC_ALLREDUCE_ALG", "auto"}, {"UCC_ALLREDUCE_RING_MIN", "1K"}},
     false,
     kAllreduceOnly},
    {"barrier_rd", {{"UCC_BARRIER_ALG", "rd"}}, false, {"barrier"}},
    {"smallseg",
     {{"UCC_SHM_SEG_SIZE", "256"}, {"UCC_SHM_NSEGS", "2"}},
     true,
     {}},
    {"rd_smallseg",
     {{"UCC_ALLREDUCE_ALG", "rd"},
      {"UCC_SHM_SEG_SIZE", "256"},
      {"UCC_SHM_NSEGS", "2"}},
     true,
     kAllreduceOnly},
    {"ring_smallseg",
     {{"UCC_ALLREDUCE_ALG", "ring"},
      {"UCC_SHM_SEG_SIZE", "256"},
      {"UCC_SHM_NSEGS", "2"}},
     true,
     kAllreduceOnly},
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

bool is_reduction(ucc_coll_type_t c) {
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

void on_complete(void* data, ucc_status_t st) {
  Slot* s = static_cast<Slot*>(data);
  ++s->cb_calls;
  s->cb_status = st;
}

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
      size_t bad = 0;
      for (size_t i = 0; i < cnt; ++i) {
        const uint64_t got = ucct::load_bits(t, b.data(), pos0 + i);
        const uint64_t exp = want(i);
        if (got == exp) continue;
        if (++bad <= 3 && shown++ < 3) {
          uint64_t e = exp;
          rep_.fail("%s: %s elem %zu got 0x%" PRIx64 " (%g) want 0x%" PRIx64
                    " (%g)",
                    desc(), what, pos0 + i, got,
                    ucct::load_value(t, b.data(), pos0 + i), exp,
                    ucct::load_value(t, &e, 0));
        }
      }
      if (bad > 3)
        rep_.fail("%s: %s: %zu mismatching elements in all", desc(), what, bad);
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
    if (s.src_used && c.coll != UCC_COLL_TYPE_BCAST &&
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
    ucc_status_t st = ucc_collective_init(&s.args, &req, w.team);
    if (st == UCC_OK) st = ucc_collective_post(req);
    if (st == UCC_OK) st = w.wait(req);
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

bool large_ok(const Env& e, const DtypeInfo& t, ucc_reduction_op_t op,
              bool inplace) {
  const bool main_type = t.dt == UCC_DT_INT32 || t.dt == UCC_DT_FLOAT32;
  if (e.cfg.small_slots) return main_type && op == UCC_OP_SUM && !inplace;
  return main_type || op == UCC_OP_SUM;
}

// Block per rank for allgather / alltoall / reduce_scatter: the large count
// is the total, so that N=8 stays ~1 MiB.
size_t block_of(size_t count, int n) {
  return count == kLarge ? (kLarge / n) | 1 : count;
}

std::vector<int> roots_for(size_t count, int n) {
  std::vector<int> r;
  if (count <= 1000) {
    for (int i = 0; i < n; ++i) r.push_back(i);
  } else {
    r.push_back(0);
    if (n > 1) r.push_back(n - 1);
  }
  return r;
}

void family_matrix(Env& e, ucc_coll_type_t coll) {
  const int n = e.ck.n();
  Slot s;
  const bool red = is_reduction(coll);
  for (const DtypeInfo* t : ucct::mp::supported_dtypes()) {
    for (ucc_reduction_op_t op : ucct::mp::kAllOps) {
      if (red ? !ucct::mp::op_defined(*t, op) : op != UCC_OP_SUM) continue;
      for (size_t count : kCounts) {
        for (int inplace = 0; inplace < 2; ++inplace) {
          if (count == kLarge) {
            if (red && !large_ok(e, *t, op, inplace)) continue;
            if (!red && e.cfg.small_slots && t->dt != UCC_DT_INT32) continue;
          }
          if (coll == UCC_COLL_TYPE_BCAST && inplace) continue;
          const size_t k = coll == UCC_COLL_TYPE_ALLGATHER ||
                                   coll == UCC_COLL_TYPE_ALLTOALL ||
                                   coll == UCC_COLL_TYPE_REDUCE_SCATTER
                               ? block_of(count, n)
                               : count;
          const bool rooted =
              coll == UCC_COLL_TYPE_BCAST || coll == UCC_COLL_TYPE_REDUCE;
          std::vector<int> roots =
              rooted ? roots_for(count, n) : std::vector<int>{0};
          for (int root : roots) {
            s.c = Case{coll,
                       t,
                       op,
                       k,
                       root,
                       inplace != 0,
                       ((root + inplace) & 1) == 0};
            e.run(s);
            if (e.fatal) return;
          }
        }
      }
    }
  }
}

// Barriers, and that a barrier really waits for the last rank to enter:
// every rank's exit time (CLOCK_MONOTONIC is system-wide) must not be
// earlier than any rank's entry time.
void family_barrier(Env& e) {
  ucct::World& w = e.w;
  const int n = w.size, r = w.rank;
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_BARRIER;
  for (int i = 0; i < 20; ++i) {
    const ucc_status_t st = w.run(a);
    if (st != UCC_OK) {
      e.ck.rep().fail("barrier n=%d cfg=%s: status %s", n, e.cfg.name,
                      ucct::status_name(st));
      e.fatal = true;
      return;
    }
  }
  for (int trial = 0; trial < 6; ++trial) {
    int delay_ms = 0;
    if (trial % 2 == 0)
      delay_ms = (trial == 0 ? r : n - 1 - r) * 2;
    else if (r == trial % n)
      delay_ms = 10;
    timespec ts{0, delay_ms * 1000000L};
    nanosleep(&ts, nullptr);
    const double entry = ucct::now_s();
    const ucc_status_t st = w.run(a);
    const double exit = ucct::now_s();
    if (st != UCC_OK) {
      e.ck.rep().fail("barrier n=%d cfg=%s: status %s", n, e.cfg.name,
                      ucct::status_name(st));
      e.fatal = true;
      return;
    }
    std::vector<double> entries(n);
    if (ucct::oob_allgather(w.oob, &entry, entries.data(), sizeof entry,
                            w.ctx) != UCC_OK) {
      e.fatal = true;
      return;
    }
    for (int p = 0; p < n; ++p) {
      if (entries[p] > exit)
        e.ck.rep().fail(
            "barrier n=%d cfg=%s trial %d: left at %.6f before "
            "rank %d entered at %.6f",
            n, e.cfg.name, trial, exit, p, entries[p]);
    }
  }
}

// A representative case per collective, for persistent and in-flight runs.
std::vector<Case> representative(int n, bool inplace) {
  const DtypeInfo* f32 = ucct::dtype_info(UCC_DT_FLOAT32);
  const DtypeInfo* i32 = ucct::dtype_info(UCC_DT_INT32);
  const DtypeInfo* u8 = ucct::dtype_info(UCC_DT_UINT8);
  const DtypeInfo* f16 = ucct::dtype_info(UCC_DT_FLOAT16);
  return {
      {UCC_COLL_TYPE_ALLREDUCE, f32, UCC_OP_SUM, 1000, 0, inplace, true},
      {UCC_COLL_TYPE_ALLREDUCE, i32, UCC_OP_BXOR, 7, 0, inplace, true},
      {UCC_COLL_TYPE_ALLREDUCE, f16, UCC_OP_AVG, 40000, 0, inplace, true},
      {UCC_COLL_TYPE_BCAST, u8, UCC_OP_SUM, 4099, n - 1, false, true},
      {UCC_COLL_TYPE_REDUCE, i32, UCC_OP_MAX, 1000, n / 2, inplace, true},
      {UCC_COLL_TYPE_ALLGATHER, f32, UCC_OP_SUM, 333, 0, inplace, true},
      {UCC_COLL_TYPE_ALLTOALL, i32, UCC_OP_SUM, 257, 0, inplace, true},
      {UCC_COLL_TYPE_REDUCE_SCATTER, f32, UCC_OP_PROD, 513, 0, inplace, true},
      {UCC_COLL_TYPE_BARRIER, nullptr, UCC_OP_SUM, 0, 0, false, true},
  };
}

// One request per case, posted three times with new inputs each time.
void family_persistent(Env& e) {
  for (int inplace = 0; inplace < 2; ++inplace) {
    for (const Case& c : representative(e.ck.n(), inplace != 0)) {
      Slot s;
      s.c = c;
      e.ck.fill(s, e.seed(), true);
      s.args.mask |= UCC_COLL_ARGS_FIELD_FLAGS;
      s.args.flags |= UCC_COLL_ARGS_FLAG_PERSISTENT;
      ucc_coll_req_h req = nullptr;
      ucc_status_t st = ucc_collective_init(&s.args, &req, e.w.team);
      for (int post = 0; post < 3 && st == UCC_OK; ++post) {
        if (post > 0) e.ck.fill(s, e.seed(), false);  // same addresses
        st = ucc_collective_post(req);
        if (st == UCC_OK) st = e.w.wait(req);
        if (st == UCC_OK && !e.ck.check(s))
          e.ck.rep().fail("%s: persistent post %d wrong",
                          e.ck.describe(c).c_str(), post);
      }
      if (st == UCC_OK) st = ucc_collective_finalize(req);
      if (st != UCC_OK) {
        e.ck.rep().fail("%s: persistent: status %s", e.ck.describe(c).c_str(),
                        ucct::status_name(st));
        e.fatal = true;
        return;
      }
    }
  }
}

// Posts all slots before waiting for any, then checks them all. With
// with_cb, each also has a completion callback that must run exactly once.
bool run_inflight(Env& e, std::vector<Slot>& slots, bool with_cb = false) {
  std::vector<ucc_coll_req_h> reqs(slots.size(), nullptr);
  ucc_status_t st = UCC_OK;
  for (size_t i = 0; i < slots.size() && st == UCC_OK; ++i) {
    Slot& s = slots[i];
    e.ck.fill(s, e.seed(), true);
    s.cb_calls = 0;
    s.cb_status = UCC_INPROGRESS;
    if (with_cb) {
      s.args.mask |= UCC_COLL_ARGS_FIELD_CB;
      s.args.cb.cb = on_complete;
      s.args.cb.data = &s;
    }
    st = ucc_collective_init(&s.args, &reqs[i], e.w.team);
  }
  for (size_t i = 0; i < slots.size() && st == UCC_OK; ++i)
    st = ucc_collective_post(reqs[i]);
  if (st == UCC_OK) st = ucct::mp::wait_all(e.w.ctx, reqs.data(), reqs.size());
  if (st != UCC_OK) {
    e.ck.rep().fail("in flight (%zu collectives) n=%d cfg=%s: status %s",
                    slots.size(), e.ck.n(), e.cfg.name, ucct::status_name(st));
    e.fatal = true;
    return false;
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!e.ck.check(slots[i]))
      e.ck.rep().fail("  (slot %zu of %zu in flight)", i, slots.size());
    if (with_cb && (slots[i].cb_calls != 1 || slots[i].cb_status != UCC_OK))
      e.ck.rep().fail("%s: completion callback ran %d times, last status %s",
                      e.ck.describe(slots[i].c).c_str(), slots[i].cb_calls,
                      ucct::status_name(slots[i].cb_status));
    if (ucc_collective_finalize(reqs[i]) != UCC_OK) e.fatal = true;
  }
  return !e.fatal;
}

void family_inflight(Env& e) {
  const int n = e.ck.n();
  // 8 allreduces on one team, varied types, ops, sizes and placement.
  {
    std::vector<Slot> slots(8);
    const ucc_datatype_t dts[8] = {
        UCC_DT_FLOAT32,  UCC_DT_INT32, UCC_DT_UINT8,   UCC_DT_FLOAT64,
        UCC_DT_BFLOAT16, UCC_DT_INT64, UCC_DT_FLOAT16, UCC_DT_UINT16};
    const ucc_reduction_op_t ops[8] = {UCC_OP_SUM,  UCC_OP_BXOR, UCC_OP_MAX,
                                       UCC_OP_PROD, UCC_OP_AVG,  UCC_OP_MIN,
                                       UCC_OP_SUM,  UCC_OP_LOR};
    const size_t counts[8] = {1, 1000, 7, 4099, 70000, 0, 33, 20000};
    for (int i = 0; i < 8; ++i)
      slots[i].c = Case{UCC_COLL_TYPE_ALLREDUCE,
                        ucct::dtype_info(dts[i]),
                        ops[i],
                        counts[i],
                        0,
                        (i & 1) != 0,
                        true};
    if (!run_inflight(e, slots, /*with_cb=*/true)) return;
  }
  // Many rounds of 8 small allreduces in flight.
  {
    std::vector<Slot> slots(8);
    for (int round = 0; round < 50; ++round) {
      for (int i = 0; i < 8; ++i)
        slots[i].c = Case{UCC_COLL_TYPE_ALLREDUCE,
                          ucct::dtype_info(UCC_DT_INT32),
                          UCC_OP_SUM,
                          static_cast<size_t>(1 + (round + i) % 9),
                          0,
                          ((round + i) & 1) != 0,
                          true};
      if (!run_inflight(e, slots)) return;
    }
  }
  // Every collective type twice, all in flight together.
  for (int inplace = 0; inplace < 2; ++inplace) {
    std::vector<Case> cs = representative(n, inplace != 0);
    std::vector<Case> rep2 = representative(n, inplace == 0);
    cs.insert(cs.end(), rep2.begin(), rep2.end());
    std::vector<Slot> slots(cs.size());
    for (size_t i = 0; i < cs.size(); ++i) slots[i].c = cs[i];
    if (!run_inflight(e, slots)) return;
  }
}

// ---------------------------------------------------------------------------
// gtest cases.

struct Param {
  const char* family;
  const Config* cfg;
  int n;
};

int run_family(const Param& p, ucct::Rank& r) {
  ucct::World w;
  w.env = p.cfg->env;
  if (w.init(r) != UCC_OK) return 1;
  Report rep(r.rank);
  Checker ck(r.size, r.rank, p.cfg->name, rep);
  Env e{w, ck, *p.cfg};
  const std::string f = p.family;
  if (f == "barrier")
    family_barrier(e);
  else if (f == "bcast")
    family_matrix(e, UCC_COLL_TYPE_BCAST);
  else if (f == "reduce")
    family_matrix(e, UCC_COLL_TYPE_REDUCE);
  else if (f == "allreduce")
    family_matrix(e, UCC_COLL_TYPE_ALLREDUCE);
  else if (f == "allgather")
    family_matrix(e, UCC_COLL_TYPE_ALLGATHER);
  else if (f == "alltoall")
    family_matrix(e, UCC_COLL_TYPE_ALLTOALL);
  else if (f == "reduce_scatter")
    family_matrix(e, UCC_COLL_TYPE_REDUCE_SCATTER);
  else if (f == "persistent")
    family_persistent(e);
  else if (f == "inflight")
    family_inflight(e);
  if (e.fatal) {
    std::fflush(nullptr);
    _exit(3);  // peers may be stuck in a collective: no collective teardown
  }
  return rep.failures() == 0 ? 0 : 2;
}

std::vector<Param> all_params() {
  static const char* const kAll[] = {
      "barrier",  "bcast",          "reduce",     "allreduce", "allgather",
      "alltoall", "reduce_scatter", "persistent", "inflight"};
  std::vector<Param> out;
  for (const Config& cfg : kConfigs) {
    for (int n : {1, 2, 3, 4, 5, 8}) {
      if (cfg.families.empty()) {
        for (const char* f : kAll) out.push_back({f, &cfg, n});
      } else {
        for (const char* f : cfg.families) out.push_back({f, &cfg, n});
      }
    }
  }
  return out;
}

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.family << " cfg=" << p.cfg->name << " n=" << p.n;
}

class Collectives : public ::testing::TestWithParam<Param> {};

TEST_P(Collectives, Matrix) {
  const Param& p = GetParam();
  const bool ok = ucct::run_ranks(
      p.n, [&](ucct::Rank& r) { return run_family(p, r); }, 180);
  EXPECT_TRUE(ok) << p.family << " cfg=" << p.cfg->name << " n=" << p.n
                  << ": see the ranks' lines above";
}

INSTANTIATE_TEST_SUITE_P(Mp, Collectives, ::testing::ValuesIn(all_params()),
                         [](const ::testing::TestParamInfo<Param>& i) {
                           return std::string(i.param.family) + "_" +
                                  i.param.cfg->name + "_n" +
                                  std::to_string(i.param.n);
                         });

}  // namespace

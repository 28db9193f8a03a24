// The extra families of the multi-process correctness tests, run by the
// Collectives suite of test_collectives.cc: barriers and their timing,
// persistent requests posted three times, and many collectives in flight
// at once (with completion callbacks).
#include <time.h>

#include <cstddef>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/coll_check.h"
#include "tests/mp/mp_util.h"

namespace ucct::mp::coll {
namespace {

void on_complete(void* data, ucc_status_t st) {
  Slot* s = static_cast<Slot*>(data);
  ++s->cb_calls;
  s->cb_status = st;
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

}  // namespace

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

}  // namespace ucct::mp::coll

// The extra families of the rooted and v-collective tests, run by the
// CollectivesV suite of test_collectives_v.cc: fanin and fanout (every
// root, and that they wait for whom they must), persistent v-collectives
// posted three times with new inputs, and every collective in flight at
// once.
#include <time.h>

#include <cstddef>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/mp_util.h"
#include "tests/mp/vcoll_check.h"

namespace ucct::mp::vcoll {
namespace {

void sleep_ms(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

// A representative case per collective, for persistent and in-flight
// runs: unequal counts, gaps and reverse layouts, both array widths.
std::vector<VCase> representative(int n, bool ip) {
  auto dt = [](ucc_datatype_t d) { return ucct::dtype_info(d); };
  const auto kS = Counts::kSame, kZ = Counts::kZeroThird, kV = Counts::kVaried;
  const auto kG = Displs::kGaps, kR = Displs::kReverse, kN = Displs::kNull;
  const ucc_reduction_op_t kSum = UCC_OP_SUM;
  // coll, dtype, op, counts, base, displs, mixed, c64, d64, root, ip, ign
  return {
      {UCC_COLL_TYPE_GATHERV, dt(UCC_DT_INT32), kSum, kV, 100, kG, false, true,
       false, n - 1, ip, true},
      {UCC_COLL_TYPE_GATHERV, dt(UCC_DT_FLOAT64), kSum, kZ, 3, kR, true, false,
       true, 0, ip, false},
      {UCC_COLL_TYPE_ALLTOALLV, dt(UCC_DT_INT8), kSum, kV, 1000, kG, true, true,
       true, 0, ip, false},
      {UCC_COLL_TYPE_ALLTOALLV, dt(UCC_DT_BFLOAT16), kSum, kZ, 5, kR, false,
       false, false, 0, ip, ip},
      {UCC_COLL_TYPE_SCATTERV, dt(UCC_DT_FLOAT32), kSum, kV, 333, kR, false,
       false, true, n / 2, ip, true},
      {UCC_COLL_TYPE_ALLGATHERV, dt(UCC_DT_INT16), kSum, kZ, 50, kG, true, true,
       false, 0, ip, false},
      {UCC_COLL_TYPE_REDUCE_SCATTERV, dt(UCC_DT_FLOAT32), kSum, kV, 513, kG,
       false, false, false, 0, ip, true},
      {UCC_COLL_TYPE_REDUCE_SCATTERV, dt(UCC_DT_INT32), UCC_OP_BXOR, kZ, 7, kN,
       false, true, true, 0, ip, false},
      {UCC_COLL_TYPE_GATHER, dt(UCC_DT_UINT8), kSum, kS, 257, kN, false, false,
       false, n / 2, ip, true},
      {UCC_COLL_TYPE_SCATTER, dt(UCC_DT_INT64), kSum, kS, 100, kN, false, false,
       false, n - 1, ip, false},
  };
}

bool fail_status(VEnv& e, const VCase& c, const char* what, ucc_status_t st) {
  e.ck.rep().fail("%s: %s: status %s", e.ck.describe(c).c_str(), what,
                  ucct::status_name(st));
  e.fatal = true;
  return false;
}

// One request per case, posted three times with new inputs each time (same
// buffers and arrays).
bool run_persistent(VEnv& e, const VCase& c) {
  VSlot s;
  s.c = c;
  e.ck.fill(s, e.seed(), true);
  s.args.mask |= UCC_COLL_ARGS_FIELD_FLAGS;
  s.args.flags |= UCC_COLL_ARGS_FLAG_PERSISTENT;
  ucc_coll_req_h req = nullptr;
  ucc_status_t st = ucc_collective_init(&s.args, &req, e.w.team);
  for (int post = 0; post < 3 && st == UCC_OK; ++post) {
    if (post > 0) e.ck.fill(s, e.seed(), false);
    st = ucc_collective_post(req);
    if (st == UCC_OK) st = e.w.wait(req);
    if (st == UCC_OK && !e.ck.check(s))
      e.ck.rep().fail("%s: persistent post %d wrong", e.ck.describe(c).c_str(),
                      post);
  }
  if (st == UCC_OK) st = ucc_collective_finalize(req);
  return st == UCC_OK || fail_status(e, c, "persistent", st);
}

// Posts all slots before waiting for any, then checks them all.
bool run_inflight(VEnv& e, std::vector<VSlot>& slots) {
  std::vector<ucc_coll_req_h> reqs(slots.size(), nullptr);
  ucc_status_t st = UCC_OK;
  for (size_t i = 0; i < slots.size() && st == UCC_OK; ++i) {
    e.ck.fill(slots[i], e.seed(), true);
    st = ucc_collective_init(&slots[i].args, &reqs[i], e.w.team);
  }
  for (size_t i = 0; i < slots.size() && st == UCC_OK; ++i)
    st = ucc_collective_post(reqs[i]);
  if (st == UCC_OK) st = ucct::mp::wait_all(e.w.ctx, reqs.data(), reqs.size());
  if (st != UCC_OK) {
    e.ck.rep().fail("in flight (%zu v-collectives) n=%d cfg=%s: status %s",
                    slots.size(), e.ck.n(), e.cfg.name, ucct::status_name(st));
    e.fatal = true;
    return false;
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!e.ck.check(slots[i]))
      e.ck.rep().fail("  (slot %zu of %zu in flight)", i, slots.size());
    if (ucc_collective_finalize(reqs[i]) != UCC_OK) e.fatal = true;
  }
  return !e.fatal;
}

}  // namespace

// Fanin and fanout at every root, then their ordering, from times on
// CLOCK_MONOTONIC (system-wide) gathered over the OOB: a fanout must not
// complete on a non-root before the root posted it (the root posts 20 ms
// late), and a fanin must not complete on the root before every rank
// posted it (one rank, or every rank by its distance from the root, late).
void family_fan(VEnv& e, ucc_coll_type_t coll) {
  ucct::World& w = e.w;
  const int n = w.size, me = w.rank;
  const bool fanout = coll == UCC_COLL_TYPE_FANOUT;
  const char* name = ucct::coll_name(coll);
  ucc_coll_args_t a{};
  a.coll_type = coll;
  for (int root = 0; root < n; ++root) {
    for (int rep = 0; rep < 3; ++rep) {
      a.root = static_cast<uint64_t>(root);
      const ucc_status_t st = w.run(a);
      if (st != UCC_OK) {
        e.ck.rep().fail("%s n=%d root=%d cfg=%s: status %s", name, n, root,
                        e.cfg.name, ucct::status_name(st));
        e.fatal = true;
        return;
      }
    }
  }
  std::vector<int> roots{0};
  if (n > 1) roots.push_back(n - 1);
  if (n > 2) roots.push_back(n / 2);
  for (int root : roots) {
    for (int trial = 0; trial < 2; ++trial) {
      const int dist = (me - root + n) % n;
      int delay = 0;
      if (fanout)
        delay = me == root ? (trial == 0 ? 20 : 5) : 0;
      else if (trial == 0)
        delay = dist == (n > 1 ? 1 : 0) ? 20 : 0;
      else
        delay = 3 * dist;
      a.root = static_cast<uint64_t>(root);
      ucc_coll_req_h req = nullptr;
      ucc_status_t st = ucc_collective_init(&a, &req, w.team);
      sleep_ms(delay);
      double t[2] = {ucct::now_s(), 0};  // posted, completed
      if (st == UCC_OK) st = ucc_collective_post(req);
      if (st == UCC_OK) st = w.wait(req);
      t[1] = ucct::now_s();
      if (st == UCC_OK) st = ucc_collective_finalize(req);
      if (st != UCC_OK) {
        e.ck.rep().fail("%s n=%d root=%d cfg=%s: status %s", name, n, root,
                        e.cfg.name, ucct::status_name(st));
        e.fatal = true;
        return;
      }
      std::vector<double> all(2 * n);
      if (ucct::oob_allgather(w.oob, t, all.data(), sizeof t, w.ctx) !=
          UCC_OK) {
        e.fatal = true;
        return;
      }
      if (fanout && me != root && t[1] < all[2 * root])
        e.ck.rep().fail(
            "fanout n=%d root=%d cfg=%s trial %d: completed at %.6f, "
            "before the root posted at %.6f",
            n, root, e.cfg.name, trial, t[1], all[2 * root]);
      for (int p = 0; p < n && !fanout && me == root; ++p) {
        if (t[1] < all[2 * p])
          e.ck.rep().fail(
              "fanin n=%d root=%d cfg=%s trial %d: root completed at %.6f, "
              "before rank %d posted at %.6f",
              n, root, e.cfg.name, trial, t[1], p, all[2 * p]);
      }
    }
  }
}

void family_vpersistent(VEnv& e) {
  const int n = e.ck.n();
  for (int ip = 0; ip < 2; ++ip) {
    for (const VCase& c : representative(n, ip != 0)) {
      if (!run_persistent(e, c)) return;
    }
  }
  // Every collective (twice, with and without in place) in flight at once,
  // then once more in the opposite order.
  std::vector<VCase> cs = representative(n, false);
  const std::vector<VCase> ips = representative(n, true);
  cs.insert(cs.end(), ips.begin(), ips.end());
  for (int round = 0; round < 2; ++round) {
    std::vector<VSlot> slots(cs.size());
    for (size_t i = 0; i < cs.size(); ++i)
      slots[i].c = round == 0 ? cs[i] : cs[cs.size() - 1 - i];
    if (!run_inflight(e, slots)) return;
  }
}

}  // namespace ucct::mp::vcoll

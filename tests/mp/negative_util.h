// Shared helpers of the negative multi-process tests
// (test_negative_args.cc, test_negative_objects.cc): status checks that
// name the call and line, buffers and arguments for a valid allreduce, and
// on_ranks(), which runs a body on forked ranks and then checks that the
// team still works.
//
// Threads: a rank's own single thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/mp_util.h"

namespace ucct::mp::neg {

// Checks one status; the call's text names it in the failure line.
#define EXPECT_ST(rep, call, want) \
  ::ucct::mp::neg::expect_st((rep), __LINE__, #call, (call), (want))

inline void expect_st(Report& rep, int line, const char* what, ucc_status_t got,
                      ucc_status_t want) {
  if (got != want)
    rep.fail("line %d: %s = %s, want %s", line, what, ucct::status_name(got),
             ucct::status_name(want));
}

inline ucc_coll_buffer_info_t info(void* p, uint64_t count, ucc_datatype_t dt) {
  ucc_coll_buffer_info_t b{};
  b.buffer = p;
  b.count = count;
  b.datatype = dt;
  b.mem_type = UCC_MEMORY_TYPE_HOST;
  return b;
}

// Buffers big enough for any valid-looking case of the tests (64 elements of up
// to 8 bytes per rank, 8 ranks).
struct Bufs {
  std::vector<uint64_t> src = std::vector<uint64_t>(512);
  std::vector<uint64_t> dst = std::vector<uint64_t>(512);
};

inline ucc_coll_args_t allreduce_args(Bufs& b, uint64_t count,
                                      ucc_datatype_t dt,
                                      ucc_reduction_op_t op) {
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
  a.src.info = info(b.src.data(), count, dt);
  a.dst.info = info(b.dst.data(), count, dt);
  a.op = op;
  return a;
}

// A valid int32 sum allreduce on team; records a failure when the status or
// the result is wrong.
inline void valid_allreduce(ucct::World& w, ucc_team_h team, Report& rep,
                            const char* when) {
  std::vector<int32_t> s(5), d(5, -1);
  for (int i = 0; i < 5; ++i) s[i] = (w.rank + 1) * (i + 1);
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
  a.src.info = info(s.data(), 5, UCC_DT_INT32);
  a.dst.info = info(d.data(), 5, UCC_DT_INT32);
  a.op = UCC_OP_SUM;
  ucc_coll_req_h req = nullptr;
  ucc_status_t st = ucc_collective_init(&a, &req, team);
  if (st == UCC_OK) st = ucc_collective_post(req);
  if (st == UCC_OK) st = w.wait(req);
  if (st == UCC_OK) st = ucc_collective_finalize(req);
  if (st != UCC_OK) {
    rep.fail("valid allreduce %s: %s", when, ucct::status_name(st));
    return;
  }
  const int n = w.size;
  for (int i = 0; i < 5; ++i) {
    const int32_t want = n * (n + 1) / 2 * (i + 1);
    if (d[i] != want) {
      rep.fail("valid allreduce %s: elem %d got %d want %d", when, i, d[i],
               want);
      return;
    }
  }
}

// Runs body(world, report) on n ranks; a rank fails when body reports.
template <typename Body>
bool on_ranks(int n, Body body,
              std::vector<std::pair<std::string, std::string>> env = {}) {
  return ucct::run_ranks(
      n,
      [&](ucct::Rank& r) {
        ucct::World w;
        w.env = env;
        if (w.init(r) != UCC_OK) return 1;
        Report rep(r.rank);
        body(w, rep);
        valid_allreduce(w, w.team, rep, "at the end");
        return rep.failures() == 0 ? 0 : 2;
      },
      60);
}

}  // namespace ucct::mp::neg

// Invalid collective arguments: every bad coll_type, datatype, op, root,
// buffer, count and memory type gets its exact status back from
// ucc_collective_init, no crash and no hang, and the team stays usable
// afterwards (each case ends with a valid allreduce on the same team).
//
// Every rank makes the same calls in the same order, so the ranks stay in
// step: negative calls fail locally, before anything collective starts.
// A rank prints one line per wrong status ("rank 1: line 120:
// ucc_collective_init(...) = UCC_OK, want UCC_ERR_INVALID_PARAM") and exits
// nonzero. Handles, requests, teams and configuration:
// test_negative_objects.cc.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/negative_util.h"

namespace {

using ucct::mp::Report;
using ucct::mp::neg::allreduce_args;
using ucct::mp::neg::Bufs;
using ucct::mp::neg::info;
using ucct::mp::neg::on_ranks;

// --- collective arguments ---------------------------------------------------

void bad_coll_args(ucct::World& w, Report& rep) {
  const int n = w.size;
  Bufs b;
  ucc_coll_req_h req = nullptr;
  // A request that should not have been made is given back at once.
  auto init = [&](ucc_coll_args_t a) {
    req = nullptr;
    const ucc_status_t st = ucc_collective_init(&a, &req, w.team);
    if (st == UCC_OK) ucc_collective_finalize(req);
    return st;
  };
  const ucc_coll_args_t ok = allreduce_args(b, 4, UCC_DT_INT32, UCC_OP_SUM);

  // Collective types: unknown values.
  for (uint64_t t : {uint64_t{0}, uint64_t{3}, uint64_t{1} << 20,
                     uint64_t{UCC_COLL_TYPE_LAST}}) {
    ucc_coll_args_t a = ok;
    a.coll_type = static_cast<ucc_coll_type_t>(t);
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
  }
  // v-collectives: missing arrays, overflowing counts, in place.
  {
    std::vector<uint32_t> cnt(n, 1), big(n, 0xffffffffu);
    std::vector<uint64_t> huge(n, ~uint64_t{0} / 2);
    ucc_coll_args_t v{};
    v.coll_type = UCC_COLL_TYPE_ALLGATHERV;
    v.src.info = info(b.src.data(), 1, UCC_DT_INT32);
    v.dst.info_v = {b.dst.data(), nullptr, nullptr, UCC_DT_INT32,
                    UCC_MEMORY_TYPE_HOST};
    EXPECT_ST(rep, init(v), UCC_ERR_INVALID_PARAM);  // NULL counts
    v.dst.info_v.buffer = nullptr;
    v.dst.info_v.counts = reinterpret_cast<ucc_count_t*>(cnt.data());
    EXPECT_ST(rep, init(v), UCC_ERR_INVALID_PARAM);  // NULL buffer
    v.dst.info_v.buffer = b.dst.data();
    EXPECT_ST(rep, init(v), UCC_OK);
    v.src.info.count = 2;  // disagrees with our entry in counts
    EXPECT_ST(rep, init(v), UCC_ERR_INVALID_PARAM);
    v.src.info.count = 1;
    v.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    v.flags = UCC_COLL_ARGS_FLAG_COUNT_64BIT;
    v.dst.info_v.counts = reinterpret_cast<ucc_count_t*>(huge.data());
    EXPECT_ST(rep, init(v), UCC_ERR_INVALID_PARAM);  // sum overflows

    ucc_coll_args_t t{};
    t.coll_type = UCC_COLL_TYPE_ALLTOALLV;
    t.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    t.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
    t.src.info_v = {b.src.data(), reinterpret_cast<ucc_count_t*>(cnt.data()),
                    nullptr, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    t.dst.info_v = {b.dst.data(), reinterpret_cast<ucc_count_t*>(cnt.data()),
                    nullptr, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    EXPECT_ST(rep, init(t), UCC_OK);  // in place: src ignored
    t.flags = 0;
    EXPECT_ST(rep, init(t), UCC_OK);

    ucc_coll_args_t r{};
    r.coll_type = UCC_COLL_TYPE_REDUCE_SCATTERV;
    r.op = UCC_OP_SUM;
    r.src.info = info(b.src.data(), n + 1, UCC_DT_INT32);  // != sum counts
    r.dst.info_v = {b.dst.data(), reinterpret_cast<ucc_count_t*>(cnt.data()),
                    nullptr, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    EXPECT_ST(rep, init(r), UCC_ERR_INVALID_PARAM);
    r.src.info.count = n;
    EXPECT_ST(rep, init(r), UCC_OK);
    r.op = UCC_OP_BAND;
    r.src.info.datatype = r.dst.info_v.datatype = UCC_DT_FLOAT32;
    EXPECT_ST(rep, init(r), UCC_ERR_NOT_SUPPORTED);

    // gather / scatter: the root's total must be n blocks.
    ucc_coll_args_t g{};
    g.coll_type = UCC_COLL_TYPE_GATHER;
    g.root = 0;
    g.src.info = info(b.src.data(), 2, UCC_DT_INT32);
    g.dst.info = info(b.dst.data(), 2 * n + 1, UCC_DT_INT32);
    EXPECT_ST(rep, init(g), w.rank == 0 ? UCC_ERR_INVALID_PARAM : UCC_OK);
    g.root = n;
    EXPECT_ST(rep, init(g), UCC_ERR_INVALID_PARAM);
    g.coll_type = UCC_COLL_TYPE_SCATTER;
    g.root = 0;
    g.src.info = info(b.src.data(), 2 * n + 1, UCC_DT_INT32);
    g.dst.info = info(b.dst.data(), 2, UCC_DT_INT32);
    EXPECT_ST(rep, init(g), w.rank == 0 ? UCC_ERR_INVALID_PARAM : UCC_OK);
  }

  // Datatypes: unknown ids and class bits; valid but unsupported ones.
  for (ucc_datatype_t dt :
       {UCC_PREDEFINED_DT(40), UCC_PREDEFINED_DT(UCC_DT_PREDEFINED_LAST),
        UCC_DT_INT32 | 2, UCC_DT_INT32 | 4}) {
    ucc_coll_args_t a = allreduce_args(b, 4, dt, UCC_OP_SUM);
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
    ucc_coll_args_t g{};
    g.coll_type = UCC_COLL_TYPE_ALLGATHER;
    g.src.info = info(b.src.data(), 2, dt);
    g.dst.info = info(b.dst.data(), 2 * n, dt);
    EXPECT_ST(rep, init(g), UCC_ERR_INVALID_PARAM);
  }
  // Wide types: every collective moves them; an op they do not define is
  // refused (the unit and wide-type tests cover what they do define).
  for (ucc_datatype_t dt :
       {UCC_DT_INT128, UCC_DT_UINT128, UCC_DT_FLOAT128, UCC_DT_FLOAT32_COMPLEX,
        UCC_DT_FLOAT64_COMPLEX, UCC_DT_FLOAT128_COMPLEX}) {
    bool integer = dt == UCC_DT_INT128 || dt == UCC_DT_UINT128;
    EXPECT_ST(
        rep, init(allreduce_args(b, 4, dt, integer ? UCC_OP_AVG : UCC_OP_BAND)),
        UCC_ERR_NOT_SUPPORTED);
    ucc_coll_args_t c{};
    c.coll_type = UCC_COLL_TYPE_BCAST;
    c.src.info = info(b.src.data(), 4, dt);
    EXPECT_ST(rep, init(c), UCC_OK);
  }
  {  // src and dst of different types
    ucc_coll_args_t a = ok;
    a.src.info.datatype = UCC_DT_FLOAT32;
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
    a = ok;
    a.dst.info.datatype = UCC_DT_UINT32;
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
  }

  // Ops: undefined for the type, not provided, unknown.
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_FLOAT32, UCC_OP_BAND)),
            UCC_ERR_NOT_SUPPORTED);
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_FLOAT64, UCC_OP_LAND)),
            UCC_ERR_NOT_SUPPORTED);
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_BFLOAT16, UCC_OP_BXOR)),
            UCC_ERR_NOT_SUPPORTED);
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_INT32, UCC_OP_AVG)),
            UCC_ERR_NOT_SUPPORTED);
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_UINT8, UCC_OP_AVG)),
            UCC_ERR_NOT_SUPPORTED);
  // MAXLOC/MINLOC pairs exist for int8..uint64, float32 and float64 only.
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_FLOAT16, UCC_OP_MAXLOC)),
            UCC_ERR_NOT_SUPPORTED);
  EXPECT_ST(rep,
            init(allreduce_args(b, 4, UCC_DT_FLOAT32_COMPLEX, UCC_OP_MINLOC)),
            UCC_ERR_NOT_SUPPORTED);
  EXPECT_ST(rep,
            init(allreduce_args(b, 4, UCC_DT_INT32,
                                static_cast<ucc_reduction_op_t>(99))),
            UCC_ERR_INVALID_PARAM);
  EXPECT_ST(rep, init(allreduce_args(b, 4, UCC_DT_INT32, UCC_OP_LAST)),
            UCC_ERR_INVALID_PARAM);
  {
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_REDUCE_SCATTER;
    a.src.info = info(b.src.data(), 2 * n, UCC_DT_FLOAT32);
    a.dst.info = info(b.dst.data(), 2, UCC_DT_FLOAT32);
    a.op = UCC_OP_BOR;
    EXPECT_ST(rep, init(a), UCC_ERR_NOT_SUPPORTED);
    a.op = static_cast<ucc_reduction_op_t>(-1);
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
  }

  // Roots.
  for (uint64_t root :
       {static_cast<uint64_t>(n), static_cast<uint64_t>(n) + 7, UINT64_MAX}) {
    ucc_coll_args_t c{};
    c.coll_type = UCC_COLL_TYPE_BCAST;
    c.src.info = info(b.src.data(), 4, UCC_DT_INT32);
    c.root = root;
    EXPECT_ST(rep, init(c), UCC_ERR_INVALID_PARAM);
    ucc_coll_args_t r{};
    r.coll_type = UCC_COLL_TYPE_REDUCE;
    r.src.info = info(b.src.data(), 4, UCC_DT_INT32);
    r.dst.info = info(b.dst.data(), 4, UCC_DT_INT32);
    r.op = UCC_OP_SUM;
    r.root = root;
    EXPECT_ST(rep, init(r), UCC_ERR_INVALID_PARAM);
  }

  // NULL buffers with a nonzero count.
  {
    ucc_coll_args_t a = ok;
    a.src.info.buffer = nullptr;
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
    a = ok;
    a.dst.info.buffer = nullptr;
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
    ucc_coll_args_t c{};
    c.coll_type = UCC_COLL_TYPE_BCAST;
    c.src.info = info(nullptr, 1, UCC_DT_INT8);
    EXPECT_ST(rep, init(c), UCC_ERR_INVALID_PARAM);
    // IN_PLACE in flags without UCC_COLL_ARGS_FIELD_FLAGS is not read: src
    // is then needed.
    a = ok;
    a.src.info.buffer = nullptr;
    a.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
  }

  // Counts that overflow, or that disagree between src and dst.
  {
    ucc_coll_args_t a =
        allreduce_args(b, UINT64_MAX / 2, UCC_DT_INT32, UCC_OP_SUM);
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
    a = allreduce_args(b, UINT64_MAX, UCC_DT_INT8, UCC_OP_SUM);
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
    ucc_coll_args_t c{};
    c.coll_type = UCC_COLL_TYPE_BCAST;
    c.src.info = info(b.src.data(), UINT64_MAX / 2, UCC_DT_FLOAT64);
    EXPECT_ST(rep, init(c), UCC_ERR_INVALID_PARAM);
    a = ok;
    a.src.info.count = 5;
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);

    ucc_coll_args_t g{};
    g.coll_type = UCC_COLL_TYPE_ALLGATHER;
    g.src.info = info(b.src.data(), 3, UCC_DT_INT16);
    g.dst.info = info(b.dst.data(), 3 * n + 1, UCC_DT_INT16);
    EXPECT_ST(rep, init(g), UCC_ERR_INVALID_PARAM);  // src * n != dst
    if (n > 1) {
      g.dst.info.count = 3 * n + 1;  // not a multiple of n, in place
      g.mask = UCC_COLL_ARGS_FIELD_FLAGS;
      g.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
      EXPECT_ST(rep, init(g), UCC_ERR_INVALID_PARAM);
    }
    g = ucc_coll_args_t{};
    g.coll_type = UCC_COLL_TYPE_ALLGATHER;
    g.src.info = info(b.src.data(), UINT64_MAX / 4, UCC_DT_INT32);
    g.dst.info = info(b.dst.data(), (UINT64_MAX / 4) * n, UCC_DT_INT32);
    EXPECT_ST(rep, init(g), UCC_ERR_INVALID_PARAM);

    ucc_coll_args_t t{};
    t.coll_type = UCC_COLL_TYPE_ALLTOALL;
    t.src.info = info(b.src.data(), 2 * n, UCC_DT_INT32);
    t.dst.info = info(b.dst.data(), 2 * n + 2, UCC_DT_INT32);
    EXPECT_ST(rep, init(t), UCC_ERR_INVALID_PARAM);  // src != dst
    if (n > 1) {
      t.src.info.count = t.dst.info.count = 2 * n + 1;  // not a multiple of n
      EXPECT_ST(rep, init(t), UCC_ERR_INVALID_PARAM);
    }

    ucc_coll_args_t rs{};
    rs.coll_type = UCC_COLL_TYPE_REDUCE_SCATTER;
    rs.src.info = info(b.src.data(), 2 * n + 1, UCC_DT_FLOAT32);
    rs.dst.info = info(b.dst.data(), 2, UCC_DT_FLOAT32);
    rs.op = UCC_OP_SUM;
    EXPECT_ST(rep, init(rs), UCC_ERR_INVALID_PARAM);  // src != dst * n
    if (n > 1) {
      rs.src.info.count = 2;
      EXPECT_ST(rep, init(rs), UCC_ERR_INVALID_PARAM);
    }
    rs.dst.info.count = UINT64_MAX / 2;
    rs.src.info.count = (UINT64_MAX / 2) * n;
    EXPECT_ST(rep, init(rs), UCC_ERR_INVALID_PARAM);
    if (n > 1) {
      rs = ucc_coll_args_t{};
      rs.coll_type = UCC_COLL_TYPE_REDUCE_SCATTER;
      rs.mask = UCC_COLL_ARGS_FIELD_FLAGS;
      rs.flags = UCC_COLL_ARGS_FLAG_IN_PLACE;
      rs.dst.info = info(b.dst.data(), 2 * n + 1, UCC_DT_FLOAT32);  // total
      rs.op = UCC_OP_SUM;
      EXPECT_ST(rep, init(rs), UCC_ERR_INVALID_PARAM);
    }

    ucc_coll_args_t r{};
    r.coll_type = UCC_COLL_TYPE_REDUCE;
    r.src.info = info(b.src.data(), 4, UCC_DT_INT32);
    r.dst.info = info(b.dst.data(), 4, UCC_DT_INT32);
    r.op = UCC_OP_SUM;
    r.root = 0;
    if (w.rank == 0) {
      r.dst.info.count = 3;  // the root's dst must hold the vector
      EXPECT_ST(rep, init(r), UCC_ERR_INVALID_PARAM);
    }
  }

  // Memory types: CUDA and friends are valid but not provided; garbage is
  // invalid.
  for (ucc_memory_type_t mt :
       {UCC_MEMORY_TYPE_CUDA, UCC_MEMORY_TYPE_CUDA_MANAGED,
        UCC_MEMORY_TYPE_ROCM, UCC_MEMORY_TYPE_ROCM_MANAGED}) {
    ucc_coll_args_t a = ok;
    a.src.info.mem_type = mt;
    EXPECT_ST(rep, init(a), UCC_ERR_NOT_SUPPORTED);
    a = ok;
    a.dst.info.mem_type = mt;
    EXPECT_ST(rep, init(a), UCC_ERR_NOT_SUPPORTED);
  }
  {
    ucc_coll_args_t a = ok;
    a.dst.info.mem_type = static_cast<ucc_memory_type_t>(77);
    EXPECT_ST(rep, init(a), UCC_ERR_INVALID_PARAM);
  }
  EXPECT_ST(rep, init(ok), UCC_OK);
}

class NegativeArgs : public ::testing::TestWithParam<int> {};

TEST_P(NegativeArgs, CollArgs) {
  EXPECT_TRUE(on_ranks(GetParam(), bad_coll_args));
}

// A valid request the library refuses (UCC_ERR_NOT_SUPPORTED: a reduction
// the type does not have; runtimes fall back to their own) is no error:
// one line at info the first time, none after that at info level.
TEST(NegativeArgsLog, RefusalLogsOnceAtInfo) {
  const bool ok = ucct::run_ranks(1, [](ucct::Rank& r) {
    char path[] = "/tmp/ucct-refusal-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return 1;
    unlink(path);
    const int saved = dup(2);
    dup2(fd, 2);
    ucct::World w;
    w.env = {{"UCC_LOG_LEVEL", "info"}};
    if (w.init(r) != UCC_OK) return 2;
    std::vector<float> buf(4, 0);
    ucc_coll_args_t t{};
    t.coll_type = UCC_COLL_TYPE_ALLREDUCE;
    t.op = UCC_OP_BAND;  // not defined for floats
    t.src.info = {buf.data(), 2, UCC_DT_FLOAT32, UCC_MEMORY_TYPE_HOST};
    t.dst.info = {buf.data() + 2, 2, UCC_DT_FLOAT32, UCC_MEMORY_TYPE_HOST};
    for (int i = 0; i < 3; ++i) {
      ucc_coll_req_h req = nullptr;
      if (ucc_collective_init(&t, &req, w.team) != UCC_ERR_NOT_SUPPORTED)
        return 3;
    }
    dup2(saved, 2);
    std::string log;
    char chunk[4096];
    ssize_t k;
    lseek(fd, 0, SEEK_SET);
    while ((k = read(fd, chunk, sizeof(chunk))) > 0) log.append(chunk, k);
    close(fd);
    int lines = 0, errors = 0;
    for (size_t at = 0; at < log.size();) {
      const size_t end = log.find('\n', at);
      const std::string line = log.substr(at, end - at);
      if (line.find("is not defined for") != std::string::npos) {
        ++lines;
        if (line.find(" info ") == std::string::npos) ++errors;
      }
      if (end == std::string::npos) break;
      at = end + 1;
    }
    if (lines != 1 || errors != 0) {
      std::fprintf(stderr, "%d refusal lines (%d not at info):\n%s", lines,
                   errors, log.c_str());
      return 4;
    }
    return 0;
  });
  EXPECT_TRUE(ok);
}

INSTANTIATE_TEST_SUITE_P(Ranks, NegativeArgs, ::testing::Values(1, 2, 3),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "n" + std::to_string(i.param);
                         });

}  // namespace

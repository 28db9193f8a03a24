// Every rank of an allreduce holds the same bits, for every algorithm.
//
// The collectives matrix compares each rank's result with a serial
// reference bit for bit, but its inputs are small integers, exact in
// every order of summation. Here the inputs are floating-point values of
// mixed magnitudes, whose sums round differently in different orders, so
// two ranks that combined the same vectors in another order would hold
// different bits. MPI users rely on the results agreeing (a loop's exit
// test on an allreduced residual, say). Each algorithm must combine in an
// order that gives every rank the same bits: a pair of recursive
// doubling combines the two vectors in swapped order (commutative, the
// same bits); radix 4 forms the two pair results first
// (device/coll/recursive_doubling.cc); the ring and Rabenseifner's reduce
// each block once and copy it; the node-aware one reduces to a leader and
// broadcasts.
//
// The results are compared through memory shared by the rank processes
// (mapped before they fork), not with the library itself.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/common/harness.h"

namespace {

constexpr size_t kCount = 1000;
constexpr int kMaxRanks = 8;

// Rank r's element i: a value in (-1, 1) times 2^e, e in [-20, 20],
// from a small linear congruential generator (the same on every run).
double input(int rank, size_t i) {
  uint64_t x =
      (uint64_t(rank) + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  const double m =
      double(int64_t(x >> 11) - (int64_t(1) << 52)) / double(int64_t(1) << 52);
  const int e = int((x >> 3) % 41) - 20;
  return m * double(int64_t(1) << (e + 20)) / double(int64_t(1) << 20);
}

struct Shared {
  unsigned char* mem = nullptr;
  size_t bytes = 0;
  explicit Shared(size_t n) : bytes(n) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    mem = p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
  }
  ~Shared() {
    if (mem != nullptr) munmap(mem, bytes);
  }
};

// One allreduce (sum) of kCount elements of `dt` (float32 or float64) on
// `n` ranks with `env`; each rank leaves its result's bytes in its row of
// `out`. Returns the ranks' combined exit status (0: all ran).
bool run_case(int n, ucc_datatype_t dt,
              const std::vector<std::pair<std::string, std::string>>& env,
              unsigned char* out, size_t row) {
  return ucct::run_ranks(n, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = env;
    if (w.init(r) != UCC_OK) return 1;
    const size_t es = dt == UCC_DT_FLOAT32 ? 4 : 8;
    std::vector<unsigned char> src(kCount * es), dst(kCount * es, 0xa5);
    for (size_t i = 0; i < kCount; ++i) {
      const double v = input(w.rank, i);
      if (es == 4) {
        const float f = float(v);
        memcpy(&src[i * 4], &f, 4);
      } else {
        memcpy(&src[i * 8], &v, 8);
      }
    }
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
    a.src.info = {src.data(), kCount, dt, UCC_MEMORY_TYPE_HOST};
    a.dst.info = {dst.data(), kCount, dt, UCC_MEMORY_TYPE_HOST};
    a.op = UCC_OP_SUM;
    if (w.run(a) != UCC_OK) return 2;
    memcpy(out + size_t(w.rank) * row, dst.data(), dst.size());
    return 0;
  });
}

struct Alg {
  const char* name;
  std::vector<std::pair<std::string, std::string>> env;
};

class AllreduceAgree : public testing::TestWithParam<Alg> {};

TEST_P(AllreduceAgree, EveryRankHoldsTheSameBits) {
  const size_t row = kCount * 8;
  Shared out(row * kMaxRanks);
  ASSERT_NE(out.mem, nullptr);
  for (int n : {5, 8}) {
    for (ucc_datatype_t dt : {UCC_DT_FLOAT32, UCC_DT_FLOAT64}) {
      memset(out.mem, 0, out.bytes);
      ASSERT_TRUE(run_case(n, dt, GetParam().env, out.mem, row)) << "n=" << n;
      const size_t len = kCount * (dt == UCC_DT_FLOAT32 ? 4 : 8);
      for (int r = 1; r < n; ++r)
        EXPECT_EQ(memcmp(out.mem, out.mem + size_t(r) * row, len), 0)
            << GetParam().name << " n=" << n << ": rank " << r
            << " differs from rank 0"
            << (dt == UCC_DT_FLOAT32 ? " (float32)" : " (float64)");
    }
  }
  // The inputs do round: summed in another order they give other bits.
  double fwd = 0, back = 0;
  for (int r = 0; r < kMaxRanks; ++r) fwd += input(r, 1);
  for (int r = kMaxRanks; r-- > 0;) back += input(r, 1);
  bool differs = fwd != back;
  for (size_t i = 2; i < kCount && !differs; ++i) {
    fwd = back = 0;
    for (int r = 0; r < kMaxRanks; ++r) fwd += input(r, i);
    for (int r = kMaxRanks; r-- > 0;) back += input(r, i);
    differs = fwd != back;
  }
  EXPECT_TRUE(differs)
      << "inputs exact in every order: the check could not fail";
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, AllreduceAgree,
    testing::Values(
        Alg{"rd", {{"UCC_ALLREDUCE_ALG", "rd"}}},
        // Wide from 2 ranks: the radix-4 rounds have their scratch.
        Alg{"knomial",
            {{"UCC_ALLREDUCE_ALG", "knomial"}, {"UCC_WIDE_RANKS", "2"}}},
        Alg{"ring", {{"UCC_ALLREDUCE_ALG", "ring"}}},
        Alg{"rabenseifner", {{"UCC_ALLREDUCE_ALG", "rabenseifner"}}},
        Alg{"hier", {{"UCC_ALLREDUCE_ALG", "hier"}}}),
    [](const testing::TestParamInfo<Alg>& i) {
      return std::string(i.param.name);
    });

}  // namespace

// Whole collectives on two engines in this process, one per rank of a
// two-rank team over the shared-memory fabric, with the engines reaching
// user buffers directly (inline mode) or cross-process (aimed at this very
// process, so every user byte moves through process_vm_readv/writev and
// the engines' bounce buffers, checked against each rank's registrations).
// Results are checked against a serial reference; unregistered buffers and
// arrays are refused by validation, and a registration removed while a
// collective runs ends it with kInvalidParam before it touches the buffer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "tests/unit/engine_mem_fixture.h"

namespace ucct_engine {

TEST_P(EngineMem, AllreduceByBothAlgorithms) {
  for (uint8_t alg : {1, 2}) {                 // rd, ring
    for (uint64_t count : {0, 1, 63, 1000}) {  // 1000 int32: 16 slots
      std::vector<int32_t> src[kRanks], dst[kRanks];
      CollDesc d[kRanks];
      for (uint32_t r = 0; r < kRanks; ++r) {
        src[r] = pattern(r, count);
        dst[r].assign(count, -1);
        d[r] = desc(CollType::kAllreduce, DType::kInt32, ROp::kSum, count);
        d[r].alg = alg;
        d[r].src = ref(src[r], count != 0 ? rank[r].reg(src[r]) : 0);
        d[r].dst = ref(dst[r]);  // implicit key: any registration
        if (count != 0) rank[r].reg(dst[r]);
      }
      run_ok(d);
      for (uint32_t r = 0; r < kRanks; ++r)
        for (uint64_t i = 0; i < count; ++i)
          ASSERT_EQ(dst[r][i], src[0][i] + src[1][i])
              << "alg " << int(alg) << " count " << count << " rank " << r;
    }
  }
}

TEST_P(EngineMem, InPlaceAverageAndReduce) {
  const uint64_t count = 700;  // 5600 bytes of float64
  std::vector<double> buf[kRanks], out(count, 0.0);
  CollDesc d[kRanks];
  for (uint32_t r = 0; r < kRanks; ++r) {
    buf[r].resize(count);
    for (uint64_t i = 0; i < count; ++i) buf[r][i] = double(i) + r * 1000;
    rank[r].reg(buf[r]);
    d[r] = desc(CollType::kAllreduce, DType::kFloat64, ROp::kAvg, count);
    d[r].alg = 2;
    d[r].src = d[r].dst = ref(buf[r]);
  }
  run_ok(d);
  for (uint32_t r = 0; r < kRanks; ++r)
    for (uint64_t i = 0; i < count; ++i)
      ASSERT_EQ(buf[r][i], double(i) + 500) << r << " " << i;
  // Reduce to rank 1, max: only the root's dst is written.
  rank[1].reg(out);
  for (uint32_t r = 0; r < kRanks; ++r) {
    d[r] = desc(CollType::kReduce, DType::kFloat64, ROp::kMax, count);
    d[r].root = 1;
    d[r].src = ref(buf[r]);
    d[r].dst = r == 1 ? ref(out) : BufRef{};
    buf[r][3] = r == 0 ? 1e9 : -1;
  }
  run_ok(d);
  EXPECT_EQ(out[3], 1e9);
  for (uint64_t i = 4; i < count; ++i) ASSERT_EQ(out[i], double(i) + 500) << i;
}

TEST_P(EngineMem, AlltoallvReadsArraysThroughTheAdapter) {
  // Rank r sends (p + 1) * 100 + r elements to peer p.
  auto cnt = [](uint32_t from, uint32_t to) { return (to + 1) * 100 + from; };
  std::vector<int32_t> src[kRanks], dst[kRanks];
  std::vector<uint32_t> sc[kRanks], sd[kRanks], rc[kRanks], rd[kRanks];
  CollDesc d[kRanks];
  for (uint32_t r = 0; r < kRanks; ++r) {
    uint32_t so = 0, ro = 0;
    for (uint32_t p = 0; p < kRanks; ++p) {
      sc[r].push_back(cnt(r, p));
      sd[r].push_back(so);
      so += cnt(r, p) + 3;  // gaps between blocks
      rc[r].push_back(cnt(p, r));
      rd[r].push_back(ro);
      ro += cnt(p, r) + 5;
    }
    src[r] = pattern(r, so);
    dst[r].assign(ro, -1);
    for (auto* v : {&sc[r], &sd[r], &rc[r], &rd[r]}) rank[r].reg(*v);
    d[r] = desc(CollType::kAlltoallv, DType::kInt32, ROp::kNone, 0);
    d[r].src = ref(src[r], rank[r].reg(src[r]));
    d[r].dst = ref(dst[r], rank[r].reg(dst[r]));
    d[r].src_counts = reinterpret_cast<uintptr_t>(sc[r].data());
    d[r].src_displs = reinterpret_cast<uintptr_t>(sd[r].data());
    d[r].dst_counts = reinterpret_cast<uintptr_t>(rc[r].data());
    d[r].dst_displs = reinterpret_cast<uintptr_t>(rd[r].data());
  }
  run_ok(d);
  for (uint32_t r = 0; r < kRanks; ++r)
    for (uint32_t p = 0; p < kRanks; ++p)
      for (uint32_t i = 0; i < cnt(p, r); ++i)
        ASSERT_EQ(dst[r][rd[r][p] + i], src[p][sd[p][r] + i])
            << r << " from " << p << " at " << i;
  // The gaps stay untouched.
  EXPECT_EQ(dst[0][rd[0][0] + cnt(0, 0)], -1);
}

// An active set of one may name its member with stride 0; the engine
// once divided by that stride (found by tests/fuzz).
TEST_P(EngineMem, ActiveSetOfOneWithStrideZero) {
  std::vector<int32_t> src = pattern(1, 10), dst(10, -1);
  CollDesc d[kRanks];
  d[1] = desc(CollType::kAllreduce, DType::kInt32, ROp::kSum, 10);
  d[1].flags = ucc::off::kDescTagged;
  d[1].tag = 3;
  d[1].set_start = 1;
  d[1].set_stride = 0;
  d[1].set_size = 1;
  d[1].src = ref(src, rank[1].reg(src));
  d[1].dst = ref(dst, rank[1].reg(dst));
  post(d, 1);
  for (int i = 0; i < 1000 && status(1) == Status::kInProgress; ++i)
    rank[1].eng.progress();
  ASSERT_EQ(status(1), Status::kOk);
  EXPECT_EQ(dst, src);
}

// Registrations exist in cross-process mode only.
class EngineMemCross : public EngineMem {};

TEST_P(EngineMemCross, UnregisteredMemoryIsRefused) {
  const uint64_t count = 100;
  std::vector<int32_t> src[kRanks], dst[kRanks];
  CollDesc d[kRanks];
  for (uint32_t r = 0; r < kRanks; ++r) {
    src[r] = pattern(r, count);
    dst[r].assign(count, -1);
    d[r] = desc(CollType::kAllreduce, DType::kInt32, ROp::kSum, count);
    d[r].src = ref(src[r], rank[r].reg(src[r]));
    d[r].dst = ref(dst[r]);  // not registered
  }
  post(d);
  Status st[kRanks];
  wait(st);
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_EQ(st[r], Status::kInvalidParam);
    EXPECT_EQ(dst[r], std::vector<int32_t>(count, -1));
  }
  // A key from another rank's table means nothing here: rank 0 registers
  // rank 1's dst, and rank 1 names its dst with that key.
  uint32_t k0 = rank[0].reg(dst[1]);
  d[0].dst = ref(dst[0]);  // still unregistered
  d[1].dst = ref(dst[1], k0);
  post(d);
  wait(st);
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_EQ(st[r], Status::kInvalidParam) << r;
    EXPECT_EQ(dst[r], std::vector<int32_t>(count, -1));
  }
  // v-collective arrays outside the registrations.
  std::vector<uint32_t> counts(kRanks, 10), displs{0, 10};
  std::vector<int32_t> s20(20, 1), d20(20, -1);
  for (uint32_t r = 0; r < kRanks; ++r) {
    rank[r].reg(s20);
    rank[r].reg(d20);
    rank[r].reg(counts);
    d[r] = desc(CollType::kAlltoallv, DType::kInt32, ROp::kNone, 0);
    d[r].src = ref(s20);
    d[r].dst = ref(d20);
    d[r].src_counts = d[r].dst_counts =
        reinterpret_cast<uintptr_t>(counts.data());
    d[r].src_displs = d[r].dst_displs =
        reinterpret_cast<uintptr_t>(displs.data());  // not registered
  }
  post(d);
  wait(st);
  for (uint32_t r = 0; r < kRanks; ++r) EXPECT_EQ(st[r], Status::kInvalidParam);
  EXPECT_EQ(d20, std::vector<int32_t>(20, -1));
}

// The host takes a registration back while its collective runs: the next
// access fails, the collective ends with kInvalidParam and the buffer is
// not written.
TEST_P(EngineMemCross, RegistrationRemovedMidCollective) {
  const uint64_t count = 1000;
  std::vector<int32_t> src[kRanks], dst[kRanks];
  uint32_t dkey[kRanks];
  CollDesc d[kRanks];
  registered_allreduce(count, src, dst, dkey, d);
  for (uint32_t r = 0; r < kRanks; ++r) {
    d[r].alg = 2;  // ring: rank 1 writes dst only once rank 0 takes part
    d[r].dst = ref(dst[r], dkey[r]);
  }
  post(d, 1);
  for (int i = 0; i < 100; ++i) rank[1].eng.progress();
  ASSERT_EQ(status(1), Status::kInProgress);  // waiting for rank 0
  ASSERT_TRUE(rank[1].regs.remove(dkey[1]));
  post(d, 0);
  Status st[kRanks];
  wait(st);
  EXPECT_EQ(st[1], Status::kInvalidParam);
  EXPECT_NE(st[0], Status::kOk);  // aborted by rank 1
  EXPECT_EQ(dst[1], std::vector<int32_t>(count, -1));
}

// Descriptors posted again (a persistent request): the engine recognises
// them (Engine::Known) and skips validation, so every repost must still
// see this post's data, and any change to the descriptor, or to what its
// validity rests on, must be seen as well.
TEST_P(EngineMem, RepostedDescriptorsSeeNewDataAndChanges) {
  const uint64_t counts[] = {3, 3, 3, 1000, 3};  // the 4th: another run
  std::vector<int32_t> src[kRanks], dst[kRanks];
  for (uint32_t r = 0; r < kRanks; ++r) {
    src[r].assign(1000, 0);
    dst[r].assign(1000, -1);
    rank[r].reg(src[r]);
    rank[r].reg(dst[r]);
  }
  for (int round = 0; round < 5; ++round) {
    const uint64_t count = counts[round];
    CollDesc d[kRanks];
    for (uint32_t r = 0; r < kRanks; ++r) {
      for (uint64_t i = 0; i < count; ++i)
        src[r][i] = static_cast<int32_t>((r + 1) * 100 + round * 7 + i);
      std::fill(dst[r].begin(), dst[r].end(), -1);  // poison
      d[r] = desc(CollType::kAllreduce, DType::kInt32,
                  round == 2 ? ROp::kMax : ROp::kSum, count);
      d[r].src = ref(src[r]);
      d[r].dst = ref(dst[r]);
    }
    run_ok(d);
    for (uint32_t r = 0; r < kRanks; ++r) {
      for (uint64_t i = 0; i < count; ++i) {
        const int32_t a = src[0][i], b = src[1][i];
        ASSERT_EQ(dst[r][i], round == 2 ? std::max(a, b) : a + b)
            << "round " << round << " rank " << r << " at " << i;
      }
      if (count < dst[r].size())
        EXPECT_EQ(dst[r][count], -1) << "round " << round;
    }
  }
}

// Inline data (kDescInline): the input comes from the descriptor, taken
// anew at every post (reposts offered as known too). Reaching user memory
// cross-process, the engine leaves dst alone and puts the result in the
// slot's result area, flagged in the completion word; reaching it
// directly (no dst cache), it reads src and writes dst as ever,
// unflagged (src then holds the input, as the host's contract says;
// cross-process it holds a decoy that must not be read). Descriptors the
// flag does not fit are refused.
TEST_P(EngineMem, InlineAllreduceTakesItsInputFromTheDescriptor) {
  std::vector<int32_t> src[kRanks], dst[kRanks];
  for (uint32_t r = 0; r < kRanks; ++r) {
    src[r].assign(8, 999);  // the decoy
    dst[r].assign(8, -1);
    rank[r].reg(src[r]);
    rank[r].reg(dst[r]);
  }
  for (int round = 0; round < 4; ++round) {
    as_known = round >= 2;
    const uint64_t count = round == 1 ? 3 : 8;
    CollDesc d[kRanks];
    int32_t in[kRanks][8];
    for (uint32_t r = 0; r < kRanks; ++r) {
      std::fill(dst[r].begin(), dst[r].end(), -1);  // poison
      d[r] = desc(CollType::kAllreduce, DType::kInt32, ROp::kSum, count);
      d[r].flags = ucc::off::kDescInline;
      d[r].src = ref(src[r]);
      d[r].dst = ref(dst[r]);
      for (uint64_t i = 0; i < count; ++i)
        in[r][i] = static_cast<int32_t>((r + 1) * 10 + round * 100 + i);
      memcpy(d[r].inline_data, in[r], count * sizeof(int32_t));
      if (!cross()) std::copy(in[r], in[r] + count, src[r].begin());
    }
    run_ok(d);
    for (uint32_t r = 0; r < kRanks; ++r) {
      const uint64_t w = rank[r].ch.read(0);
      EXPECT_EQ(ucc::off::completion_inline(w), cross()) << round;
      const int32_t* got = dst[r].data();
      int32_t res[8];
      if (cross()) {
        memcpy(res, rank[r].ch.result(0), sizeof(res));
        got = res;
        EXPECT_EQ(dst[r], std::vector<int32_t>(8, -1)) << "dst touched";
      }
      for (uint64_t i = 0; i < count; ++i)
        ASSERT_EQ(got[i], in[0][i] + in[1][i])
            << "round " << round << " rank " << r << " at " << i;
    }
  }
  as_known = false;
  // 9 int32 (36 bytes), and a bcast: refused.
  for (int bad = 0; bad < 2; ++bad) {
    CollDesc d[kRanks];
    for (uint32_t r = 0; r < kRanks; ++r) {
      d[r] = bad == 0 ? desc(CollType::kAllreduce, DType::kInt32, ROp::kSum, 9)
                      : desc(CollType::kBcast, DType::kInt32, ROp::kNone, 8);
      d[r].flags = ucc::off::kDescInline;
      d[r].src = ref(src[r]);
      d[r].dst = ref(dst[r]);
    }
    post(d);
    Status st[kRanks];
    wait(st);
    for (uint32_t r = 0; r < kRanks; ++r)
      EXPECT_EQ(st[r], Status::kInvalidParam) << "case " << bad;
  }
}

// The v-collectives validate their user arrays at every post, known or
// not: counts that grew past the buffers are refused on a repost.
void EngineMem::revalidates_its_arrays() {
  std::vector<int32_t> src[kRanks], dst[kRanks];
  std::vector<uint32_t> cnt[kRanks], dsp[kRanks];
  CollDesc d[kRanks];
  for (uint32_t r = 0; r < kRanks; ++r) {
    src[r] = pattern(r, 20);
    dst[r].assign(20, -1);
    cnt[r].assign(kRanks, 10);
    dsp[r] = {0, 10};
    for (auto* v : {&cnt[r], &dsp[r]}) rank[r].reg(*v);
    d[r] = desc(CollType::kAlltoallv, DType::kInt32, ROp::kNone, 0);
    d[r].src = ref(src[r], rank[r].reg(src[r]));
    d[r].dst = ref(dst[r], rank[r].reg(dst[r]));
    d[r].src_counts = d[r].dst_counts =
        reinterpret_cast<uintptr_t>(cnt[r].data());
    d[r].src_displs = d[r].dst_displs =
        reinterpret_cast<uintptr_t>(dsp[r].data());
  }
  run_ok(d);
  run_ok(d);
  for (uint32_t r = 0; r < kRanks; ++r) {
    std::fill(dst[r].begin(), dst[r].end(), -1);
    cnt[r][1] = 11;  // block 1 now ends past both buffers
  }
  post(d);
  Status st[kRanks];
  wait(st);
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_EQ(st[r], Status::kInvalidParam) << r;
    EXPECT_EQ(dst[r], std::vector<int32_t>(20, -1)) << r;
  }
}

TEST_P(EngineMem, RepostedVectorCollectiveRevalidatesItsArrays) {
  revalidates_its_arrays();
}

// The same reposts offered as known (an inline host's persistent
// request): the second post is taken so, the one with grown counts not.
TEST_P(EngineMem, KnownRepostOfVectorCollectiveRevalidatesItsArrays) {
  as_known = true;
  revalidates_its_arrays();
  EXPECT_EQ(known_posts, static_cast<int>(kRanks));
}

// A known v-collective keeps the block tables its arrays gave, and uses
// them only while the arrays still say the same: blocks that moved
// within the buffers are moved on the next post, then kept again.
void EngineMem::follows_its_arrays() {
  std::vector<int32_t> src[kRanks], dst[kRanks];
  std::vector<uint64_t> cnt[kRanks], sdsp[kRanks], rdsp[kRanks];
  CollDesc d[kRanks];
  for (uint32_t r = 0; r < kRanks; ++r) {
    src[r].assign(24, 0);
    dst[r].assign(24, -1);
    cnt[r].assign(kRanks, 10);
    sdsp[r] = {0, 12};
    rdsp[r] = {1, 13};
    for (auto* v : {&cnt[r], &sdsp[r], &rdsp[r]}) rank[r].reg(*v);
    d[r] = desc(CollType::kAlltoallv, DType::kInt32, ROp::kNone, 0);
    d[r].flags = ucc::off::kDescCount64 | ucc::off::kDescDispl64;
    d[r].src = ref(src[r], rank[r].reg(src[r]));
    d[r].dst = ref(dst[r], rank[r].reg(dst[r]));
    d[r].src_counts = d[r].dst_counts =
        reinterpret_cast<uintptr_t>(cnt[r].data());
    d[r].src_displs = reinterpret_cast<uintptr_t>(sdsp[r].data());
    d[r].dst_displs = reinterpret_cast<uintptr_t>(rdsp[r].data());
  }
  // Posts 0-1 on the first layout, 2-3 with the blocks swapped on both
  // sides, 4 with blocks of 9 (the 10th element of each stays poisoned).
  for (int post = 0; post < 5; ++post) {
    if (post == 2)
      for (uint32_t r = 0; r < kRanks; ++r) {
        sdsp[r] = {12, 0};  // in place: same addresses
        rdsp[r] = {13, 1};
      }
    if (post == 4)
      for (uint32_t r = 0; r < kRanks; ++r) cnt[r].assign(kRanks, 9);
    for (uint32_t r = 0; r < kRanks; ++r) {
      for (size_t i = 0; i < src[r].size(); ++i)
        src[r][i] = static_cast<int32_t>(r * 1000 + post * 100 + i);
      std::fill(dst[r].begin(), dst[r].end(), -1);
    }
    run_ok(d);
    for (uint32_t r = 0; r < kRanks; ++r) {
      std::vector<int32_t> want(24, -1);
      for (uint32_t p = 0; p < kRanks; ++p)
        for (uint64_t i = 0; i < cnt[p][r]; ++i)
          want[rdsp[r][p] + i] = src[p][sdsp[p][r] + i];
      ASSERT_EQ(dst[r], want) << "post " << post << " rank " << r;
    }
  }
}

TEST_P(EngineMem, RepostedVectorCollectiveFollowsItsArrays) {
  follows_its_arrays();
}

// The same reposts offered as known: posts 1 and 3 (arrays as on the
// post before) are taken so, 2 and 4 (arrays changed) are not.
TEST_P(EngineMem, KnownRepostOfVectorCollectiveFollowsItsArrays) {
  as_known = true;
  follows_its_arrays();
  EXPECT_EQ(known_posts, 2 * static_cast<int>(kRanks));
}

// A known descriptor whose registration the host has removed since is
// refused by validation again, as it was before it was known.
TEST_P(EngineMemCross, KnownDescriptorRefusedOnceItsRegistrationGoes) {
  const uint64_t count = 8;
  std::vector<int32_t> src[kRanks], dst[kRanks];
  uint32_t dkey[kRanks];
  CollDesc d[kRanks];
  registered_allreduce(count, src, dst, dkey, d);  // dst: implicit key
  run_ok(d);
  run_ok(d);  // known now
  for (uint32_t r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(rank[r].regs.remove(dkey[r]));
    std::fill(dst[r].begin(), dst[r].end(), -1);
  }
  post(d);
  Status st[kRanks];
  wait(st);
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_EQ(st[r], Status::kInvalidParam) << r;
    EXPECT_EQ(dst[r], std::vector<int32_t>(count, -1)) << r;
  }
  // Registered again: known or not, it runs.
  for (uint32_t r = 0; r < kRanks; ++r) rank[r].reg(dst[r]);
  run_ok(d);
  for (uint32_t r = 0; r < kRanks; ++r)
    for (uint64_t i = 0; i < count; ++i)
      ASSERT_EQ(dst[r][i], src[0][i] + src[1][i]);
}

INSTANTIATE_TEST_SUITE_P(Modes, EngineMem, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "CrossProcess" : "Direct";
                         });
INSTANTIATE_TEST_SUITE_P(Modes, EngineMemCross, ::testing::Values(true),
                         [](const ::testing::TestParamInfo<bool>&) {
                           return "CrossProcess";
                         });

}  // namespace ucct_engine

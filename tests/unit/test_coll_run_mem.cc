// CollRun's data operations (device/run/coll_run.h) through both memory
// adapters: the cross-process one (aimed at this process, so the staged
// read/write paths run through process_vm_readv/writev) must leave user
// memory and engine memory exactly as the direct one does, with a slot
// small enough that every operation takes several bounce-sized pieces;
// and outside the registrations it must refuse without touching anything.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "device/run/coll_run.h"
#include "tests/unit/cma_probe.h"

namespace {

using ucc::base::Status;
using ucc::dev::Buf;
using ucc::dev::CollRun;
using ucc::off::BufRef;
using ucc::off::CollDesc;
using ucc::off::DType;
using ucc::off::ROp;
using ucc::plat::MemAccess;
using ucc::plat::RegTable;

constexpr uint32_t kSlot = 28;  // 7 int32 / 3 float64 (+4 bytes) per piece
constexpr size_t kBuf = 1000;   // bytes of src and of dst

BufRef ref_of(const void* p, uint64_t bytes, uint32_t key = 0) {
  return BufRef{reinterpret_cast<uintptr_t>(p), bytes, key, 0, {0, 0, 0}};
}

// One set of buffers and a CollRun over them, direct or cross-process.
struct World {
  explicit World(bool cross, DType dt = DType::kInt32, ROp op = ROp::kSum)
      : src(kBuf), dst(kBuf), bounce(kSlot) {
    std::mt19937 rng(7);
    for (auto& b : src) b = static_cast<unsigned char>(rng() % 64);
    for (auto& b : dst) b = static_cast<unsigned char>(rng() % 64);
    EXPECT_EQ(regs.init(8), Status::kOk);
    src_key = regs.insert(reinterpret_cast<uintptr_t>(src.data()), kBuf);
    dst_key = regs.insert(reinterpret_cast<uintptr_t>(dst.data()), kBuf);
    mem =
        cross ? MemAccess::cross_process(getpid(), &regs) : MemAccess::direct();
    d.dtype = dt;
    d.op = op;
    d.src = ref_of(src.data(), kBuf, src_key);
    d.dst = ref_of(dst.data(), kBuf, dst_key);
    run.d = &d;
    run.size = 3;
    run.slot = kSlot;
    run.esize = static_cast<uint32_t>(ucc::off::dtype_size(dt));
    run.avg = op == ROp::kAvg;
    run.rop = run.avg ? ROp::kSum : op;
    run.mem = &mem;
    run.bounce = cross ? bounce.data() : nullptr;
  }
  std::vector<unsigned char> src, dst, bounce;
  RegTable regs;
  uint32_t src_key = 0, dst_key = 0;
  MemAccess mem;
  CollDesc d{};
  CollRun run;
};

// Runs `op` on a direct and a cross-process world; they must agree on
// the status, both user buffers and the engine memory.
template <typename Op>
void same_in_both(Op op, DType dt = DType::kInt32, ROp rop = ROp::kSum) {
  World a(false, dt, rop), b(true, dt, rop);
  std::vector<unsigned char> ea(kBuf, 5), eb(kBuf, 5);
  Status sa = op(a.run, ea.data());
  Status sb = op(b.run, eb.data());
  EXPECT_EQ(sa, sb);
  EXPECT_EQ(a.src, b.src);
  EXPECT_EQ(a.dst, b.dst);
  EXPECT_EQ(ea, eb);
}

TEST(CollRunMem, CrossProcessPathsMatchTheDirectOnes) {
  SKIP_WITHOUT_CMA_HERE();
  same_in_both([](CollRun& r, unsigned char* e) {
    return r.copy_in(e, Buf::kSrc, 13, 301);
  });
  same_in_both([](CollRun& r, unsigned char* e) {
    for (int i = 0; i < 301; ++i) e[i] = static_cast<unsigned char>(i);
    return r.copy_out(Buf::kDst, 17, e, 301);
  });
  same_in_both([](CollRun& r, unsigned char*) {
    return r.copy_uu(Buf::kDst, 3, Buf::kSrc, 100, 555);
  });
  // engine dst <- engine a + user src, separately and in place.
  same_in_both([](CollRun& r, unsigned char* e) {
    return r.reduce_in(e + 400, e, Buf::kSrc, 8, 50);
  });
  same_in_both([](CollRun& r, unsigned char* e) {
    return r.reduce_in(e, e, Buf::kSrc, 8, 50);
  });
  // user dst <- engine + user src; and in place on dst.
  same_in_both([](CollRun& r, unsigned char* e) {
    return r.reduce_out(Buf::kDst, 40, e, Buf::kSrc, 0, 101);
  });
  same_in_both([](CollRun& r, unsigned char* e) {
    return r.reduce_out(Buf::kDst, 40, e, Buf::kDst, 40, 101);
  });
  same_in_both(
      [](CollRun& r, unsigned char* e) {
        Status st = r.reduce_out(Buf::kDst, 0, e, Buf::kSrc, 0, 100);
        return st == Status::kOk ? r.finish_avg(Buf::kDst, 8, 90) : st;
      },
      DType::kFloat64, ROp::kAvg);
  // Out of the reference's bounds: refused alike.
  same_in_both([](CollRun& r, unsigned char*) {
    return r.copy_uu(Buf::kDst, 900, Buf::kSrc, 0, 101);
  });
  same_in_both([](CollRun& r, unsigned char* e) {
    return r.reduce_out(Buf::kDst, 0, e, Buf::kSrc, 4, 250);
  });
}

TEST(CollRunMem, OverlappingCopiesBehaveAsMemmove) {
  SKIP_WITHOUT_CMA_HERE();
  for (bool cross : {false, true}) {
    for (int64_t shift : {-37, -1, 1, 29, 64}) {
      World w(cross);
      w.d.src = w.d.dst;  // one buffer, as in place
      std::vector<unsigned char> want = w.dst;
      uint64_t from = 200, to = static_cast<uint64_t>(200 + shift);
      memmove(want.data() + to, want.data() + from, 500);
      ASSERT_EQ(w.run.copy_uu(Buf::kDst, to, Buf::kSrc, from, 500),
                Status::kOk);
      EXPECT_EQ(w.dst, want) << "cross " << cross << " shift " << shift;
    }
  }
}

TEST(CollRunMem, ReductionsAreRight) {
  SKIP_WITHOUT_CMA_HERE();
  World w(true);
  std::vector<int32_t> eng(100);
  for (int i = 0; i < 100; ++i) eng[i] = i * 1000;
  std::vector<int32_t> s(100), d0(100);
  memcpy(s.data(), w.src.data(), 400);
  memcpy(d0.data(), w.dst.data(), 400);
  ASSERT_EQ(w.run.reduce_out(Buf::kDst, 0, eng.data(), Buf::kSrc, 0, 100),
            Status::kOk);
  std::vector<int32_t> got(100);
  memcpy(got.data(), w.dst.data(), 400);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(got[i], i * 1000 + s[i]) << i;
  ASSERT_EQ(w.run.reduce_in(eng.data(), eng.data(), Buf::kDst, 0, 100),
            Status::kOk);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(eng[i], 2 * i * 1000 + s[i]) << i;
}

// Outside the registrations nothing moves: not the first piece, not the
// other buffer, not the engine memory.
TEST(CollRunMem, UnregisteredMemoryIsNeverTouched) {
  SKIP_WITHOUT_CMA_HERE();
  World w(true);
  ASSERT_TRUE(w.regs.remove(w.dst_key));
  // dst is now only partly registered, under the implicit key.
  ASSERT_NE(w.regs.insert(reinterpret_cast<uintptr_t>(w.dst.data()), 500), 0u);
  w.d.dst.key = 0;
  const auto src0 = w.src, dst0 = w.dst;
  std::vector<unsigned char> eng(kBuf, 9);
  const auto eng0 = eng;
  EXPECT_EQ(w.run.copy_out(Buf::kDst, 400, eng.data(), 200),
            Status::kInvalidParam);
  EXPECT_EQ(w.run.copy_uu(Buf::kDst, 0, Buf::kSrc, 0, 600),
            Status::kInvalidParam);
  EXPECT_EQ(w.run.reduce_out(Buf::kDst, 0, eng.data(), Buf::kSrc, 0, 126),
            Status::kInvalidParam);
  EXPECT_EQ(w.run.reduce_in(eng.data(), eng.data(), Buf::kDst, 400, 26),
            Status::kInvalidParam);
  EXPECT_EQ(w.dst, dst0);
  EXPECT_EQ(w.src, src0);
  EXPECT_EQ(eng, eng0);
  // Inside the part still registered, the same calls work.
  EXPECT_EQ(w.run.copy_uu(Buf::kDst, 0, Buf::kSrc, 0, 500), Status::kOk);
  EXPECT_EQ(memcmp(w.dst.data(), w.src.data(), 500), 0);
  // A removed registration is refused from then on.
  w.regs.fini();
  ASSERT_EQ(w.regs.init(2), Status::kOk);
  EXPECT_EQ(w.run.copy_in(eng.data(), Buf::kSrc, 0, 4), Status::kInvalidParam);
  EXPECT_EQ(eng, eng0);
}

TEST(CollRunMem, StagedPathsWithoutABounceBufferSayNoResource) {
  SKIP_WITHOUT_CMA_HERE();
  World w(true);
  w.run.bounce = nullptr;
  std::vector<unsigned char> eng(kBuf, 1);
  // Straight to and from engine memory: no bounce needed.
  EXPECT_EQ(w.run.copy_in(eng.data(), Buf::kSrc, 0, 100), Status::kOk);
  EXPECT_EQ(w.run.copy_uu(Buf::kDst, 0, Buf::kSrc, 0, 100),
            Status::kNoResource);
  EXPECT_EQ(w.run.reduce_out(Buf::kDst, 0, eng.data(), Buf::kSrc, 0, 10),
            Status::kNoResource);
  // Bounds are still checked first.
  EXPECT_EQ(w.run.copy_uu(Buf::kDst, 999, Buf::kSrc, 0, 100),
            Status::kInvalidParam);
}

}  // namespace

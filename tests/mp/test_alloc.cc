// No allocation on the collective fast path: ucc_collective_post,
// ucc_context_progress and ucc_collective_test must not call the heap once
// a team and its (persistent) requests exist.
//
// This binary replaces malloc, calloc, realloc, reallocarray, free,
// posix_memalign, aligned_alloc, memalign, valloc, pvalloc and every
// operator new / delete with versions that call glibc's own allocator
// (__libc_malloc & co.) and, while a per-process flag is set, count the
// call. Each forked rank builds its world and persistent requests, warms
// them up, sets the flag, runs 10,000 collectives of a mix of all seven
// types plus an allreduce of a generic type reduced by a user callback
// (half one at a time, half nine in flight), clears the flag and requires
// a count of 0. Before that, one counted round of ucc_mem_map, init, post,
// finalize of a collective on the mapped buffers, and ucc_mem_unmap must
// make no call either.
//
// Under ASan/TSan the sanitizer owns malloc: the replacement is compiled
// out and the test is skipped.
#include <errno.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "tests/common/harness.h"
#include "tests/common/sanitizer.h"

namespace {

enum Kind {
  kMalloc,
  kCalloc,
  kRealloc,
  kFree,
  kAligned,
  kNew,
  kDelete,
  kKinds
};
const char* const kKindNames[kKinds] = {"malloc",  "calloc", "realloc", "free",
                                        "aligned", "new",    "delete"};

// Constant-initialised: safe for allocations made before main().
std::atomic<bool> g_counting{false};
std::atomic<long> g_calls[kKinds];

inline void note(Kind k) {
  if (g_counting.load(std::memory_order_relaxed))
    g_calls[k].fetch_add(1, std::memory_order_relaxed);
}

long total_calls() {
  long t = 0;
  for (const auto& c : g_calls) t += c.load();
  return t;
}

}  // namespace

#ifndef UCCT_SANITIZER

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);
void* __libc_memalign(size_t, size_t);
void* __libc_valloc(size_t);
void* __libc_pvalloc(size_t);

void* malloc(size_t n) {
  note(kMalloc);
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) {
  note(kCalloc);
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) {
  note(kRealloc);
  return __libc_realloc(p, n);
}
void* reallocarray(void* p, size_t n, size_t m) {
  note(kRealloc);
  size_t bytes;
  if (__builtin_mul_overflow(n, m, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return __libc_realloc(p, bytes);
}
void free(void* p) {
  if (p != nullptr) note(kFree);
  __libc_free(p);
}
int posix_memalign(void** out, size_t align, size_t n) {
  note(kAligned);
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(align, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void* aligned_alloc(size_t align, size_t n) {
  note(kAligned);
  return __libc_memalign(align, n);
}
void* memalign(size_t align, size_t n) {
  note(kAligned);
  return __libc_memalign(align, n);
}
void* valloc(size_t n) {
  note(kAligned);
  return __libc_valloc(n);
}
void* pvalloc(size_t n) {
  note(kAligned);
  return __libc_pvalloc(n);
}
}  // extern "C"

namespace {

void* new_impl(size_t n) {
  note(kNew);
  void* p = __libc_malloc(n ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* new_aligned(size_t n, std::align_val_t a) {
  note(kNew);
  void* p = __libc_memalign(static_cast<size_t>(a), n ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* new_nothrow(size_t n) noexcept {
  note(kNew);
  return __libc_malloc(n ? n : 1);
}
void* new_aligned_nothrow(size_t n, std::align_val_t a) noexcept {
  note(kNew);
  return __libc_memalign(static_cast<size_t>(a), n ? n : 1);
}
void delete_impl(void* p) noexcept {
  if (p != nullptr) note(kDelete);
  __libc_free(p);
}

}  // namespace

void* operator new(size_t n) { return new_impl(n); }
void* operator new[](size_t n) { return new_impl(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  return new_nothrow(n);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return new_nothrow(n);
}
void* operator new(size_t n, std::align_val_t a) { return new_aligned(n, a); }
void* operator new[](size_t n, std::align_val_t a) { return new_aligned(n, a); }
void* operator new(size_t n, std::align_val_t a,
                   const std::nothrow_t&) noexcept {
  return new_aligned_nothrow(n, a);
}
void* operator new[](size_t n, std::align_val_t a,
                     const std::nothrow_t&) noexcept {
  return new_aligned_nothrow(n, a);
}
void operator delete(void* p) noexcept { delete_impl(p); }
void operator delete[](void* p) noexcept { delete_impl(p); }
void operator delete(void* p, size_t) noexcept { delete_impl(p); }
void operator delete[](void* p, size_t) noexcept { delete_impl(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept {
  delete_impl(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  delete_impl(p);
}
void operator delete(void* p, std::align_val_t) noexcept { delete_impl(p); }
void operator delete[](void* p, std::align_val_t) noexcept { delete_impl(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept {
  delete_impl(p);
}
void operator delete[](void* p, size_t, std::align_val_t) noexcept {
  delete_impl(p);
}
void operator delete(void* p, std::align_val_t,
                     const std::nothrow_t&) noexcept {
  delete_impl(p);
}
void operator delete[](void* p, std::align_val_t,
                       const std::nothrow_t&) noexcept {
  delete_impl(p);
}

#endif  // UCCT_SANITIZER

namespace {

constexpr int kSteadyColls = 10000;
constexpr int kInFlight = 9;

// A generic 12-byte type reduced by a callback (per-field wrapping sum):
// the engine's reduction hook is on the counted path too.
ucc_status_t sum3(const ucc_reduce_cb_params_t* p) {
  const auto* a = static_cast<const int32_t*>(p->src1);
  const auto* b = static_cast<const int32_t*>(p->src2);
  auto* d = static_cast<int32_t*>(p->dst);
  for (size_t i = 0; i < 3 * p->count; ++i)
    d[i] = static_cast<int32_t>(static_cast<uint32_t>(a[i]) +
                                static_cast<uint32_t>(b[i]));
  return UCC_OK;
}

ucc_coll_buffer_info_t info(void* p, uint64_t count, ucc_datatype_t dt) {
  ucc_coll_buffer_info_t b{};
  b.buffer = p;
  b.count = count;
  b.datatype = dt;
  b.mem_type = UCC_MEMORY_TYPE_HOST;
  return b;
}

// Progresses until every request is done; nothing in here may allocate.
ucc_status_t wait_all(ucc_context_h ctx, ucc_coll_req_h* reqs, int n) {
  const double deadline = ucct::now_s() + 60;
  unsigned polls = 0;
  for (;;) {
    bool busy = false;
    for (int i = 0; i < n; ++i) {
      const ucc_status_t st = ucc_collective_test(reqs[i]);
      if (st == UCC_INPROGRESS)
        busy = true;
      else if (st != UCC_OK)
        return st;
    }
    if (!busy) return UCC_OK;
    const ucc_status_t pst = ucc_context_progress(ctx);
    if (pst < 0) return pst;
    if ((++polls & 127) == 0) {
      if (ucct::now_s() > deadline) return UCC_ERR_TIMED_OUT;
      sched_yield();
    }
  }
}

int steady_state(ucct::Rank& r) {
  ucct::World w;
  // Counting across world creation proves that the library's own calls
  // reach the replacement (it allocates there by design).
  for (auto& c : g_calls) c.store(0);  // fork copied the parent's counts
  g_counting.store(true);
  const ucc_status_t init_st = w.init(r);
  g_counting.store(false);
  if (init_st != UCC_OK) return 1;
  const long init_calls = total_calls();
  const int n = w.size, me = w.rank;

  // Buffers and persistent requests, all made before counting starts.
  std::vector<float> ar8_s(2, float(me + 1)), ar8_d(2);
  std::vector<float> ar64_s(16384, 1.0f), ar64_d(16384);
  std::vector<uint8_t> bc(4096, static_cast<uint8_t>(me == n - 1 ? 7 : 0));
  std::vector<int32_t> ag_s(256, me), ag_d(256 * n);
  std::vector<int32_t> a2a_s(256 * n, me), a2a_d(256 * n);
  std::vector<float> rs_s(256 * n, 1.0f), rs_d(256);
  std::vector<int64_t> rd_s(512, me), rd_d(512);

  std::vector<ucc_coll_args_t> args(kInFlight);
  for (auto& a : args) {
    a = ucc_coll_args_t{};
    a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags = UCC_COLL_ARGS_FLAG_PERSISTENT;
  }
  args[0].coll_type = UCC_COLL_TYPE_ALLREDUCE;  // 8 bytes
  args[0].src.info = info(ar8_s.data(), 2, UCC_DT_FLOAT32);
  args[0].dst.info = info(ar8_d.data(), 2, UCC_DT_FLOAT32);
  args[0].op = UCC_OP_SUM;
  args[1].coll_type = UCC_COLL_TYPE_ALLREDUCE;  // 64 KiB
  args[1].src.info = info(ar64_s.data(), 16384, UCC_DT_FLOAT32);
  args[1].dst.info = info(ar64_d.data(), 16384, UCC_DT_FLOAT32);
  args[1].op = UCC_OP_SUM;
  args[2].coll_type = UCC_COLL_TYPE_BCAST;
  args[2].src.info = info(bc.data(), bc.size(), UCC_DT_UINT8);
  args[2].root = static_cast<uint64_t>(n - 1);
  args[3].coll_type = UCC_COLL_TYPE_ALLGATHER;
  args[3].src.info = info(ag_s.data(), 256, UCC_DT_INT32);
  args[3].dst.info = info(ag_d.data(), 256 * n, UCC_DT_INT32);
  args[4].coll_type = UCC_COLL_TYPE_ALLTOALL;
  args[4].src.info = info(a2a_s.data(), 256 * n, UCC_DT_INT32);
  args[4].dst.info = info(a2a_d.data(), 256 * n, UCC_DT_INT32);
  args[5].coll_type = UCC_COLL_TYPE_REDUCE_SCATTER;
  args[5].src.info = info(rs_s.data(), 256 * n, UCC_DT_FLOAT32);
  args[5].dst.info = info(rs_d.data(), 256, UCC_DT_FLOAT32);
  args[5].op = UCC_OP_SUM;
  args[6].coll_type = UCC_COLL_TYPE_REDUCE;
  args[6].src.info = info(rd_s.data(), 512, UCC_DT_INT64);
  args[6].dst.info = info(rd_d.data(), 512, UCC_DT_INT64);
  args[6].op = UCC_OP_MAX;
  args[6].root = 0;
  args[7].coll_type = UCC_COLL_TYPE_BARRIER;
  ucc_generic_dt_ops_t ops{};
  ops.mask = UCC_GENERIC_DT_OPS_FIELD_FLAGS;
  ops.flags = UCC_GENERIC_DT_OPS_FLAG_CONTIG | UCC_GENERIC_DT_OPS_FLAG_REDUCE;
  ops.contig_size = 12;
  ops.reduce.cb = sum3;
  ucc_datatype_t tri = 0;
  if (ucc_dt_create_generic(&ops, nullptr, &tri) != UCC_OK) return 2;
  std::vector<int32_t> gen_s(3 * 64), gen_d(3 * 64);
  for (size_t i = 0; i < gen_s.size(); ++i)
    gen_s[i] = i % 3 == 0 ? me : static_cast<int32_t>(i % 3);
  args[8].coll_type = UCC_COLL_TYPE_ALLREDUCE;
  args[8].src.info = info(gen_s.data(), 64, tri);
  args[8].dst.info = info(gen_d.data(), 64, tri);
  args[8].op = UCC_OP_SUM;

  std::vector<ucc_coll_req_h> reqs(kInFlight, nullptr);
  for (int i = 0; i < kInFlight; ++i) {
    const ucc_status_t st = ucc_collective_init(&args[i], &reqs[i], w.team);
    if (st != UCC_OK) {
      std::fprintf(stderr, "rank %d: init of request %d: %s\n", me, i,
                   ucct::status_name(st));
      return 2;
    }
  }
  // Warm-up: every request a few times, alone and all in flight.
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kInFlight; ++i) {
      if (ucc_collective_post(reqs[i]) != UCC_OK ||
          wait_all(w.ctx, &reqs[i], 1) != UCC_OK)
        return 3;
    }
    for (int i = 0; i < kInFlight; ++i) {
      if (ucc_collective_post(reqs[i]) != UCC_OK) return 3;
    }
    if (wait_all(w.ctx, reqs.data(), kInFlight) != UCC_OK) return 3;
  }

  // Mapped memory: ucc_mem_map, init of a collective on the mapped
  // buffers, its post, finalize and ucc_mem_unmap take nothing from the
  // heap either (handles and requests come from pools made at creation).
  for (auto& c : g_calls) c.store(0);
  g_counting.store(true);
  ucc_mem_map_t seg[2] = {{ar64_s.data(), ar64_s.size() * sizeof(float)},
                          {ar64_d.data(), ar64_d.size() * sizeof(float)}};
  ucc_mem_map_params_t mp{seg, 2};
  size_t msize = 0;
  ucc_mem_map_mem_h mh = nullptr;
  ucc_status_t mst =
      ucc_mem_map(w.ctx, UCC_MEM_MAP_MODE_EXPORT, &mp, &msize, &mh);
  ucc_coll_args_t ma = args[1];
  ma.mask |= UCC_COLL_ARGS_FIELD_MEM_MAP_SRC_MEMH |
             UCC_COLL_ARGS_FIELD_MEM_MAP_DST_MEMH;
  ma.flags = UCC_COLL_ARGS_FLAG_MEM_MAPPED_BUFFERS;
  ma.src_memh.local_memh = mh;
  ma.dst_memh.local_memh = mh;
  ucc_coll_req_h mreq = nullptr;
  if (mst == UCC_OK) mst = ucc_collective_init(&ma, &mreq, w.team);
  if (mst == UCC_OK) mst = ucc_collective_post(mreq);
  if (mst == UCC_OK) mst = wait_all(w.ctx, &mreq, 1);
  if (mreq != nullptr) ucc_collective_finalize(mreq);
  if (mh != nullptr && mst == UCC_OK) mst = ucc_mem_unmap(&mh);
  g_counting.store(false);
  const long map_calls = total_calls();
  if (mst != UCC_OK || map_calls != 0) {
    std::fprintf(stderr,
                 "rank %d: mapped collective: %s, allocator calls: %ld\n", me,
                 ucct::status_name(mst), map_calls);
    return 7;
  }

  // The counted region: post, progress and test only.
  ucc_status_t st = UCC_OK;
  for (auto& c : g_calls) c.store(0);  // fork copied the parent's counts
  const double t0 = ucct::now_s();
  g_counting.store(true);
  // The 8-byte allreduce sums a fresh value each time, so that its results
  // show the collectives really ran.
  int done = 0, wrong = 0;
  for (; done < kSteadyColls / 2 && st == UCC_OK; ++done) {
    const int i = done % kInFlight;
    if (i == 0) ar8_s[1] = float(done);
    st = ucc_collective_post(reqs[i]);
    if (st == UCC_OK) st = wait_all(w.ctx, &reqs[i], 1);
    if (i == 0 && ar8_d[1] != float(n * done)) ++wrong;
  }
  while (done < kSteadyColls && st == UCC_OK) {
    ar8_s[1] = float(done);
    for (int i = 0; i < kInFlight && st == UCC_OK; ++i)
      st = ucc_collective_post(reqs[i]);
    if (st == UCC_OK) st = wait_all(w.ctx, reqs.data(), kInFlight);
    if (ar8_d[1] != float(n * done)) ++wrong;
    done += kInFlight;
  }
  g_counting.store(false);
  const double secs = ucct::now_s() - t0;

  const long calls = total_calls();
  char line[512];
  int len = std::snprintf(line, sizeof line,
                          "rank %d (n=%d): %d collectives in %.2f s, allocator "
                          "calls: %ld (world creation: %ld)",
                          me, n, done, secs, calls, init_calls);
  for (int k = 0; k < kKinds; ++k) {
    const long c = g_calls[k].load();
    if (c != 0 && len < static_cast<int>(sizeof line))
      len += std::snprintf(line + len, sizeof line - len, " %s=%ld",
                           kKindNames[k], c);
  }
  std::fprintf(stderr, "%s\n", line);  // one write: ranks print at once
  if (init_calls == 0) {
    std::fprintf(stderr, "rank %d: the allocator replacement saw no calls\n",
                 me);
    return 6;
  }
  if (st != UCC_OK) {
    std::fprintf(stderr, "rank %d: collective failed: %s\n", me,
                 ucct::status_name(st));
    return 4;
  }

  // The data still moved: spot-check the last round.
  int bad = 0;
  if (ar8_d[0] != float(n * (n + 1) / 2)) ++bad;
  if (ar64_d[16383] != float(n)) ++bad;
  if (bc[4095] != 7) ++bad;
  if (ag_d[256 * n - 1] != n - 1) ++bad;
  if (a2a_d[256 * n - 1] != n - 1) ++bad;
  if (rs_d[255] != float(n)) ++bad;
  if (me == 0 && rd_d[511] != n - 1) ++bad;
  if (gen_d[189] != n * (n - 1) / 2 || gen_d[190] != n || gen_d[191] != 2 * n)
    ++bad;
  if (wrong)
    std::fprintf(stderr, "rank %d: %d wrong 8-byte allreduces\n", me, wrong);
  bad += wrong;
  if (bad) std::fprintf(stderr, "rank %d: %d wrong results\n", me, bad);

  for (auto& q : reqs) ucc_collective_finalize(q);
  ucc_dt_destroy(tri);
  return calls == 0 && bad == 0 ? 0 : 5;
}

class NoAlloc : public ::testing::TestWithParam<int> {};

TEST_P(NoAlloc, SteadyState) {
#ifdef UCCT_SANITIZER
  GTEST_SKIP() << "the sanitizer owns malloc; allocation counting is off";
#endif
  EXPECT_TRUE(ucct::run_ranks(GetParam(), steady_state, 240));
}

INSTANTIATE_TEST_SUITE_P(Ranks, NoAlloc, ::testing::Values(2, 4),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "n" + std::to_string(i.param);
                         });

// The counter itself works: allocations in the counted region are seen.
TEST(NoAllocSelfTest, CountsAllocations) {
#ifdef UCCT_SANITIZER
  GTEST_SKIP() << "the sanitizer owns malloc";
#endif
  const long before = total_calls();
  g_counting.store(true);
  void* p = malloc(16);
  int* q = new int(3);
  void* a = nullptr;
  const int rc = posix_memalign(&a, 64, 128);
  g_counting.store(false);
  // Keep the compiler from pairing up and eliding the calls.
  asm volatile("" : : "g"(p), "g"(q), "g"(a) : "memory");
  free(p);
  delete q;
  if (rc == 0) free(a);
  EXPECT_EQ(total_calls() - before, 3);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

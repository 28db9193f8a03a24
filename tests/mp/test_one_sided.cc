// Context memory and UCC's one-sided alltoall(v), set up as UCC's own MPI
// test program sets them up (test/mpi: a send, a receive and a work
// segment attached to the context through ucc_context_params_t.mem_params,
// MEM_MAPPED_BUFFERS and a global work buffer on every call):
//
//   ContextMemory     buffers inside the context's mem_params are mapped
//                     memory (MEM_MAPPED_BUFFERS), one outside is not; the
//                     context's handles cannot be unmapped by the user
//   Alltoall          one-sided alltoall: rank r's block lands at r in
//                     every peer's dst
//   Alltoallv         UCC's put convention: the dst displacement a rank
//                     passes for peer p is where its block goes in p's
//                     dst; blocks of varied length (some empty) land there
//                     and no other byte of dst changes
//   Refusals          NULL dst displacements, a dst outside mapped memory,
//                     UCC_ALLTOALLV_ALG=onesided
//
// Every output is poisoned first and checked element by element against
// values computed here; at 1 to 4 ranks, persistent requests posted twice.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/common/harness.h"

namespace {

constexpr size_t kSegBytes = 64 * 1024;  // each segment, per rank
constexpr uint8_t kPoison = 0xA5;

// The three segments of UCC's test program, zeroed as it callocs them.
struct Segments {
  std::vector<unsigned char> send, recv, work;
  ucc_mem_map_t seg[3];
  ucc_mem_map_params_t params;
  Segments() : send(kSegBytes), recv(kSegBytes), work(kSegBytes) {
    seg[0] = {send.data(), send.size()};
    seg[1] = {recv.data(), recv.size()};
    seg[2] = {work.data(), work.size()};
    params = {seg, 3};
  }
};

// Elements rank `from` sends rank `to` (some pairs send nothing).
uint64_t count_of(int from, int to, int iter) {
  return static_cast<uint64_t>((from * 7 + to * 3 + iter) % 5) * 3;
}

// The value of element e of the block `from` sends `to`.
int32_t value_of(int from, int to, uint64_t e, int iter) {
  return static_cast<int32_t>(from * 100000 + to * 1000 + e + iter * 7);
}

// 32-bit arrays (no COUNT_64BIT / DISPLACEMENTS_64BIT flag), as ucc.h's
// pointer types want them.
ucc_count_t* cnts(std::vector<uint32_t>& v) {
  return reinterpret_cast<ucc_count_t*>(v.data());
}
ucc_aint_t* disps(std::vector<uint32_t>& v) {
  return reinterpret_cast<ucc_aint_t*>(v.data());
}

ucc_coll_args_t one_sided_args(ucc_coll_type_t c, void* work) {
  ucc_coll_args_t a{};
  a.coll_type = c;
  a.mask = UCC_COLL_ARGS_FIELD_FLAGS | UCC_COLL_ARGS_FIELD_GLOBAL_WORK_BUFFER;
  a.flags = UCC_COLL_ARGS_FLAG_MEM_MAPPED_BUFFERS;
  a.global_work_buffer = work;
  return a;
}

// One-sided int32 alltoallv: from src (counts sc, displacements sd) into
// dst, each block put at the place `put` gives (NULL: none, an error).
ucc_coll_args_t alltoallv_args(Segments& m, void* src,
                               std::vector<uint32_t>& sc,
                               std::vector<uint32_t>& sd, void* dst,
                               std::vector<uint32_t>& rc, uint32_t* put) {
  ucc_coll_args_t a = one_sided_args(UCC_COLL_TYPE_ALLTOALLV, m.work.data());
  a.src.info_v = {src, cnts(sc), disps(sd), UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
  a.dst.info_v = {dst, cnts(rc), reinterpret_cast<ucc_aint_t*>(put),
                  UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
  return a;
}

// A world whose context maps m's segments (its mem_params).
ucc_status_t join(ucct::World& w, Segments& m, ucct::Rank& r) {
  w.ctx_mem = &m.params;
  return w.init(r);
}

// Posts an initialised request, waits for it; the request stays.
ucc_status_t post_wait(ucct::World& w, ucc_coll_req_h req) {
  ucc_status_t st = ucc_collective_post(req);
  return st == UCC_OK ? w.wait(req) : st;
}

int alltoall(ucct::World& w, Segments& m) {
  const int n = w.size, me = w.rank;
  const size_t block = 40;  // int32 elements per peer
  auto* src = reinterpret_cast<int32_t*>(m.send.data());
  auto* dst = reinterpret_cast<int32_t*>(m.recv.data());
  ucc_coll_args_t a = one_sided_args(UCC_COLL_TYPE_ALLTOALL, m.work.data());
  a.flags |= UCC_COLL_ARGS_FLAG_PERSISTENT;
  a.src.info = {src, block * n, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
  a.dst.info = {dst, block * n, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
  ucc_coll_req_h req = nullptr;
  if (ucc_collective_init(&a, &req, w.team) != UCC_OK) return 1;
  int bad = 0;
  for (int iter = 0; iter < 2 && bad == 0; ++iter) {
    for (int p = 0; p < n; ++p)
      for (size_t e = 0; e < block; ++e)
        src[p * block + e] = value_of(me, p, e, iter);
    std::memset(dst, kPoison, kSegBytes);
    if (w.barrier() != UCC_OK || post_wait(w, req) != UCC_OK) {
      bad = 2;
      break;
    }
    for (int p = 0; p < n && bad == 0; ++p)
      for (size_t e = 0; e < block; ++e)
        if (dst[p * block + e] != value_of(p, me, e, iter)) {
          std::fprintf(stderr, "rank %d: alltoall from %d elem %zu: %d\n", me,
                       p, e, dst[p * block + e]);
          bad = 3;
          break;
        }
    for (size_t b = block * n * 4; b < kSegBytes && bad == 0; ++b)
      if (m.recv[b] != kPoison) bad = 4;
  }
  ucc_collective_finalize(req);
  return bad;
}

int alltoallv(ucct::World& w, Segments& m) {
  const int n = w.size, me = w.rank;
  auto* src = reinterpret_cast<int32_t*>(m.send.data());
  auto* dst = reinterpret_cast<int32_t*>(m.recv.data());
  // As UCC's test: local send counts and packed displacements; for each
  // peer p, where our block goes in p's dst: p's receive displacement for
  // us, blocks packed in sender order there, after a gap of 5 elements
  // (so that the convention, not a packed layout, decides the places).
  std::vector<uint32_t> sc(n), sd(n), rc(n), put(n);
  auto place = [&](int from, int to, int iter) {
    uint64_t at = 5;
    for (int q = 0; q < from; ++q) at += count_of(q, to, iter);
    return at;
  };
  ucc_coll_req_h req = nullptr;
  int bad = 0;
  for (int iter = 0; iter < 2 && bad == 0; ++iter) {
    uint64_t off = 0;
    for (int p = 0; p < n; ++p) {
      sc[p] = static_cast<uint32_t>(count_of(me, p, iter));
      sd[p] = static_cast<uint32_t>(off);
      off += sc[p];
      rc[p] = static_cast<uint32_t>(count_of(p, me, iter));
      put[p] = static_cast<uint32_t>(place(me, p, iter));
    }
    for (int p = 0; p < n; ++p)
      for (uint64_t e = 0; e < sc[p]; ++e)
        src[sd[p] + e] = value_of(me, p, e, iter);
    ucc_coll_args_t a = alltoallv_args(m, src, sc, sd, dst, rc, put.data());
    std::memset(dst, kPoison, kSegBytes);
    if (w.barrier() != UCC_OK ||
        ucc_collective_init(&a, &req, w.team) != UCC_OK) {
      bad = 1;
      break;
    }
    const ucc_status_t st = post_wait(w, req);
    ucc_collective_finalize(req);
    if (st != UCC_OK) {
      std::fprintf(stderr, "rank %d: one-sided alltoallv: %d\n", me, st);
      bad = 2;
      break;
    }
    // Block from p: at p's place for us; everything else still poison.
    std::vector<bool> mine(kSegBytes / 4, false);
    for (int p = 0; p < n && bad == 0; ++p) {
      const uint64_t at = place(p, me, iter);
      for (uint64_t e = 0; e < count_of(p, me, iter); ++e) {
        mine[at + e] = true;
        if (dst[at + e] != value_of(p, me, e, iter)) {
          std::fprintf(
              stderr, "rank %d: alltoallv iter %d from %d elem %llu: %d\n", me,
              iter, p, static_cast<unsigned long long>(e), dst[at + e]);
          bad = 3;
          break;
        }
      }
    }
    for (size_t i = 0; i < mine.size() && bad == 0; ++i) {
      uint32_t poison;
      std::memset(&poison, kPoison, 4);
      if (!mine[i] && static_cast<uint32_t>(dst[i]) != poison) {
        std::fprintf(stderr, "rank %d: alltoallv wrote element %zu\n", me, i);
        bad = 4;
      }
    }
  }
  return bad;
}

class OneSided : public ::testing::TestWithParam<int> {};

TEST_P(OneSided, AlltoallAndAlltoallv) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    Segments m;
    ucct::World w;
    if (join(w, m, r) != UCC_OK) return 1;
    const int a = alltoall(w, m);
    if (a != 0) return 10 + a;
    const int v = alltoallv(w, m);
    return v == 0 ? 0 : 20 + v;
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, OneSided, ::testing::Values(1, 2, 3, 4),
                         [](const auto& i) {
                           return "n" + std::to_string(i.param);
                         });

// The context's segments are mapped memory; others are not; the user
// cannot unmap what the context holds.
TEST(OneSidedContext, ContextMemoryIsMapped) {
  EXPECT_TRUE(ucct::run_ranks(1, [](ucct::Rank& r) {
    Segments m;
    ucct::World w;
    if (join(w, m, r) != UCC_OK) return 1;
    int bad = 0;
    std::vector<int32_t> outside(64, 1);
    auto args = [&](void* s, void* d) {
      ucc_coll_args_t a{};
      a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
      a.op = UCC_OP_SUM;
      a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
      a.flags = UCC_COLL_ARGS_FLAG_MEM_MAPPED_BUFFERS;
      a.src.info = {s, 64, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
      a.dst.info = {d, 64, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
      return a;
    };
    ucc_coll_args_t a = args(m.send.data(), m.recv.data());
    bad += w.run(a) != UCC_OK;
    a = args(outside.data(), m.recv.data());
    bad += w.run(a) != UCC_ERR_INVALID_PARAM;
    // A segment straddled: the last 4 bytes of send and beyond.
    a = args(m.send.data() + kSegBytes - 4, m.recv.data());
    bad += w.run(a) != UCC_ERR_INVALID_PARAM;
    // Empty segments and NULL with length 0 are accepted.
    ucc_mem_map_t segs[2] = {{nullptr, 0}, {m.work.data(), 0}};
    ucc_mem_map_params_t empty{segs, 2};
    ucct::World w2;
    w2.ctx_mem = &empty;
    ucct::Rank r2 = r;
    bad += w2.init(r2) != UCC_OK;
    return bad;
  }));
}

// What one-sided alltoallv refuses, with one log line each.
TEST(OneSidedContext, Refusals) {
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    Segments m;
    ucct::World w;
    if (join(w, m, r) != UCC_OK) return 1;
    std::vector<uint32_t> c(2, 4), d{0, 4};
    std::vector<int32_t> outside(64);
    auto init = [&](void* dst, uint32_t* displs) {
      ucc_coll_args_t a =
          alltoallv_args(m, m.send.data(), c, d, dst, c, displs);
      ucc_coll_req_h req = nullptr;
      ucc_status_t st = ucc_collective_init(&a, &req, w.team);
      if (st == UCC_OK) ucc_collective_finalize(req);
      return st;
    };
    int bad = 0;
    bad += init(m.recv.data(), nullptr) != UCC_ERR_INVALID_PARAM;
    bad += init(outside.data(), d.data()) != UCC_ERR_INVALID_PARAM;
    bad += init(m.recv.data(), d.data()) != UCC_OK;
    // The knob cannot force the one-sided algorithm on two-sided calls.
    ucc_lib_config_h lc = nullptr;
    bad += ucc_lib_config_read(nullptr, nullptr, &lc) != UCC_OK;
    ucc_context_config_h cc = nullptr;
    bad += ucc_context_config_read(w.lib, nullptr, &cc) != UCC_OK;
    bad += ucc_context_config_modify(cc, nullptr, "ALLTOALLV_ALG",
                                     "onesided") != UCC_ERR_INVALID_PARAM;
    bad += ucc_context_config_modify(cc, nullptr, "ALLTOALLV_ALG",
                                     "pairwise") != UCC_OK;
    ucc_context_config_release(cc);
    ucc_lib_config_release(lc);
    return bad;
  }));
}

// A peer that puts past our mapped room (its dst displacement for us
// runs 2 elements beyond the receive segment): our collective ends with
// UCC_ERR_INVALID_PARAM before a byte lands, nobody hangs, and the team
// still works.
TEST(OneSidedContext, APutPastTheRoomIsRefusedByTheReceiver) {
  EXPECT_TRUE(ucct::run_ranks(2, [](ucct::Rank& r) {
    Segments m;
    ucct::World w;
    if (join(w, m, r) != UCC_OK) return 1;
    const int me = w.rank;
    std::vector<uint32_t> c{3, 3}, d{0, 3}, put{0, 0};
    if (me == 0) put[1] = kSegBytes / 4 - 1;  // 2 elements past rank 1's
    std::memset(m.recv.data(), kPoison, kSegBytes);
    ucc_coll_args_t a =
        alltoallv_args(m, m.send.data(), c, d, m.recv.data(), c, put.data());
    const ucc_status_t st = w.run(a, 20);
    int bad = 0;
    if (st == UCC_ERR_TIMED_OUT) bad += 1;
    if (me == 1 && st != UCC_ERR_INVALID_PARAM) bad += 2;
    if (me == 1)
      for (size_t i = 12; i < kSegBytes; ++i)  // past our own block
        if (m.recv[i] != kPoison) {
          bad += 4;
          break;
        }
    // The team goes on.
    std::vector<int32_t> x(4, me + 1), y(4, 0);
    ucc_coll_args_t ar{};
    ar.coll_type = UCC_COLL_TYPE_ALLREDUCE;
    ar.op = UCC_OP_SUM;
    ar.src.info = {x.data(), 4, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    ar.dst.info = {y.data(), 4, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    if (w.run(ar, 20) != UCC_OK || y[3] != 3) bad += 8;
    return bad;
  }));
}

}  // namespace

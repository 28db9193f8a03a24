// ucc_mem_map / ucc_mem_unmap through the public API, in the mode the
// suite runs in (inline; emu under ctest's multiprocess_emu):
//
//   MappedCollectives  six collectives on 1, 2, 3 and 5 ranks, buffers
//                      mapped three ways (one handle for src and dst given
//                      as both memh, a handle each, the flag alone), in
//                      place or not, with poisoned outputs checked against
//                      serial references (coll_check.h); and a persistent
//                      request posted three times.
//   BadArguments       every invalid map and unmap (NULLs, modes, NULL,
//                      wrapping and unmapped segments, handles
//                      unmapped twice, forged pointers) and every invalid
//                      use of handles in collective arguments: a status,
//                      never a crash; and empty segments, which map
//                      and cover no byte.
//   PoolAndDestroy     UCC_MEM_MAP_HANDLES bounds the live handles; freed
//                      handles come back least recently freed first; a
//                      context destroyed with live handles releases them.
//
// test_mem_map_emu.cc has what only the daemon can show (pinned
// registrations).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/common/harness.h"
#include "tests/mp/coll_check.h"
#include "tests/mp/mp_util.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace {

using ucct::DtypeInfo;
using ucct::mp::Report;
using ucct::mp::coll::Case;
using ucct::mp::coll::Checker;
using ucct::mp::coll::Slot;

// How a case tells the library its buffers are mapped.
enum class Way { kOneHandle, kTwoHandles, kFlagOnly };

const char* way_name(Way w) {
  switch (w) {
    case Way::kOneHandle:
      return "one handle";
    case Way::kTwoHandles:
      return "two handles";
    default:
      return "flag only";
  }
}

// Maps up to two buffers (skipping empty ones) into one handle.
ucc_status_t map(ucc_context_h ctx, ucc_mem_map_mem_h* h, void* a, size_t na,
                 void* b = nullptr, size_t nb = 0) {
  ucc_mem_map_t seg[2];
  uint64_t n = 0;
  if (na != 0) seg[n++] = {a, na};
  if (nb != 0) seg[n++] = {b, nb};
  ucc_mem_map_params_t p{seg, n};
  size_t size = 0;
  ucc_status_t st = ucc_mem_map(ctx, UCC_MEM_MAP_MODE_EXPORT, &p, &size, h);
  if (st == UCC_OK && size == 0) return UCC_ERR_NO_MESSAGE;
  return st;
}

// Maps s's buffers the way `w` says and marks its arguments; *hs and *hd
// get the handles to unmap (nullptr when none).
bool map_slot(ucc_context_h ctx, Slot& s, Way w, ucc_mem_map_mem_h* hs,
              ucc_mem_map_mem_h* hd) {
  *hs = *hd = nullptr;
  ucc_coll_args_t& a = s.args;
  a.mask |= UCC_COLL_ARGS_FIELD_FLAGS;
  a.flags |= UCC_COLL_ARGS_FLAG_MEM_MAPPED_BUFFERS;
  const size_t ns = s.src.bytes(), nd = s.dst.bytes();
  if (w == Way::kTwoHandles) {
    if (ns != 0 && map(ctx, hs, s.src.data(), ns) != UCC_OK) return false;
    if (nd != 0 && map(ctx, hd, s.dst.data(), nd) != UCC_OK) return false;
  } else if (ns + nd != 0) {
    if (map(ctx, hs, s.src.data(), ns, s.dst.data(), nd) != UCC_OK)
      return false;
  }
  if (w == Way::kFlagOnly) return true;
  if (*hs != nullptr) {
    a.mask |= UCC_COLL_ARGS_FIELD_MEM_MAP_SRC_MEMH;
    a.src_memh.local_memh = *hs;
  }
  ucc_mem_map_mem_h d = w == Way::kOneHandle ? *hs : *hd;
  if (d != nullptr) {
    a.mask |= UCC_COLL_ARGS_FIELD_MEM_MAP_DST_MEMH;
    a.dst_memh.local_memh = d;
  }
  return true;
}

int mapped_collectives(ucct::Rank& r) {
  ucct::World w;
  if (w.init(r) != UCC_OK) return 1;
  Report rep(r.rank);
  Checker ck(r.size, r.rank, "mem_map", rep);
  const DtypeInfo* i32 = ucct::dtype_info(UCC_DT_INT32);
  const DtypeInfo* f64 = ucct::dtype_info(UCC_DT_FLOAT64);
  const ucc_coll_type_t colls[] = {
      UCC_COLL_TYPE_ALLREDUCE, UCC_COLL_TYPE_BCAST,
      UCC_COLL_TYPE_REDUCE,    UCC_COLL_TYPE_ALLGATHER,
      UCC_COLL_TYPE_ALLTOALL,  UCC_COLL_TYPE_REDUCE_SCATTER};
  uint64_t seed = 11;
  for (ucc_coll_type_t coll : colls) {
    for (int inplace = 0; inplace < 2; ++inplace) {
      if (inplace && coll == UCC_COLL_TYPE_BCAST) continue;
      for (size_t count : {size_t{1}, size_t{1000}, size_t{70001}}) {
        if (count > 1000 && coll != UCC_COLL_TYPE_ALLREDUCE) continue;
        for (Way way : {Way::kOneHandle, Way::kTwoHandles, Way::kFlagOnly}) {
          Slot s;
          s.c = Case{coll,  (seed & 1) ? i32 : f64,          UCC_OP_SUM,
                     count, static_cast<int>(seed % r.size), inplace != 0,
                     true};
          ck.fill(s, ucct::mp::mix64(++seed), true);
          ucc_mem_map_mem_h hs, hd;
          const std::string what =
              ck.describe(s.c) + " (" + way_name(way) + ")";
          if (!map_slot(w.ctx, s, way, &hs, &hd)) {
            rep.fail("%s: mapping failed", what.c_str());
            return 2;
          }
          ucc_status_t st = w.run(s.args);
          if (st != UCC_OK) {
            rep.fail("%s: %s", what.c_str(), ucct::status_name(st));
            return 3;
          }
          if (!ck.check(s)) rep.fail("%s: wrong result", what.c_str());
          if ((hs != nullptr && ucc_mem_unmap(&hs) != UCC_OK) ||
              (hd != nullptr && ucc_mem_unmap(&hd) != UCC_OK)) {
            rep.fail("%s: unmap failed", what.c_str());
            return 4;
          }
        }
      }
    }
  }
  // A persistent request on mapped buffers, posted three times with new
  // inputs in the same buffers.
  Slot s;
  s.c = Case{UCC_COLL_TYPE_ALLREDUCE, i32, UCC_OP_SUM, 4099, 0, false, true};
  ck.fill(s, ucct::mp::mix64(++seed), true);
  ucc_mem_map_mem_h hs, hd;
  if (!map_slot(w.ctx, s, Way::kOneHandle, &hs, &hd)) return 5;
  ucc_coll_args_t args = s.args;
  args.flags |= UCC_COLL_ARGS_FLAG_PERSISTENT;
  ucc_coll_req_h req = nullptr;
  if (ucc_collective_init(&args, &req, w.team) != UCC_OK) return 6;
  for (int post = 0; post < 3; ++post) {
    if (post != 0) ck.fill(s, ucct::mp::mix64(++seed), false);
    if (ucc_collective_post(req) != UCC_OK || w.wait(req) != UCC_OK) return 7;
    if (!ck.check(s)) rep.fail("persistent post %d: wrong result", post);
  }
  ucc_collective_finalize(req);
  if (ucc_mem_unmap(&hs) != UCC_OK) return 8;
  return rep.failures() == 0 ? 0 : 9;
}

TEST(MemMap, MappedCollectives) {
  for (int n : {1, 2, 3, 5}) {
    SCOPED_TRACE(n);
    EXPECT_TRUE(ucct::run_ranks(n, mapped_collectives, 300));
  }
}

// Counts the checks that failed, printing each.
struct Checks {
  int bad = 0;
  void operator()(bool ok, const char* what) {
    if (!ok) {
      ++bad;
      std::fprintf(stderr, "check failed: %s\n", what);
    }
  }
};

ucc_status_t map1(ucc_context_h ctx, ucc_mem_map_mem_h* h, void* p, size_t n,
                  ucc_mem_map_mode_t mode = UCC_MEM_MAP_MODE_EXPORT,
                  size_t* size = nullptr) {
  ucc_mem_map_t seg{p, n};
  ucc_mem_map_params_t mp{&seg, 1};
  size_t sz = 0;
  return ucc_mem_map(ctx, mode, &mp, size != nullptr ? size : &sz, h);
}

ucc_context_h plain_context(ucc_lib_h lib, const char* handles = nullptr) {
  ucc_context_config_h cfg = nullptr;
  if (ucc_context_config_read(lib, nullptr, &cfg) != UCC_OK) return nullptr;
  if (handles != nullptr &&
      ucc_context_config_modify(cfg, nullptr, "MEM_MAP_HANDLES", handles) !=
          UCC_OK) {
    ucc_context_config_release(cfg);
    return nullptr;
  }
  ucc_context_params_t cp{};
  ucc_context_h ctx = nullptr;
  if (ucc_context_create(lib, &cp, cfg, &ctx) != UCC_OK) ctx = nullptr;
  ucc_context_config_release(cfg);
  return ctx;
}

int bad_map_arguments(ucct::World& w) {
  Checks check;
  std::vector<int32_t> buf(1024, 1), out(1024, 0);
  ucc_mem_map_t seg{buf.data(), buf.size() * 4};
  ucc_mem_map_params_t mp{&seg, 1};
  size_t sz = 0;
  ucc_mem_map_mem_h h = nullptr;
  auto mm = [&](ucc_context_h c, int mode, const ucc_mem_map_params_t* p,
                size_t* s, ucc_mem_map_mem_h* hp) {
    return ucc_mem_map(c, static_cast<ucc_mem_map_mode_t>(mode), p, s, hp);
  };
  check(mm(nullptr, 0, &mp, &sz, &h) == UCC_ERR_INVALID_PARAM, "NULL context");
  alignas(64) unsigned char fake[4096] = {};
  check(mm(reinterpret_cast<ucc_context_h>(fake), 0, &mp, &sz, &h) ==
            UCC_ERR_INVALID_PARAM,
        "forged context");
  check(mm(w.ctx, 0, nullptr, &sz, &h) == UCC_ERR_INVALID_PARAM, "NULL params");
  check(mm(w.ctx, 0, &mp, nullptr, &h) == UCC_ERR_INVALID_PARAM,
        "NULL memh_size");
  check(mm(w.ctx, 0, &mp, &sz, nullptr) == UCC_ERR_INVALID_PARAM, "NULL memh");
  check(mm(w.ctx, 4, &mp, &sz, &h) == UCC_ERR_INVALID_PARAM, "mode LAST");
  check(mm(w.ctx, -1, &mp, &sz, &h) == UCC_ERR_INVALID_PARAM, "mode -1");
  check(
      mm(w.ctx, UCC_MEM_MAP_MODE_IMPORT, &mp, &sz, &h) == UCC_ERR_NOT_SUPPORTED,
      "IMPORT");
  check(mm(w.ctx, UCC_MEM_MAP_MODE_IMPORT_OFFLOAD, &mp, &sz, &h) ==
            UCC_ERR_NOT_SUPPORTED,
        "IMPORT_OFFLOAD");
  ucc_mem_map_params_t none{&seg, 0};
  check(mm(w.ctx, 0, &none, &sz, &h) == UCC_ERR_INVALID_PARAM, "no segments");
  ucc_mem_map_params_t null_segs{nullptr, 1};
  check(mm(w.ctx, 0, &null_segs, &sz, &h) == UCC_ERR_INVALID_PARAM,
        "NULL segment array");
  check(map1(w.ctx, &h, nullptr, 64) == UCC_ERR_INVALID_PARAM, "NULL segment");
  check(map1(w.ctx, &h, reinterpret_cast<void*>(UINTPTR_MAX - 10), 100) ==
            UCC_ERR_INVALID_PARAM,
        "wrapping segment");
  const size_t pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* gone = mmap(nullptr, pg, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(gone, pg);
  check(map1(w.ctx, &h, gone, pg) == UCC_ERR_INVALID_PARAM, "unmapped segment");
  ucc_mem_map_t many[17];
  for (auto& m : many) m = {buf.data(), 64};
  ucc_mem_map_params_t too_many{many, 17};
  check(mm(w.ctx, 0, &too_many, &sz, &h) == UCC_ERR_NOT_SUPPORTED,
        "17 segments");
  check(h == nullptr, "failed maps leave memh alone");
  ucc_mem_map_params_t sixteen{many, 16};
  check(mm(w.ctx, 0, &sixteen, &sz, &h) == UCC_OK && sz > 0, "16 segments");
  check(ucc_mem_unmap(&h) == UCC_OK && h == nullptr, "unmap sets memh NULL");

  // EXPORT_OFFLOAD maps as EXPORT does.
  size_t sz1 = 0, sz2 = 0;
  ucc_mem_map_mem_h h2 = nullptr;
  check(map1(w.ctx, &h, buf.data(), 4096, UCC_MEM_MAP_MODE_EXPORT, &sz1) ==
                UCC_OK &&
            map1(w.ctx, &h2, buf.data(), 4096, UCC_MEM_MAP_MODE_EXPORT_OFFLOAD,
                 &sz2) == UCC_OK &&
            sz1 == sz2 && sz1 > 0 && h != h2,
        "EXPORT and EXPORT_OFFLOAD");
  check(ucc_mem_unmap(&h2) == UCC_OK, "unmap EXPORT_OFFLOAD");

  // Unmap: NULL, forged, unmapped twice.
  check(ucc_mem_unmap(nullptr) == UCC_ERR_INVALID_PARAM, "unmap(NULL)");
  ucc_mem_map_mem_h null_h = nullptr;
  check(ucc_mem_unmap(&null_h) == UCC_ERR_INVALID_PARAM, "unmap of NULL");
  ucc_mem_map_mem_h forged = fake;
  check(ucc_mem_unmap(&forged) == UCC_ERR_INVALID_PARAM, "unmap stack bytes");
  forged = reinterpret_cast<void*>(0x1234);
  check(ucc_mem_unmap(&forged) == UCC_ERR_INVALID_PARAM, "unmap 0x1234");
  forged = static_cast<char*>(h) + 8;
  check(ucc_mem_unmap(&forged) == UCC_ERR_INVALID_PARAM,
        "unmap inside a handle");
  ucc_mem_map_mem_h copy = h;
  check(ucc_mem_unmap(&h) == UCC_OK, "unmap");
  check(ucc_mem_unmap(&copy) == UCC_ERR_INVALID_PARAM, "unmap twice");
  return check.bad;
}

// Collective arguments naming handles: checked at init.
int bad_coll_arguments(ucct::World& w) {
  Checks check;
  std::vector<int32_t> src(1024, 1), dst(1024, 0), other(1024, 0);
  ucc_mem_map_mem_h h = nullptr, hboth = nullptr;
  if (map1(w.ctx, &h, src.data(), 4096, UCC_MEM_MAP_MODE_EXPORT) != UCC_OK ||
      map(w.ctx, &hboth, src.data(), 4096, dst.data(), 4096) != UCC_OK)
    return 100;
  auto args = [&](int32_t* s, int32_t* d, size_t n) {
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
    a.src.info = {s, n, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    a.dst.info = {d, n, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    a.op = UCC_OP_SUM;
    a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags = UCC_COLL_ARGS_FLAG_MEM_MAPPED_BUFFERS;
    return a;
  };
  auto init = [&](ucc_coll_args_t a) {
    ucc_coll_req_h req = nullptr;
    ucc_status_t st = ucc_collective_init(&a, &req, w.team);
    if (st == UCC_OK) ucc_collective_finalize(req);
    return st;
  };
  ucc_coll_args_t a = args(src.data(), other.data(), 1024);
  check(init(a) == UCC_ERR_INVALID_PARAM, "flag, dst not mapped");
  a = args(src.data(), dst.data(), 1024);
  a.mask |= UCC_COLL_ARGS_FIELD_MEM_MAP_DST_MEMH;
  a.dst_memh.local_memh = h;
  check(init(a) == UCC_ERR_INVALID_PARAM, "dst outside dst_memh");
  a.dst_memh.local_memh = hboth;
  check(init(a) == UCC_OK, "dst inside dst_memh");
  a = args(src.data() + 1, dst.data(), 1024);  // src runs 4 bytes past
  a.mask |= UCC_COLL_ARGS_FIELD_MEM_MAP_SRC_MEMH;
  a.src_memh.local_memh = h;
  check(init(a) == UCC_ERR_INVALID_PARAM, "src straddles the segment's end");
  a = args(src.data(), dst.data(), 1024);
  a.mask |= UCC_COLL_ARGS_FIELD_MEM_MAP_SRC_MEMH;
  alignas(64) unsigned char fake[1024] = {};
  a.src_memh.local_memh = fake;
  check(init(a) == UCC_ERR_INVALID_PARAM, "forged src_memh");
  a.src_memh.local_memh = nullptr;
  check(init(a) == UCC_ERR_INVALID_PARAM, "NULL src_memh");
  a.src_memh.local_memh = hboth;
  a.flags |= UCC_COLL_ARGS_FLAG_SRC_MEMH_GLOBAL;
  check(init(a) == UCC_ERR_NOT_SUPPORTED, "global src_memh");
  a.flags &= ~uint64_t{UCC_COLL_ARGS_FLAG_SRC_MEMH_GLOBAL};
  a.flags |= UCC_COLL_ARGS_FLAG_DST_MEMH_GLOBAL;
  check(init(a) == UCC_ERR_NOT_SUPPORTED, "global dst_memh");
  // A handle of another context of this process.
  ucc_context_h ctx2 = plain_context(w.lib);
  ucc_mem_map_mem_h h2 = nullptr;
  check(ctx2 != nullptr && map1(ctx2, &h2, src.data(), 4096) == UCC_OK,
        "map on a second context");
  a = args(src.data(), dst.data(), 1024);
  a.mask |= UCC_COLL_ARGS_FIELD_MEM_MAP_SRC_MEMH;
  a.src_memh.local_memh = h2;
  check(init(a) == UCC_ERR_INVALID_PARAM, "src_memh of another context");
  check(ucc_mem_unmap(&h2) == UCC_OK, "unmap on the second context");
  if (ctx2 != nullptr) ucc_context_destroy(ctx2);
  // Stale: unmapped before init.
  a.src_memh.local_memh = h;
  ucc_mem_map_mem_h stale = h;
  check(ucc_mem_unmap(&stale) == UCC_OK, "unmap");
  check(init(a) == UCC_ERR_INVALID_PARAM, "unmapped src_memh");
  // The flag with nothing to touch, and handles without the flag.
  a = args(nullptr, nullptr, 0);
  check(init(a) == UCC_OK, "flag, zero count");
  a = args(other.data(), dst.data(), 1024);
  a.flags = 0;
  check(init(a) == UCC_OK, "no flag, unmapped buffers");
  a.mask |= UCC_COLL_ARGS_FIELD_MEM_MAP_SRC_MEMH;
  a.src_memh.local_memh = hboth;
  check(init(a) == UCC_ERR_INVALID_PARAM, "no flag, src outside src_memh");
  check(ucc_mem_unmap(&hboth) == UCC_OK, "unmap");
  return check.bad;
}

// Zero-length segments (UCC test's --local_reg maps a 0-element buffer):
// a valid handle that covers no byte, usable with an empty collective,
// refused for any byte, unmapped like any other.
int zero_length_maps(ucct::World& w) {
  Checks check;
  std::vector<int32_t> src(64, 1), dst(64, 0);
  ucc_mem_map_mem_h h0 = nullptr, hnull = nullptr, hmix = nullptr;
  check(map1(w.ctx, &h0, src.data(), 0) == UCC_OK && h0 != nullptr,
        "empty segment maps");
  check(map1(w.ctx, &hnull, nullptr, 0) == UCC_OK && hnull != nullptr,
        "empty NULL segment maps");
  ucc_mem_map_t two[2] = {{dst.data(), 0}, {src.data(), 256}};
  ucc_mem_map_params_t p{two, 2};
  size_t sz = 0;
  check(ucc_mem_map(w.ctx, UCC_MEM_MAP_MODE_EXPORT, &p, &sz, &hmix) == UCC_OK,
        "an empty segment beside a real one");
  auto init = [&](int32_t* s, int32_t* d, size_t n, ucc_mem_map_mem_h hs,
                  ucc_mem_map_mem_h hd) {
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
    a.src.info = {s, n, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    a.dst.info = {d, n, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    a.op = UCC_OP_SUM;
    a.mask = UCC_COLL_ARGS_FIELD_FLAGS | UCC_COLL_ARGS_FIELD_MEM_MAP_SRC_MEMH |
             UCC_COLL_ARGS_FIELD_MEM_MAP_DST_MEMH;
    a.flags = UCC_COLL_ARGS_FLAG_MEM_MAPPED_BUFFERS;
    a.src_memh.local_memh = hs;
    a.dst_memh.local_memh = hd;
    return w.run(a);
  };
  check(init(src.data(), dst.data(), 0, h0, hnull) == UCC_OK,
        "empty collective on empty handles");
  check(init(src.data(), dst.data(), 1, h0, h0) == UCC_ERR_INVALID_PARAM,
        "one element outside an empty handle");
  check(init(src.data(), dst.data(), 64, hmix, hmix) == UCC_ERR_INVALID_PARAM,
        "dst in the empty segment of a handle");
  check(ucc_mem_unmap(&h0) == UCC_OK && ucc_mem_unmap(&hnull) == UCC_OK &&
            ucc_mem_unmap(&hmix) == UCC_OK,
        "unmap empty handles");
  return check.bad;
}

TEST(MemMap, BadArguments) {
  EXPECT_TRUE(ucct::run_ranks(1, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    const int bad =
        bad_map_arguments(w) + bad_coll_arguments(w) + zero_length_maps(w);
    // The context still works.
    std::vector<int32_t> s(100, 3), d(100, 0);
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
    a.src.info = {s.data(), 100, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    a.dst.info = {d.data(), 100, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    a.op = UCC_OP_SUM;
    if (w.run(a) != UCC_OK || d[99] != 3) return 2;
    return bad == 0 ? 0 : 3;
  }));
}

// A context of 3 handles: the pool's bound and reuse order, then destroy
// with handles live. Its own frame, so that no stale handle (a pointer
// into the freed pool) is left on the stack for LeakSanitizer to follow.
__attribute__((noinline)) int pool_and_destroy(ucc_lib_h lib, char* buf) {
  Checks check;
  ucc_context_h ctx = plain_context(lib, "3");
  if (ctx == nullptr) return 1;
  ucc_mem_map_mem_h h[4] = {};
  check(map1(ctx, &h[0], buf, 4096) == UCC_OK, "map");
  check(map1(ctx, &h[1], buf + 4096, 4096) == UCC_OK, "map");
  // The third handle is free. Freed handles queue behind it (least
  // recently freed first), so h[0]'s slot is not handed out by the next
  // map and a second unmap of h[0] is still recognised.
  ucc_mem_map_mem_h a = h[0];
  check(ucc_mem_unmap(&h[0]) == UCC_OK, "unmap");
  check(map1(ctx, &h[2], buf, 4096) == UCC_OK && h[2] != a,
        "a freed handle waits behind those freed before it");
  check(ucc_mem_unmap(&a) == UCC_ERR_INVALID_PARAM,
        "unmapped twice, with a map in between");
  check(map1(ctx, &h[0], buf, 4096) == UCC_OK && h[0] == a,
        "then it is handed out again");
  check(map1(ctx, &h[3], buf, 4096) == UCC_ERR_NO_RESOURCE, "a fourth handle");
  check(h[3] == nullptr, "no handle when the pool is empty");
  // Destroyed with three handles live: released, and unknown afterwards.
  check(ucc_context_destroy(ctx) == UCC_OK, "destroy with live handles");
  check(ucc_mem_unmap(&h[2]) == UCC_ERR_INVALID_PARAM,
        "unmap after the context is gone");
  // No handles at all.
  ctx = plain_context(lib, "0");
  check(ctx != nullptr, "context with UCC_MEM_MAP_HANDLES=0");
  ucc_mem_map_mem_h z = nullptr;
  check(ctx != nullptr && map1(ctx, &z, buf, 64) == UCC_ERR_NO_RESOURCE,
        "no handles");
  if (ctx != nullptr) ucc_context_destroy(ctx);
  return check.bad;
}

TEST(MemMap, PoolAndDestroy) {
  EXPECT_TRUE(ucct::run_ranks(1, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    std::vector<char> buf(1 << 16);
    int bad = pool_and_destroy(w.lib, buf.data());
#if defined(__SANITIZE_ADDRESS__)
    // Ranks end with _exit(), which skips LeakSanitizer's own check.
    if (__lsan_do_recoverable_leak_check() != 0) {
      std::fprintf(stderr, "memory leaked (LeakSanitizer's report above)\n");
      ++bad;
    }
#endif
    return bad == 0 ? 0 : 2;
  }));
}

}  // namespace

// A rank of the team that lies to the GPU direct path (host/exec/
// gpu_direct.h): while the others post a GPU allreduce (or allgatherv),
// it posts a plain
// host allgather of 256 bytes, which the engine pairs with their token
// exchange, and so hands them a token of its own making. Whatever it
// says, the honest ranks end the collective with an error at once (not a
// wait), the worker launches nothing for it, and the team's host
// collectives go on.
//
// The forged token is laid out as an attacker would lay it out: by
// reading the library's source (gpu_direct_impl.h's Token).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tests/common/gpu.h"
#include "tests/common/harness.h"
#include "tests/mp/gpu_test.h"

namespace {

struct Forged {
  uint32_t magic, pid;
  uint64_t seq;
  int32_t flag_fd;
  uint32_t flag_bytes;
  uint64_t flag_ino, flag_dev;
  uint32_t slot, flags;
  uint64_t src_base, src_off, src_size;
  uint64_t dst_base, dst_off, dst_size;
  uint8_t src_h[64], dst_h[64];
  uint32_t flag_words, pad;
  uint64_t src_len, dst_len;
  uint8_t reserved[8];
};
static_assert(sizeof(Forged) == 256);
constexpr uint32_t kMagic = 0x55474431;

// A v-collective's block table, after the page's words (VTable).
struct ForgedSide {
  uint32_t nalloc, nblk;
  struct {
    uint8_t h[64];
    uint64_t base, size;
  } alloc[32];
  struct {
    uint64_t off, len;
    uint32_t alloc, pad;
  } blk[32];
};
static_assert(sizeof(ForgedSide) == 3336);
constexpr uint32_t kWords = 4096;       // the forged pages' words
constexpr uint32_t kPageBytes = 16384;  // and their tables after them

// A page of shared memory a forged token can name as its flag page.
struct Page {
  uint32_t pid;
  int32_t fd;
  uint64_t ino, dev;
};
Page make_page() {
  Page p{static_cast<uint32_t>(getpid()), memfd_create("forged", 0), 0, 0};
  struct stat sb {};
  if (p.fd >= 0 && ftruncate(p.fd, kPageBytes) == 0 && fstat(p.fd, &sb) == 0) {
    p.ino = sb.st_ino;
    p.dev = sb.st_dev;
  }
  return p;
}

// The token of `pg`'s slot 0, for the team's GPU collective `seq`.
Forged token_of(const Page& pg, uint64_t seq) {
  Forged f{};
  f.magic = kMagic;
  f.pid = pg.pid;
  f.seq = seq;
  f.flag_fd = pg.fd;
  f.flag_bytes = kPageBytes;
  f.flag_words = kWords;
  f.flag_ino = pg.ino;
  f.flag_dev = pg.dev;
  return f;
}

// Writes `len` bytes at `off` of pg's page through /proc (as a process
// that has its fd would).
bool write_page(const Page& pg, const void* p, size_t len, off_t off) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%u/fd/%d", pg.pid, pg.fd);
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  const bool ok = fd >= 0 && pwrite(fd, p, len, off) == ssize_t(len);
  if (fd >= 0) close(fd);
  return ok;
}

// The liar's side: slot 0's input "ready" in the page its token names
// (else the worker would wait for it as for a rank that never posts,
// which a rank may do to its own team), then its token in place of a
// token exchange.
ucc_status_t send_forged(ucct::World& w, const Page& pg, const Forged& f) {
  const uint64_t ready = UINT64_MAX;
  if (!write_page(pg, &ready, 8, 0)) return UCC_ERR_NO_MESSAGE;
  std::vector<uint8_t> got(3 * sizeof(Forged));
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_ALLGATHER;
  a.src.info = {const_cast<Forged*>(&f), sizeof(f), UCC_DT_UINT8,
                UCC_MEMORY_TYPE_HOST};
  a.dst.info = {got.data(), got.size(), UCC_DT_UINT8, UCC_MEMORY_TYPE_HOST};
  return w.run(a);
}

// Every rank's page, traded by a host allgather.
std::vector<Page> trade_pages(ucct::World& w, const Page& mine) {
  std::vector<Page> pages(3);
  ucc_coll_args_t g{};
  g.coll_type = UCC_COLL_TYPE_ALLGATHER;
  g.src.info = {const_cast<Page*>(&mine), sizeof(Page), UCC_DT_UINT8,
                UCC_MEMORY_TYPE_HOST};
  g.dst.info = {pages.data(), 3 * sizeof(Page), UCC_DT_UINT8,
                UCC_MEMORY_TYPE_HOST};
  if (w.run(g) != UCC_OK) pages.clear();
  return pages;
}

// An honest rank's side of one lie: its GPU collective `a` ends in an
// error at once, the worker launches nothing, dst (n int32) untouched.
int honest(ucct::World& w, const gput::Loop& l, int rank, ucc_coll_args_t& a,
           uint64_t dst, size_t n, const char* lie) {
  ucc_coll_req_h req = nullptr;
  CK(ucc_collective_init(&a, &req, w.team));
  const unsigned long long k0 = l.on() ? l.launches() : 0;
  CK(ucc_collective_post(req));
  const ucc_status_t st = w.wait(req, 20);
  EXPECT(gput::ended_in_error(st),
         "rank %d, %s: %s (an error, at once, was due)", rank, lie,
         ucct::status_name(st));
  CK(ucc_collective_finalize(req));
  if (l.on())
    EXPECT(l.launches() == k0, "rank %d, %s: %llu kernels launched", rank, lie,
           l.launches() - k0);
  EXPECT(gput::all_equal(dst, n, -7), "rank %d, %s: dst written", rank, lie);
  return 0;
}

// The team's host collectives go on after the lies (its GPU ones would
// not: the liar posted none of its own, so the others are a collective
// ahead).
int host_goes_on(ucct::World& w, int rank) {
  int32_t h0 = 0, h99 = 0;
  CK(gput::host_allreduce(w, rank, &h0, &h99));
  EXPECT(h0 == 3 && h99 == 3, "the host allreduce after: %d", h0);
  CK(w.barrier());
  return 0;
}

// kBeyondThePage follows kOutsideItsBuffer, whose page the worker has
// mapped by then.
enum Lie {
  kBadMagic,
  kOutsideItsBuffer,
  kBeyondThePage,
  kInsideTheWorker,
  kLies
};
const char* const kLieName[] = {
    "a wrong magic", "a range outside its buffer",
    "the page the worker mapped, said 1 MiB long, slot 10000",
    "an address inside the worker's process"};

TEST(GpuHostile, ForgedTokensAreRefused) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(3, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const gput::Loop l = gput::loop();
    // Every rank's page (the worker's is what the third lie names).
    const Page mine = make_page();
    EXPECT(mine.fd >= 0 && mine.ino != 0, "memfd");
    const std::vector<Page> pages = trade_pages(w, mine);
    EXPECT(pages.size() == 3, "pages");
    constexpr size_t kN = 1000;
    uint64_t src = 0, dst = 0;
    EXPECT(gput::filled(kN, r.rank + 1, &src) && gput::filled(kN, -7, &dst),
           "buffers");
    for (int lie = 0; lie < kLies; ++lie) {
      if (r.rank == 2) {
        const Page& pg = lie == kInsideTheWorker ? pages[0] : mine;
        // seq: the team's GPU collectives so far, plus this one.
        Forged f = token_of(pg, static_cast<uint64_t>(lie) + 1);
        if (lie == kBadMagic) f.magic = 0x0BADF00D;
        // The page the worker mapped at the lie before, the same file,
        // now said to be far longer: its slot lies past the mapping.
        if (lie == kBeyondThePage) {
          f.flag_bytes = f.flag_words = 1u << 20;
          f.slot = 10000;
        }
        if (lie == kInsideTheWorker) {
          f.src_base = f.dst_base = 0x10000;  // no allocation of the worker's
          f.src_size = f.dst_size = 1 << 20;
        } else {
          f.src_off = f.dst_off = uint64_t{1} << 40;
          f.src_size = f.dst_size = 4096;
        }
        f.src_len = f.dst_len = kN * 4;
        CK(send_forged(w, pg, f));
        continue;
      }
      ucc_coll_args_t a = gput::allreduce(src, dst, kN, UCC_DT_INT32);
      if (honest(w, l, r.rank, a, dst, kN, kLieName[lie]) != 0) return 1;
    }
    if (host_goes_on(w, r.rank) != 0) return 1;
    ucct::gpu::release(src);
    ucct::gpu::release(dst);
    close(mine.fd);
    return 0;
  }));
}

// The same for a v-collective's block tables (gpu_direct_impl.h's
// VTable), which the worker reads from the liar's page: a table of the
// wrong number of blocks, a block naming an allocation the table does not
// hold, a block outside its allocation, more allocations than a table
// has room for. Each is refused before anything is copied.
enum VLie { kBlocks, kAllocIndex, kOutside, kTooMany, kVLies };
const char* const kVLieName[] = {
    "a table of 5 blocks", "a block in allocation 7 of 1",
    "a block outside its allocation", "1000 allocations, a block in the 500th"};

TEST(GpuHostile, ForgedBlockTablesAreRefused) {
  NEED_GPU();
  EXPECT_TRUE(ucct::run_ranks(3, [](ucct::Rank& r) {
    ucct::World w;
    if (w.init(r) != UCC_OK) return 1;
    EXPECT(ucct::gpu::init(), "CUDA init");
    const gput::Loop l = gput::loop();
    const Page mine = make_page();
    EXPECT(mine.fd >= 0 && mine.ino != 0, "memfd");
    const uint64_t lens[3] = {4, 9, 6};
    uint64_t src = 0, dst = 0;
    EXPECT(gput::filled(lens[r.rank], r.rank + 1, &src) &&
               gput::filled(19, -7, &dst),
           "buffers");
    for (int lie = 0; lie < kVLies; ++lie) {
      if (r.rank == 2) {
        // A table that names the liar's real dst (its IPC handle), so
        // that only the lie itself is wrong.
        ForgedSide t{};
        t.nblk = lie == kBlocks ? 5 : 3;
        t.nalloc = lie == kTooMany ? 1000 : 1;
        EXPECT(ucct::gpu::ipc_handle(dst, t.alloc[0].h, &t.alloc[0].base,
                                     &t.alloc[0].size),
               "IPC handle");
        uint64_t at = dst - t.alloc[0].base;
        for (int j = 0; j < 3; ++j) {
          t.blk[j].off = lie == kOutside ? uint64_t{1} << 40 : at;
          t.blk[j].len = lens[j] * 4;
          t.blk[j].alloc = lie == kAllocIndex ? 7 : (lie == kTooMany ? 500 : 0);
          at += lens[j] * 4;
        }
        // Slot 0's table, its dst side.
        EXPECT(write_page(mine, &t, sizeof(t), kWords + sizeof(ForgedSide)),
               "table");
        Forged f = token_of(mine, static_cast<uint64_t>(lie) + 1);
        EXPECT(ucct::gpu::ipc_handle(src, f.src_h, &f.src_base, &f.src_size),
               "IPC handle");
        f.src_off = src - f.src_base;
        f.src_len = lens[2] * 4;
        CK(send_forged(w, mine, f));
        // The next lie's table only once the worker has read this one.
        CK(w.barrier());
        continue;
      }
      ucc_count_t counts[3] = {lens[0], lens[1], lens[2]};
      ucc_coll_args_t a{};
      a.mask = UCC_COLL_ARGS_FIELD_FLAGS;
      a.flags = UCC_COLL_ARGS_FLAG_COUNT_64BIT;
      a.coll_type = UCC_COLL_TYPE_ALLGATHERV;
      a.src.info = {reinterpret_cast<void*>(src), lens[r.rank], UCC_DT_INT32,
                    UCC_MEMORY_TYPE_CUDA};
      a.dst.info_v = {reinterpret_cast<void*>(dst), counts, nullptr,
                      UCC_DT_INT32, UCC_MEMORY_TYPE_CUDA};
      if (honest(w, l, r.rank, a, dst, 19, kVLieName[lie]) != 0) return 1;
      CK(w.barrier());
    }
    if (host_goes_on(w, r.rank) != 0) return 1;
    ucct::gpu::release(src);
    ucct::gpu::release(dst);
    close(mine.fd);
    return 0;
  }));
}

}  // namespace

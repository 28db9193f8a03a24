// A rank of the team that lies to the GPU direct path (host/exec/
// gpu_direct.h): while the others post a GPU allreduce, it posts a plain
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
  uint8_t reserved[32];
};
static_assert(sizeof(Forged) == 256);
constexpr uint32_t kMagic = 0x55474431;

// A page of shared memory a forged token can name as its flag page.
struct Page {
  uint32_t pid;
  int32_t fd;
  uint64_t ino, dev;
};
Page make_page() {
  Page p{static_cast<uint32_t>(getpid()), memfd_create("forged", 0), 0, 0};
  struct stat sb {};
  if (p.fd >= 0 && ftruncate(p.fd, 4096) == 0 && fstat(p.fd, &sb) == 0) {
    p.ino = sb.st_ino;
    p.dev = sb.st_dev;
  }
  return p;
}

enum Lie { kBadMagic, kOutsideItsBuffer, kInsideTheWorker, kLies };
const char* const kLieName[] = {"a wrong magic", "a range outside its buffer",
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
    std::vector<Page> pages(3);
    ucc_coll_args_t g{};
    g.coll_type = UCC_COLL_TYPE_ALLGATHER;
    g.src.info = {const_cast<Page*>(&mine), sizeof(Page), UCC_DT_UINT8,
                  UCC_MEMORY_TYPE_HOST};
    g.dst.info = {pages.data(), 3 * sizeof(Page), UCC_DT_UINT8,
                  UCC_MEMORY_TYPE_HOST};
    CK(w.run(g));
    constexpr size_t kN = 1000;
    uint64_t src = 0, dst = 0;
    EXPECT(gput::filled(kN, r.rank + 1, &src) && gput::filled(kN, -7, &dst),
           "buffers");
    for (int lie = 0; lie < kLies; ++lie) {
      if (r.rank == 2) {
        Forged f{};
        const Page& pg = lie == kInsideTheWorker ? pages[0] : mine;
        f.magic = lie == kBadMagic ? 0x0BADF00D : kMagic;
        f.pid = pg.pid;
        f.seq = static_cast<uint64_t>(lie) + 1;  // the team's GPU collectives
        f.flag_fd = pg.fd;
        f.flag_bytes = 4096;
        f.flag_ino = pg.ino;
        f.flag_dev = pg.dev;
        f.slot = 0;
        if (lie == kInsideTheWorker) {
          f.src_base = f.dst_base = 0x10000;  // no allocation of the worker's
          f.src_size = f.dst_size = 1 << 20;
        } else {
          f.src_off = f.dst_off = uint64_t{1} << 40;
          f.src_size = f.dst_size = 4096;
        }
        // Its input "ready" (the first word of the slot the token names:
        // else the worker would wait for it as for a rank that never
        // posts, which a rank may do to its own team).
        char path[64];
        snprintf(path, sizeof(path), "/proc/%u/fd/%d", pg.pid, pg.fd);
        const int fd = open(path, O_RDWR | O_CLOEXEC);
        const uint64_t ready = UINT64_MAX;
        EXPECT(fd >= 0 && pwrite(fd, &ready, 8, 0) == 8, "ready word");
        close(fd);
        std::vector<uint8_t> got(3 * sizeof(Forged));
        ucc_coll_args_t a{};
        a.coll_type = UCC_COLL_TYPE_ALLGATHER;
        a.src.info = {&f, sizeof(f), UCC_DT_UINT8, UCC_MEMORY_TYPE_HOST};
        a.dst.info = {got.data(), got.size(), UCC_DT_UINT8,
                      UCC_MEMORY_TYPE_HOST};
        CK(w.run(a));
        continue;
      }
      ucc_coll_args_t a = gput::allreduce(src, dst, kN, UCC_DT_INT32);
      ucc_coll_req_h req = nullptr;
      CK(ucc_collective_init(&a, &req, w.team));
      const unsigned long long k0 = l.on() ? l.launches() : 0;
      CK(ucc_collective_post(req));
      const ucc_status_t st = w.wait(req, 20);
      EXPECT(gput::ended_in_error(st),
             "rank %d, %s: %s (an error, at once, was due)", r.rank,
             kLieName[lie], ucct::status_name(st));
      CK(ucc_collective_finalize(req));
      if (l.on())
        EXPECT(l.launches() == k0, "rank %d, %s: %llu kernels launched", r.rank,
               kLieName[lie], l.launches() - k0);
      EXPECT(gput::all_equal(dst, kN, -7), "rank %d, %s: dst written", r.rank,
             kLieName[lie]);
    }
    // The team's host collectives go on (its GPU ones would not: the liar
    // posted none of its own, so the others are a collective ahead).
    int32_t h0 = 0, h99 = 0;
    CK(gput::host_allreduce(w, r.rank, &h0, &h99));
    EXPECT(h0 == 3 && h99 == 3, "the host allreduce after: %d", h0);
    CK(w.barrier());
    ucct::gpu::release(src);
    ucct::gpu::release(dst);
    close(mine.fd);
    return 0;
  }));
}

}  // namespace

// range_mapped (platform/mem/proc_maps.h) on this process and a child: a
// mapping in pieces (holes, PROT_NONE, both ends), many mappings (the file
// spans several reads), wrap-around, and a process that does not exist.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "platform/mem/proc_maps.h"

namespace {

using ucc::plat::MapState;
using ucc::plat::range_mapped;

uint64_t page() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

uint64_t addr_of(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// n read-write pages between two PROT_NONE guard pages, so that whatever
// the kernel maps next to them cannot make a range past either end look
// mapped. Returns the first read-write page; unmap_guarded() undoes it.
char* map_guarded(uint64_t n) {
  const uint64_t pg = page();
  void* m = mmap(nullptr, (n + 2) * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (m == MAP_FAILED) return nullptr;
  char* p = static_cast<char*>(m) + pg;
  if (mprotect(p, n * pg, PROT_READ | PROT_WRITE) != 0) return nullptr;
  return p;
}

void unmap_guarded(char* p, uint64_t n) {
  munmap(p - page(), (n + 2) * page());
}

TEST(ProcMaps, PiecesOfOneMapping) {
  const uint64_t pg = page();
  // Five pages: rw, rw, hole, PROT_NONE, read-only.
  char* m = map_guarded(5);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(munmap(m + 2 * pg, pg), 0);
  ASSERT_EQ(mprotect(m + 3 * pg, pg, PROT_NONE), 0);
  ASSERT_EQ(mprotect(m + 4 * pg, pg, PROT_READ), 0);
  const pid_t me = getpid();
  const uint64_t a = addr_of(m);
  EXPECT_EQ(range_mapped(me, a, 2 * pg), MapState::kMapped);
  EXPECT_EQ(range_mapped(me, a + 1, 2 * pg - 1), MapState::kMapped);
  EXPECT_EQ(range_mapped(me, a + 2 * pg - 1, 1), MapState::kMapped);
  EXPECT_EQ(range_mapped(me, a + 2 * pg - 1, 2), MapState::kUnmapped);
  EXPECT_EQ(range_mapped(me, a + 2 * pg, 1), MapState::kUnmapped);   // hole
  EXPECT_EQ(range_mapped(me, a + 3 * pg, pg), MapState::kUnmapped);  // NONE
  EXPECT_EQ(range_mapped(me, a + 4 * pg, pg), MapState::kMapped);    // r--
  EXPECT_EQ(range_mapped(me, a + 4 * pg, pg + 1), MapState::kUnmapped);
  EXPECT_EQ(range_mapped(me, a, 5 * pg), MapState::kUnmapped);
  EXPECT_EQ(range_mapped(me, a + 2 * pg, 0), MapState::kMapped);  // empty
  unmap_guarded(m, 5);
  EXPECT_EQ(range_mapped(me, a, 1), MapState::kUnmapped);
}

TEST(ProcMaps, AdjacentMappingsAndLongFiles) {
  // Many small mappings with alternating protections, so that the kernel
  // keeps them apart and the maps file spans several 4 KiB reads.
  const uint64_t pg = page();
  const int n = 400;
  char* m = map_guarded(n);
  ASSERT_NE(m, nullptr);
  for (int i = 0; i < n; i += 2)
    ASSERT_EQ(mprotect(m + i * pg, pg, PROT_READ), 0);
  const pid_t me = getpid();
  // Across mapping boundaries, all readable: one range.
  EXPECT_EQ(range_mapped(me, addr_of(m), n * pg), MapState::kMapped);
  EXPECT_EQ(range_mapped(me, addr_of(m) + pg / 2, (n - 1) * pg),
            MapState::kMapped);
  ASSERT_EQ(mprotect(m + (n - 3) * pg, pg, PROT_NONE), 0);
  EXPECT_EQ(range_mapped(me, addr_of(m), n * pg), MapState::kUnmapped);
  EXPECT_EQ(range_mapped(me, addr_of(m), (n - 3) * pg), MapState::kMapped);
  EXPECT_EQ(range_mapped(me, addr_of(m) - 1, 2), MapState::kUnmapped);
  unmap_guarded(m, n);
}

TEST(ProcMaps, StackHeapAndWrap) {
  const pid_t me = getpid();
  int on_stack = 0;
  std::vector<char> heap(100000);
  EXPECT_EQ(range_mapped(me, addr_of(&on_stack), sizeof(on_stack)),
            MapState::kMapped);
  EXPECT_EQ(range_mapped(me, addr_of(heap.data()), heap.size()),
            MapState::kMapped);
  EXPECT_EQ(range_mapped(me, 0, 4096), MapState::kUnmapped);  // page zero
  EXPECT_EQ(range_mapped(me, UINT64_MAX - 10, 100), MapState::kUnmapped);
  // Beyond user space (x86-64 and AArch64 both stop below 2^56).
  EXPECT_EQ(range_mapped(me, uint64_t{1} << 60, 4096), MapState::kUnmapped);
}

TEST(ProcMaps, AnotherProcess) {
  // A child's mapping that the parent does not have.
  const uint64_t pg = page();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    uint64_t a = addr_of(map_guarded(3));
    if (write(fds[1], &a, sizeof(a)) != sizeof(a)) _exit(1);
    pause();
    _exit(0);
  }
  uint64_t a = 0;
  ASSERT_EQ(read(fds[0], &a, sizeof(a)), static_cast<ssize_t>(sizeof(a)));
  ASSERT_NE(a, 0u);
  EXPECT_EQ(range_mapped(child, a, 3 * pg), MapState::kMapped);
  EXPECT_EQ(range_mapped(child, a, 3 * pg + 1), MapState::kUnmapped);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(fds[0]);
  close(fds[1]);
  // Gone: nothing can be said.
  EXPECT_EQ(range_mapped(child, a, pg), MapState::kUnknown);
}

}  // namespace

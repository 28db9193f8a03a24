// IPC memory handles of the cuda_loop provider (see cuda_loop.cc).
//
// An allocation is a memfd its exporter keeps open: the handle carries the
// exporter's pid and the fd's number, and the importer reopens the same
// file through /proc/<pid>/fd/<fd> (allowed between processes of one user,
// as ptrace-read access is) and maps it as an allocation does, PROT_NONE
// plus a read-write alias. Both processes then see the same pages, as two
// processes with a real IPC mapping see the same device memory.
//
// The inode and device in the handle tell a freed allocation (its fd
// number reused, or closed) from the live one: opening a stale handle
// fails instead of mapping some other file. Where the driver would open a
// handle twice in one context (a reference count), this provider refuses
// the second open with CUDA_ERROR_ALREADY_MAPPED: the tests use that to
// prove that the library opens each peer buffer once and caches it. So is
// a handle whose exporter-side range overlaps an import still open from
// the same process (the exporter freed a buffer and allocated another in
// its place), as the driver on an H200 did.
//
// dma-buf fds (cuMemGetHandleForAddressRange): the allocation's memfd
// opened anew through /proc/self/fd, so the fd has a file position of its
// own, set where the range begins. That is the convention with
// tests/verbs_loop's ibv_reg_dmabuf_mr: the dma-buf begins at the fd's
// current position and runs to the end of the file.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cuda_loop_internal.h"

namespace cuda_loop {
namespace {

// CUipcMemHandle: cuda.h's struct { char reserved[64]; }, passed by value
// to cuIpcOpenMemHandle (in memory, as the real one is).
struct IpcHandle {
  char reserved[64];
};

constexpr char kMagic[8] = {'c', 'u', 'd', 'a', 'l', 'o', 'o', 'p'};

// What a handle's bytes hold.
struct HandleBody {
  char magic[8];
  int32_t pid;  // the exporter
  int32_t fd;   // its memfd's number there
  uint64_t ino;
  uint64_t dev;
  uint64_t mapped;
  uint64_t bytes;
  uint64_t serial;  // the exporter's buffer id: opens of one allocation
  uint64_t base;    // the exporter's address of it
};
static_assert(sizeof(HandleBody) <= sizeof(IpcHandle), "handle too small");

uint64_t g_opens;    // under g_mu
uint64_t g_closes;   // under g_mu
uint64_t g_dmabufs;  // under g_mu

// cuda.h's CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD.
constexpr int kRangeDmaBufFd = 1;

}  // namespace
}  // namespace cuda_loop

using namespace cuda_loop;

#pragma GCC visibility push(default)
extern "C" {

// Any address inside an own device allocation names all of it. Managed
// memory and imports cannot be exported (the driver refuses both).
Res cuIpcGetMemHandle(IpcHandle* h, DevPtr p) {
  if (h == nullptr) return kInvalidValue;
  std::lock_guard<std::mutex> g(g_mu);
  const Alloc* a = holding(p);
  if (a == nullptr || a->managed || a->imported) return kInvalidValue;
  struct stat st {};
  if (fstat(a->fd, &st) != 0) return kInvalidValue;
  HandleBody b{};
  memcpy(b.magic, kMagic, sizeof b.magic);
  b.pid = static_cast<int32_t>(getpid());
  b.fd = a->fd;
  b.ino = static_cast<uint64_t>(st.st_ino);
  b.dev = static_cast<uint64_t>(st.st_dev);
  b.mapped = a->mapped;
  b.bytes = a->bytes;
  b.serial = a->serial;
  b.base = a->dev;
  *h = IpcHandle{};
  memcpy(h->reserved, &b, sizeof b);
  return kOk;
}

Res cuIpcOpenMemHandle_v2(DevPtr* p, IpcHandle h, unsigned flags) {
  // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, the one flag there is: the
  // driver requires it.
  if (p == nullptr || flags != 1) return kInvalidValue;
  HandleBody b;
  memcpy(&b, h.reserved, sizeof b);
  if (memcmp(b.magic, kMagic, sizeof kMagic) != 0 || b.bytes == 0 ||
      b.mapped != page_round(b.bytes))
    return kInvalidValue;
  // The driver will not map a handle in the process that exported it.
  if (b.pid == static_cast<int32_t>(getpid())) return kInvalidContext;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", static_cast<int>(b.pid),
           static_cast<int>(b.fd));
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return kInvalidValue;  // the exporter is gone, or freed it
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_ino) != b.ino ||
      static_cast<uint64_t>(st.st_dev) != b.dev ||
      static_cast<uint64_t>(st.st_size) < b.mapped) {
    close(fd);  // the number now names another file: the buffer was freed
    return kInvalidValue;
  }
  void* dev = nullptr;
  void* alias = nullptr;
  const Res r = map_twice(fd, b.mapped, &dev, &alias);
  close(fd);  // the mappings keep the pages
  if (r != kOk) return r;
  std::lock_guard<std::mutex> g(g_mu);
  // Open already, or a stale import still holds the exporter's range (it
  // freed that allocation and made this one where it was): the driver
  // refuses both (seen on an H200, driver 580: CUDA_ERROR_ALREADY_MAPPED).
  bool open_here = false;
  for (const Alloc& a : g_allocs)
    open_here |=
        a.dev != 0 && a.imported && a.peer_pid == b.pid &&
        (a.peer_serial == b.serial ||
         (a.peer_base < b.base + b.mapped && b.base < a.peer_base + a.mapped));
  Alloc* a = open_here ? nullptr : free_slot();
  if (a == nullptr) {
    munmap(dev, b.mapped);
    munmap(alias, b.mapped);
    return open_here ? kAlreadyMapped : kOutOfMemory;
  }
  *a = Alloc{};
  a->dev = reinterpret_cast<uintptr_t>(dev);
  a->alias = static_cast<uint8_t*>(alias);
  a->bytes = b.bytes;
  a->mapped = b.mapped;
  a->serial = next_serial();
  a->imported = true;
  a->peer_pid = b.pid;
  a->peer_serial = b.serial;
  a->peer_base = b.base;
  ++g_opens;
  *p = a->dev;
  return kOk;
}

// p: an address an open returned (not one inside it, as with the driver).
Res cuIpcCloseMemHandle(DevPtr p) {
  std::lock_guard<std::mutex> g(g_mu);
  for (Alloc& a : g_allocs) {
    if (p == 0 || a.dev != p || !a.imported) continue;
    munmap(reinterpret_cast<void*>(a.dev), a.mapped);
    munmap(a.alias, a.mapped);
    a = Alloc{};
    ++g_closes;
    return kOk;
  }
  return kInvalidValue;
}

// A dma-buf fd for [p, p + size) of an own device allocation. As the
// driver asks, p and size are multiples of the host page size. Managed
// memory and imports are refused; CUDA_LOOP_NO_DMABUF=1 plays a driver or
// kernel without dma-buf support (CUDA_ERROR_NOT_SUPPORTED).
Res cuMemGetHandleForAddressRange(void* handle, DevPtr p, size_t size, int type,
                                  unsigned long long flags) {
  const char* no = getenv("CUDA_LOOP_NO_DMABUF");
  if (no != nullptr && strcmp(no, "1") == 0) return kNotSupported;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  if (handle == nullptr || type != kRangeDmaBufFd || flags != 0 || size == 0 ||
      p % page != 0 || size % page != 0)
    return kInvalidValue;
  std::lock_guard<std::mutex> g(g_mu);
  const Alloc* a = mapping_of(p);
  if (a == nullptr || a->managed || a->imported || a->fd < 0 ||
      size > a->mapped - (p - a->dev))
    return kInvalidValue;
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", a->fd);
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return kOutOfMemory;
  if (lseek(fd, static_cast<off_t>(p - a->dev), SEEK_SET) < 0) {
    close(fd);
    return kInvalidValue;
  }
  *static_cast<int*>(handle) = fd;
  ++g_dmabufs;
  return kOk;
}

// Test hooks: dma-buf fds handed out so far in this process.
unsigned long long cuda_loop_dmabuf_exports(void) {
  std::lock_guard<std::mutex> g(g_mu);
  return g_dmabufs;
}

// Test hooks: opens and closes so far in this process, and the imports
// open now.
unsigned long long cuda_loop_ipc_opens(void) {
  std::lock_guard<std::mutex> g(g_mu);
  return g_opens;
}
unsigned long long cuda_loop_ipc_closes(void) {
  std::lock_guard<std::mutex> g(g_mu);
  return g_closes;
}
int cuda_loop_ipc_open_now(void) {
  std::lock_guard<std::mutex> g(g_mu);
  int n = 0;
  for (const Alloc& a : g_allocs) n += a.dev != 0 && a.imported ? 1 : 0;
  return n;
}

}  // extern "C"
#pragma GCC visibility pop

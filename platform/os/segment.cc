#include "platform/os/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "platform/os/log.h"
#include "platform/os/proc_id.h"

namespace ucc::plat {
namespace {

constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

}  // namespace

Status seg_create(const char* name, size_t bytes, int* fd, void** mem) {
  *fd = -1;
  *mem = nullptr;
  const int f = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (f < 0) {
    UCC_ERROR("%s: memfd_create failed: %s", name, strerror(errno));
    return Status::kNoMemory;
  }
  if (ftruncate(f, static_cast<off_t>(bytes)) != 0 ||
      fcntl(f, F_ADD_SEALS, kSeals) != 0) {
    UCC_ERROR("%s: cannot size and seal %zu bytes: %s", name, bytes,
              strerror(errno));
    close(f);
    return Status::kNoMemory;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  if (p == MAP_FAILED) {
    UCC_ERROR("%s: mmap(%zu) failed: %s", name, bytes, strerror(errno));
    close(f);
    return Status::kNoMemory;
  }
  *fd = f;
  *mem = p;
  return Status::kOk;
}

namespace {

// The part of seg_check that also works on an O_PATH descriptor: a memfd
// (its /proc link reads "/memfd:<name> (deleted)"; nothing a user can
// create elsewhere on the file system has that path) of the size and
// owner expected.
Status check_file(int fd, size_t bytes, int64_t uid, const char** why) {
  char link[64], target[128];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof(target) - 1);
  if (n < 7 || strncmp(target, "/memfd:", 7) != 0) {
    *why = "not a memfd";
    return Status::kInvalidParam;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
      static_cast<uint64_t>(sb.st_size) != bytes) {
    *why = "not of the size it claims";
    return Status::kInvalidParam;
  }
  if (uid >= 0 && static_cast<int64_t>(sb.st_uid) != uid) {
    *why = "owned by another user";
    return Status::kInvalidParam;
  }
  return Status::kOk;
}

// The part that needs a descriptor open for I/O (F_GET_SEALS).
Status check_seals(int fd, const char** why) {
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) !=
                       (F_SEAL_SHRINK | F_SEAL_GROW)) {
    *why = "not sealed against resizing";
    return Status::kInvalidParam;
  }
  return Status::kOk;
}

}  // namespace

Status seg_check(int fd, size_t bytes, int64_t uid, const char** why) {
  Status st = check_file(fd, bytes, uid, why);
  return failed(st) ? st : check_seals(fd, why);
}

Status seg_map_fd(int fd, size_t bytes, int64_t uid, void** mem) {
  *mem = nullptr;
  const char* why = nullptr;
  Status st = seg_check(fd, bytes, uid, &why);
  if (failed(st)) return st;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return Status::kError;
  *mem = p;
  return Status::kOk;
}

Status seg_open_peer(int pid, int peer_fd, size_t bytes, int64_t uid,
                     const char* what, void** mem) {
  *mem = nullptr;
  note_foreign_reach(pid);
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, peer_fd);
  // Look before opening for I/O: a read-write open of what is not a
  // memfd (a FIFO, a device, another user's file) could already be an act
  // the caller's privileges allow and the peer's do not. An O_PATH open
  // has no such effect, and it pins the file: the peer may put another
  // file under that descriptor number now, but what we checked is what
  // we open read-write (through our own descriptor) and map.
  const int pf = open(path, O_PATH | O_CLOEXEC);
  if (pf < 0) {
    UCC_ERROR("%s: cannot open %s: %s", what, path, strerror(errno));
    return Status::kError;
  }
  const char* why = nullptr;
  Status st = check_file(pf, bytes, uid, &why);
  if (failed(st)) {
    UCC_ERROR("%s: %s is %s", what, path, why);
    close(pf);
    return st;
  }
  char own[64];
  snprintf(own, sizeof(own), "/proc/self/fd/%d", pf);
  // Read-write: every segment a peer hands over (channel rings, team
  // inboxes) is one both sides write.
  const int f = open(own, O_RDWR | O_CLOEXEC);
  close(pf);
  if (f < 0) {
    UCC_ERROR("%s: cannot open %s: %s", what, path, strerror(errno));
    return Status::kError;
  }
  st = check_seals(f, &why);  // the file is the one checked above
  if (failed(st)) {
    UCC_ERROR("%s: %s is %s", what, path, why);
    close(f);
    return st;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  close(f);
  if (p == MAP_FAILED) {
    UCC_ERROR("%s: cannot map %s: %s", what, path, strerror(errno));
    return Status::kError;
  }
  *mem = p;
  return Status::kOk;
}

}  // namespace ucc::plat

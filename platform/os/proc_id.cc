#include "platform/os/proc_id.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ucc::plat {
namespace {

// The whole of a small /proc file into buf (NUL-terminated); its length,
// or -1.
ssize_t read_small(const char* path, char* buf, size_t n) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t got = 0, r;
  while (static_cast<size_t>(got) + 1 < n &&
         (r = read(fd, buf + got, n - 1 - static_cast<size_t>(got))) > 0)
    got += r;
  close(fd);
  buf[got] = '\0';
  return got;
}

// /proc/<pid>/stat into buf, and where its field 3 (the state) starts:
// the command name (field 2) may hold spaces and parentheses, so fields
// resume after the last ')'. nullptr when unreadable.
const char* stat_state(pid_t pid, char* buf, size_t n) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  if (read_small(path, buf, n) <= 0) return nullptr;
  const char* p = strrchr(buf, ')');
  return p != nullptr && p[1] == ' ' ? p + 2 : nullptr;
}

}  // namespace

namespace {
std::atomic<uint64_t> g_foreign{0};
std::atomic<uint64_t> g_foreign_copies{0};
}  // namespace

void note_foreign_reach(pid_t pid) {
  if (pid != getpid()) g_foreign.fetch_add(1, std::memory_order_relaxed);
}

uint64_t foreign_reaches() { return g_foreign.load(std::memory_order_relaxed); }

void note_foreign_copy(pid_t pid) {
  note_foreign_reach(pid);
  if (pid != getpid()) g_foreign_copies.fetch_add(1, std::memory_order_relaxed);
}

uint64_t foreign_copies() {
  return g_foreign_copies.load(std::memory_order_relaxed);
}

ProcId proc_id(pid_t pid) {
  note_foreign_reach(pid);
  ProcId id;
  char path[64], buf[2048];
  // starttime is field 22.
  const char* p = stat_state(pid, buf, sizeof(buf));
  if (p == nullptr) return id;
  int field = 3;
  for (++p; *p != '\0' && field < 22; ++p)
    if (*p == ' ') ++field;
  if (field != 22) return id;
  id.start = strtoull(p, nullptr, 10);
  snprintf(path, sizeof(path), "/proc/%d/exe", pid);
  struct stat sb;
  if (stat(path, &sb) != 0) return id;
  id.exe_dev = sb.st_dev;
  id.exe_ino = sb.st_ino;
  snprintf(path, sizeof(path), "/proc/%d/status", pid);
  if (read_small(path, buf, sizeof(buf)) <= 0) return id;
  const char* u = strstr(buf, "\nUid:");
  if (u == nullptr) return id;
  unsigned real = 0, eff = 0;
  if (sscanf(u + 5, "%u %u", &real, &eff) != 2) return id;
  id.euid = eff;
  id.valid = true;
  return id;
}

bool same_process(pid_t pid, const ProcId& was) {
  const ProcId now = proc_id(pid);
  return now.valid && was.valid && now.start == was.start &&
         now.exe_dev == was.exe_dev && now.exe_ino == was.exe_ino &&
         now.euid == was.euid;
}

bool process_exited(pid_t pid) {
  note_foreign_reach(pid);
  char path[64], buf[2048];
  const char* state = stat_state(pid, buf, sizeof(buf));
  if (state == nullptr) return true;
  if (*state == 'Z' || *state == 'X') return true;  // zombie, dead
  // A process on its way out has let go of its memory and executable
  // before it becomes a zombie. (EACCES is a live process we may not see.)
  snprintf(path, sizeof(path), "/proc/%d/exe", pid);
  struct stat sb;
  return stat(path, &sb) != 0 && errno == ENOENT;
}

}  // namespace ucc::plat

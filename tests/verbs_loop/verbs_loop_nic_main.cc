// verbs_loop_nic: the "NIC" of the verbs_loop provider, a process that
// moves every WR's bytes between the fabric's processes, so that they
// need no rights over each other (verbs_loop_nic.h).
//
//   verbs_loop_nic --socket PATH [--quiet]
//
// Serves the processes that set VERBS_LOOP_NIC=PATH until SIGTERM or
// SIGINT, then prints what it moved and removes PATH. It needs the rights
// the clients lack: one pid namespace with all of them (it names them by
// the pids SO_PEERCRED gives it there) and the right to trace them
// (process_vm_readv/writev, /proc/<pid>/fd): run it as root in the root
// pid namespace. It trusts its clients as far as the provider does (they
// name the memory; the provider, linked into them, has checked the keys
// and bounds), but it touches no process that is not a client (EPERM):
// its rights over the rest of the machine are not lent to whoever can
// connect. It reads only fixed-size records and checks every count, and
// a client that stalls mid-request is dropped after 5 s. The socket is
// made with the caller's umask: put it in a directory only the fabric's
// users can reach.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>

#include "platform/os/sock.h"
#include "verbs_loop_nic.h"

namespace {

namespace sock = ucc::plat::sock;

using verbs_loop::NicIov;
using verbs_loop::NicLive;
using verbs_loop::NicReply;
using verbs_loop::NicReq;

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010  // Linux 5.1
#endif

constexpr int kMaxClients = int(verbs_loop::kNicMaxClients);
constexpr size_t kChunk = 1u << 20;
constexpr int kStallMs = 5000;            // a client mid-request, at most
constexpr uint64_t kMaxLen = 1ull << 30;  // the provider's max_msg_sz

volatile sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

struct Client {
  int fd;
  pid_t pid;      // from SO_PEERCRED, in our pid namespace
  uint32_t slot;  // in the live table
};

struct Stats {
  uint64_t clients, copies, bytes, files, refused;
};

// The live table (NicLive), writable here only; its memfd goes to every
// client with the hello's reply.
int g_live_fd = -1;
NicLive* g_live = nullptr;

bool MakeLiveTable() {
  g_live_fd =
      memfd_create("verbs_loop_nic.live", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (g_live_fd < 0 || ftruncate(g_live_fd, sizeof(NicLive)) != 0) return false;
  void* m = mmap(nullptr, sizeof(NicLive), PROT_READ | PROT_WRITE, MAP_SHARED,
                 g_live_fd, 0);
  if (m == MAP_FAILED) return false;
  g_live = static_cast<NicLive*>(m);
  // From now on no one else can write it, nor resize it under us.
  return fcntl(g_live_fd, F_ADD_SEALS,
               F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE |
                   F_SEAL_SEAL) == 0;
}

// A free slot for `pid`, published; false when the table is full.
bool Publish(pid_t pid, uint32_t* slot) {
  for (uint32_t i = 0; i < verbs_loop::kNicMaxClients; ++i) {
    if (__atomic_load_n(&g_live->pid[i], __ATOMIC_RELAXED) != 0) continue;
    __atomic_store_n(&g_live->pid[i], int32_t(pid), __ATOMIC_RELEASE);
    if (i >= g_live->hwm)
      __atomic_store_n(&g_live->hwm, i + 1, __ATOMIC_RELEASE);
    *slot = i;
    return true;
  }
  return false;
}

uint8_t g_bounce[kChunk];

// process_vm_readv or process_vm_writev of `n` bytes of g_bounce from or
// to process pid's pieces, whole; *v, *nv advance past them.
using VmOp = ssize_t (*)(pid_t, const iovec*, unsigned long, const iovec*,
                         unsigned long, unsigned long);
int Whole(VmOp op, pid_t pid, size_t n, iovec** v, int* nv) {
  for (size_t done = 0; done < n;) {
    iovec b = {g_bounce + done, n - done};
    ssize_t r = op(pid, &b, 1, *v, static_cast<unsigned long>(*nv), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) return EFAULT;
    done += size_t(r);
    verbs_loop::AdvanceIov(v, nv, size_t(r));
  }
  return 0;
}

// `len` bytes from process src's pieces to process dst's, through
// g_bounce. 0 or an errno value (ESRCH: a process is gone; EFAULT: a
// piece is not mapped, or the pieces hold fewer than len bytes).
int Move(pid_t src, iovec* sv, int ns, pid_t dst, iovec* dv, int nd,
         uint64_t len) {
  while (len > 0) {
    const size_t n = len < kChunk ? size_t(len) : kChunk;
    int err = Whole(process_vm_readv, src, n, &sv, &ns);
    if (err == 0) err = Whole(process_vm_writev, dst, n, &dv, &nd);
    if (err != 0) return err;
    len -= n;
  }
  return 0;
}

bool Reply(int fd, int err, int64_t value, int pass_fd) {
  const NicReply rep{verbs_loop::kNicMagic, err, value};
  return sock::send_all(fd, &rep, sizeof(rep), nullptr, 0, pass_fd);
}

// A whole record of a client, or false (it closed, or stalled past
// kStallMs).
bool RecvAll(int fd, void* p, size_t n) {
  return sock::recv_all(fd, p, n, kStallMs) == 1;
}

// Whether `pid` is a connected client: the only processes whose memory
// and files the NIC touches, whatever a client asks (it has the rights
// over every process of its namespace; it must not lend them out).
bool IsClient(pid_t pid) {
  if (pid <= 0) return false;
  const uint32_t n = g_live->hwm;
  for (uint32_t i = 0; i < n; ++i)
    if (g_live->pid[i] == pid) return true;
  return false;
}

// Serves one request of `c`; false drops the client.
bool Serve(const Client& c, Stats* st) {
  NicReq q;
  if (!RecvAll(c.fd, &q, sizeof(q)) || q.magic != verbs_loop::kNicMagic)
    return false;
  switch (q.op) {
    case verbs_loop::kNicHello:
      return Reply(c.fd, 0, c.pid, g_live_fd);
    case verbs_loop::kNicOpen: {
      if (q.fd < 0) return Reply(c.fd, EINVAL, 0, -1);
      if (!IsClient(q.peer)) {
        ++st->refused;
        return Reply(c.fd, EPERM, 0, -1);
      }
      char path[64];
      snprintf(path, sizeof(path), "/proc/%d/fd/%d", int(q.peer), int(q.fd));
      int f = open(path, O_RDWR | O_CLOEXEC);
      if (f < 0) return Reply(c.fd, errno, 0, -1);
      ++st->files;
      bool ok = Reply(c.fd, 0, 0, f);
      close(f);
      return ok;
    }
    case verbs_loop::kNicCopy: {
      if (q.nlocal > verbs_loop::kNicMaxIov ||
          q.nremote > verbs_loop::kNicMaxIov)
        return false;  // the pieces that follow cannot be skipped safely
      NicIov iov[2 * verbs_loop::kNicMaxIov];
      uint32_t niov = q.nlocal + q.nremote;
      if (niov > 0 && !RecvAll(c.fd, iov, niov * sizeof(NicIov))) return false;
      if (q.len > kMaxLen) return Reply(c.fd, EINVAL, 0, -1);
      if (!IsClient(q.peer)) {
        ++st->refused;
        return Reply(c.fd, EPERM, 0, -1);
      }
      iovec lv[verbs_loop::kNicMaxIov], rv[verbs_loop::kNicMaxIov];
      for (uint32_t i = 0; i < q.nlocal; ++i)
        lv[i] = {reinterpret_cast<void*>(iov[i].addr), size_t(iov[i].len)};
      for (uint32_t i = 0; i < q.nremote; ++i)
        rv[i] = {reinterpret_cast<void*>(iov[q.nlocal + i].addr),
                 size_t(iov[q.nlocal + i].len)};
      int nl = int(q.nlocal), nr = int(q.nremote);
      int err = q.write != 0 ? Move(c.pid, lv, nl, q.peer, rv, nr, q.len)
                             : Move(q.peer, rv, nr, c.pid, lv, nl, q.len);
      if (err == 0) {
        ++st->copies;
        st->bytes += q.len;
      }
      return Reply(c.fd, err, 0, -1);
    }
    default:
      return false;
  }
}

int Usage() {
  fprintf(stderr, "usage: verbs_loop_nic --socket PATH [--quiet]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const char* path = nullptr;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
      path = argv[++i];
    } else if (strcmp(argv[i], "--quiet") == 0) {
      quiet = true;
    } else {
      return Usage();
    }
  }
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path == nullptr || strlen(path) >= sizeof(a.sun_path)) return Usage();
  strcpy(a.sun_path, path);
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  if (!MakeLiveTable()) {
    fprintf(stderr, "verbs_loop_nic: live table: %s\n", strerror(errno));
    return 1;
  }
  int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  unlink(path);
  if (ls < 0 || bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(ls, 128) != 0) {
    fprintf(stderr, "verbs_loop_nic: %s: %s\n", path, strerror(errno));
    return 1;
  }
  static Client clients[kMaxClients];
  static pollfd pfd[kMaxClients + 1];
  int n = 0;
  Stats st{};
  while (g_stop == 0) {
    pfd[0] = {ls, POLLIN, 0};
    for (int i = 0; i < n; ++i) pfd[i + 1] = {clients[i].fd, POLLIN, 0};
    int r = poll(pfd, nfds_t(n + 1), 500);
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    for (int i = n - 1; i >= 0; --i) {
      if (pfd[i + 1].revents == 0) continue;
      if ((pfd[i + 1].revents & POLLIN) != 0 && Serve(clients[i], &st))
        continue;
      close(clients[i].fd);
      __atomic_store_n(&g_live->pid[clients[i].slot], 0, __ATOMIC_RELEASE);
      clients[i] = clients[--n];
    }
    if ((pfd[0].revents & POLLIN) == 0) continue;
    int fd = accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int pid = sock::peer_pid(fd);
    uint32_t slot = 0;
    if (n == kMaxClients || pid <= 0 || !Publish(pid, &slot)) {
      close(fd);
      continue;
    }
    clients[n++] = {fd, pid, slot};
    ++st.clients;
  }
  unlink(path);
  if (!quiet)
    printf(
        "verbs_loop_nic: %llu clients, %llu copies, %llu bytes, %llu "
        "files opened, %llu refused\n",
        (unsigned long long)st.clients, (unsigned long long)st.copies,
        (unsigned long long)st.bytes, (unsigned long long)st.files,
        (unsigned long long)st.refused);
  return 0;
}

// The client side of the verbs_loop NIC (verbs_loop_nic.h): one
// connection per process, one request at a time under a mutex.
#include "verbs_loop_nic.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace verbs_loop::nic {
namespace {

pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_once_t g_once = PTHREAD_ONCE_INIT;
const char* g_path = nullptr;
int g_fd = -1;
pid_t g_connected_by = 0;  // getpid() of the process that connected
int32_t g_fabric_pid = 0;
// The NIC's live table, read-only; kept across reconnects (a forked
// child maps the same one).
const NicLive* g_live = nullptr;

// A child forked while another thread held the mutex must not inherit it
// held; its connection is its parent's and is replaced at first use.
void AtForkChild() { pthread_mutex_init(&g_mu, nullptr); }

void Init() {
  const char* p = getenv("VERBS_LOOP_NIC");
  if (p != nullptr && p[0] != '\0') g_path = p;
  pthread_atfork(nullptr, nullptr, AtForkChild);
}

int SendAll(int fd, iovec* v, int n) {
  while (n > 0) {
    msghdr m{};
    m.msg_iov = v;
    m.msg_iovlen = size_t(n);
    ssize_t r = sendmsg(fd, &m, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r < 0 ? errno : EPIPE;
    AdvanceIov(&v, &n, size_t(r));
  }
  return 0;
}

// Reads the reply; with `fd_out`, also the one fd it may carry.
int RecvReply(int fd, NicReply* rep, int* fd_out) {
  size_t got = 0;
  while (got < sizeof(*rep)) {
    iovec v = {reinterpret_cast<char*>(rep) + got, sizeof(*rep) - got};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))];
    msghdr m{};
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    if (fd_out != nullptr) {
      m.msg_control = ctl;
      m.msg_controllen = sizeof(ctl);
    }
    ssize_t r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r < 0 ? errno : EPIPE;
    if (fd_out != nullptr) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr;
           c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN(sizeof(int))) {
          int got_fd;
          memcpy(&got_fd, CMSG_DATA(c), sizeof(int));
          if (*fd_out >= 0) close(*fd_out);
          *fd_out = got_fd;
        }
      }
    }
    got += size_t(r);
  }
  return rep->magic == kNicMagic ? 0 : EPROTO;
}

// One request and its reply on a fresh or open connection; needs g_mu.
int Call(NicReq* req, const NicIov* iov, uint32_t niov, NicReply* rep,
         int* fd_out);

int ConnectLocked() {
  if (g_fd >= 0 && g_connected_by == getpid()) return 0;
  if (g_fd >= 0) close(g_fd);  // the parent's, inherited by fork
  g_fd = -1;
  g_fabric_pid = 0;
  if (g_path == nullptr) return ENOENT;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (strlen(g_path) >= sizeof(a.sun_path)) return ENAMETOOLONG;
  strcpy(a.sun_path, g_path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    int e = errno;
    close(fd);
    return e;
  }
  g_fd = fd;
  g_connected_by = getpid();
  NicReq req{};
  req.op = kNicHello;
  NicReply rep{};
  int live = -1;
  int err = Call(&req, nullptr, 0, &rep, &live);
  if (err == 0 && (rep.err != 0 || rep.value <= 0))
    err = rep.err != 0 ? rep.err : EPROTO;
  if (err == 0 && g_live == nullptr) {
    void* m = live >= 0 ? mmap(nullptr, sizeof(NicLive), PROT_READ, MAP_SHARED,
                               live, 0)
                        : MAP_FAILED;
    if (m == MAP_FAILED) {
      err = live >= 0 ? errno : EPROTO;
    } else {
      __atomic_store_n(&g_live, static_cast<const NicLive*>(m),
                       __ATOMIC_RELEASE);
    }
  }
  if (live >= 0) close(live);
  if (err != 0) {
    if (g_fd >= 0) close(g_fd);
    g_fd = -1;
    return err;
  }
  g_fabric_pid = int32_t(rep.value);
  return 0;
}

int Call(NicReq* req, const NicIov* iov, uint32_t niov, NicReply* rep,
         int* fd_out) {
  req->magic = kNicMagic;
  iovec v[2] = {{req, sizeof(*req)},
                {const_cast<NicIov*>(iov), niov * sizeof(NicIov)}};
  int err = SendAll(g_fd, v, niov > 0 ? 2 : 1);
  if (err == 0) err = RecvReply(g_fd, rep, fd_out);
  if (err != 0) {  // the NIC is gone or confused: start over next time
    close(g_fd);
    g_fd = -1;
  }
  return err;
}

// Connects if needed, then makes the call; 0 or an errno value (the
// transport's or the NIC's answer).
int Request(NicReq* req, const NicIov* iov, uint32_t niov, int64_t* value,
            int* fd_out) {
  pthread_mutex_lock(&g_mu);
  int err = ConnectLocked();
  NicReply rep{};
  if (err == 0) err = Call(req, iov, niov, &rep, fd_out);
  if (err == 0) err = rep.err;
  if (err == 0 && value != nullptr) *value = rep.value;
  pthread_mutex_unlock(&g_mu);
  return err;
}

}  // namespace

bool Enabled() {
  pthread_once(&g_once, Init);
  return g_path != nullptr;
}

int32_t SelfPid() {
  pthread_once(&g_once, Init);
  pthread_mutex_lock(&g_mu);
  int err = ConnectLocked();
  int32_t pid = err == 0 ? g_fabric_pid : 0;
  pthread_mutex_unlock(&g_mu);
  if (err != 0) errno = err;
  return pid;
}

int Copy(int32_t pid, const iovec* local, int nlocal, const iovec* remote,
         int nremote, uint64_t len, bool write) {
  if (nlocal < 0 || nremote < 0 || uint32_t(nlocal) > kNicMaxIov ||
      uint32_t(nremote) > kNicMaxIov)
    return EINVAL;
  NicIov iov[2 * kNicMaxIov];
  for (int i = 0; i < nlocal; ++i)
    iov[i] = {reinterpret_cast<uint64_t>(local[i].iov_base), local[i].iov_len};
  for (int i = 0; i < nremote; ++i)
    iov[nlocal + i] = {reinterpret_cast<uint64_t>(remote[i].iov_base),
                       remote[i].iov_len};
  NicReq req{};
  req.op = kNicCopy;
  req.peer = pid;
  req.write = write ? 1 : 0;
  req.nlocal = uint32_t(nlocal);
  req.nremote = uint32_t(nremote);
  req.len = len;
  return Request(&req, iov, uint32_t(nlocal + nremote), nullptr, nullptr);
}

int OpenPeerFile(int32_t owner, int fd) {
  NicReq req{};
  req.op = kNicOpen;
  req.peer = owner;
  req.fd = fd;
  int got = -1;
  int err = Request(&req, nullptr, 0, nullptr, &got);
  if (err == 0 && got < 0) err = EPROTO;
  if (err != 0) {
    if (got >= 0) close(got);
    errno = err;
    return -1;
  }
  return got;
}

bool Alive(int32_t pid) {
  const NicLive* t = __atomic_load_n(&g_live, __ATOMIC_ACQUIRE);
  if (t == nullptr) {
    if (SelfPid() <= 0) return false;  // maps the table
    t = __atomic_load_n(&g_live, __ATOMIC_ACQUIRE);
  }
  uint32_t n = __atomic_load_n(&t->hwm, __ATOMIC_ACQUIRE);
  if (n > kNicMaxClients) n = kNicMaxClients;
  for (uint32_t i = 0; i < n; ++i)
    if (__atomic_load_n(&t->pid[i], __ATOMIC_ACQUIRE) == pid) return true;
  return false;
}

}  // namespace verbs_loop::nic

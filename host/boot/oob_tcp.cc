// ucc_ext_oob_tcp_create / _destroy (ucc_ext.h): the TCP rendezvous that
// makes an OobStar's sockets. oob_ep 0 listens on the server address and
// takes one connection per other ep, each only after both ends proved
// that they hold the job's secret, without sending it:
//
//   joiner -> ep 0   Hello     {magic, version, n, ep, job, nonce_j}
//   ep 0 -> joiner   Challenge {magic, verdict, nonce_s, mac_s}
//   joiner -> ep 0   Proof     {mac_j}
//   ep 0 -> joiner   Answer    {magic, refused}   once every ep is in
//
// mac_s = HMAC(K, "S" job n ep nonce_j nonce_s) proves ep 0 to the
// joiner, mac_j = HMAC(K, "J" job n ep nonce_j nonce_s) the joiner to ep
// 0; both nonces are fresh random bytes per connection, so an answer
// recorded once is worth nothing later. `job` is the hash of the job's
// id (UCC_JOB_ID, or the launcher's): a hello of another job is refused
// at once, so two jobs given one port never merge, even with one key.
// K (crypto.h's load_secret) comes from UCC_BOOTSTRAP_KEY_FILE,
// UCC_BOOTSTRAP_KEY or the parameters' key; a rendezvous whose server is
// not a loopback address (the job spans hosts) refuses to run without
// one. On loopback no key is needed: every ep then uses the empty key,
// and only the job id separates jobs.
//
// Strangers are bounded: at most kMaxPending connections may be in the
// handshake at once, each for at most kHandshakeNs; when the table is
// full the oldest connection that has said nothing yet (else the oldest)
// is closed for the new one, so silent or slow connections cannot keep
// the real eps out.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "host/boot/oob_star.h"
#include "platform/os/clock.h"
#include "platform/os/crypto.h"
#include "platform/os/log.h"
#include "platform/os/sock.h"

namespace {

using ucc::host::OobStar;
using ucc::plat::kMacBytes;

constexpr uint32_t kMagic = 0x43544f55;  // "UOTC"
constexpr uint32_t kVersion = 2;
constexpr uint64_t kHandshakeNs = 3000000000ull;  // a connection's, at most
constexpr uint32_t kMaxPending = 256;             // handshakes at once
constexpr size_t kNonce = 32;

struct Hello {
  uint32_t magic;
  uint32_t version;
  uint32_t n;
  uint32_t ep;
  uint8_t job[kMacBytes];
  uint8_t nonce[kNonce];
};
static_assert(sizeof(Hello) == 80);

// Challenge verdicts, and Answer.refused.
enum : uint32_t {
  kGoOn = 0,
  kOtherJob = 1,    // another job id
  kOtherSize = 2,   // another n_oob_eps, or an ep out of range
  kBadProof = 3,    // the joiner's MAC is wrong: another key
  kTaken = 4,       // the ep joined already
  kOldVersion = 5,  // another protocol version
};
const char* verdict_str(uint32_t v) {
  switch (v) {
    case kOtherJob:
      return "another job id (UCC_JOB_ID)";
    case kOtherSize:
      return "another n_oob_eps, or an ep out of range";
    case kBadProof:
      return "another key";
    case kTaken:
      return "this ep joined already";
    case kOldVersion:
      return "another version of the library";
    default:
      return "refused";
  }
}

struct Challenge {
  uint32_t magic;
  uint32_t verdict;
  uint8_t nonce[kNonce];
  uint8_t mac[kMacBytes];
};
struct Proof {
  uint8_t mac[kMacBytes];
};
struct Answer {
  uint32_t magic;
  uint32_t refused;
};

// What both ends know of the job.
struct Job {
  ucc::plat::Secret key;
  uint8_t id[kMacBytes];
};

// The MAC one side sends: over its role, the job, the ep and both nonces.
bool proof_mac(const Job& job, char role, const Hello& h,
               const uint8_t nonce_s[kNonce], uint8_t out[kMacBytes]) {
  struct {
    char role;
    uint8_t pad[3];
    uint32_t n, ep;
    uint8_t job[kMacBytes];
    uint8_t nonce_j[kNonce], nonce_s[kNonce];
  } m{};
  m.role = role;
  m.n = h.n;
  m.ep = h.ep;
  memcpy(m.job, h.job, kMacBytes);
  memcpy(m.nonce_j, h.nonce, kNonce);
  memcpy(m.nonce_s, nonce_s, kNonce);
  return ucc::plat::mac(job.key.bytes, job.key.len, &m, sizeof(m), out);
}

// The job's id: UCC_JOB_ID, else the first launcher's job id found; ""
// when none (then jobs with one key on one port are told apart by
// nothing: docs/network.md).
const char* job_id_string() {
  const char* vars[] = {
      "UCC_JOB_ID", "SLURM_JOB_ID", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
      "PBS_JOBID",  "LSB_JOBID",    "FLUX_JOB_ID"};
  for (const char* v : vars) {
    const char* s = getenv(v);
    if (s != nullptr && s[0] != '\0') return s;
  }
  return "";
}

// The job's secret and id; false (logged) where a multi-host rendezvous
// has no key or a given key is unfit.
bool job_of(const ucc_ext_oob_tcp_params_t& p, const sockaddr_in& at,
            Job* job) {
  if (!ucc::plat::load_secret("ucc_ext_oob_tcp_create",
                              "UCC_BOOTSTRAP_KEY_FILE", "UCC_BOOTSTRAP_KEY",
                              p.key, &job->key))
    return false;
  const bool loopback = (ntohl(at.sin_addr.s_addr) >> 24) == 127;
  if (job->key.len == 0 && !loopback && p.n_oob_eps > 1) {
    UCC_ERROR(
        "ucc_ext_oob_tcp_create: a rendezvous across hosts (%s) needs the "
        "job's secret, the same on every ep: set UCC_BOOTSTRAP_KEY_FILE to a "
        "file only you can read (head -c 32 /dev/urandom > key; chmod 600 "
        "key), or UCC_BOOTSTRAP_KEY, or the parameters' key "
        "(ucc_perftest --bootstrap-key)",
        p.server);
    return false;
  }
  const char* id = job_id_string();
  static const char kJobLabel[] = "ucc job id v1";
  return ucc::plat::mac(kJobLabel, sizeof(kJobLabel) - 1, id, strlen(id),
                        job->id);
}

void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Reads or writes all `len` bytes by `deadline` (ns); false on EOF, an
// error or the deadline.
bool move_all(int fd, void* buf, size_t len, bool out, uint64_t deadline) {
  auto* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < len) {
    const ssize_t r =
        out ? send(fd, p + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL)
            : recv(fd, p + done, len - done, MSG_DONTWAIT);
    if (r > 0) {
      done += static_cast<size_t>(r);
      continue;
    }
    if (r == 0 || (errno != EAGAIN && errno != EINTR)) return false;
    const uint64_t now = ucc::plat::now_ns();
    if (now >= deadline) return false;
    pollfd pf{fd, static_cast<short>(out ? POLLOUT : POLLIN), 0};
    poll(&pf, 1, static_cast<int>((deadline - now) / 1000000 + 1));
  }
  return true;
}

// A connection in its handshake, on ep 0.
struct Pending {
  int fd;
  bool proving;  // the challenge went out; reading the proof
  uint32_t got;  // bytes of the hello, then of the proof
  uint64_t since;
  Hello h;
  Proof proof;
  uint8_t nonce_s[kNonce];
};

// Sends a refusal (best effort: a stranger may not read it) and closes.
void refuse(int fd, uint32_t verdict) {
  Challenge no{};
  no.magic = kMagic;
  no.verdict = verdict;
  send(fd, &no, sizeof(no), MSG_DONTWAIT | MSG_NOSIGNAL);
  close(fd);
}

class Server {
 public:
  Server(const ucc_ext_oob_tcp_params_t& p, const Job& job, int* fds)
      : p_(p), job_(job), fds_(fds) {}
  ucc_status_t run(const sockaddr_in& at, uint64_t deadline);

 private:
  // One step of a handshake; false when the connection is done with
  // (taken or closed).
  bool step(Pending& c);
  void admit(int fd);
  void drop_left();

  const ucc_ext_oob_tcp_params_t& p_;
  const Job& job_;
  int* fds_;
  Pending pend_[kMaxPending];
  uint32_t npend_ = 0;
  uint32_t joined_ = 1;
};

bool Server::step(Pending& c) {
  char* buf = c.proving ? reinterpret_cast<char*>(&c.proof)
                        : reinterpret_cast<char*>(&c.h);
  const uint32_t want = c.proving ? sizeof(Proof) : sizeof(Hello);
  const ssize_t r = recv(c.fd, buf + c.got, want - c.got, MSG_DONTWAIT);
  if (r > 0) c.got += static_cast<uint32_t>(r);
  const bool gone = r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR);
  if (c.got < want) {
    if (!gone && ucc::plat::now_ns() - c.since <= kHandshakeNs) return true;
    close(c.fd);  // silent, slow or gone: a stranger's, or a retry's
    return false;
  }
  const Hello& h = c.h;
  if (!c.proving) {
    uint32_t v = kGoOn;
    if (h.magic != kMagic) {
      close(c.fd);  // not ours at all
      return false;
    }
    if (h.version != kVersion)
      v = kOldVersion;
    else if (memcmp(h.job, job_.id, kMacBytes) != 0)
      v = kOtherJob;
    else if (h.n != p_.n_oob_eps || h.ep == 0 || h.ep >= p_.n_oob_eps)
      v = kOtherSize;
    Challenge ch{};
    ch.magic = kMagic;
    ch.verdict = v;
    if (v == kGoOn && (!ucc::plat::random_bytes(c.nonce_s, kNonce) ||
                       !proof_mac(job_, 'S', h, c.nonce_s, ch.mac)))
      v = kBadProof;  // no randomness or no libcrypto: refuse, never skip
    if (v != kGoOn) {
      UCC_WARN("ucc_ext_oob_tcp_create: refused ep %u of %u: %s", h.ep, h.n,
               verdict_str(v));
      refuse(c.fd, v);
      return false;
    }
    memcpy(ch.nonce, c.nonce_s, kNonce);
    // The socket's buffer is empty: the challenge goes out whole now.
    if (send(c.fd, &ch, sizeof(ch), MSG_DONTWAIT | MSG_NOSIGNAL) !=
        static_cast<ssize_t>(sizeof(ch))) {
      close(c.fd);
      return false;
    }
    c.proving = true;
    c.got = 0;
    return true;
  }
  uint8_t want_mac[kMacBytes];
  uint32_t v = kGoOn;
  if (!proof_mac(job_, 'J', h, c.nonce_s, want_mac) ||
      !ucc::plat::mac_equal(want_mac, c.proof.mac))
    v = kBadProof;
  else if (fds_[h.ep] >= 0)
    v = kTaken;
  if (v != kGoOn) {
    UCC_WARN("ucc_ext_oob_tcp_create: refused ep %u: %s", h.ep, verdict_str(v));
    Answer no{kMagic, v};
    send(c.fd, &no, sizeof(no), MSG_DONTWAIT | MSG_NOSIGNAL);
    close(c.fd);
    return false;
  }
  fds_[h.ep] = c.fd;
  ++joined_;
  return false;
}

// A new connection takes a place; when none is free, the oldest that has
// said nothing (else the oldest) gives it up.
void Server::admit(int fd) {
  if (npend_ == kMaxPending) {
    uint32_t victim = 0;
    bool silent = false;
    for (uint32_t i = 0; i < npend_; ++i) {
      const bool s = !pend_[i].proving && pend_[i].got == 0;
      if ((s && !silent) ||
          (s == silent && pend_[i].since < pend_[victim].since)) {
        victim = i;
        silent = s;
      }
    }
    close(pend_[victim].fd);
    pend_[victim] = pend_[--npend_];
  }
  tune(fd);
  Pending& c = pend_[npend_++];
  c = Pending{};
  c.fd = fd;
  c.since = ucc::plat::now_ns();
}

// An ep that hangs up while the others come frees its place (it may come
// again).
void Server::drop_left() {
  for (uint32_t e = 1; e < p_.n_oob_eps; ++e) {
    char b;
    if (fds_[e] < 0 || recv(fds_[e], &b, 1, MSG_DONTWAIT | MSG_PEEK) != 0)
      continue;
    close(fds_[e]);
    fds_[e] = -1;
    --joined_;
  }
}

ucc_status_t Server::run(const sockaddr_in& at, uint64_t deadline) {
  const int lfd =
      socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (lfd < 0) return UCC_ERR_NO_RESOURCE;
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a = at;
  int rc = bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  if (rc != 0 && errno == EADDRNOTAVAIL) {
    // The name is how the others reach us, not an address of ours (NAT):
    // listen on every address.
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    rc = bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  if (rc != 0 || listen(lfd, 1024) != 0) {
    UCC_ERROR("ucc_ext_oob_tcp_create: cannot listen on %s: %s", p_.server,
              strerror(errno));
    close(lfd);
    return UCC_ERR_NO_RESOURCE;
  }
  ucc_status_t st = UCC_OK;
  while (joined_ < p_.n_oob_eps) {
    if (ucc::plat::now_ns() >= deadline) {
      UCC_ERROR("ucc_ext_oob_tcp_create: %u of %u eps came within the timeout",
                joined_, p_.n_oob_eps);
      st = UCC_ERR_TIMED_OUT;
      break;
    }
    // Every connection waiting in the kernel's queue first, so that a
    // flood there cannot hold back a real ep's.
    for (;;) {
      const int fd =
          accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      admit(fd);
    }
    pollfd pf[kMaxPending + 1];
    pf[0] = pollfd{lfd, POLLIN, 0};
    for (uint32_t i = 0; i < npend_; ++i)
      pf[i + 1] = pollfd{pend_[i].fd, POLLIN, 0};
    poll(pf, npend_ + 1, 20);
    for (uint32_t i = 0; i < npend_;) {
      if (step(pend_[i])) {
        ++i;
      } else {
        pend_[i] = pend_[--npend_];
      }
    }
    drop_left();
  }
  for (uint32_t i = 0; i < npend_; ++i) close(pend_[i].fd);
  close(lfd);
  // Everyone is in: say so (until then each waits, so that no ep starts
  // a job that does not form).
  for (uint32_t e = 1; st == UCC_OK && e < p_.n_oob_eps; ++e) {
    Answer yes{kMagic, 0};
    if (!move_all(fds_[e], &yes, sizeof(yes), true, deadline)) {
      UCC_ERROR("ucc_ext_oob_tcp_create: ep %u went away", e);
      st = UCC_ERR_NO_MESSAGE;
    }
  }
  return st;
}

// Connects by `deadline`; -1 when it cannot (now).
int dial(const sockaddr_in& at, uint64_t deadline) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int rc = connect(fd, reinterpret_cast<const sockaddr*>(&at), sizeof(at));
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd pf{fd, POLLOUT, 0};
    const uint64_t now = ucc::plat::now_ns();
    poll(&pf, 1,
         now < deadline ? static_cast<int>((deadline - now) / 1000000 + 1) : 0);
    int err = ETIMEDOUT;
    socklen_t len = sizeof(err);
    if (pf.revents != 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    rc = err == 0 ? 0 : -1;
  }
  if (rc != 0) {
    close(fd);
    return -1;
  }
  tune(fd);
  return fd;
}

// Another ep: connects (again while ep 0 is not listening yet, or closed
// us for a newer connection), proves itself, checks ep 0's proof, waits
// for the answer.
ucc_status_t join(const ucc_ext_oob_tcp_params_t& p, const Job& job,
                  const sockaddr_in& at, uint64_t deadline, int* fd_out) {
  for (;;) {
    const int fd = dial(at, deadline);
    Hello h{kMagic, kVersion, p.n_oob_eps, p.oob_ep, {}, {}};
    memcpy(h.job, job.id, kMacBytes);
    Challenge ch{};
    if (fd >= 0 && ucc::plat::random_bytes(h.nonce, kNonce) &&
        move_all(fd, &h, sizeof(h), true, deadline) &&
        move_all(fd, &ch, sizeof(ch), false, deadline)) {
      uint8_t want[kMacBytes];
      const char* bad = nullptr;
      if (ch.magic != kMagic) {
        bad = "answered what is not a rendezvous";
      } else if (ch.verdict != kGoOn) {
        UCC_ERROR("ucc_ext_oob_tcp_create: ep 0 at %s refused ep %u: %s",
                  p.server, p.oob_ep, verdict_str(ch.verdict));
        close(fd);
        return UCC_ERR_NO_MESSAGE;
      } else if (!proof_mac(job, 'S', h, ch.nonce, want) ||
                 !ucc::plat::mac_equal(want, ch.mac)) {
        bad =
            "did not prove the job's key (another job's ep 0, or a "
            "stranger listening there)";
      }
      if (bad != nullptr) {
        // Nothing of ours went out but the hello: a squatter learns the
        // ep and a nonce, never the key.
        UCC_ERROR("ucc_ext_oob_tcp_create: %s %s", p.server, bad);
        close(fd);
        return UCC_ERR_NO_MESSAGE;
      }
      Proof pr{};
      Answer ans{};
      if (proof_mac(job, 'J', h, ch.nonce, pr.mac) &&
          move_all(fd, &pr, sizeof(pr), true, deadline) &&
          move_all(fd, &ans, sizeof(ans), false, deadline)) {
        if (ans.magic == kMagic && ans.refused == 0) {
          *fd_out = fd;
          return UCC_OK;
        }
        UCC_ERROR("ucc_ext_oob_tcp_create: ep 0 at %s refused ep %u: %s",
                  p.server, p.oob_ep, verdict_str(ans.refused));
        close(fd);
        return UCC_ERR_NO_MESSAGE;
      }
    }
    if (fd >= 0) close(fd);
    if (ucc::plat::now_ns() >= deadline) {
      UCC_ERROR("ucc_ext_oob_tcp_create: no answer from ep 0 at %s", p.server);
      return UCC_ERR_TIMED_OUT;
    }
    usleep(50000);  // not listening yet, or it dropped us: again
  }
}

}  // namespace

extern "C" ucc_status_t ucc_ext_oob_tcp_create(
    const ucc_ext_oob_tcp_params_t* params, ucc_oob_coll_t* oob) {
  sockaddr_in at{};
  if (params == nullptr || oob == nullptr || params->n_oob_eps == 0 ||
      params->oob_ep >= params->n_oob_eps ||
      !ucc::plat::sock::parse_tcp(params->server, &at)) {
    UCC_ERROR(
        "ucc_ext_oob_tcp_create: invalid parameters (server '%s' must be "
        "HOST:PORT, oob_ep < n_oob_eps)",
        params != nullptr && params->server != nullptr ? params->server : "");
    return UCC_ERR_INVALID_PARAM;
  }
  const ucc_ext_oob_tcp_params_t& p = *params;
  Job job{};
  if (p.n_oob_eps > 1 && !job_of(p, at, &job)) return UCC_ERR_INVALID_PARAM;
  const double secs = p.timeout > 0 ? p.timeout : 60;
  const uint64_t deadline =
      ucc::plat::now_ns() + static_cast<uint64_t>(secs * 1e9);
  const uint32_t nfd = p.oob_ep == 0 ? p.n_oob_eps : 1;
  int* fds = static_cast<int*>(malloc(sizeof(int) * nfd));
  auto* server = p.oob_ep == 0 && p.n_oob_eps > 1
                     ? static_cast<Server*>(malloc(sizeof(Server)))
                     : nullptr;
  if (fds == nullptr ||
      (p.oob_ep == 0 && p.n_oob_eps > 1 && server == nullptr)) {
    free(fds);
    free(server);
    return UCC_ERR_NO_MEMORY;
  }
  for (uint32_t i = 0; i < nfd; ++i) fds[i] = -1;
  ucc_status_t st = UCC_OK;  // alone: no sockets
  if (server != nullptr) {
    new (server) Server(p, job, fds);
    st = server->run(at, deadline);
    server->~Server();
    free(server);
  } else if (p.n_oob_eps > 1) {
    st = join(p, job, at, deadline, fds);
  }
  memset(&job, 0, sizeof(job));
  OobStar* star = nullptr;
  if (st == UCC_OK) {
    star = OobStar::create(p.oob_ep, p.n_oob_eps, fds);  // takes the fds
    if (star == nullptr) st = UCC_ERR_NO_MEMORY;
  } else {
    for (uint32_t i = 0; i < nfd; ++i)
      if (fds[i] >= 0) close(fds[i]);
  }
  free(fds);
  if (st == UCC_OK) *oob = star->coll();
  return st;
}

extern "C" ucc_status_t ucc_ext_oob_tcp_destroy(ucc_oob_coll_t* oob) {
  OobStar* star = oob != nullptr ? OobStar::from(*oob) : nullptr;
  if (star == nullptr) {
    UCC_ERROR("ucc_ext_oob_tcp_destroy: not an OOB of ucc_ext_oob_tcp_create");
    return UCC_ERR_INVALID_PARAM;
  }
  delete star;
  *oob = ucc_oob_coll_t{};
  return UCC_OK;
}

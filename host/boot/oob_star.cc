#include "host/boot/oob_star.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "platform/os/log.h"

namespace ucc::host {
namespace {

constexpr uint32_t kMagic = 0x4f4f4255;  // "UBOO"

struct WireHeader {
  uint32_t magic;
  uint32_t pad;
  uint64_t seq;
  uint64_t len;
};
constexpr size_t kHdr = sizeof(WireHeader);
static_assert(kHdr == 24);

}  // namespace

struct OobStar::Req {
  OobStar* owner;
  Req* next;
  uint64_t seq;
  size_t len;      // bytes per rank
  void* user_dst;  // nullptr once freed
  bool complete;   // every byte moved
  bool done;       // complete and copied out: test() says OK
  bool freed;
  char* result;   // size * len
  char* contrib;  // not rank 0: our len bytes
  // Not rank 0: bytes of our message sent, of rank 0's received.
  size_t sent, recvd;
  WireHeader hdr_in;
  // Rank 0, per peer: bytes received from it, sent to it, its header.
  size_t* peer_recvd;
  size_t* peer_sent;
  WireHeader* peer_hdr;
  uint32_t gathered;  // peers whose contribution is in
};

OobStar* OobStar::create(uint32_t rank, uint32_t size, const int* fds) {
  const uint32_t nfd = rank == 0 ? size : 1;
  auto* o = new (std::nothrow) OobStar;
  int* mine = static_cast<int*>(malloc(sizeof(int) * (nfd ? nfd : 1)));
  if (o == nullptr || mine == nullptr || size == 0 || rank >= size) {
    for (uint32_t i = 0; i < nfd; ++i)
      if (fds[i] >= 0 && !(rank == 0 && i == 0)) close(fds[i]);
    delete o;
    ::free(mine);
    return nullptr;
  }
  for (uint32_t i = 0; i < nfd; ++i) mine[i] = fds[i];
  if (rank == 0) mine[0] = -1;
  o->rank_ = rank;
  o->size_ = size;
  o->fds_ = mine;
  return o;
}

OobStar::~OobStar() {
  const uint32_t nfd = rank_ == 0 ? size_ : 1;
  for (uint32_t i = 0; fds_ != nullptr && i < nfd; ++i)
    if (fds_[i] >= 0) close(fds_[i]);
  ::free(fds_);
  // Requests still queued were freed early or never freed: nobody may
  // touch them now.
  while (head_ != nullptr) {
    Req* r = head_;
    head_ = r->next;
    ::free(r->result);
    ::free(r);
  }
}

ucc_oob_coll_t OobStar::coll() {
  ucc_oob_coll_t c{};
  c.allgather = &OobStar::c_allgather;
  c.req_test = &OobStar::c_req_test;
  c.req_free = &OobStar::c_req_free;
  c.coll_info = this;
  c.n_oob_eps = size_;
  c.oob_ep = rank_;
  return c;
}

OobStar* OobStar::from(const ucc_oob_coll_t& c) {
  return c.allgather == &OobStar::c_allgather
             ? static_cast<OobStar*>(c.coll_info)
             : nullptr;
}

ucc_status_t OobStar::c_allgather(void* src, void* dst, size_t len, void* info,
                                  void** req) {
  if (info == nullptr) return UCC_ERR_INVALID_PARAM;
  return static_cast<OobStar*>(info)->allgather(src, dst, len, req);
}

ucc_status_t OobStar::c_req_test(void* req) {
  if (req == nullptr) return UCC_ERR_INVALID_PARAM;
  return static_cast<Req*>(req)->owner->test(req);
}

ucc_status_t OobStar::c_req_free(void* req) {
  if (req == nullptr) return UCC_ERR_INVALID_PARAM;
  return static_cast<Req*>(req)->owner->free(req);
}

ucc_status_t OobStar::allgather(const void* src, void* dst, size_t len,
                                void** req) {
  if (req == nullptr || (len != 0 && (src == nullptr || dst == nullptr)) ||
      len > (size_t{1} << 40) / size_)
    return UCC_ERR_INVALID_PARAM;
  if (failed_) return UCC_ERR_NO_MESSAGE;
  // One block: the request, then (rank 0) the per-peer state.
  const size_t peers = rank_ == 0 ? size_ : 0;
  const size_t bytes =
      sizeof(Req) + peers * (2 * sizeof(size_t) + sizeof(WireHeader));
  auto* r = static_cast<Req*>(calloc(1, bytes));
  const size_t out = size_t{size_} * len;
  char* result = static_cast<char*>(malloc(out + (rank_ == 0 ? 0 : len) + 1));
  if (r == nullptr || result == nullptr) {
    ::free(r);
    ::free(result);
    return UCC_ERR_NO_MEMORY;
  }
  r->owner = this;
  r->seq = next_seq_++;
  r->len = len;
  r->user_dst = dst;
  r->result = result;
  if (rank_ == 0) {
    auto* base = reinterpret_cast<char*>(r + 1);
    r->peer_recvd = reinterpret_cast<size_t*>(base);
    r->peer_sent = r->peer_recvd + peers;
    r->peer_hdr = reinterpret_cast<WireHeader*>(r->peer_sent + peers);
    if (len != 0) memcpy(result, src, len);
    r->complete = size_ == 1;
  } else {
    r->contrib = result + out;
    if (len != 0) memcpy(r->contrib, src, len);
  }
  if (tail_ != nullptr) {
    tail_->next = r;
  } else {
    head_ = r;
  }
  tail_ = r;
  *req = r;
  progress();  // gets the bytes moving; a single rank completes here
  return UCC_OK;
}

ucc_status_t OobStar::test(void* req) {
  Req* r = static_cast<Req*>(req);
  if (r->done) return UCC_OK;
  if (failed_) return UCC_ERR_NO_MESSAGE;
  progress();
  if (r->done) return UCC_OK;
  return failed_ ? UCC_ERR_NO_MESSAGE : UCC_INPROGRESS;
}

ucc_status_t OobStar::free(void* req) {
  Req* r = static_cast<Req*>(req);
  if (r->done) {  // already off the queue
    ::free(r->result);
    ::free(r);
  } else {
    r->freed = true;  // retire_done() or the destructor frees it
    r->user_dst = nullptr;
  }
  return UCC_OK;
}

void OobStar::fail(const char* what, uint32_t peer) {
  if (failed_) return;
  failed_ = true;
  UCC_ERROR("oob rank %u: %s (peer rank %u)", rank_, what, peer);
  // Every peer sees EOF now rather than at our exit.
  const uint32_t nfd = rank_ == 0 ? size_ : 1;
  for (uint32_t i = 0; i < nfd; ++i)
    if (fds_[i] >= 0) shutdown(fds_[i], SHUT_RDWR);
}

OobStar::Io OobStar::send_message(int fd, uint32_t peer, uint64_t seq,
                                  const char* payload, size_t len,
                                  size_t* off) {
  const WireHeader h{kMagic, 0, seq, len};
  const size_t total = kHdr + len;
  while (*off < total) {
    iovec iov[2];
    int n = 0;
    if (*off < kHdr) {
      iov[n++] = {const_cast<char*>(reinterpret_cast<const char*>(&h)) + *off,
                  kHdr - *off};
      if (len != 0) iov[n++] = {const_cast<char*>(payload), len};
    } else {
      iov[n++] = {const_cast<char*>(payload) + (*off - kHdr), total - *off};
    }
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = static_cast<size_t>(n);
    const ssize_t w = sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Io::kWouldBlock;
      fail("connection lost while sending", peer);
      return Io::kError;
    }
    *off += static_cast<size_t>(w);
  }
  return Io::kDone;
}

OobStar::Io OobStar::recv_message(int fd, uint32_t peer, uint64_t seq,
                                  char* hdr, char* payload, size_t len,
                                  size_t* off) {
  const size_t total = kHdr + len;
  while (*off < total) {
    char* dst;
    size_t want;
    if (*off < kHdr) {
      dst = hdr + *off;
      want = kHdr - *off;
    } else {
      dst = payload + (*off - kHdr);
      want = total - *off;
    }
    // Never past this message: the next belongs to a later request.
    const ssize_t r = recv(fd, dst, want, MSG_DONTWAIT);
    if (r == 0) {
      fail("connection closed by the peer (did it exit or crash?)", peer);
      return Io::kError;
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Io::kWouldBlock;
      fail(strerror(errno), peer);
      return Io::kError;
    }
    *off += static_cast<size_t>(r);
    if (*off != kHdr) continue;
    WireHeader h;
    memcpy(&h, hdr, kHdr);
    if (h.magic != kMagic) {
      fail("not an OOB message", peer);
      return Io::kError;
    }
    if (h.seq != seq || h.len != len) {
      UCC_ERROR(
          "oob rank %u: allgather mismatch: got #%llu of %llu bytes, "
          "expected #%llu of %zu (ranks must start the same allgathers in "
          "the same order)",
          rank_, static_cast<unsigned long long>(h.seq),
          static_cast<unsigned long long>(h.len),
          static_cast<unsigned long long>(seq), len);
      fail("allgather mismatch", peer);
      return Io::kError;
    }
  }
  return Io::kDone;
}

// Rank 0. Per peer: read its contributions, request by request in
// sequence order, then write the results it is owed, also in order,
// stopping at the first request not gathered yet.
bool OobStar::progress_root() {
  for (uint32_t p = 1; p < size_; ++p) {
    const int fd = fds_[p];
    for (Req* r = head_; r != nullptr; r = r->next) {
      if (r->peer_recvd[p] == kHdr + r->len) continue;
      const Io io =
          recv_message(fd, p, r->seq, reinterpret_cast<char*>(&r->peer_hdr[p]),
                       r->result + p * r->len, r->len, &r->peer_recvd[p]);
      if (io == Io::kError) return false;
      if (io == Io::kWouldBlock) break;
      ++r->gathered;
    }
    for (Req* r = head_; r != nullptr; r = r->next) {
      const size_t out = size_t{size_} * r->len;
      if (r->peer_sent[p] == kHdr + out) continue;
      if (r->gathered < size_ - 1) break;
      const Io io =
          send_message(fd, p, r->seq, r->result, out, &r->peer_sent[p]);
      if (io == Io::kError) return false;
      if (io == Io::kWouldBlock) break;
    }
  }
  for (Req* r = head_; r != nullptr; r = r->next) {
    if (r->complete || r->gathered < size_ - 1) continue;
    const size_t out = size_t{size_} * r->len;
    bool all_sent = true;
    for (uint32_t p = 1; p < size_; ++p)
      all_sent = all_sent && r->peer_sent[p] == kHdr + out;
    // Complete once every byte is in the kernel: after OK the caller may
    // exit, and bytes not sent would go with it.
    r->complete = all_sent;
  }
  return true;
}

// Other ranks: write our contributions in order, read results in order.
bool OobStar::progress_leaf() {
  const int fd = fds_[0];
  for (Req* r = head_; r != nullptr; r = r->next) {
    if (r->sent == kHdr + r->len) continue;
    const Io io = send_message(fd, 0, r->seq, r->contrib, r->len, &r->sent);
    if (io == Io::kError) return false;
    if (io == Io::kWouldBlock) break;
  }
  for (Req* r = head_; r != nullptr; r = r->next) {
    if (r->complete) continue;
    const Io io =
        recv_message(fd, 0, r->seq, reinterpret_cast<char*>(&r->hdr_in),
                     r->result, size_t{size_} * r->len, &r->recvd);
    if (io == Io::kError) return false;
    if (io == Io::kWouldBlock) break;
    r->complete = true;  // rank 0 answers only after reading all of ours
  }
  return true;
}

// Requests complete in sequence order (each stream is ordered): only the
// front of the queue needs a look.
void OobStar::retire_done() {
  while (head_ != nullptr && head_->complete) {
    Req* r = head_;
    head_ = r->next;
    if (head_ == nullptr) tail_ = nullptr;
    if (r->freed) {
      ::free(r->result);
      ::free(r);
      continue;
    }
    if (r->user_dst != nullptr && r->len != 0)
      memcpy(r->user_dst, r->result, size_t{size_} * r->len);
    r->done = true;
  }
}

void OobStar::progress() {
  if (failed_) return;
  const bool ok = rank_ == 0 ? progress_root() : progress_leaf();
  if (ok) retire_done();
}

}  // namespace ucc::host

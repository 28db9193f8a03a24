#include "tests/common/star_oob.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <utility>

namespace ucct {
namespace {

constexpr uint32_t kMagic = 0x4f4f4255;  // "UBOO"
constexpr size_t kHdr = 24;              // sizeof(WireHeader)

}  // namespace

StarOob::StarOob(int rank, int size, std::vector<int> fds)
    : rank_(rank), size_(size), fds_(std::move(fds)) {}

StarOob::~StarOob() {
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
  // Requests still queued belong to us (freed early) or to a caller that
  // never freed them; either way nobody may touch them after this.
  for (Req* r : active_) delete r;
}

ucc_oob_coll_t StarOob::coll() {
  ucc_oob_coll_t c{};
  c.allgather = &StarOob::c_allgather;
  c.req_test = &StarOob::c_req_test;
  c.req_free = &StarOob::c_req_free;
  c.coll_info = this;
  c.n_oob_eps = static_cast<uint32_t>(size_);
  c.oob_ep = static_cast<uint32_t>(rank_);
  return c;
}

ucc_status_t StarOob::c_allgather(void* src, void* dst, size_t len, void* info,
                                  void** req) {
  if (!info) return UCC_ERR_INVALID_PARAM;
  return static_cast<StarOob*>(info)->allgather(src, dst, len, req);
}

ucc_status_t StarOob::c_req_test(void* req) {
  if (!req) return UCC_ERR_INVALID_PARAM;
  return static_cast<Req*>(req)->owner->test(req);
}

ucc_status_t StarOob::c_req_free(void* req) {
  if (!req) return UCC_ERR_INVALID_PARAM;
  return static_cast<Req*>(req)->owner->free(req);
}

ucc_status_t StarOob::allgather(const void* src, void* dst, size_t len,
                                void** req) {
  if (!req || (len && (!src || !dst))) return UCC_ERR_INVALID_PARAM;
  if (failed_) return UCC_ERR_NO_MESSAGE;
  Req* r = new Req;
  r->owner = this;
  r->seq = next_seq_++;
  r->len = len;
  r->user_dst = dst;
  r->result.resize(static_cast<size_t>(size_) * len);
  if (rank_ == 0) {
    if (len) std::memcpy(r->result.data(), src, len);
    r->peer_recvd.assign(size_, 0);
    r->peer_sent.assign(size_, 0);
    r->peer_hdr.resize(size_);
    r->complete = (size_ == 1);
  } else {
    r->contrib.assign(static_cast<const char*>(src),
                      static_cast<const char*>(src) + len);
  }
  active_.push_back(r);
  *req = r;
  progress();  // gets the bytes moving; a single rank completes here
  return UCC_OK;
}

ucc_status_t StarOob::test(void* req) {
  Req* r = static_cast<Req*>(req);
  if (r->done) return UCC_OK;
  if (failed_) return UCC_ERR_NO_MESSAGE;
  progress();
  if (r->done) return UCC_OK;
  return failed_ ? UCC_ERR_NO_MESSAGE : UCC_INPROGRESS;
}

ucc_status_t StarOob::free(void* req) {
  Req* r = static_cast<Req*>(req);
  if (r->done) {
    delete r;  // already out of active_
  } else {
    r->freed = true;  // retire_done() (or the destructor) deletes it
    r->user_dst = nullptr;
  }
  return UCC_OK;
}

void StarOob::fail(const char* what, int peer) {
  if (failed_) return;
  failed_ = true;
  std::fprintf(stderr, "ucct oob rank %d: %s (peer rank %d)\n", rank_, what,
               peer);
  // Make every peer see EOF now rather than wait for our exit.
  for (int fd : fds_) {
    if (fd >= 0) shutdown(fd, SHUT_RDWR);
  }
}

StarOob::Io StarOob::send_message(int fd, uint64_t seq, const char* payload,
                                  size_t len, size_t* off) {
  const WireHeader h{kMagic, 0, seq, len};
  const size_t total = kHdr + len;
  while (*off < total) {
    iovec iov[2];
    int n = 0;
    if (*off < kHdr) {
      iov[n++] = {const_cast<char*>(reinterpret_cast<const char*>(&h)) + *off,
                  kHdr - *off};
      if (len) iov[n++] = {const_cast<char*>(payload), len};
    } else {
      iov[n++] = {const_cast<char*>(payload) + (*off - kHdr), total - *off};
    }
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = static_cast<size_t>(n);
    const ssize_t r = sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Io::kWouldBlock;
      return Io::kError;
    }
    *off += static_cast<size_t>(r);
  }
  return Io::kDone;
}

StarOob::Io StarOob::recv_message(int fd, int from, uint64_t seq,
                                  WireHeader* hdr, char* payload, size_t len,
                                  size_t* off) {
  const size_t total = kHdr + len;
  while (*off < total) {
    char* dst;
    size_t want;
    if (*off < kHdr) {
      dst = reinterpret_cast<char*>(hdr) + *off;
      want = kHdr - *off;
    } else {
      dst = payload + (*off - kHdr);
      want = total - *off;
    }
    // Never read past this message: the next one belongs to a later request.
    const ssize_t r = recv(fd, dst, want, MSG_DONTWAIT);
    if (r == 0) {
      fail("connection closed by peer (did it exit or crash?)", from);
      return Io::kError;
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Io::kWouldBlock;
      fail(std::strerror(errno), from);
      return Io::kError;
    }
    *off += static_cast<size_t>(r);
    if (*off == kHdr &&
        (hdr->magic != kMagic || hdr->seq != seq || hdr->len != len)) {
      char what[160];
      std::snprintf(what, sizeof what,
                    "allgather mismatch: got #%llu of %llu bytes, expected "
                    "#%llu of %zu bytes",
                    static_cast<unsigned long long>(hdr->seq),
                    static_cast<unsigned long long>(hdr->len),
                    static_cast<unsigned long long>(seq), len);
      fail(hdr->magic != kMagic ? "corrupt oob stream" : what, from);
      return Io::kError;
    }
  }
  return Io::kDone;
}

// Rank 0. Per peer: first read its contributions, request by request in
// sequence order, then write the gathered results it is owed, also in
// order, stopping at the first request that is not gathered yet.
bool StarOob::progress_root() {
  for (int p = 1; p < size_; ++p) {
    const int fd = fds_[p];
    for (Req* r : active_) {
      if (r->peer_recvd[p] == kHdr + r->len) continue;
      const Io io = recv_message(fd, p, r->seq, &r->peer_hdr[p],
                                 r->result.data() + p * r->len, r->len,
                                 &r->peer_recvd[p]);
      if (io == Io::kError) return false;
      if (io == Io::kWouldBlock) break;
      ++r->gathered;
    }
    for (Req* r : active_) {
      const size_t out = r->result.size();
      if (r->peer_sent[p] == kHdr + out) continue;
      if (r->gathered < size_ - 1) break;
      const Io io =
          send_message(fd, r->seq, r->result.data(), out, &r->peer_sent[p]);
      if (io == Io::kError) {
        fail("connection lost while sending", p);
        return false;
      }
      if (io == Io::kWouldBlock) break;
    }
  }
  for (Req* r : active_) {
    if (r->complete || r->gathered < size_ - 1) continue;
    bool all_sent = true;
    for (int p = 1; p < size_; ++p) {
      all_sent = all_sent && r->peer_sent[p] == kHdr + r->result.size();
    }
    // Only complete once every byte is in the kernel: after OK the caller
    // may exit, and unsent bytes would be lost with it.
    r->complete = all_sent;
  }
  return true;
}

// Other ranks: write our contributions in order, read results in order.
bool StarOob::progress_leaf() {
  const int fd = fds_[0];
  for (Req* r : active_) {
    if (r->sent == kHdr + r->len) continue;
    const Io io = send_message(fd, r->seq, r->contrib.data(), r->len, &r->sent);
    if (io == Io::kError) {
      fail("connection lost while sending", 0);
      return false;
    }
    if (io == Io::kWouldBlock) break;
  }
  for (Req* r : active_) {
    if (r->complete) continue;
    const Io io = recv_message(fd, 0, r->seq, &r->hdr_in, r->result.data(),
                               r->result.size(), &r->recvd);
    if (io == Io::kError) return false;
    if (io == Io::kWouldBlock) break;
    r->complete = true;  // rank 0 answers only after reading all of ours
  }
  return true;
}

// Requests complete in sequence order (each stream is ordered), so only the
// front of the queue needs looking at.
void StarOob::retire_done() {
  while (!active_.empty() && active_.front()->complete) {
    Req* r = active_.front();
    active_.pop_front();
    if (r->freed) {
      delete r;
      continue;
    }
    if (r->user_dst && !r->result.empty()) {
      std::memcpy(r->user_dst, r->result.data(), r->result.size());
    }
    r->done = true;
  }
}

void StarOob::progress() {
  if (failed_) return;
  const bool ok = rank_ == 0 ? progress_root() : progress_leaf();
  if (ok) retire_done();
}

}  // namespace ucct

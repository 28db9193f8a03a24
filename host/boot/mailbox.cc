#include "host/boot/mailbox.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "platform/base/order.h"
#include "platform/os/log.h"
#include "platform/os/segment.h"

namespace ucc::host {

using plat::seg_create;
using plat::seg_open_peer;

namespace {

constexpr uint32_t kMboxMagic = 0x55434d42u;  // "UCMB"
constexpr uint32_t kMboxVersion = 1;

struct MboxHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t n_eps;
  uint32_t owner_ep;
  int32_t owner_pid;
  uint32_t requests;
  uint32_t cells;
  uint32_t cell_bytes;
};

// One request of the owner. Published like a seqlock: the owner writes the
// key while `nonce` is 0 and then stores the nonce; a reader that sees the
// same non-zero nonce before and after reading the key has a consistent
// pair (nonces are never reused, so no ABA). Release stores and acquire
// loads of the key words stand in for the seqlock's fences, which
// ThreadSanitizer does not support.
struct alignas(64) RequestEntry {
  std::atomic<uint64_t> nonce;  // 0: closed
  std::atomic<uint64_t> a;
  std::atomic<uint64_t> b;
  std::atomic<uint32_t> stage;  // may change while open
};

// One message slot. `state` hands the cell back and forth: 0 = empty, the
// writer may fill it; 1 = full, the owner may read and empty it.
struct alignas(64) Cell {
  std::atomic<uint32_t> state;
  uint32_t tag;
  uint32_t from_ep;
  uint32_t len;
  uint64_t nonce;
  unsigned char payload[kMboxPayload];
};
static_assert(sizeof(Cell) == 256);
static_assert(sizeof(RequestEntry) == 64);
static_assert(sizeof(MboxHeader) <= 64);

constexpr size_t kReqOff = 64;
constexpr size_t kCellOff = kReqOff + kMboxRequests * sizeof(RequestEntry);
static_assert(kCellOff % 64 == 0);

size_t segment_bytes(uint32_t n_eps) {
  size_t end =
      kCellOff + static_cast<size_t>(n_eps) * kMboxCells * sizeof(Cell);
  return (end + 4095) & ~size_t{4095};
}

RequestEntry* request(char* seg, uint32_t i) {
  return reinterpret_cast<RequestEntry*>(seg + kReqOff) + i;
}
// Cell i of the area where `writer` leaves messages for the segment's owner.
Cell* cell(char* seg, uint32_t writer, uint32_t i) {
  return reinterpret_cast<Cell*>(seg + kCellOff) +
         static_cast<size_t>(writer) * kMboxCells + i;
}

}  // namespace

Status Mailbox::open(uint32_t n_eps, uint32_t my_ep, MailboxAddr* out) {
  if (n_eps == 0 || my_ep >= n_eps || n_eps > (1u << 20))
    return Status::kInvalidParam;
  n_eps_ = n_eps;
  my_ep_ = my_ep;
  seg_bytes_ = segment_bytes(n_eps);
  void* p = nullptr;
  Status st = seg_create("ucc-mailbox", seg_bytes_, &fd_, &p);
  if (failed(st)) return st;
  seg_ = static_cast<char*>(p);
  // The file starts zeroed: every request is closed and every cell empty.
  for (uint32_t i = 0; i < kMboxRequests; ++i)
    new (request(seg_, i)) RequestEntry;
  for (uint32_t w = 0; w < n_eps; ++w)
    for (uint32_t i = 0; i < kMboxCells; ++i) new (cell(seg_, w, i)) Cell;
  auto* h = reinterpret_cast<MboxHeader*>(seg_);
  *h = MboxHeader{kMboxMagic, kMboxVersion,  n_eps,      my_ep,
                  getpid(),   kMboxRequests, kMboxCells, sizeof(Cell)};
  *out = MailboxAddr{kMboxMagic, n_eps, getpid(), fd_, seg_bytes_};
  return Status::kOk;
}

Status Mailbox::attach(const MailboxAddr* all) {
  if (seg_ == nullptr || peers_) return Status::kInvalidParam;
  // An ep on another host (an all-zero address): nothing to map, nothing
  // to send it, no entry.
  auto elsewhere = [&](uint32_t i) {
    return i != my_ep_ && all[i].magic == 0 && all[i].pid == 0 &&
           all[i].bytes == 0;
  };
  uint32_t here = 0;
  for (uint32_t i = 0; i < n_eps_; ++i) here += elsewhere(i) ? 0 : 1;
  if (!peers_.init(here)) return Status::kNoMemory;
  uint32_t k = 0;
  for (uint32_t i = 0; i < n_eps_; ++i) {
    const MailboxAddr a = all[i];
    if (elsewhere(i)) continue;
    Peer& pe = peers_[k++];
    pe.ep = i;
    if (a.magic != kMboxMagic || a.n_eps != n_eps_ || a.bytes != seg_bytes_ ||
        a.pid <= 0 || a.fd < 0 ||
        (i == my_ep_ && (a.pid != getpid() || a.fd != fd_))) {
      UCC_ERROR(
          "mailbox: ep %u published a bad address (magic %#x, %u eps, "
          "%llu bytes, pid %d, fd %d)",
          i, a.magic, a.n_eps, static_cast<unsigned long long>(a.bytes), a.pid,
          a.fd);
      return Status::kError;
    }
    pe.pid = a.pid;
    if (i == my_ep_) {
      pe.base = seg_;
      continue;
    }
    // A sealed memfd of our own user and exactly this size (segment.h).
    void* p = nullptr;
    if (failed(seg_open_peer(a.pid, a.fd, a.bytes,
                             static_cast<int64_t>(geteuid()), "mailbox", &p)))
      return Status::kError;
    pe.base = static_cast<char*>(p);
    pe.bytes = a.bytes;
    MboxHeader h;
    memcpy(&h, p, sizeof(h));
    if (h.magic != kMboxMagic || h.version != kMboxVersion ||
        h.n_eps != n_eps_ || h.owner_ep != i || h.owner_pid != a.pid ||
        h.requests != kMboxRequests || h.cells != kMboxCells ||
        h.cell_bytes != sizeof(Cell)) {
      UCC_ERROR("mailbox: ep %u's segment header does not match its address",
                i);
      return Status::kError;
    }
  }
  return Status::kOk;
}

void Mailbox::seal() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void Mailbox::close() {
  if (peers_) {
    for (size_t i = 0; i < peers_.size(); ++i)
      if (peers_[i].bytes != 0) munmap(peers_[i].base, peers_[i].bytes);
    peers_.release();
  }
  if (seg_ != nullptr) {
    munmap(seg_, seg_bytes_);
    seg_ = nullptr;
  }
  seal();
}

const Mailbox::Peer* Mailbox::find(uint32_t ep) const {
  if (!peers_) return nullptr;
  const Peer* begin = peers_.data();
  const Peer* end = begin + peers_.size();  // by ep, ascending
  const Peer* p = std::lower_bound(
      begin, end, ep, [](const Peer& a, uint32_t e) { return a.ep < e; });
  return p != end && p->ep == ep ? p : nullptr;
}

int32_t Mailbox::pid_of(uint32_t ep) const {
  const Peer* p = find(ep);
  return p != nullptr ? p->pid : -1;
}

Status Mailbox::request_open(const MboxKey& key, uint32_t* slot,
                             uint64_t* nonce) {
  uint32_t free_slot = kMboxRequests;
  for (uint32_t i = 0; i < kMboxRequests; ++i) {
    RequestEntry* e = request(seg_, i);
    // Only this thread writes our own entries: relaxed loads suffice.
    if (e->nonce.load(std::memory_order_relaxed) == 0) {
      if (free_slot == kMboxRequests) free_slot = i;
    } else if (e->a.load(std::memory_order_relaxed) == key.a &&
               e->b.load(std::memory_order_relaxed) == key.b) {
      return Status::kInvalidParam;
    }
  }
  if (free_slot == kMboxRequests) return Status::kNoResource;
  RequestEntry* e = request(seg_, free_slot);
  // S1 pairs with L2 in request_find(): a reader that sees this key has
  // seen the earlier close (nonce = 0) too.
  e->a.store(key.a, std::memory_order_release);
  e->b.store(key.b, std::memory_order_release);
  e->stage.store(1, std::memory_order_release);
  uint64_t n = next_nonce_++;
  // S2 pairs with L1: a reader that sees the nonce sees the key.
  e->nonce.store(n, std::memory_order_release);
  *slot = free_slot;
  *nonce = n;
  return Status::kOk;
}

void Mailbox::request_stage(uint32_t slot, uint32_t stage) {
  if (seg_ == nullptr || slot >= kMboxRequests) return;
  // S3 pairs with L3: a peer that takes a message we send after this
  // sees this stage (or a later one) in request_find().
  request(seg_, slot)->stage.store(stage, std::memory_order_release);
}

void Mailbox::request_close(uint32_t slot) {
  if (seg_ == nullptr || slot >= kMboxRequests) return;
  request(seg_, slot)->nonce.store(0, std::memory_order_release);
}

uint64_t Mailbox::request_find(uint32_t peer, const MboxKey& key,
                               uint32_t max_stage) const {
  const Peer* p = find(peer);
  if (p == nullptr || p->base == nullptr) return 0;
  char* base = p->base;
  for (uint32_t i = 0; i < kMboxRequests; ++i) {
    RequestEntry* e = request(base, i);
    // L1 pairs with S2.
    uint64_t n1 = e->nonce.load(std::memory_order_acquire);
    if (n1 == 0) continue;
    // L2 pairs with S1: a key written for a later request brings the
    // close with it, so the second nonce load below sees it changed.
    uint64_t a = e->a.load(std::memory_order_acquire);
    uint64_t b = e->b.load(std::memory_order_acquire);
    // L3 pairs with S3.
    uint32_t stage = e->stage.load(std::memory_order_acquire);
    uint64_t n2 = e->nonce.load(std::memory_order_acquire);
    if (n1 == n2 && a == key.a && b == key.b && stage <= max_stage) return n1;
  }
  return 0;
}

Status Mailbox::send(uint32_t peer, uint64_t nonce, uint32_t tag,
                     const void* payload, uint32_t len) {
  const Peer* p = find(peer);
  if (p == nullptr || p->base == nullptr || len > kMboxPayload || nonce == 0)
    return Status::kInvalidParam;
  char* const base = p->base;
  for (uint32_t i = 0; i < kMboxCells; ++i) {
    Cell* c = cell(base, my_ep_, i);
    // W1 pairs with R2: the owner is done with the cell's old contents.
    if (c->state.load(base::acquire_of(base::kMboxReuse)) != 0) continue;
    c->tag = tag;
    c->from_ep = my_ep_;
    c->len = len;
    c->nonce = nonce;
    memcpy(c->payload, payload, len);
    // W2 pairs with R1: the contents before the hand-off.
    c->state.store(1, base::release_of(base::kMboxHandoff));
    return Status::kOk;
  }
  return Status::kInProgress;
}

bool Mailbox::own_request_open(uint64_t nonce) const {
  if (nonce == 0) return false;  // never a request's: closed entries hold 0
  for (uint32_t i = 0; i < kMboxRequests; ++i)
    if (request(seg_, i)->nonce.load(std::memory_order_relaxed) == nonce)
      return true;
  return false;
}

bool Mailbox::recv(uint32_t peer, uint64_t nonce, uint32_t tag, void* out,
                   uint32_t* len) {
  if (!peers_ || peer >= n_eps_) return false;
  for (uint32_t i = 0; i < kMboxCells; ++i) {
    Cell* c = cell(seg_, peer, i);
    // R1 pairs with W2.
    if (c->state.load(base::acquire_of(base::kMboxHandoff)) != 1) continue;
    uint64_t n = c->nonce;
    uint32_t t = c->tag;
    uint32_t from = c->from_ep;
    uint32_t l = c->len;
    bool mine = n == nonce && t == tag;
    if (mine && (from != peer || l > kMboxPayload)) {
      UCC_ERROR("mailbox: malformed message from ep %u (claims ep %u, %u B)",
                peer, from, l);
      mine = false;
    } else if (!mine && own_request_open(n)) {
      continue;  // for another request of ours that is still open
    }
    if (mine) {
      memcpy(out, c->payload, l);
      *len = l;
    }
    // R2 pairs with W1: taken or dropped, the cell goes back to the writer.
    c->state.store(0, base::release_of(base::kMboxReuse));
    if (mine) return true;
  }
  return false;
}

}  // namespace ucc::host

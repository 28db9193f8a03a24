// The context's service mailbox: small bootstrap messages between the
// endpoints of one context (the eps of its OOB), for work that involves a
// subset of them, such as creating a team over an ep_map.
//
// Words used here:
//   segment  one memfd per ep, created with the context, mapped by every
//            other ep of the context through /proc/<pid>/fd/<fd>; the fd
//            is closed once all eps have mapped it (seal()).
//   request  an entry in the owner's segment saying "I am now waiting for
//            messages about `key`": (key, nonce). The owner opens and
//            closes it; every peer may read it. At most kMboxRequests are
//            open at once per ep.
//   nonce    names one request for its whole life: a per-segment counter,
//            never reused, so a message addressed to a request that has
//            closed can never be mistaken for one addressed to a later
//            request with the same key.
//   stage    how far the owner's work on a request has come (1, 2, ...),
//            published with it: a peer that is one creation ahead (it
//            finished the previous request of this key while the owner
//            has not) sees a stage that is already past what it wants to
//            send, and waits for the owner's next request instead.
//   cell     where one peer leaves one message for the owner: kMboxCells
//            cells per (owner, writer) pair, in the owner's segment. A
//            cell is written only by that writer and emptied only by the
//            owner (SPSC hand-off through its state word).
//
// A peer sends only to a request it has seen open, tagging the message
// with that request's nonce; the owner takes only messages whose nonce is
// its own open request's, and empties cells addressed to requests it has
// closed. Everything read from a peer's segment is copied out before it
// is checked; nothing in it is trusted.
//
// Threads: one thread at a time per Mailbox (the context serialises its
// callers).
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform/base/arena.h"
#include "platform/base/status.h"

namespace ucc::host {

using base::Status;

inline constexpr uint32_t kMboxRequests = 4;   // open requests per ep
inline constexpr uint32_t kMboxCells = 8;      // cells per (owner, writer)
inline constexpr uint32_t kMboxPayload = 192;  // bytes of one message

// What an ep publishes (through the context OOB) so peers can map it.
struct MailboxAddr {
  uint32_t magic;
  uint32_t n_eps;
  int32_t pid;
  int32_t fd;
  uint64_t bytes;
};
static_assert(sizeof(MailboxAddr) == 24);

// What a request waits for: two words chosen by the caller.
struct MboxKey {
  uint64_t a;
  uint64_t b;
};

class Mailbox {
 public:
  Mailbox() = default;
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;
  ~Mailbox() { close(); }

  // Creates this ep's segment. kInvalidParam for n_eps == 0 or my_ep out of
  // range, kNoMemory when the segment cannot be made.
  Status open(uint32_t n_eps, uint32_t my_ep, MailboxAddr* out);
  // Maps every peer's segment (all[i] is ep i's address; an all-zero
  // address names an ep on another host, which is left out). kError, with
  // one log line, when an address or a segment header is not what ep i
  // must publish; the mailbox is then unusable (close() it).
  Status attach(const MailboxAddr* all);
  // Every peer has mapped us: our fd is no longer needed.
  void seal();
  void close();

  bool ready() const { return static_cast<bool>(peers_); }
  uint32_t n_eps() const { return n_eps_; }
  uint32_t my_ep() const { return my_ep_; }
  // The pid ep `ep` published (valid after attach(); -1 for one elsewhere).
  int32_t pid_of(uint32_t ep) const;
  // Whether ep `ep`'s segment is mapped (it is on this host).
  bool reachable(uint32_t ep) const {
    const Peer* p = find(ep);
    return p != nullptr && p->base != nullptr;
  }

  // Opens a request for `key` at stage 1: kOk with *slot and *nonce;
  // kNoResource while kMboxRequests are open (retry after one closes);
  // kInvalidParam when a request with the same key is already open.
  Status request_open(const MboxKey& key, uint32_t* slot, uint64_t* nonce);
  // Publishes the request's new stage (never lower than before).
  void request_stage(uint32_t slot, uint32_t stage);
  // Closes it; messages still addressed to it are dropped when seen.
  void request_close(uint32_t slot);
  // The nonce of ep `peer`'s open request for `key` if its stage is at
  // most `max_stage`; 0 when there is none (yet).
  uint64_t request_find(uint32_t peer, const MboxKey& key,
                        uint32_t max_stage) const;

  // Leaves `len` (<= kMboxPayload) bytes for `peer`'s request `nonce`
  // under `tag`. kOk when delivered; kInProgress while all our cells at
  // that peer are in use (retry); kInvalidParam for a bad peer or length.
  Status send(uint32_t peer, uint64_t nonce, uint32_t tag, const void* payload,
              uint32_t len);
  // Takes the message `peer` left for our request `nonce` under `tag`:
  // true with its payload copied to `out` (kMboxPayload bytes) and its
  // length in *len. Drops, on the way, the peer's messages addressed to
  // requests of ours that are no longer open.
  bool recv(uint32_t peer, uint64_t nonce, uint32_t tag, void* out,
            uint32_t* len);

 private:
  // The eps of this host (ourselves included), by ep: a context of
  // thousands of eps keeps an entry for its host's few only.
  struct Peer {
    uint32_t ep;
    int32_t pid;
    char* base;
    size_t bytes;  // 0 for our own segment (not a separate mapping)
  };
  const Peer* find(uint32_t ep) const;

  bool own_request_open(uint64_t nonce) const;

  char* seg_ = nullptr;
  size_t seg_bytes_ = 0;
  int fd_ = -1;
  uint32_t n_eps_ = 0;
  uint32_t my_ep_ = 0;
  uint64_t next_nonce_ = 1;
  base::Array<Peer> peers_;  // this host's eps, from attach
};

}  // namespace ucc::host

// Team bootstrap through the context mailbox, for teams over an ep_map
// without a team OOB: only the members take part, so the context-wide OOB
// allgather cannot carry it. Each of the two exchanges of team creation
// (fabric addresses, then "connected") becomes an all-to-all of small
// messages between the members' mailboxes:
//
//   key      what names the team being created: (id, digest of the member
//            list) when UCC_TEAM_PARAM_FIELD_ID is given, else (0, digest).
//            Concurrent creations of different teams have different keys;
//            two teams with the same members created at the same time need
//            distinct ids (a second one with the same key on this context
//            fails at post with UCC_ERR_INVALID_PARAM).
//   request  each member opens one for its key in its own mailbox (the
//            mailbox's nonce names this creation and no other); peers send
//            only to an open request, with its nonce, and the owner takes
//            only messages carrying the nonce of its own open request. A
//            message left over from an earlier creation (same key, an
//            older nonce) is therefore never read, only dropped.
//   phase    1: this member's fabric segment address; 2: whether it could
//            connect to every member. A member closes its request when
//            creation ends; by then every peer has sent it both messages.
//            Its request shows the phase it is in, and a peer sends phase
//            p only to a request in phase <= p: a member that finished one
//            creation of a team and posted the next with the same key
//            must not hand its new address to a slower member still in
//            phase 2 of the previous creation, which would never read it.
//
// Everything a message says is checked against what we expect: magic,
// phase, key, team size, the sender's team rank (its place in our map)
// and pid (what its context ep published), and for phase 1 that the
// segment belongs to that pid (emu: to the node's firmware_sim daemon).
// Creation fails with UCC_ERR_TIMED_OUT when it has not finished
// UCC_TEAM_CREATE_TIMEOUT after post.
//
// Threads: callers hold the context lock (the mailbox is the context's).
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "host/team/team.h"
#include "platform/os/clock.h"
#include "platform/os/log.h"

namespace ucc::host {
namespace {

constexpr uint32_t kBootMagic = 0x55435442u;  // "UCTB"
constexpr uint32_t kAddrPhase = 1;            // carries a TeamAddr
constexpr uint8_t kSent = 1;                  // per phase p: << 2 * (p - 1)
constexpr uint8_t kGot = 2;

struct BootMsg {
  uint32_t magic;
  uint32_t phase;
  uint64_t key_a;
  uint64_t key_b;
  uint32_t team_size;
  uint32_t team_rank;  // the sender's
  int32_t pid;         // the sender's
  uint32_t len;        // bytes of body in use
  unsigned char body[sizeof(off::TeamAddr)];
};
static_assert(sizeof(BootMsg) <= host::kMboxPayload);

uint64_t mix(uint64_t h, uint64_t v) {  // splitmix64 over h ^ v
  uint64_t x = h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void enqueue(ucc_team* t) {
  ucc_context* ctx = t->ctx;
  t->queued = true;
  t->boot_next = nullptr;
  if (ctx->boot_queue_tail != nullptr) {
    ctx->boot_queue_tail->boot_next = t;
  } else {
    ctx->boot_queue = t;
  }
  ctx->boot_queue_tail = t;
}

void dequeue(ucc_team* t) {
  ucc_context* ctx = t->ctx;
  ucc_team* prev = nullptr;
  for (ucc_team* q = ctx->boot_queue; q != nullptr;
       prev = q, q = q->boot_next) {
    if (q != t) continue;
    (prev != nullptr ? prev->boot_next : ctx->boot_queue) = t->boot_next;
    if (ctx->boot_queue_tail == t) ctx->boot_queue_tail = prev;
    break;
  }
  t->queued = false;
  t->boot_next = nullptr;
}

// Opens our request; UCC_OK, UCC_INPROGRESS (no free request yet, or
// earlier posts are still waiting for one) or UCC_ERR_INVALID_PARAM (the
// same key is being created already). Requests go out in post order so
// that members posting the same creations in the same order cannot each
// hold requests for teams the others are still waiting to start.
ucc_status_t open_request(ucc_team* t) {
  ucc_context* ctx = t->ctx;
  if (ctx->boot_queue != nullptr && ctx->boot_queue != t) {
    if (!t->queued) enqueue(t);
    return UCC_INPROGRESS;
  }
  host::Mailbox& mb = ctx->mbox;
  off::Status s = mb.request_open(t->key, &t->req_slot, &t->req_nonce);
  if (s == off::Status::kNoResource) {
    if (!t->queued) enqueue(t);
    return UCC_INPROGRESS;
  }
  if (t->queued) dequeue(t);
  if (off::failed(s)) {
    t->req_nonce = 0;
    UCC_ERROR(
        "ucc_team_create_post: a team with the same members%s is already "
        "being created on this context; concurrent creations need distinct "
        "ids (UCC_TEAM_PARAM_FIELD_ID)",
        t->has_id ? " and id" : "");
    return UCC_ERR_INVALID_PARAM;
  }
  return UCC_OK;
}

bool valid_msg(const ucc_team* t, const BootMsg& m, uint32_t l, uint32_t phase,
               uint32_t from_rank, size_t len) {
  const host::Mailbox& mb = t->ctx->mbox;
  if (l != sizeof(BootMsg) || m.magic != kBootMagic || m.phase != phase ||
      m.key_a != t->key.a || m.key_b != t->key.b || m.team_size != t->size ||
      m.team_rank != from_rank || m.len != len ||
      m.pid != mb.pid_of(static_cast<uint32_t>(t->eps[from_rank])))
    return false;
  if (phase == kAddrPhase) {
    off::TeamAddr a;
    memcpy(&a, m.body, sizeof(a));
    // Inline, the sender's engine owns the segment; emu, the node's daemon.
    const int owner =
        t->ctx->engine->remote() ? t->ctx->engine->owner_pid() : m.pid;
    if (len != sizeof(a) || a.owner_pid != owner) return false;
  }
  return true;
}

ucc_status_t timed_out(ucc_team* t, uint32_t phase, uint8_t want) {
  uint32_t r = 0;
  while (r < t->size && (r == t->rank || (t->boot_bits[r] & want) == want)) ++r;
  const char* why = "has not answered";
  if (r < t->size && t->peer_nonce[r] == 0)
    why = "never started creating this team";
  UCC_ERROR(
      "ucc_team_create_test: timed out in phase %u after "
      "UCC_TEAM_CREATE_TIMEOUT (%llu ms): team rank %u (context ep %llu) %s",
      phase,
      static_cast<unsigned long long>(t->ctx->settings.team_timeout_ns /
                                      1000000),
      r, static_cast<unsigned long long>(r < t->size ? t->eps[r] : 0), why);
  return UCC_ERR_TIMED_OUT;
}

}  // namespace

ucc_status_t mbox_begin(ucc_team* t) {
  t->via_mbox = true;
  for (uint32_t i = 0; i < t->size; ++i) {
    const uint32_t ep = static_cast<uint32_t>(t->eps[i]);
    if (i != t->rank && !t->ctx->mbox.reachable(ep)) {
      UCC_ERROR(
          "ucc_team_create_post: team rank %u (context ep %u) is on another "
          "host; a team over an ep_map spans one host only: give the team "
          "an OOB (UCC_TEAM_PARAM_FIELD_OOB)",
          i, ep);
      return UCC_ERR_NOT_SUPPORTED;
    }
  }
  uint64_t h = mix(0x7465616d6b6579ull, t->has_id ? 1 : 0);  // "teamkey"
  h = mix(h, t->size);
  for (uint32_t i = 0; i < t->size; ++i) h = mix(h, t->eps[i]);
  t->key = host::MboxKey{t->has_id ? t->id : 0, h};
  // peer_nonce and boot_bits: taken, zeroed, at team_join.
  t->deadline_ns = plat::now_ns() + t->ctx->settings.team_timeout_ns;
  ucc_status_t st = open_request(t);
  return st == UCC_INPROGRESS ? UCC_OK : st;
}

void mbox_end(ucc_team* t) {
  if (t->queued) dequeue(t);
  if (!t->via_mbox || t->req_nonce == 0) return;
  t->ctx->mbox.request_close(t->req_slot);
  t->req_nonce = 0;
}

ucc_status_t mbox_step(ucc_team* t, uint32_t phase, const void* src, void* dst,
                       size_t len) {
  if (len > sizeof(BootMsg::body) || phase < 1 || phase > 2)
    return UCC_ERR_INVALID_PARAM;
  const uint8_t want = static_cast<uint8_t>((kSent | kGot) << 2 * (phase - 1));
  const uint8_t sent = static_cast<uint8_t>(kSent << 2 * (phase - 1));
  const uint8_t got = static_cast<uint8_t>(kGot << 2 * (phase - 1));
  if (t->req_nonce == 0) {
    ucc_status_t st = open_request(t);
    if (st == UCC_INPROGRESS && plat::now_ns() > t->deadline_ns)
      return timed_out(t, phase, want);
    if (st != UCC_OK) return st;
  }
  host::Mailbox& mb = t->ctx->mbox;
  // Before any message of this phase leaves (see request_find above).
  mb.request_stage(t->req_slot, phase);
  auto* out = static_cast<unsigned char*>(dst);
  memcpy(out + t->rank * len, src, len);
  BootMsg m{};
  m.magic = kBootMagic;
  m.phase = phase;
  m.key_a = t->key.a;
  m.key_b = t->key.b;
  m.team_size = t->size;
  m.team_rank = t->rank;
  m.pid = getpid();
  m.len = static_cast<uint32_t>(len);
  memcpy(m.body, src, len);
  bool done = true;
  for (uint32_t r = 0; r < t->size; ++r) {
    if (r == t->rank) continue;
    const uint32_t ep = static_cast<uint32_t>(t->eps[r]);
    uint8_t& bits = t->boot_bits[r];
    if (!(bits & sent)) {
      // Phase p goes only to a request at stage <= p: one at a later
      // stage belongs to the member's previous creation of this team.
      uint64_t n = mb.request_find(ep, t->key, phase);
      if (n != 0 && t->peer_nonce[r] != 0 && n != t->peer_nonce[r]) {
        UCC_ERROR(
            "ucc_team_create_test: team rank %u (context ep %u) restarted "
            "creating this team",
            r, ep);
        return UCC_ERR_NO_MESSAGE;
      }
      if (n != 0) {
        t->peer_nonce[r] = n;
        if (off::ok(mb.send(ep, n, phase, &m, sizeof(m)))) bits |= sent;
      }
    }
    if (!(bits & got)) {
      BootMsg in;
      uint32_t l = 0;
      if (mb.recv(ep, t->req_nonce, phase, &in, &l)) {
        if (!valid_msg(t, in, l, phase, r, len)) {
          UCC_ERROR(
              "ucc_team_create_test: invalid bootstrap message from team "
              "rank %u (context ep %u) in phase %u",
              r, ep, phase);
          return UCC_ERR_NO_MESSAGE;
        }
        memcpy(out + r * len, in.body, len);
        bits |= got;
      }
    }
    done = done && (bits & want) == want;
  }
  if (done) return UCC_OK;
  if (plat::now_ns() > t->deadline_ns) return timed_out(t, phase, want);
  return UCC_INPROGRESS;
}

}  // namespace ucc::host

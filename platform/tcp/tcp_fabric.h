// One team member's fabric over TCP (platform/fabric/fabric.h): the inbox
// protocol (fabric/inbox.h) on memory of its own. Its segment holds the
// inboxes the peers' messages land in (written by the connection that
// reads them, tcp_net.cc); for each remote peer a shadow of the peer's
// inbox for us holds what we send, until the peer's credits free it.
// The endpoint lives in its engine's TcpNet. connect() keeps each remote
// peer's address; a peer's link (and the connection to its engine) is
// made at first use: the first message to it, a one-sided get, the first
// frame from it, or a team stuck waiting on it (waiting_on). A member of
// a team of thousands running log-round algorithms thus connects to the
// log2 N peers it talks to, not to all of them (docs/network.md).
//
// Threads: the engine's.
#pragma once

#include <cstdint>

#include "platform/fabric/inbox_fabric.h"
#include "platform/tcp/tcp_proto.h"

namespace ucc::plat::tcp {

class TcpNet;
class TcpFabric;
struct Conn;

// Gets and puts outstanding per link, each way (tcp_rma.cc).
inline constexpr uint32_t kMaxGets = 8;

// The state of one endpoint towards one remote peer (tcp_proto.h).
struct Link {
  enum class State : uint8_t { kNone, kLive, kLeft, kLost };
  TcpFabric* fab = nullptr;
  uint32_t rank = 0;       // the peer's team rank
  uint32_t peer_ep = 0;    // its endpoint id
  uint64_t instance = 0;   // its engine
  uint32_t peer_ip = 0;    // its engine's address (network order)
  uint16_t peer_port = 0;
  uint64_t peer_key[2] = {};  // its engine's key
  State state = State::kNone;
  Conn* conn = nullptr;
  Link* next = nullptr;  // on the connection's list
  InboxView shadow;      // our inbox in the peer's memory (our copy)
  InboxView rx;          // its inbox in our segment
  uint32_t msgs = 0;     // messages of ours written out whole
  uint32_t acked = 0;    // of those, received (the peer's ack)
  uint32_t heads = 0;    // its messages we have received
  uint8_t done_sent[kMaxSlots] = {};
  // Credits to send: owed at all (slots released), and at once (after a
  // reconnection, to a peer a team waits on); since when the oldest
  // release not sent has waited (tcp_proto.h, kCreditDelayUs); how many
  // of its messages our credits sent so far have freed (heads - credited:
  // the slots the peer still counts as taken).
  bool credit_owed = false;
  bool credit_urgent = false;
  uint64_t credit_since = 0;
  uint32_t credited = 0;
  bool bye_owed = false;     // we left: say so (again after a break)
  bool bye_acked = false;    // the peer has our goodbye
  bool byeack_owed = false;  // the peer left: answer its goodbye
  uint8_t bye_flags = 0;
  // One-sided (tcp_rma.cc). Our gets and puts towards the peer, a ring:
  // posted up to get_tail, answered whole up to get_head, asked on this
  // connection up to get_asked. What we owe the peer for its gets and
  // puts of our memory, a ring from ans_head to ans_tail.
  uint64_t rma_min = 0;  // agreed at connect (Fabric::rma_min)
  struct Get {
    char* dst;        // a get's: nullptr once its registration went (dropped)
    const char* src;  // a put's bytes
    uint64_t raddr;
    uint32_t rkey;
    uint32_t len;
    uint32_t handle;  // our registration it lands in or comes from
    bool put;
  } gets[kMaxGets] = {};
  uint32_t get_head = 0, get_tail = 0, get_asked = 0;
  uint64_t rma_done = 0;
  struct Answer {
    const char* src;
    uint32_t len;
    uint32_t handle;  // the registration it reads (kMaxRmaRegs: refused)
    bool ack;         // a put's acknowledgement (no bytes)
  } answers[kMaxGets] = {};
  uint32_t ans_head = 0, ans_tail = 0;
};

class TcpFabric final : public InboxFabric {
 public:
  TcpFabric(TcpNet* net, uint32_t id, const FabricConfig& cfg);
  ~TcpFabric() override;
  TcpFabric(const TcpFabric&) = delete;
  TcpFabric& operator=(const TcpFabric&) = delete;

  // --- Fabric -----------------------------------------------------------------
  // Reaches the ranks with mine[r] (never ourselves). kError for an address
  // that is not a TCP one or whose fabric differs from ours, kNoMemory.
  Status connect(const FabricAddr* addrs, const bool* mine) override;
  void seal() override {}
  void tx_commit(uint32_t peer, uint32_t len, const MsgKey& key, uint8_t kind,
                 uint32_t lag = 0) override;
  void rx_release(uint32_t peer, uint32_t i) override;
  bool peer_lost() const override;
  void waiting_on(uint32_t peer) override;
  void fail() override;
  uint32_t attention() const override;
  uint32_t heard_count() const override { return nmade_; }
  uint32_t heard_peer(uint32_t i) const override {
    return peers_[made_[i]].rank;
  }
  uint64_t events() const override { return events_; }
  bool tx_flushed() const override;
  // One-sided, emulated (tcp_rma.cc): the target's progress moves the
  // bytes.
  uint64_t rma_min(uint32_t peer) const override {
    return peers_[pair_of(peer)].rma_min;
  }
  Status mem_reg(void* addr, uint64_t len, uint32_t access,
                 RmaReg* reg) override;
  void mem_dereg(uint32_t handle) override;
  Status get(uint32_t peer, void* local, const RmaReg& reg, uint64_t raddr,
             uint32_t rkey, uint32_t len, uint64_t* ticket) override;
  Status put(uint32_t peer, const void* local, const RmaReg& reg,
             uint64_t raddr, uint32_t rkey, uint32_t len,
             uint64_t* ticket) override;
  uint64_t rma_done(uint32_t peer) const override {
    const uint32_t k = pair_of(peer);
    return peers_[k].made ? links_[k].rma_done : 0;
  }
  // A peer's get of our memory (the connection read its request): the
  // answer, queued on the link; false when the link already owes
  // kMaxGets (the peer broke the protocol).
  bool on_get(Link& l, const RmaReq& q);
  // A peer's put into our memory, its request read: where its bytes go
  // (nullptr: refused, they are dropped) and *handle the registration
  // (kMaxRmaRegs when refused).
  char* put_target(const RmaReq& q, uint32_t* handle) const;
  // The put read whole: its acknowledgement queued (handle kMaxRmaRegs:
  // refused); false as on_get.
  bool on_put(Link& l, uint32_t handle);
  // Registrations held (tests).
  uint32_t rma_regs() const;

  // --- for the net ------------------------------------------------------------
  uint32_t id() const { return id_; }
  const FabricConfig& config() const { return cfg_; }
  bool memory_ok() const { return seg_ != nullptr; }
  // The link of team rank r for a frame from endpoint `ep` of engine
  // `instance`: made now if it was not (bound to no connection yet), or
  // nullptr when r is not reached over TCP or lives elsewhere.
  Link* link_from(uint32_t r, uint64_t instance, uint32_t ep) {
    if (!serves(r)) return nullptr;
    const uint32_t k = pair_of(r);
    const Peer& p = peers_[k];
    if (p.instance != instance || p.ep != ep) return nullptr;
    return &made(k);
  }
  // A message from link l's peer has arrived whole in slot `slot` of our
  // inbox for it: append it to the arrival order.
  void publish(Link& l, uint32_t slot);
  // The member left its team (Net::close): say goodbye on every link and
  // linger until what we owe is written.
  void leave(bool lost);
  bool leaving() const { return leaving_; }
  // Whether every live peer has our goodbye and every goodbye we got is
  // answered (or the peer's engine is gone): the memory can go.
  bool drained() const;

 private:
  // A pair's sending side: our shadow of the peer's inbox (lazy pairs).
  InboxView shadow_of(uint32_t r, uint32_t k) override {
    (void)r;
    return shadow_view(shadows_ + shadow_bytes(cfg_) * k);
  }
  // A registration (mem_reg): its bytes, what peers may do, its key.
  struct Reg {
    uint64_t addr;
    uint64_t len;
    uint32_t key;  // 0: free
    uint32_t access;
  };

  // The registration a peer's request names (key, `access` right, bounds,
  // at most kRmaMaxOp), or kMaxRmaRegs when it may not.
  uint32_t allowed(const RmaReq& q, uint32_t access) const;
  // Queues a get or a put (op) on peer's link once its local side is
  // checked against `reg` (which must grant `need`).
  Status post_rma(uint32_t peer, const Link::Get& op, const RmaReg& reg,
                  uint32_t need, uint64_t* ticket);
  // Link l after registration `handle` was given back (tcp_rma.cc).
  void forget(Link& l, uint32_t handle);

  // A remote peer as its address gave it (connect), until its link is
  // made from it.
  struct Peer {
    uint64_t instance;  // its engine
    uint64_t key[2];    // its engine's key
    uint64_t rma_min;   // agreed (Fabric::rma_min)
    uint32_t ip;        // its engine's address (network order)
    uint32_t ep;        // its endpoint id
    uint32_t rank;      // its team rank
    uint16_t port;
    bool made;  // links_[k] is constructed
  };
  // Pair k's link, made from its peer's address on first use; a member
  // that has failed or is leaving owes it a goodbye at once.
  Link& made(uint32_t k) {
    if (!peers_[k].made) make(k);
    return links_[k];
  }
  void make(uint32_t k);
  // Link l owes its peer our goodbye, which says whether we failed; every
  // live link made so far, at once.
  void owe_bye(Link& l) {
    l.bye_owed = true;
    l.bye_flags = failed_ ? kLost : 0;
  }
  void say_goodbyes();
  // Pair k's link, with a connection to its engine being made if it had
  // none (a peer lost or gone gets none).
  Link& reached(uint32_t k);

  TcpNet* net_;
  uint32_t id_;
  Reg* regs_ = nullptr;      // kMaxRmaRegs
  char* seg_ = nullptr;      // our inboxes (segment layout)
  // Per pair (InboxFabric::pair_of: the remote ranks we reach), from
  // link_mem_, taken at connect.
  base::Arena link_mem_;
  char* shadows_ = nullptr;  // our copy of the peer's inbox for us
  Link* links_ = nullptr;    // constructed when made (Peer::made)
  Peer* peers_ = nullptr;
  uint32_t* made_ = nullptr;  // the pairs whose links are made, in order
  uint32_t nmade_ = 0;
  bool leaving_ = false;
  bool failed_ = false;  // fail(): our goodbyes say we are lost
  uint64_t events_ = 0;
};

}  // namespace ucc::plat::tcp

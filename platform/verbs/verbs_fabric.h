// One team member's fabric over verbs (verbs_net.h): the inbox protocol
// (fabric/inbox.h) on registered memory. Its segment holds the inboxes
// the peers write their messages into; for each remote peer a shadow of
// the peer's inbox for us holds what we send, and receives the peer's
// release counts. One RC queue pair per remote peer it talks to, made on
// demand (the first message or one-sided operation towards the peer, the
// peer's hello, or a team stuck waiting on it), all on this member's
// completion queue and the net's shared receive queue.
//
// Threads: the engine's.
#pragma once

#include <cstdint>

#include "platform/fabric/inbox_fabric.h"
#include "platform/verbs/verbs_api.h"
#include "platform/verbs/verbs_net.h"

namespace ucc::plat::verbs {

class VerbsNet;

inline constexpr uint32_t kVerbsAddrMagic = 0x55435642u;  // "UCVB"

// Work request ids: the shared receive queue's (all ones), or
// (rank << 8) | kind, and for one-sided operations (kind kRmaWrKind)
// also (registration handle + 1) << 32.
inline constexpr uint64_t kRmaWrKind = 3;

// A member's FabricAddr over verbs: kind kVerbsAddrMagic, `pad` the
// smallest message the member moves one-sided (0: none; Fabric::rma_min),
// `bytes` its connection manager's address, whose kind is the same for
// every member (the net's cm_kind()).

// What goes over the connection manager, one message each (all fields
// the peer's: checked before use).
struct CmMsg {
  enum Type : uint32_t { kHello = 1, kReady = 2, kBye = 3, kByeAck = 4 };
  uint32_t type;
  QpAddr qp;             // kHello: its queue pair for us
  uint64_t seg_addr;     // its segment (our inbox there)
  uint64_t shadow_addr;  // its shadows (our credits there)
  uint32_t seg_rkey;
  uint32_t shadow_rkey;
  uint32_t slot_size;
  uint16_t nslots;
  uint8_t lost;  // kBye: it failed
  uint8_t pad;
};
static_assert(sizeof(CmMsg) == 64);

struct VLink {
  // kIdle: a remote peer with no queue pair yet (made on demand).
  enum class State : uint8_t {
    kNone,
    kIdle,
    kConnecting,
    kReady,
    kLeft,
    kFailed
  };
  State state = State::kNone;
  bool hello_sent = false;
  bool got_hello = false;  // our QP is at RTS
  bool ready_sent = false;
  bool peer_ready = false;
  bool credit_owed = false;
  bool bye_sent = false;
  bool bye_acked = false;  // the peer will write to us no more
  bool ack_owed = false;   // the peer left: answer once our writes are done
  bool listed = false;  // on the fabric's owed list
  ibv_qp* qp = nullptr;
  // Our inbox for the peer (its slots in our segment) and our shadow of
  // its inbox for us, registered when the link starts: a member pins
  // memory for the peers it talks to, not for the whole team. The peer's
  // rkeys reach these ranges alone.
  ibv_mr* inbox_mr = nullptr;
  ibv_mr* shadow_mr = nullptr;
  ibv_mr* credit_mr = nullptr;  // our release counts for it (local reads)
  uint8_t cq = 0;  // VerbsFabric::cqs_ index of its queue pair's CQ
  uint32_t psn = 0;
  uint64_t peer_seg = 0;
  uint32_t peer_seg_rkey = 0;
  uint64_t peer_shadow = 0;  // our credit line there
  uint32_t peer_shadow_rkey = 0;
  uint32_t msgs = 0;         // of our shadow's messages, posted
  uint32_t outstanding = 0;  // work requests posted, not completed
  uint64_t rma_min = 0;      // agreed at connect (Fabric::rma_min)
  uint64_t rma_posted = 0;   // gets and puts posted
  uint64_t rma_done = 0;     // ... and completed successfully
  uint64_t since = 0;        // connecting since / last completion (ns)
  InboxView shadow;          // the peer's inbox for us (our copy)
};

class VerbsFabric final : public InboxFabric {
 public:
  VerbsFabric(VerbsNet* net, const FabricConfig& cfg, Fabric* cm);
  ~VerbsFabric() override;
  VerbsFabric(const VerbsFabric&) = delete;
  VerbsFabric& operator=(const VerbsFabric&) = delete;

  // Memory and its registration; false when either failed.
  bool setup();

  // --- Fabric
  // ----------------------------------------------------------------- The
  // peers' addresses; queue pairs come on demand (start()).
  Status connect(const FabricAddr* addrs, const bool* mine) override;
  void seal() override;
  void tx_commit(uint32_t peer, uint32_t len, const MsgKey& key, uint8_t kind,
                 uint32_t lag = 0) override;
  void rx_release(uint32_t peer, uint32_t i) override;
  bool peer_lost() const override;
  void waiting_on(uint32_t peer) override;
  void fail() override {
    if (!broken_) break_links();
  }
  uint32_t attention() const override;
  // Messages come only on links made (a peer writes after our hello).
  uint32_t heard_count() const override { return nmade_; }
  uint32_t heard_peer(uint32_t i) const override { return made_[i]; }
  uint64_t events() const override { return events_; }
  bool tx_flushed() const override;
  uint64_t rma_min(uint32_t peer) const override {
    return peer < cfg_.nranks ? rma_[peer] : 0;
  }
  Status mem_reg(void* addr, uint64_t len, uint32_t access,
                 RmaReg* reg) override;
  void mem_dereg(uint32_t handle) override;
  Status get(uint32_t peer, void* local, const RmaReg& reg, uint64_t raddr,
             uint32_t rkey, uint32_t len, uint64_t* ticket) override {
    return post_rma(peer, IBV_WR_RDMA_READ, local, reg, raddr, rkey, len,
                    ticket);
  }
  Status put(uint32_t peer, const void* local, const RmaReg& reg,
             uint64_t raddr, uint32_t rkey, uint32_t len,
             uint64_t* ticket) override {
    return post_rma(peer, IBV_WR_RDMA_WRITE, const_cast<void*>(local), reg,
                    raddr, rkey, len, ticket);
  }
  uint64_t rma_done(uint32_t peer) const override {
    return made(peer) ? links_[peer].rma_done : 0;
  }
  // Registrations held; links made (tests).
  uint32_t rma_regs() const;
  uint32_t links_made() const { return nmade_; }

  // --- for the net ------------------------------------------------------------
  // Completions, connection messages, what is owed: returns how much
  // happened. `cm_too`: also read the connection manager's messages of
  // connected links (goodbyes), which is not urgent.
  uint64_t progress(bool cm_too);
  // The member left (Net::close): goodbyes once what we owe is out.
  void leave(bool lost);
  // Left, and everything owed is delivered or never will be.
  bool drained() const;
  bool leaving() const { return leaving_; }
  bool left_lost() const { return lost_leave_; }
  // Links still connecting, or leaving: the manager's messages matter.
  bool busy() const { return connecting_ != 0 || leaving_; }
  Fabric* cm() const { return cm_; }
  // When the net may free us (after the connection manager closed).
  uint64_t free_at = 0;
  bool cm_closed = false;

 private:
  // A pair's sending side: our shadow of the peer's inbox (lazy pairs).
  InboxView shadow_of(uint32_t r, uint32_t k) override {
    (void)k;
    return shadow_view(shadows_ + shadow_bytes(cfg_) * r);
  }
  // Link r's queue pair, made now if it is idle; its hello goes at once
  // (after seal).
  void start(uint32_t r);
  // Whether rank r's link has been made (a remote peer's is idle until
  // then), and making it: constructed, idle, listed in made_.
  bool made(uint32_t r) const { return r < cfg_.nranks && is_made_[r] != 0; }
  VLink& make(uint32_t r);
  void create_qp(uint32_t r);
  // Registers link r's inbox and shadow (false: the link failed).
  bool reg_link(uint32_t r);
  // A completion queue with room for one more link's queue pair, made
  // now if every one is full; kNoCq when none can be.
  uint32_t cq_with_room();
  bool add_cq(uint32_t links);
  static constexpr uint32_t kNoCq = UINT32_MAX;
  void fail(uint32_t r, const char* why);
  bool send_cm(uint32_t r, uint32_t type);
  void on_cm(uint32_t r, const CmMsg& m);
  void advance(uint32_t r);
  uint64_t read_cm(uint32_t r);
  uint64_t poll_cq(uint32_t i);
  void on_recv(const ibv_wc& wc);
  // Posts the link's committed messages and owed credits; false while
  // some must wait (not connected yet, send queue full).
  bool post_owed(uint32_t r);
  void owe(uint32_t r);
  bool post_write(VLink& l, uint32_t r, const void* src, uint32_t len,
                  uint32_t lkey, uint64_t raddr, uint32_t rkey, bool imm,
                  uint32_t imm_slot);
  void publish(uint32_t r, uint32_t slot);
  // Posts one work request on link r's queue pair; false (the link
  // failed) when the device refuses it.
  bool post_wr(VLink& l, uint32_t r, ibv_send_wr& wr);
  Status post_rma(uint32_t r, ibv_wr_opcode op, void* local, const RmaReg& reg,
                  uint64_t raddr, uint32_t rkey, uint32_t len,
                  uint64_t* ticket);
  void rma_completed(uint64_t wr_id, VLink& l, bool ok);
  bool check_peers();
  void break_links();

  // A registration of mem_reg: its device registration, the fabric's
  // operations on it still running, and whether it was given back (its
  // device registration goes when the last of them completes).
  struct RegEnt {
    ibv_mr* mr;
    uint32_t inflight;
    bool dying;
  };

  VerbsNet* net_;
  Fabric* cm_;
  RegEnt* regs_ = nullptr;  // kMaxRmaRegs
  bool reg_warned_ = false;
  char* seg_ = nullptr;      // our inboxes (segment layout)
  char* shadows_ = nullptr;  // one shadow per team rank, used for remote ones
  size_t seg_bytes_ = 0;
  size_t shadows_bytes_ = 0;
  // Completion queues, made as links start: the first at connect for
  // min(remote peers, VerbsConfig::cq_links) links, each next one for
  // twice as many as the last (or the remote peers left), so the entries
  // grow with the peers talked to, not with the team.
  static constexpr uint32_t kMaxCqs = 16;
  ibv_cq* cqs_[kMaxCqs] = {};
  uint32_t cq_room_[kMaxCqs] = {};  // links each may still take
  uint32_t ncq_ = 0;
  uint32_t cq_links_ = 0;       // links the CQs were made for, in all
  uint32_t last_cq_links_ = 0;  // ... the last one
  uint32_t max_send_ = 0;  // work requests per queue pair
  static constexpr uint32_t kUnknownInline = UINT32_MAX;
  uint32_t max_inline_ = kUnknownInline;  // granted, once a QP exists
  // Per team rank, in the arena, whose pages are touched only for the
  // links made (a large block is a fresh mapping): a member of a team of
  // thousands pays for the peers it talks to (made_), plus rma_ and
  // is_made_ (5 bytes) for every remote rank.
  VLink* links_ = nullptr;    // constructed when made
  uint32_t* made_ = nullptr;  // the ranks whose links are made, in order
  uint32_t nmade_ = 0;
  uint8_t* is_made_ = nullptr;
  uint32_t* rma_ = nullptr;    // per peer: Fabric::rma_min, from connect
  uint32_t* heads_ = nullptr;  // per peer: its messages received
  uint32_t* owe_ = nullptr;    // links with something to post
  uint32_t nowe_ = 0;
  uint32_t nremote_ = 0;
  uint32_t connecting_ = 0;  // links not yet ready (nor failed)
  uint32_t cm_attention_ = 0;  // the manager's hellos and goodbyes seen
  uint32_t acks_owed_ = 0;   // goodbyes not answered yet
  bool leaving_ = false;
  bool sealed_ = false;  // every member connected: hellos may go
  bool lost_ = false;       // a link failed
  bool lost_leave_ = false;  // we left because we failed
  bool broken_ = false;      // our links were failed on purpose
  uint64_t events_ = 0;
};

}  // namespace ucc::plat::verbs

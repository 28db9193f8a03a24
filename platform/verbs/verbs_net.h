// Verbs RDMA between hosts: an engine's Net (platform/fabric/fabric.h)
// over an RC queue pair per pair of team members, on InfiniBand or RoCE
// (rdma-core's libibverbs, loaded at run time: verbs_api.h).
//
// Data path, per message: the sender writes header and payload into its
// shadow of the peer's inbox (fabric/inbox.h), then one
// RDMA_WRITE_WITH_IMM puts them into the peer's slot; the immediate
// names the sender's rank and the slot, and its completion, taken from
// the net's shared receive queue, publishes the message in the
// receiver's inbox. Messages that fit the queue pair's inline limit go
// inline (no read of our memory by the NIC). Credits: the receiver's
// release counts (one cache line per peer) go back by a plain
// RDMA_WRITE into the sender's shadow, where tx_reserve finds them, as
// over shared memory.
//
// Connection management: the queue pairs' numbers, PSNs, LID/GID and
// memory keys travel over a second Net given at init (the connection
// manager: TCP, as rdma_cm uses IP). Each member also publishes that
// net's address inside its own, so a team exchanges both in one OOB
// round. Per link, at first use: hello (our QP, RESET -> INIT, sent),
// RTR and RTS on the peer's hello, then "ready"; data goes out once the peer is
// ready too, so no write ever meets a queue pair that cannot take it. Goodbyes
// go the same way (a peer that left is not a lost one). The connection manager
// also tells when a peer's process died (its socket closed).
//
// Failure: an error completion (retry or RNR retries exceeded, a remote
// access error, a flushed work request) fails its link; so does a link
// that does not connect, or a work request not completed, within the
// peer timeout. peer_lost() then reports it, and the engine fails the
// team's collectives: an error, never a hang.
//
// Queue pairs are made on demand (verbs_fabric.h), so a member has one
// per peer it talks to; the connection manager's TCP connections too.
//
// Threads: the engine's. Memory: device, PD and SRQ at init; CQ and
// registered memory at team creation (open/connect), queue pairs at first
// use; progress allocates nothing of ours.
#pragma once

#include <cstdint>

#include "platform/base/arena.h"
#include "platform/fabric/fabric.h"
#include "platform/fabric/net_config.h"
#include "platform/verbs/verbs_api.h"

namespace ucc::plat::verbs {

struct VerbsStats {
  uint64_t tx_msgs, rx_msgs, credits;
  uint64_t inline_msgs;  // of tx_msgs
  uint64_t errors;       // error completions
  uint64_t bad_imm;      // receive completions naming no live link
  uint64_t rma_ops;      // gets and puts posted
  uint64_t rma_bytes;    // ... and their bytes
  uint64_t regs;         // user memory registrations made
  uint64_t qps;          // queue pairs made (on demand)
  uint64_t cqes;         // completion queue entries made (as links start)
  uint64_t fabric_regs;  // the fabrics' own memory registered, bytes
};

class VerbsFabric;

// One end of an RC queue pair, as its owner tells the other end (the
// fabric's hello, the channel's connect): what the other side needs to
// move its own queue pair to RTR.
struct QpAddr {
  uint32_t qpn;
  uint32_t psn;
  uint16_t lid;
  uint8_t mtu;       // ibv_mtu
  uint8_t rd_depth;  // RDMA READs it takes in at once (0: one)
  uint8_t gid[16];
};
static_assert(sizeof(QpAddr) == 28);

// Whether a peer's QpAddr can be one (it comes from another process).
inline bool qp_addr_ok(const QpAddr& a) {
  return a.qpn != 0 && a.qpn < (1u << 24) && a.psn < (1u << 24) &&
         a.mtu >= IBV_MTU_256 && a.mtu <= IBV_MTU_4096;
}

class VerbsNet final : public Net {
 public:
  VerbsNet() = default;
  VerbsNet(const VerbsNet&) = delete;
  VerbsNet& operator=(const VerbsNet&) = delete;
  ~VerbsNet() override { fini(); }

  // Loads the library, opens the device and port, a protection domain
  // and the shared receive queue; `cm` carries connection setup (not
  // owned; this net drives its progress). kNoResource when there is no
  // library or no active port (the reason logged), kInvalidParam for a
  // device that does not exist, kError.
  Status init(const VerbsConfig& cfg, Net* cm);
  // From now on the net owns its connection manager: fini() closes it
  // after the device (platform/net opens both as one).
  void adopt_cm() { own_cm_ = true; }
  // The device, port and protection domain alone, for a verbs channel
  // (verbs_channel.h) and no team: no connection manager, no SRQ.
  Status init_device(const VerbsConfig& cfg);
  // Closes every member (delivering what it can) and the device.
  void fini();

  // --- Net --------------------------------------------------------------------
  Fabric* open(const FabricConfig& cfg, FabricAddr* addr) override;
  // The device refused a resource (a CQ, a queue pair, a registration)
  // while closed members still hold theirs: waits, progressing, until
  // one is freed (after its goodbyes and linger_ms), for at most
  // linger_ms + 1 s. true when one was; false when none is leaving or
  // none could go in time. Team churn then runs at the rate the linger
  // allows instead of failing. From the engine's thread, outside
  // progress().
  bool make_room();
  void close(Fabric* f, bool lost) override;
  uint64_t progress() override;
  // A verbs channel (verbs_channel.h) to a host's exported memory, with a
  // staging buffer of kChannelStaging bytes; transfers give up after the
  // peer timeout.
  RemoteMem* open_remote_mem(const RemoteMemAddr& host,
                             RemoteMemAddr* mine) override;
  static constexpr size_t kChannelStaging = 1 << 20;

  const VerbsConfig& config() const { return cfg_; }
  bool active() const { return nopen_ != 0; }

  // --- for fabrics ------------------------------------------------------------
  const Api& api() const { return *api_; }
  ibv_context* ctx() const { return ctx_; }
  ibv_pd* pd() const { return pd_; }
  ibv_srq* srq() const { return srq_; }
  uint8_t port() const { return port_; }
  int gid_index() const { return gid_index_; }
  bool roce() const { return roce_; }
  uint16_t lid() const { return lid_; }
  const ibv_gid& gid() const { return gid_; }
  ibv_mtu mtu() const { return mtu_; }
  // RDMA READs a queue pair of ours may have in flight as initiator, and
  // take in as responder: the device's limits (ibv_query_device), at
  // most kMaxRdAtomic, at least 1.
  uint8_t rd_init_depth() const { return rd_init_; }
  uint8_t rd_resp_depth() const { return rd_resp_; }
  static constexpr uint8_t kMaxRdAtomic = 16;
  Net* cm() const { return cm_; }
  // The kind of the connection manager's addresses (every member's).
  uint32_t cm_kind() const { return cm_kind_; }
  VerbsStats& counters() { return stats_; }
  // A receive of the shared queue was used: posted again in batches.
  void srq_used() { ++srq_owed_; }
  uint64_t now() const { return now_; }
  // make_room() calls so far (tests, stats).
  uint64_t room_waits() const { return room_waits_; }
  uint64_t rand64();
  // An RC queue pair of ours to INIT (remote `access` allowed), then to
  // RTR and RTS towards `peer` (retries and RNR retries for ever: the
  // callers bound them by time); false when the device refuses.
  bool qp_init(ibv_qp* qp, int access) const;
  bool qp_connect(ibv_qp* qp, const QpAddr& peer, uint32_t our_psn) const;
  // Our end of `qp`, starting at `psn`; its `rd_depth` says how many RDMA
  // READs we take in at once (rd_resp_depth), and qp_connect lets ours
  // have no more than the peer's in flight (0, from a peer that does not
  // say: 1).
  QpAddr qp_addr(const ibv_qp* qp, uint32_t psn) const;

 private:
  Status open_port(const char* want);
  void pick_gid(const char* dev, int table);
  void repost_srq();
  void reap(bool force);

  VerbsConfig cfg_{};
  const Api* api_ = nullptr;
  Net* cm_ = nullptr;
  uint32_t cm_kind_ = 0;
  bool own_cm_ = false;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_srq* srq_ = nullptr;
  uint8_t port_ = 1;
  int gid_index_ = 0;
  uint8_t rd_init_ = 1;
  uint8_t rd_resp_ = 1;
  bool roce_ = false;
  uint16_t lid_ = 0;
  ibv_gid gid_{};
  ibv_mtu mtu_ = IBV_MTU_1024;
  uint32_t srq_owed_ = 0;
  bool srq_warned_ = false;
  uint64_t now_ = 0;
  uint64_t room_waits_ = 0;
  uint64_t rng_ = 0;
  uint32_t passes_ = 0;
  VerbsStats stats_{};
  base::Array<VerbsFabric*> eps_;  // open or closing members, compact
  uint32_t nopen_ = 0;
};

}  // namespace ucc::plat::verbs

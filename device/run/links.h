// The transports of one engine team, bound once per peer at team creation:
// shared memory (platform/shm) for the ranks on this host and ourselves,
// the engine's network (platform/fabric/fabric.h's Net: TCP between hosts,
// or firmware_sim's wire between emulated nodes) for the others. Every
// call names a team rank and goes to that rank's transport: the shared
// memory one without a virtual call, the network one through the fabric
// interface. Also the team's node map: which ranks share a host, for the
// node-aware algorithms.
//
// Threads: the engine's. Memory: the tables from the team's arena
// (take(), before open), the transports' own at open and connect.
#pragma once

#include <cstdint>

#include "offload/team_addr.h"
#include "offload/types.h"
#include "platform/base/arena.h"
#include "platform/base/hot.h"
#include "platform/fabric/fabric.h"
#include "platform/shm/shm_fabric.h"

namespace ucc::dev {

using off::Status;

// Where the ranks of a team live. Nodes are numbered by the first rank on
// each, in rank order; `order` lists the team's ranks node by node.
struct NodeMap {
  uint32_t nnodes = 0;
  uint32_t* node = nullptr;        // per rank: its node
  uint32_t* local_rank = nullptr;  // per rank: its place on its node
  uint32_t* node_size = nullptr;   // per node: its ranks
  uint32_t* node_first = nullptr;  // per node: its first entry in `order`
  uint32_t* order = nullptr;       // ranks, node by node
  uint32_t* leaders = nullptr;     // per node: its first rank (local rank 0)
  // Some node holds several ranks and there are several nodes: the shape
  // node-aware algorithms are for.
  bool hierarchical(uint32_t nranks) const {
    return nnodes > 1 && nnodes < nranks;
  }
  // Every node holds the same number of ranks.
  bool uniform() const {
    for (uint32_t i = 1; i < nnodes; ++i)
      if (node_size[i] != node_size[0]) return false;
    return true;
  }
};

// The node map of n members from their addresses (same host, same node),
// on `mem` (6 n words, zeroed here), in O(n log n).
void map_nodes(const off::TeamAddr* addrs, uint32_t n, uint32_t* mem,
               NodeMap* out);

// This engine's identity as the team address carries it.
struct Where {
  uint64_t host[2] = {0, 0};
  int32_t owner_pid = 0;  // the process owning our segments
};

class Links {
 public:
  Links() = default;
  Links(const Links&) = delete;
  Links& operator=(const Links&) = delete;
  ~Links() { close(); }

  // The tables of a team of `nranks`, from its arena (base/arena.h: run
  // once counting, once committed): zeroed, and fresh for each open.
  // (connect's scratch, the transports' addresses of every rank, is its
  // own and goes when it returns.)
  struct Tables {
    bool* remote = nullptr;     // per rank: reached through the net
    uint32_t* nodes = nullptr;  // the node map's arrays: 6 per rank
  };
  static Tables take(base::Arena& a, uint32_t nranks);

  // This member's transports: a shared-memory segment, and an endpoint of
  // `net` (may be null: no other hosts reachable), with the tables `mem`
  // (take(), for cfg.nranks). *out is the member's team address.
  // kInvalidParam, kNoMemory, kNoResource (the network has no endpoint
  // left).
  Status open(const plat::FabricConfig& cfg, plat::Net* net, const Where& me,
              const Tables& mem, off::TeamAddr* out);
  // Binds every rank to its transport from the members' addresses
  // (indexed by team rank) and builds the node map. kError for an address
  // that is not one, kNotSupported when a rank is on another host and
  // this engine (or that rank) has no network, kNoMemory.
  Status connect(const off::TeamAddr* addrs);
  void seal();
  void close(bool lost = false);

  const NodeMap& nodes() const { return nodes_; }
  bool remote(uint32_t peer) const { return mem_.remote[peer]; }
  bool has_net() const { return net_ != nullptr; }
  uint32_t slot_size() const { return cfg_.slot_size; }
  uint32_t nslots() const { return cfg_.nslots; }

  // --- the fabric calls, routed by peer (fabric.h) ---------------------------
  void* tx_reserve(uint32_t p) {
    return mem_.remote[p] ? net_->tx_reserve(p) : shm_.tx_reserve(p);
  }
  uint32_t tx_free(uint32_t p) {
    return mem_.remote[p] ? net_->tx_free(p) : shm_.tx_free(p);
  }
  void tx_commit(uint32_t p, uint32_t len, const plat::MsgKey& k, uint8_t kind,
                 uint32_t lag) {
    if (mem_.remote[p])
      net_->tx_commit(p, len, k, kind, lag);
    else
      shm_.tx_commit(p, len, k, kind, lag);
  }
  uint32_t rx_poll(uint32_t p) {
    return mem_.remote[p] ? net_->rx_poll(p) : shm_.rx_poll(p);
  }
  uint32_t rx_npend(uint32_t p) const {
    return mem_.remote[p] ? net_->rx_npend(p) : shm_.rx_npend(p);
  }
  uint32_t rx_epoch(uint32_t p) const {
    return mem_.remote[p] ? net_->rx_epoch(p) : shm_.rx_epoch(p);
  }
  const plat::MsgHdr* rx_hdr(uint32_t p, uint32_t i) const {
    return mem_.remote[p] ? net_->rx_hdr(p, i) : shm_.rx_hdr(p, i);
  }
  const void* rx_payload(uint32_t p, uint32_t i) const {
    return mem_.remote[p] ? net_->rx_payload(p, i) : shm_.rx_payload(p, i);
  }
  UCC_HOT void rx_release(uint32_t p, uint32_t i) {
    if (mem_.remote[p])
      net_->rx_release(p, i);
    else
      shm_.rx_release(p, i);
  }
  int32_t peer_pid(uint32_t p) const {
    return mem_.remote[p] ? 0 : shm_.peer_pid(p);
  }
  // Both transports together.
  uint32_t attention() const {
    return shm_.attention() + (net_ != nullptr ? net_->attention() : 0);
  }
  uint64_t events() const {
    return shm_.events() + (net_ != nullptr ? net_->events() : 0);
  }
  bool peer_lost() const {
    return shm_.peer_lost() || (net_ != nullptr && net_->peer_lost());
  }
  // A stuck team names the peer it waits on (Fabric::waiting_on), and
  // a failed one tells its peers (Fabric::fail).
  void waiting_on(uint32_t p) {
    if (p < cfg_.nranks && mem_.remote[p]) net_->waiting_on(p);
  }
  void fail() {
    shm_.fail();
    if (net_ != nullptr) net_->fail();
  }
  bool tx_flushed() const { return net_ == nullptr || net_->tx_flushed(); }
  // fn(p) for every rank a message can have come from, each once: the
  // ranks of this host (shared memory) and the net's peers it has heard
  // from (Fabric::heard_count), or every rank where the net cannot tell.
  // A sweep of the inboxes then costs the peers talked to, not the team.
  template <typename Fn>
  void each_heard(Fn&& fn) const {
    const uint32_t heard = net_ != nullptr ? net_->heard_count() : 0;
    if (heard == plat::Fabric::kAllPeers) {
      for (uint32_t p = 0; p < cfg_.nranks; ++p) fn(p);
      return;
    }
    const uint32_t me = nodes_.node[cfg_.rank];
    const uint32_t* on = nodes_.order + nodes_.node_first[me];
    for (uint32_t i = 0; i < nodes_.node_size[me]; ++i)
      if (!mem_.remote[on[i]]) fn(on[i]);
    for (uint32_t i = 0; i < heard; ++i) fn(net_->heard_peer(i));
  }

  // One-sided operations: over the network only (fabric.h).
  uint64_t rma_min(uint32_t p) const {
    return mem_.remote[p] ? net_->rma_min(p) : 0;
  }
  Status mem_reg(void* addr, uint64_t len, uint32_t access, plat::RmaReg* reg) {
    return net_ != nullptr ? net_->mem_reg(addr, len, access, reg)
                           : Status::kNotSupported;
  }
  void mem_dereg(uint32_t handle) {
    if (net_ != nullptr) net_->mem_dereg(handle);
  }
  Status get(uint32_t p, void* local, const plat::RmaReg& reg, uint64_t raddr,
             uint32_t rkey, uint32_t len, uint64_t* ticket) {
    return mem_.remote[p] ? net_->get(p, local, reg, raddr, rkey, len, ticket)
                          : Status::kInvalidParam;
  }
  uint64_t rma_done(uint32_t p) const {
    return mem_.remote[p] ? net_->rma_done(p) : 0;
  }

 private:
  Status build_nodes(const off::TeamAddr* addrs);

  plat::FabricConfig cfg_{};
  plat::shm::ShmFabric shm_;
  plat::Net* netp_ = nullptr;
  plat::Fabric* net_ = nullptr;
  NodeMap nodes_;
  Tables mem_;  // the team arena's; mem_.remote[r]: r is reached by net_
};

}  // namespace ucc::dev

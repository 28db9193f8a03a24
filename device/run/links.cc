#include "device/run/links.h"

#include <algorithm>
#include <cstring>

#include "platform/os/log.h"

namespace ucc::dev {
namespace {

using off::same_host;

plat::FabricAddr fabric_addr(const uint8_t (&bytes)[off::kTransportAddrBytes]) {
  static_assert(sizeof(plat::FabricAddr) == off::kTransportAddrBytes);
  plat::FabricAddr a;
  memcpy(&a, bytes, sizeof(a));
  return a;
}

}  // namespace

Links::Tables Links::take(base::Arena& a, uint32_t nranks) {
  Tables t;
  t.remote = a.take<bool>(nranks);
  t.nodes = a.take<uint32_t>(6 * size_t{nranks});
  return t;
}

Status Links::open(const plat::FabricConfig& cfg, plat::Net* net,
                   const Where& me, const Tables& mem, off::TeamAddr* out) {
  cfg_ = cfg;
  mem_ = mem;
  plat::FabricAddr local{}, remote{};
  // A net that carries the ranks of this host too (the simulated one)
  // carries our messages to ourselves as well: no shared-memory segment,
  // whose inboxes for every team rank would cost each member address
  // space in proportion to the team (a simulation of thousands of ranks
  // in one process ran out of it).
  if (net == nullptr || !net->carries_local()) {
    Status st = shm_.open(cfg, &local);
    if (failed(st)) return st;
  }
  if (net != nullptr) {
    net_ = net->open(cfg, &remote);
    if (net_ == nullptr) {
      UCC_ERROR("the network has no endpoint left for a new team");
      return Status::kNoResource;
    }
    netp_ = net;
  }
  memset(out, 0, sizeof(*out));
  out->magic = off::kTeamAddrMagic;
  out->owner_pid = me.owner_pid;
  out->host[0] = me.host[0];
  out->host[1] = me.host[1];
  memcpy(out->local, &local, sizeof(local));
  memcpy(out->net, &remote, sizeof(remote));
  return Status::kOk;
}

Status Links::connect(const off::TeamAddr* addrs) {
  const uint32_t n = cfg_.nranks;
  const off::TeamAddr& mine = addrs[cfg_.rank];
  bool any_remote = false;
  const bool all_net = net_ != nullptr && netp_->carries_local();
  for (uint32_t r = 0; r < n; ++r) {
    if (addrs[r].magic != off::kTeamAddrMagic) {
      UCC_ERROR("rank %u: the address of team rank %u is not one", cfg_.rank,
                r);
      return Status::kError;
    }
    mem_.remote[r] = all_net || !same_host(addrs[r], mine);
    any_remote |= mem_.remote[r];
  }
  Status st = build_nodes(addrs);
  if (failed(st)) return st;
  // Scratch for the transports' connect, released on return: a team of
  // thousands need not keep 65 bytes per rank for its life.
  base::Arena scratch;
  plat::FabricAddr* fa = nullptr;
  bool* pick = nullptr;
  for (int pass = 0; pass < 2; ++pass) {
    fa = scratch.take<plat::FabricAddr>(n);
    pick = scratch.take<bool>(n);
    if (pass == 0 && !scratch.commit()) return Status::kNoMemory;
  }
  if (!all_net) {
    for (uint32_t r = 0; r < n; ++r) {
      fa[r] = fabric_addr(addrs[r].local);
      pick[r] = !mem_.remote[r] && r != cfg_.rank;
    }
    st = shm_.connect(fa, pick);
  }
  if (ok(st) && any_remote) {
    for (uint32_t r = 0; r < n && ok(st); ++r) {
      fa[r] = fabric_addr(addrs[r].net);
      pick[r] = mem_.remote[r];
      if (mem_.remote[r] && (net_ == nullptr || fa[r].kind == 0)) {
        UCC_ERROR(
            "rank %u: team rank %u is on another host, and %s has no "
            "network to reach it (UCC_NET)",
            cfg_.rank, r, net_ == nullptr ? "this engine" : "that rank");
        st = Status::kNotSupported;
      }
    }
    if (ok(st)) st = net_->connect(fa, pick);
  }
  if (ok(st) && !any_remote && net_ != nullptr) {
    // Everyone is here: the network endpoint is not needed.
    netp_->close(net_, false);
    net_ = nullptr;
  }
  return st;
}

Status Links::build_nodes(const off::TeamAddr* addrs) {
  map_nodes(addrs, cfg_.nranks, mem_.nodes, &nodes_);
  return Status::kOk;
}

void map_nodes(const off::TeamAddr* addrs, uint32_t n, uint32_t* mem,
               NodeMap* out) {
  // node, local_rank, order: n each; node_size, node_first, leaders: n at
  // most.
  memset(mem, 0, 6 * size_t{n} * sizeof(uint32_t));
  NodeMap& m = *out;
  m.node = mem;
  m.local_rank = mem + n;
  m.order = mem + 2 * size_t{n};
  m.node_size = mem + 3 * size_t{n};
  m.node_first = mem + 4 * size_t{n};
  m.leaders = mem + 5 * size_t{n};
  // Nodes are numbered in order of first appearance, their ranks in rank
  // order, in O(n log n) (a team of thousands, each rank on a host of its
  // own, must not compare every pair): the ranks sorted by host, then by
  // rank, give the nodes as runs, each led by its lowest rank; the
  // leaders sorted give the nodes' numbers.
  m.nnodes = 0;
  uint32_t* by_host = m.order;  // until the end: ranks sorted by host
  for (uint32_t r = 0; r < n; ++r) by_host[r] = r;
  std::sort(by_host, by_host + n, [addrs](uint32_t a, uint32_t b) {
    const uint64_t(&ha)[2] = addrs[a].host;
    const uint64_t(&hb)[2] = addrs[b].host;
    if (ha[0] != hb[0]) return ha[0] < hb[0];
    if (ha[1] != hb[1]) return ha[1] < hb[1];
    return a < b;
  });
  for (uint32_t i = 0; i < n; ++i) {
    if (i == 0 || !same_host(addrs[by_host[i]], addrs[by_host[i - 1]]))
      m.leaders[m.nnodes++] = by_host[i];
  }
  std::sort(m.leaders, m.leaders + m.nnodes);
  for (uint32_t i = 0, k = 0, local = 0; i < n; ++i) {
    const uint32_t r = by_host[i];
    if (i == 0 || !same_host(addrs[r], addrs[by_host[i - 1]])) {
      k = static_cast<uint32_t>(
          std::lower_bound(m.leaders, m.leaders + m.nnodes, r) - m.leaders);
      local = 0;
    }
    m.node[r] = k;
    m.local_rank[r] = local++;
    ++m.node_size[k];
  }
  // node_first as offsets into order, then order by node.
  uint32_t at = 0;
  for (uint32_t k = 0; k < m.nnodes; ++k) {
    m.node_first[k] = at;
    at += m.node_size[k];
  }
  for (uint32_t r = 0; r < n; ++r)
    m.order[m.node_first[m.node[r]] + m.local_rank[r]] = r;
}

void Links::seal() {
  shm_.seal();
  if (net_ != nullptr) net_->seal();
}

void Links::close(bool lost) {
  if (net_ != nullptr) netp_->close(net_, lost);
  net_ = nullptr;
  netp_ = nullptr;
  shm_.close(lost);
  mem_ = Tables{};  // the team's arena goes after us
  nodes_ = NodeMap{};
}

}  // namespace ucc::dev

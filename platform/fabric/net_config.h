// What each transport between hosts runs with (UCC_NET and its knobs,
// firmware_sim's --verbs and --net-* options), apart from the transports
// themselves: the code that configures a network (host/config, the net
// factory's callers) names no transport, and builds where rdma-core's
// headers are missing.
#pragma once

#include <cstdint>

namespace ucc::plat {

// TCP between hosts (platform/tcp).
inline constexpr uint32_t kMaxNetPeers = 1u << 16;  // TcpConfig::max_peers

struct TcpConfig {
  // Interface to listen on and advertise: a name (eth0) or an IPv4
  // address; empty: the first interface that is up and not loopback,
  // else loopback.
  const char* iface = nullptr;
  uint32_t peer_timeout_ms = 30000;  // UCC_NET_PEER_TIMEOUT
  uint32_t keepalive_ms = 1000;      // ping a silent peer we wait on
  uint32_t max_endpoints = 4096;     // team members at once
  // UCC_NET_MAX_PEERS: connections to other engines at once, a fixed
  // pool reserved at init (about 17 KiB each, touched when used), at
  // most kMaxNetPeers.
  uint32_t max_peers = 4096;
  uint32_t spin = 256;               // idle progress calls before waiting
  uint32_t wait_us = 20;             // longest wait for data when idle
  bool checksum = false;             // UCC_NET_CHECKSUM: payloads too
  // UCC_NET_TCP_ZCOPY_MIN: messages of at least this many bytes between
  // inline engines go one-sided (emulated gets, tcp_rma.cc; 0: never;
  // which wins depends on the CPU's copies, docs/network.md).
  uint32_t zcopy_min = 256 * 1024;
  // Fault injection (tests): write at most 1..split bytes per call;
  // hold every frame delay_us before writing it; break the connection
  // after a data frame (or a put's) with probability drop.
  uint32_t fault_split = 0;
  uint32_t fault_delay_us = 0;
  double fault_drop = 0;
  // ... and flip a byte of a data frame's payload, after its checksum,
  // with probability corrupt.
  double fault_corrupt = 0;
  // ... and move the rekey-th data frame's message (from 1; 0: none) to
  // another collective: 2^32 added to its key's first word.
  uint32_t fault_rekey = 0;
  uint64_t fault_seed = 1;
};

// Verbs RDMA between hosts (platform/verbs); connection setup runs over a
// TCP net of its own, configured by the TcpConfig beside it.
struct VerbsConfig {
  const char* lib = nullptr;         // UCC_VERBS_LIB ("" : libibverbs.so.1)
  const char* device = nullptr;      // UCC_NET_DEVICES: "mlx5_0:1", "mlx5_0";
                                     // empty: the first active port
  int gid_index = -1;                // UCC_NET_GID_INDEX; -1: auto (pick_gid)
  uint32_t peer_timeout_ms = 30000;  // UCC_NET_PEER_TIMEOUT
  uint32_t max_endpoints = 4096;     // team members at once
  uint32_t srq_depth = 4096;         // receives posted for the whole net
  uint32_t max_inline = 256;         // asked of each queue pair
  uint32_t linger_ms = 1000;  // a closed member's memory stays registered
                              // this long after its goodbyes
  // UCC_NET_ZCOPY_MIN: messages of at least this many bytes between
  // inline engines go one-sided, from the sender's registered user
  // buffer into the receiver's (0: never).
  uint32_t zcopy_min = 256 * 1024;
  // Links (queue pairs) a team member's first completion queue is made
  // for; each further one, made when a link finds the others full, for
  // twice as many as the last. No knob: tests make it small.
  uint32_t cq_links = 16;
};

// An engine's network (UCC_NET): TCP, verbs RDMA with TCP for connection
// setup, none, (auto) TCP where it can listen and none otherwise, or the
// simulated network of a SimGrid run (platform/sim; only inside one).
enum class NetKind : uint8_t { kAuto, kTcp, kVerbs, kNone, kSim };

struct NetConfig {
  NetKind kind = NetKind::kAuto;
  TcpConfig tcp;
  VerbsConfig verbs;
};

}  // namespace ucc::plat

// What a team member publishes through the team's OOB so that its peers'
// engines can reach it: its host, and one address per transport it has
// (shared memory on its host, the network towards other hosts). The host
// library moves it as bytes and looks at two fields only (owner_pid and
// host, in bootstrap checks); the engine reads the rest, and treats every
// field of a peer's address as untrusted.
#pragma once

#include <cstdint>
#include <type_traits>

namespace ucc::off {

inline constexpr uint32_t kTeamAddrMagic = 0x55435441u;  // "UCTA"
inline constexpr uint32_t kTransportAddrBytes = 64;

struct TeamAddr {
  uint32_t magic;
  // The process that owns the member's shared-memory segment: the rank's
  // own process (inline engine) or its daemon's (emu).
  int32_t owner_pid;
  // The member's host (or emulated node): ranks with equal ids use shared
  // memory between them, the others the network.
  uint64_t host[2];
  uint8_t local[kTransportAddrBytes];  // the shared-memory transport's
  uint8_t net[kTransportAddrBytes];    // the network transport's, or zero
};
static_assert(sizeof(TeamAddr) == 152);
static_assert(std::is_trivially_copyable_v<TeamAddr>);

// Two host identities (platform/os/host_id.h) name the same host.
inline bool same_host(const uint64_t (&a)[2], const uint64_t (&b)[2]) {
  return a[0] == b[0] && a[1] == b[1];
}
inline bool same_host(const TeamAddr& a, const TeamAddr& b) {
  return same_host(a.host, b.host);
}

}  // namespace ucc::off

// What the verbs transport (verbs_net.h) runs with: apart, so that code
// configuring it builds where rdma-core's headers are missing.
#pragma once

#include <cstdint>

namespace ucc::plat::verbs {

struct VerbsConfig {
  const char* lib = nullptr;     // UCC_VERBS_LIB ("" : libibverbs.so.1)
  const char* device = nullptr;  // UCC_NET_DEVICES: "mlx5_0:1", "mlx5_0";
                                 // empty: the first active port
  int gid_index = -1;            // UCC_NET_GID_INDEX; -1: auto (pick_gid)
  uint32_t peer_timeout_ms = 30000;  // UCC_NET_PEER_TIMEOUT
  uint32_t max_endpoints = 4096;     // team members at once
  uint32_t srq_depth = 4096;         // receives posted for the whole net
  uint32_t max_inline = 256;         // asked of each queue pair
  uint32_t linger_ms = 1000;  // a closed member's memory stays registered
                              // this long after its goodbyes
};

}  // namespace ucc::plat::verbs

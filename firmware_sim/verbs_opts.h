// firmware_sim's verbs network (--verbs): the engines of daemons on
// different nodes reach each other over RDMA (platform/verbs), their
// connections set up over TCP, as the inline engine does with
// UCC_NET=verbs. The daemon is then a node of its own, like one with a
// wire.
#pragma once

#include <cstdint>

#include "firmware_sim/server.h"
#include "offload/types.h"
#include "platform/fabric/fabric.h"

namespace ucc::fw {

struct VerbsOptions {
  const char* device = nullptr;  // --verbs: "auto", or mlx5_0[:1]
  bool tcp = false;              // --tcp-net: TCP instead (no RDMA at all)
  const char* lib = nullptr;     // --verbs-lib: libibverbs to load
  const char* iface = nullptr;   // --net-if: where TCP listens
  uint32_t peer_timeout_ms = 30000;  // --net-peer-timeout (ms)
};

// Takes option `a` (with value v) when it is a verbs option: returns 1
// when it used v, 0 when `a` is not one, -1 for a bad value.
int verbs_option(const char* a, const char* v, VerbsOptions* o);
const char* verbs_usage();
// Whether this build has the verbs transport (--has-verbs).
bool verbs_built();

class VerbsNode;
// Opens the device and the TCP listener (*out: the engines' net); with
// --tcp-net, a TCP net alone (the engines of other nodes over TCP, the
// dpu fallback's; no way to hosts' memory by RDMA); with neither,
// nothing. Without verbs in the build, --verbs fails (a message).
off::Status verbs_start(const VerbsOptions& o, VerbsNode** node,
                        plat::Net** out);
// The node's way for engines to reach their hosts' memory by RDMA
// (ServerConfig::hostmem); nullptr without --verbs (and with --tcp-net).
HostMemPort* verbs_host_mem(VerbsNode* node);
// After the server (and its engines' fabrics) are gone.
void verbs_stop(VerbsNode* node);

}  // namespace ucc::fw

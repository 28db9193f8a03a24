// Opening the transports between hosts: the one place that names them.
// The inline host (host/link) and firmware_sim open an engine's network
// here from a NetConfig (platform/fabric/net_config.h) and get the Net
// interface (platform/fabric/fabric.h); neither includes a transport.
//
// Threads: the caller's, at context or daemon start. Memory: the nets
// are taken here, once; they allocate nothing on the data path.
#pragma once

#include <cstdint>

#include "platform/base/status.h"
#include "platform/fabric/fabric.h"
#include "platform/fabric/net_config.h"
#include "platform/mem/remote_mem.h"

namespace ucc::plat {

// Opens the network cfg.kind names: TCP; verbs RDMA over a TCP net of its
// own for connection setup (which then never waits on its sockets); none.
// kAuto is TCP where it can listen, else none (a warning: teams must then
// sit on one host). *out is the engine's Net, nullptr for none; delete it
// once the engine's teams have left it (it delivers what they still owe,
// then closes its connections). kNotSupported (verbs without rdma-core's
// headers in the build), kNoResource (no usable RDMA port), kInvalidParam
// (a bad interface or configuration), kNoMemory, kError; logged.
Status open_net(const NetConfig& cfg, Net** out);

// The host's end of a memory channel to its engine (UCC_OFFLOAD_MEM=verbs,
// platform/mem/remote_mem.h): the verbs port cfg names, room for `nregs`
// registrations at once, *mine for the engine's end
// (Net::open_remote_mem). Statuses as open_net's; delete *out when done.
Status open_mem_export(const VerbsConfig& cfg, uint32_t nregs,
                       RemoteMemAddr* mine, MemExport** out);

// Whether this build has verbs RDMA (rdma-core's headers were found).
bool verbs_built();

// The simulated network (UCC_NET=sim, platform/sim/sim_net.h): libucc does
// not link SimGrid, so a simulation's driver installs the opener here
// before it creates contexts. Without one, UCC_NET=sim fails context
// creation (kNotSupported, logged).
using NetOpener = Status (*)(const NetConfig& cfg, Net** out);
void set_sim_opener(NetOpener open);

}  // namespace ucc::plat

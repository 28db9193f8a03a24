// The identity of the host (or emulated node) a process runs on: ranks
// with equal identities share memory, the others use the network. By
// default the kernel's boot id and the hostname together (so two network
// namespaces with their own hostnames on one machine are two hosts);
// a non-empty `name` (UCC_HOST_ID, or firmware_sim's node name) replaces
// both.
#pragma once

#include <cstdint>

namespace ucc::plat {

void host_identity(const char* name, uint64_t out[2]);

}  // namespace ucc::plat

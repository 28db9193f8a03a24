// The identity of the host (or emulated node) a process runs on: ranks
// with equal identities share memory, the others use the network. By
// default the kernel's boot id and the hostname together (so two network
// namespaces with their own hostnames on one machine are two hosts);
// a non-empty `name` (UCC_HOST_ID, or firmware_sim's node name) replaces
// both.
#pragma once

#include <cstdint>

namespace ucc::plat {

// Both words name the host. Without `name`, out[0] is the boot id's hash
// alone: identities with equal out[0] are on one kernel, so on the same
// CPUs, even where the hostnames make them hosts of their own. With a
// name, out[0] is the name's: only equal names count as one kernel.
void host_identity(const char* name, uint64_t out[2]);

inline bool same_kernel(const uint64_t (&a)[2], const uint64_t (&b)[2]) {
  return a[0] == b[0];
}

}  // namespace ucc::plat

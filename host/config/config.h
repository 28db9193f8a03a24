// Configuration knobs: one table (config.cc) gives every knob's name,
// default, kind and documentation line. Values come from, lowest to
// highest precedence: the default, a config file, UCC_<NAME> and
// <PREFIX>_UCC_<NAME> in the environment, and ucc_*_config_modify().
// A bad value is an error where it is read or modified, never later.
#pragma once

#include <cstdint>
#include <cstdio>

#include "host/link/link.h"
#include "offload/engine_config.h"
#include "offload/types.h"
#include "platform/os/log.h"

namespace ucc::host {

using off::Status;

enum class Scope : uint8_t { kLib, kContext };

enum class Knob : uint8_t {
  kLogLevel,
  kOffload,
  kOffloadMem,
  kOffloadInline,
  kFirmwareSocket,
  kFirmwareSim,
  kFirmwareTimeout,
  kDpuAddr,
  kDpuMem,
  kDpuRing,
  kMaxTeams,
  kTeamMaxColls,
  kTeamCreateTimeout,
  kShmSegSize,
  kShmNsegs,
  kTeamInflight,
  kUnexpectedSlots,
  kMemMapHandles,
  kGpuDirect,
  kGpuIpcCache,
  kGpuRdma,
  kPollSpin,
  kHostCpus,
  kHostId,
  kNet,
  kNetIf,
  kNetPeerTimeout,
  kNetChecksum,
  kNetFaults,
  kNetDevices,
  kNetGidIndex,
  kNetZcopyMin,
  kNetTcpZcopyMin,
  kNetMaxPeers,
  kVerbsLib,
  kAllreduceRingMin,
  kCma,
  kCmaMin,
  kLinearRanks,
  kLinearMax,
  kAlltoallLinearMax,
  kWideRanks,
  kWideMax,
  kAlltoallBruckMax,
  kKnomialMax,
  kAlltoallHierMax,
  kAllgatherHierMax,
  kAllgatherHierBruckMax,
  kWideScratch,
  kAllreduceRingPerRank,
  kAllreduceRingPerRankFold,
  kAllreduceRabMin,
  kBarrierAlg,
  kBcastAlg,
  kReduceAlg,
  kAllreduceAlg,
  kAllgatherAlg,
  kAlltoallAlg,
  kReduceScatterAlg,
  kGatherAlg,
  kGathervAlg,
  kScatterAlg,
  kScattervAlg,
  kAllgathervAlg,
  kAlltoallvAlg,
  kReduceScattervAlg,
  kFaninAlg,
  kFanoutAlg,
  kCls,
  kEstimatedNumEps,
  kEstimatedNumPpn,
  kNodeLocalId,
  kLockFreeProgressQ,
  kTeamIdsPoolSize,
  kInternalOob,
  kThrottleProgress,
  kCollTimeout,
  kCollErrorType,
  kCount
};

inline constexpr int kNumKnobs = static_cast<int>(Knob::kCount);
inline constexpr int kValueLen = 256;

struct KnobInfo {
  const char* name;  // without the UCC_ prefix
  const char* def;
  Scope scope;
  const char* doc;
};
const KnobInfo& knob_info(Knob k);
// The table itself (config_knobs.cc), indexed by Knob.
extern const KnobInfo kKnobTable[kNumKnobs];

// A set of knob values (as text, already validated).
struct ConfigValues {
  Scope scope;
  char value[kNumKnobs][kValueLen];
};

// Fills `c` with defaults, then `filename` (may be null), then the
// environment. kInvalidParam (with a log line naming the knob) on a bad
// value or an unreadable file.
Status config_read(ConfigValues* c, Scope scope, const char* env_prefix,
                   const char* filename);
// Warns once per UCC_<NAME> variable in the environment that names no
// knob; returns how many there were. Reading a library configuration calls
// it. <PREFIX>_UCC_<NAME> variables are not checked: the prefix is the
// runtime's, and it keeps settings of its own there (PyTorch reads the
// configuration with TORCH and has TORCH_UCC_BLOCKING_WAIT and others).
int config_unknown_env();
// Sets one knob by name (with or without the UCC_ prefix).
Status config_modify(ConfigValues* c, const char* name, const char* value);
void config_print(const ConfigValues& c, FILE* stream, const char* title,
                  bool header, bool doc);

inline constexpr uint32_t kPollSpinAuto = UINT32_MAX;

// UCC_COLL_ERROR_TYPE: what a collective's error_type (a field with no
// mask bit, left unset by some runtimes) decides.
enum class ErrorTypeMode : uint8_t {
  kIgnore,  // not read: every member reports its own status (UCC's way)
  kArgs,    // read: GLOBAL agrees on the status; members must all pass it
  kGlobal,  // every collective agrees, whatever the field holds
};

// What a context runs with, parsed from its values.
struct ContextSettings {
  LinkConfig link;        // what the engine runs with, and where it runs
  char host_id[256];      // UCC_HOST_ID: empty, or this host's name for teams
  char net_if[256];       // UCC_NET_IF (link.net.tcp.iface points here)
  char net_devices[256];  // UCC_NET_DEVICES (link.net.verbs.device)
  char verbs_lib[256];    // UCC_VERBS_LIB (link.net.verbs.lib)
  char socket_path[256];
  char daemon_path[256];
  char dpu_addr[256];        // UCC_DPU_ADDR, resolved (link.dpu_addr)
  uint32_t poll_spin;        // kPollSpinAuto: chosen per team size (context.cc)
  uint64_t team_timeout_ns;  // mailbox team creation gives up after this
  uint32_t mem_map_handles;  // ucc_mem_map handles per context (mem_map.h)
  bool gpu_direct;           // UCC_GPU_DIRECT (host/exec/gpu_direct.h)
  uint32_t gpu_ipc_cache;    // UCC_GPU_IPC_CACHE: opened peer allocations
  bool gpu_rdma;             // UCC_GPU_RDMA (host/exec/gpu_rdma.h)
  uint64_t coll_timeout_ns;  // UCC_COLL_TIMEOUT: 0, or every collective's
  ErrorTypeMode error_type;  // UCC_COLL_ERROR_TYPE
};
Status context_settings(const ConfigValues& c, ContextSettings* out);
Status lib_log_level(const ConfigValues& c, plat::LogLevel* out);

}  // namespace ucc::host

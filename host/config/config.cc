#include "host/config/config.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "offload/coll_traits.h"

namespace ucc::host {
namespace {

using off::CollType;

// The collective an *_ALG knob selects for, or kCount for other knobs.
CollType alg_knob_coll(Knob k) {
  switch (k) {
    case Knob::kBarrierAlg:
      return CollType::kBarrier;
    case Knob::kBcastAlg:
      return CollType::kBcast;
    case Knob::kReduceAlg:
      return CollType::kReduce;
    case Knob::kAllreduceAlg:
      return CollType::kAllreduce;
    case Knob::kAllgatherAlg:
      return CollType::kAllgather;
    case Knob::kAlltoallAlg:
      return CollType::kAlltoall;
    case Knob::kReduceScatterAlg:
      return CollType::kReduceScatter;
    case Knob::kGatherAlg:
      return CollType::kGather;
    case Knob::kGathervAlg:
      return CollType::kGatherv;
    case Knob::kScatterAlg:
      return CollType::kScatter;
    case Knob::kScattervAlg:
      return CollType::kScatterv;
    case Knob::kAllgathervAlg:
      return CollType::kAllgatherv;
    case Knob::kAlltoallvAlg:
      return CollType::kAlltoallv;
    case Knob::kReduceScattervAlg:
      return CollType::kReduceScatterv;
    case Knob::kFaninAlg:
      return CollType::kFanin;
    case Knob::kFanoutAlg:
      return CollType::kFanout;
    default:
      return CollType::kCount;
  }
}

// Unsigned number with an optional K/M/G suffix (powers of 1024).
bool parse_size(const char* s, uint64_t* out) {
  if (s[0] < '0' || s[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno != 0) return false;
  uint64_t mult = 1;
  if (*end == 'k' || *end == 'K')
    mult = 1ull << 10, ++end;
  else if (*end == 'm' || *end == 'M')
    mult = 1ull << 20, ++end;
  else if (*end == 'g' || *end == 'G')
    mult = 1ull << 30, ++end;
  if (*end == 'b' || *end == 'B') ++end;
  if (*end != '\0') return false;
  return !__builtin_mul_overflow(static_cast<uint64_t>(v), mult, out);
}

// A duration: digits with an optional unit, ms or s (s when none).
bool parse_time_ms(const char* s, uint64_t* ms) {
  if (s[0] < '0' || s[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0) return false;
  uint64_t mult = 1000;
  if (strcasecmp(end, "ms") == 0) {
    mult = 1;
  } else if (*end != '\0' && strcasecmp(end, "s") != 0) {
    return false;
  }
  return !__builtin_mul_overflow(static_cast<uint64_t>(v), mult, ms);
}

bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// UCC_NET_FAULTS: comma-separated key=value pairs.
bool parse_net_faults(const char* v, plat::TcpConfig* t) {
  char buf[kValueLen];
  snprintf(buf, sizeof(buf), "%s", v);
  for (char* tok = strtok(buf, ","); tok != nullptr;
       tok = strtok(nullptr, ",")) {
    char* eq = strchr(tok, '=');
    if (eq == nullptr) return false;
    *eq = '\0';
    const char* val = eq + 1;
    char* end = nullptr;
    errno = 0;
    if (strcmp(tok, "drop") == 0 || strcmp(tok, "corrupt") == 0) {
      const double p = strtod(val, &end);
      if (*end != 0 || !(p >= 0 && p <= 1)) return false;
      (tok[0] == 'd' ? t->fault_drop : t->fault_corrupt) = p;
      continue;
    }
    const unsigned long long n = strtoull(val, &end, 10);
    if (*val < '0' || *val > '9' || *end != 0 || errno != 0) return false;
    if (strcmp(tok, "split") == 0 && n <= (1u << 20))
      t->fault_split = static_cast<uint32_t>(n);
    else if (strcmp(tok, "delay") == 0 && n <= 1000000)
      t->fault_delay_us = static_cast<uint32_t>(n);
    else if (strcmp(tok, "seed") == 0)
      t->fault_seed = n;
    else if (strcmp(tok, "rekey") == 0 && n <= UINT32_MAX)
      t->fault_rekey = static_cast<uint32_t>(n);
    else
      return false;
  }
  return true;
}

// An *_ALG value: "auto" (or empty) is id 0, else a name from the
// collective's catalogue (coll_traits.h). false when unknown.
bool parse_alg(CollType c, const char* name, uint8_t* id) {
  if (strcasecmp(name, "auto") == 0 || name[0] == '\0') {
    *id = 0;
    return true;
  }
  const off::AlgName* a = off::find_alg_name(c, name);
  // onesided runs one-sided arguments only (they select it themselves).
  if (a == nullptr ||
      (c == CollType::kAlltoallv && a->id == off::kAlltoallvOneSided))
    return false;
  *id = a->id;
  return true;
}

// A comma-separated list of names (letters, digits, '_', '/'), as UCC's
// component lists are.
bool name_list(const char* v) {
  bool name = false;
  for (const char* p = v;; ++p) {
    const char ch = *p;
    if (ch == ',' || ch == '\0') {
      if (!name) return false;
      if (ch == '\0') return true;
      name = false;
    } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
               (ch >= '0' && ch <= '9') || ch == '_' || ch == '/') {
      name = true;
    } else {
      return false;
    }
  }
}

// Checks one value for one knob.
bool valid(Knob k, const char* v) {
  uint64_t u = 0;
  switch (k) {
    case Knob::kLogLevel: {
      plat::LogLevel l;
      return plat::log_parse_level(v, &l);
    }
    case Knob::kOffload:
      return strcasecmp(v, "inline") == 0 || strcasecmp(v, "emu") == 0 ||
             strcasecmp(v, "dpu") == 0;
    case Knob::kDpuAddr:
      return strlen(v) < 256 &&
             (strcasecmp(v, "auto") == 0 || strchr(v, ':') != nullptr);
    case Knob::kFirmwareSocket: {
      // Each entry of the list must fit a sun_path.
      for (const char* e = v;; ++e) {
        size_t len = strcspn(e, ",");
        if (len >= 108) return false;
        e += len;
        if (*e == 0) return true;
      }
    }
    case Knob::kFirmwareSim:
    case Knob::kHostId:
    case Knob::kNetIf:
      return true;
    case Knob::kNet:
      return strcasecmp(v, "auto") == 0 || strcasecmp(v, "tcp") == 0 ||
             strcasecmp(v, "verbs") == 0 || strcasecmp(v, "none") == 0 ||
             strcasecmp(v, "sim") == 0;
    case Knob::kOffloadMem:
      return strcasecmp(v, "cma") == 0 || strcasecmp(v, "verbs") == 0;
    case Knob::kDpuMem:
      return strcasecmp(v, "verbs") == 0 || strcasecmp(v, "tcp") == 0;
    case Knob::kDpuRing:
      return strcasecmp(v, "push") == 0 || strcasecmp(v, "read") == 0;
    case Knob::kNetDevices:
    case Knob::kVerbsLib:
      return strlen(v) < 256;
    case Knob::kNetGidIndex:
      return strcasecmp(v, "auto") == 0 || (parse_size(v, &u) && u < 256);
    case Knob::kNetPeerTimeout:
      return parse_time_ms(v, &u) && u >= 1 && u <= 86400000;
    case Knob::kNetChecksum:
      return parse_size(v, &u) && u <= 1;
    case Knob::kNetZcopyMin:
    case Knob::kNetTcpZcopyMin:
      return parse_size(v, &u) && u <= UINT32_MAX;
    case Knob::kNetMaxPeers:
      return parse_size(v, &u) && u >= 1 && u <= plat::kMaxNetPeers;
    case Knob::kNetFaults: {
      plat::TcpConfig t;
      return parse_net_faults(v, &t);
    }
    case Knob::kFirmwareTimeout:
      return parse_time_ms(v, &u) && u >= 1 && u <= 86400000;
    case Knob::kMaxTeams:
      return strcasecmp(v, "auto") == 0 ||
             (parse_size(v, &u) && u >= 1 && u <= off::kMaxTeamsLimit);
    case Knob::kTeamMaxColls:
      return parse_size(v, &u) && u >= 1 && u <= 65536;
    case Knob::kTeamCreateTimeout:  // 1 ms to one day
      return parse_time_ms(v, &u) && u >= 1 && u <= 86400000;
    case Knob::kShmSegSize:
      return parse_size(v, &u) && u >= 64 && u % 64 == 0 && u <= (64u << 20);
    case Knob::kShmNsegs:
      return parse_size(v, &u) && u >= 2 && u <= 64 && is_pow2(u);
    case Knob::kTeamInflight:
      return parse_size(v, &u) && u >= 1 && u <= 64;
    case Knob::kOffloadInline:
      return parse_size(v, &u) && u <= off::kInlineBytes;
    case Knob::kUnexpectedSlots:
      return parse_size(v, &u) && u <= 4096;
    case Knob::kMemMapHandles:
      return parse_size(v, &u) && u <= 4096;
    case Knob::kGpuDirect:
    case Knob::kGpuRdma:
      return strcasecmp(v, "auto") == 0 || strcasecmp(v, "no") == 0;
    case Knob::kGpuIpcCache:
      return parse_size(v, &u) && u >= 8 && u <= 4096;
    case Knob::kPollSpin:
      return strcasecmp(v, "auto") == 0 || (parse_size(v, &u) && u <= 1000000);
    case Knob::kHostCpus:
      return strcasecmp(v, "auto") == 0 ||
             (parse_size(v, &u) && u >= 1 && u <= off::kMaxHostCpus);
    case Knob::kAllreduceRingMin:
    case Knob::kCmaMin:
    case Knob::kLinearMax:
    case Knob::kAlltoallLinearMax:
      return parse_size(v, &u);
    case Knob::kLinearRanks:
      return parse_size(v, &u) && u <= off::kMaxLinearRanks;
    case Knob::kWideRanks:
      return parse_size(v, &u) && u <= off::kMaxWideRanks;
    case Knob::kWideMax:
    case Knob::kAlltoallBruckMax:
    case Knob::kKnomialMax:
    case Knob::kAlltoallHierMax:
    case Knob::kAllgatherHierMax:
    case Knob::kAllgatherHierBruckMax:
    case Knob::kAllreduceRingPerRank:
    case Knob::kAllreduceRabMin:
    case Knob::kAllreduceRingPerRankFold:
      return parse_size(v, &u) && u <= UINT32_MAX;
    case Knob::kWideScratch:
      return parse_size(v, &u) && u % 1024 == 0 && u <= off::kMaxScratch;
    case Knob::kCma:
      return strcasecmp(v, "auto") == 0 || strcasecmp(v, "no") == 0;
    case Knob::kCls:
      return name_list(v);
    case Knob::kEstimatedNumEps:
    case Knob::kEstimatedNumPpn:
    case Knob::kNodeLocalId:
    case Knob::kTeamIdsPoolSize:
    case Knob::kThrottleProgress:
      return parse_size(v, &u) && u <= UINT32_MAX;
    case Knob::kLockFreeProgressQ:
      return parse_size(v, &u) && u <= 1;
    case Knob::kInternalOob:
      return parse_size(v, &u) && u <= 2;
    case Knob::kCollTimeout:
      return parse_time_ms(v, &u) && u <= 86400000;
    case Knob::kCollErrorType:
      return strcasecmp(v, "ignore") == 0 || strcasecmp(v, "args") == 0 ||
             strcasecmp(v, "global") == 0;
    default: {
      uint8_t id;
      CollType c = alg_knob_coll(k);
      return c != CollType::kCount && parse_alg(c, v, &id);
    }
  }
}

Status set(ConfigValues* c, Knob k, const char* v, const char* origin) {
  int i = static_cast<int>(k);
  if (strlen(v) >= static_cast<size_t>(kValueLen) || !valid(k, v)) {
    UCC_ERROR("invalid value '%s' for UCC_%s (from %s): %s", v,
              kKnobTable[i].name, origin, kKnobTable[i].doc);
    return Status::kInvalidParam;
  }
  strcpy(c->value[i], v);
  return Status::kOk;
}

bool find(const char* name, Knob* out) {
  if (strncasecmp(name, "UCC_", 4) == 0) name += 4;
  for (int i = 0; i < kNumKnobs; ++i) {
    if (strcasecmp(name, kKnobTable[i].name) == 0) {
      *out = static_cast<Knob>(i);
      return true;
    }
  }
  return false;
}

char* trim(char* s) {
  while (*s == ' ' || *s == '\t') ++s;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' ||
                   s[n - 1] == '\r'))
    s[--n] = '\0';
  return s;
}

// NAME = value lines; '#' starts a comment. Unknown names are warned about.
Status read_file(ConfigValues* c, const char* filename) {
  FILE* f = fopen(filename, "r");
  if (f == nullptr) {
    UCC_ERROR("cannot open config file %s: %s", filename, strerror(errno));
    return Status::kInvalidParam;
  }
  char line[256];
  Status st = Status::kOk;
  while (ok(st) && fgets(line, sizeof(line), f) != nullptr) {
    char* hash = strchr(line, '#');
    if (hash != nullptr) *hash = '\0';
    char* eq = strchr(line, '=');
    char* name = trim(line);
    if (*name == '\0') continue;
    if (eq == nullptr) {
      UCC_ERROR("config file %s: line without '=': %s", filename, name);
      st = Status::kInvalidParam;
      break;
    }
    *eq = '\0';
    name = trim(name);
    char* value = trim(eq + 1);
    Knob k;
    if (!find(name, &k)) {
      UCC_WARN("config file %s: unknown knob %s", filename, name);
      continue;
    }
    if (kKnobTable[static_cast<int>(k)].scope == c->scope)
      st = set(c, k, value, filename);
  }
  fclose(f);
  return st;
}

}  // namespace

const KnobInfo& knob_info(Knob k) { return kKnobTable[static_cast<int>(k)]; }

// Variables the library reads from the environment alone, never through a
// configuration (so that ucc_*_config_print cannot show a secret):
// docs/configuration.md, "The environment only".
constexpr const char* kEnvOnly[] = {"BOOTSTRAP_KEY_FILE", "BOOTSTRAP_KEY",
                                    "JOB_ID", "DPU_KEY_FILE", "DPU_KEY"};

int config_unknown_env() {
  int unknown = 0;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (strncmp(*e, "UCC_", 4) != 0) continue;
    const char* name = *e + 4;
    const char* eq = strchr(name, '=');
    size_t len = eq != nullptr ? static_cast<size_t>(eq - name) : strlen(name);
    bool known = false;
    for (int i = 0; i < kNumKnobs && !known; ++i)
      known = strlen(kKnobTable[i].name) == len &&
              strncmp(kKnobTable[i].name, name, len) == 0;
    for (const char* v : kEnvOnly)
      known = known || (strlen(v) == len && strncmp(v, name, len) == 0);
    if (!known) {
      UCC_WARN("unknown configuration knob in the environment: %.*s (ignored)",
               static_cast<int>(eq != nullptr ? eq - *e : strlen(*e)), *e);
      ++unknown;
    }
  }
  return unknown;
}

Status config_read(ConfigValues* c, Scope scope, const char* env_prefix,
                   const char* filename) {
  c->scope = scope;
  if (scope == Scope::kLib) config_unknown_env();
  for (int i = 0; i < kNumKnobs; ++i) strcpy(c->value[i], kKnobTable[i].def);
  if (filename != nullptr && filename[0] != '\0') {
    Status st = read_file(c, filename);
    if (failed(st)) return st;
  }
  for (int i = 0; i < kNumKnobs; ++i) {
    if (kKnobTable[i].scope != scope) continue;
    char var[160];
    snprintf(var, sizeof(var), "UCC_%s", kKnobTable[i].name);
    const char* v = getenv(var);
    if (env_prefix != nullptr && env_prefix[0] != '\0') {
      char pvar[160];
      snprintf(pvar, sizeof(pvar), "%s_UCC_%s", env_prefix, kKnobTable[i].name);
      const char* pv = getenv(pvar);
      if (pv != nullptr) {
        v = pv;
        strcpy(var, pvar);
      }
    }
    if (v != nullptr) {
      Status st = set(c, static_cast<Knob>(i), v, var);
      if (failed(st)) return st;
    }
  }
  return Status::kOk;
}

Status config_modify(ConfigValues* c, const char* name, const char* value) {
  Knob k;
  if (name == nullptr || value == nullptr || !find(name, &k) ||
      kKnobTable[static_cast<int>(k)].scope != c->scope) {
    UCC_ERROR("unknown configuration knob '%s'", name ? name : "(null)");
    return Status::kInvalidParam;
  }
  return set(c, k, value, "modify");
}

void config_print(const ConfigValues& c, FILE* stream, const char* title,
                  bool header, bool doc) {
  if (stream == nullptr) return;
  if (header)
    fprintf(stream, "#\n# %s\n#\n", title ? title : "UCC configuration");
  for (int i = 0; i < kNumKnobs; ++i) {
    if (kKnobTable[i].scope != c.scope) continue;
    if (doc) fprintf(stream, "#\n# %s\n#\n", kKnobTable[i].doc);
    fprintf(stream, "UCC_%s=%s\n", kKnobTable[i].name, c.value[i]);
  }
}

Status lib_log_level(const ConfigValues& c, plat::LogLevel* out) {
  return plat::log_parse_level(c.value[static_cast<int>(Knob::kLogLevel)], out)
             ? Status::kOk
             : Status::kInvalidParam;
}

namespace {

// UCC_DPU_ADDR: as given, else the site's file, else the BlueField
// convention (docs/dpu.md, "Addressing").
void dpu_address(const char* v, char* out, size_t n) {
  if (strcasecmp(v, "auto") != 0) {
    snprintf(out, n, "%s", v);
    return;
  }
  snprintf(out, n, "%s", "192.168.100.2:18700");
  FILE* f = fopen("/etc/ucc/dpu.addr", "re");
  if (f == nullptr) return;
  char line[256];
  if (fgets(line, sizeof(line), f) != nullptr) {
    line[strcspn(line, " \t\r\n#")] = 0;
    if (strchr(line, ':') != nullptr) snprintf(out, n, "%s", line);
  }
  fclose(f);
}

}  // namespace

Status context_settings(const ConfigValues& c, ContextSettings* out) {
  auto num = [&](Knob k) {
    uint64_t u = 0;
    parse_size(c.value[static_cast<int>(k)], &u);
    return u;
  };
  LinkConfig& l = out->link;
  off::EngineConfig& e = l.engine;
  l.dpu = strcasecmp(c.value[static_cast<int>(Knob::kOffload)], "dpu") == 0;
  // dpu is emu's engine on another computer, reaching this process's
  // memory by RDMA only.
  l.emu = l.dpu ||
          strcasecmp(c.value[static_cast<int>(Knob::kOffload)], "emu") == 0;
  l.rdma_mem = l.dpu || strcasecmp(c.value[static_cast<int>(Knob::kOffloadMem)],
                                   "verbs") == 0;
  l.dpu_mem_tcp =
      l.dpu && strcasecmp(c.value[static_cast<int>(Knob::kDpuMem)], "tcp") == 0;
  l.dpu_push =
      l.dpu && !l.dpu_mem_tcp &&
      strcasecmp(c.value[static_cast<int>(Knob::kDpuRing)], "push") == 0;
  // Inline data needs the channel's result areas, which the host's own
  // memory holds only in emu (dpu: the engine's copy of the channel is
  // mirrored back word by word).
  l.inline_bytes =
      l.emu && !l.dpu ? static_cast<uint32_t>(num(Knob::kOffloadInline)) : 0;
  dpu_address(c.value[static_cast<int>(Knob::kDpuAddr)], out->dpu_addr,
              sizeof(out->dpu_addr));
  snprintf(out->socket_path, sizeof(out->socket_path), "%s",
           c.value[static_cast<int>(Knob::kFirmwareSocket)]);
  snprintf(out->daemon_path, sizeof(out->daemon_path), "%s",
           c.value[static_cast<int>(Knob::kFirmwareSim)]);
  snprintf(out->host_id, sizeof(out->host_id), "%s",
           c.value[static_cast<int>(Knob::kHostId)]);
  snprintf(out->net_if, sizeof(out->net_if), "%s",
           c.value[static_cast<int>(Knob::kNetIf)]);
  const char* net = c.value[static_cast<int>(Knob::kNet)];
  l.net.kind = strcasecmp(net, "none") == 0    ? plat::NetKind::kNone
               : strcasecmp(net, "tcp") == 0   ? plat::NetKind::kTcp
               : strcasecmp(net, "verbs") == 0 ? plat::NetKind::kVerbs
               : strcasecmp(net, "sim") == 0   ? plat::NetKind::kSim
                                               : plat::NetKind::kAuto;
  l.net.tcp.iface = out->net_if;
  snprintf(out->net_devices, sizeof(out->net_devices), "%s",
           c.value[static_cast<int>(Knob::kNetDevices)]);
  snprintf(out->verbs_lib, sizeof(out->verbs_lib), "%s",
           c.value[static_cast<int>(Knob::kVerbsLib)]);
  l.net.verbs.device = out->net_devices;
  l.net.verbs.lib = out->verbs_lib;
  const char* gid = c.value[static_cast<int>(Knob::kNetGidIndex)];
  l.net.verbs.gid_index = strcasecmp(gid, "auto") == 0
                              ? -1
                              : static_cast<int>(num(Knob::kNetGidIndex));
  uint64_t peer_ms = 30000;
  parse_time_ms(c.value[static_cast<int>(Knob::kNetPeerTimeout)], &peer_ms);
  l.net.tcp.peer_timeout_ms = static_cast<uint32_t>(peer_ms);
  l.net.verbs.peer_timeout_ms = l.net.tcp.peer_timeout_ms;
  if (l.net.tcp.keepalive_ms > l.net.tcp.peer_timeout_ms / 4)
    l.net.tcp.keepalive_ms = l.net.tcp.peer_timeout_ms / 4 + 1;
  l.net.tcp.checksum = num(Knob::kNetChecksum) != 0;
  l.net.verbs.zcopy_min = static_cast<uint32_t>(num(Knob::kNetZcopyMin));
  l.net.tcp.zcopy_min = static_cast<uint32_t>(num(Knob::kNetTcpZcopyMin));
  l.net.tcp.max_peers = static_cast<uint32_t>(num(Knob::kNetMaxPeers));
  if (!parse_net_faults(c.value[static_cast<int>(Knob::kNetFaults)],
                        &l.net.tcp))
    return Status::kInvalidParam;
  uint64_t fw_ms = 10000;
  parse_time_ms(c.value[static_cast<int>(Knob::kFirmwareTimeout)], &fw_ms);
  l.timeout_ms = static_cast<uint32_t>(fw_ms);
  uint64_t q = 1;
  while (q < num(Knob::kTeamMaxColls)) q <<= 1;
  e.team_queue = static_cast<uint32_t>(q);
  const uint64_t fit = off::kMaxCompletionWords / q;
  if (strcasecmp(c.value[static_cast<int>(Knob::kMaxTeams)], "auto") == 0) {
    e.max_teams =
        static_cast<uint32_t>(std::min<uint64_t>(off::kAutoMaxTeams, fit));
  } else {
    e.max_teams = static_cast<uint32_t>(num(Knob::kMaxTeams));
    if (e.max_teams > fit) {
      UCC_ERROR(
          "UCC_MAX_TEAMS=%u with UCC_TEAM_MAX_COLLS=%llu needs more than "
          "%llu completion words; at most %llu teams at this depth",
          e.max_teams, static_cast<unsigned long long>(q),
          static_cast<unsigned long long>(off::kMaxCompletionWords),
          static_cast<unsigned long long>(fit));
      return Status::kInvalidParam;
    }
  }
  e.slot_size = static_cast<uint32_t>(num(Knob::kShmSegSize));
  e.nslots = static_cast<uint32_t>(num(Knob::kShmNsegs));
  e.inflight = static_cast<uint32_t>(num(Knob::kTeamInflight));
  e.unexpected = static_cast<uint32_t>(num(Knob::kUnexpectedSlots));
  e.allreduce_ring_min = num(Knob::kAllreduceRingMin);
  e.linear_ranks = static_cast<uint32_t>(num(Knob::kLinearRanks));
  e.wide_ranks = static_cast<uint32_t>(num(Knob::kWideRanks));
  e.wide_max = static_cast<uint32_t>(num(Knob::kWideMax));
  e.alltoall_bruck_max = static_cast<uint32_t>(num(Knob::kAlltoallBruckMax));
  e.knomial_max = static_cast<uint32_t>(num(Knob::kKnomialMax));
  e.alltoall_hier_max = static_cast<uint32_t>(num(Knob::kAlltoallHierMax));
  e.allgather_hier_max = static_cast<uint32_t>(num(Knob::kAllgatherHierMax));
  e.allgather_hier_bruck_max =
      static_cast<uint32_t>(num(Knob::kAllgatherHierBruckMax));
  e.wide_scratch = static_cast<uint32_t>(num(Knob::kWideScratch));
  e.allreduce_ring_per_rank =
      static_cast<uint32_t>(num(Knob::kAllreduceRingPerRank));
  e.allreduce_rab_min = static_cast<uint32_t>(num(Knob::kAllreduceRabMin));
  e.allreduce_ring_per_rank_fold =
      static_cast<uint32_t>(num(Knob::kAllreduceRingPerRankFold));
  e.linear_max = num(Knob::kLinearMax);
  e.alltoall_linear_max = num(Knob::kAlltoallLinearMax);
  if (strcasecmp(c.value[static_cast<int>(Knob::kHostCpus)], "auto") == 0) {
    // The machine's CPUs, not this thread's affinity: a launcher that
    // binds each rank to one core (mpirun, ucc_perftest) has not
    // oversubscribed anything.
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    e.cpus = static_cast<uint32_t>(
        std::clamp<long>(online, 1, static_cast<long>(off::kMaxHostCpus)));
  } else {
    e.cpus = static_cast<uint32_t>(num(Knob::kHostCpus));
  }
  // Whether the kernel lets peers attach is known at context creation
  // (context.cc); 0 turns single copy off.
  const bool cma = strcasecmp(c.value[static_cast<int>(Knob::kCma)], "no") != 0;
  e.cma_min = cma ? std::max<uint64_t>(1, num(Knob::kCmaMin)) : 0;
  out->mem_map_handles = static_cast<uint32_t>(num(Knob::kMemMapHandles));
  out->gpu_direct =
      strcasecmp(c.value[static_cast<int>(Knob::kGpuDirect)], "no") != 0;
  out->gpu_ipc_cache = static_cast<uint32_t>(num(Knob::kGpuIpcCache));
  out->gpu_rdma =
      strcasecmp(c.value[static_cast<int>(Knob::kGpuRdma)], "no") != 0;
  for (int i = 0; i < kNumKnobs; ++i) {
    CollType coll = alg_knob_coll(static_cast<Knob>(i));
    if (coll == CollType::kCount) continue;
    uint8_t id = 0;
    if (!parse_alg(coll, c.value[i], &id)) return Status::kInvalidParam;
    e.forced[static_cast<int>(coll)] = id;
  }
  uint64_t ms = 0;
  if (!parse_time_ms(c.value[static_cast<int>(Knob::kTeamCreateTimeout)], &ms))
    return Status::kInvalidParam;
  out->team_timeout_ns = ms * 1000000ull;
  uint64_t coll_ms = 0;
  parse_time_ms(c.value[static_cast<int>(Knob::kCollTimeout)], &coll_ms);
  out->coll_timeout_ns = coll_ms * 1000000ull;
  const char* et = c.value[static_cast<int>(Knob::kCollErrorType)];
  out->error_type = strcasecmp(et, "args") == 0     ? ErrorTypeMode::kArgs
                    : strcasecmp(et, "global") == 0 ? ErrorTypeMode::kGlobal
                                                    : ErrorTypeMode::kIgnore;
  const char* spin = c.value[static_cast<int>(Knob::kPollSpin)];
  out->poll_spin = strcasecmp(spin, "auto") == 0
                       ? kPollSpinAuto
                       : static_cast<uint32_t>(num(Knob::kPollSpin));
  return Status::kOk;
}

}  // namespace ucc::host

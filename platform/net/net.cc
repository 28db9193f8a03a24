#include "platform/net/net.h"

#include <new>

#include "platform/os/log.h"
#include "platform/tcp/tcp_net.h"
#if UCC_HAVE_VERBS
#include "platform/verbs/verbs_export.h"
#include "platform/verbs/verbs_net.h"
#endif

namespace ucc::plat {
namespace {

#if !UCC_HAVE_VERBS
Status no_verbs() {
  UCC_ERROR(
      "verbs: this build has no verbs transport (rdma-core's "
      "headers were missing)");
  return Status::kNotSupported;
}
#endif

Status open_tcp(const TcpConfig& cfg, tcp::TcpNet** out) {
  auto* t = new (std::nothrow) tcp::TcpNet;
  if (t == nullptr) return Status::kNoMemory;
  const Status st = t->init(cfg);
  if (failed(st)) {
    delete t;
    return st;
  }
  *out = t;
  return Status::kOk;
}

Status open_verbs(const NetConfig& cfg, Net** out) {
#if UCC_HAVE_VERBS
  // The connection manager only sets up connections: the verbs net drives
  // it from its own progress, which never waits on a socket.
  TcpConfig cm = cfg.tcp;
  cm.spin = UINT32_MAX;
  cm.wait_us = 0;
  tcp::TcpNet* t = nullptr;
  Status st = open_tcp(cm, &t);
  if (failed(st)) return st;
  auto* v = new (std::nothrow) verbs::VerbsNet;
  st = v != nullptr ? v->init(cfg.verbs, t) : Status::kNoMemory;
  if (failed(st)) {
    UCC_ERROR("verbs: no usable RDMA port (device '%s', library '%s')",
              cfg.verbs.device != nullptr ? cfg.verbs.device : "",
              cfg.verbs.lib != nullptr ? cfg.verbs.lib : "");
    delete v;
    delete t;
    return st;
  }
  v->adopt_cm();
  *out = v;
  return Status::kOk;
#else
  (void)cfg;
  (void)out;
  return no_verbs();
#endif
}

NetOpener g_sim_open = nullptr;

}  // namespace

void set_sim_opener(NetOpener open) { g_sim_open = open; }

Status open_net(const NetConfig& cfg, Net** out) {
  *out = nullptr;
  switch (cfg.kind) {
    case NetKind::kNone:
      return Status::kOk;
    case NetKind::kVerbs:
      return open_verbs(cfg, out);
    case NetKind::kSim:
      if (g_sim_open != nullptr) return g_sim_open(cfg, out);
      UCC_ERROR(
          "UCC_NET=sim: the simulated network exists only inside a "
          "simulation (ucc_simperf, docs/scale.md)");
      return Status::kNotSupported;
    case NetKind::kTcp:
    case NetKind::kAuto:
      break;
  }
  tcp::TcpNet* t = nullptr;
  const Status st = open_tcp(cfg.tcp, &t);
  if (ok(st)) {
    *out = t;
    return st;
  }
  if (cfg.kind == NetKind::kTcp) return st;  // asked for: no quiet fallback
  UCC_WARN("no TCP network (interface '%s'): teams must sit on one host",
           cfg.tcp.iface != nullptr ? cfg.tcp.iface : "");
  return Status::kOk;
}

Status open_mem_export(const VerbsConfig& cfg, uint32_t nregs,
                       RemoteMemAddr* mine, MemExport** out) {
  *out = nullptr;
#if UCC_HAVE_VERBS
  auto* e = new (std::nothrow) verbs::VerbsExport;
  const Status st =
      e != nullptr ? e->open(cfg, nregs, mine) : Status::kNoMemory;
  if (failed(st)) {
    delete e;
    return st;
  }
  *out = e;
  return Status::kOk;
#else
  (void)cfg;
  (void)nregs;
  (void)mine;
  return no_verbs();
#endif
}

bool verbs_built() { return UCC_HAVE_VERBS != 0; }

}  // namespace ucc::plat

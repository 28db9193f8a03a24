#include "firmware_sim/wire_opts.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "platform/os/log.h"
#if UCC_HAVE_DPDK
#include "platform/wire/dpdk_port.h"
#endif

namespace ucc::fw {
namespace {

bool parse_prob(const char* v, double* out) {
  char* end = nullptr;
  double d = strtod(v, &end);
  if (end == v || *end != 0 || !(d >= 0 && d <= 1)) return false;
  *out = d;
  return true;
}

bool parse_u32(const char* v, uint32_t lo, uint32_t hi, uint32_t* out) {
  char* end = nullptr;
  unsigned long long x = strtoull(v, &end, 10);
  if (end == v || *end != 0 || x < lo || x > hi) return false;
  *out = static_cast<uint32_t>(x);
  return true;
}

// --wire-mesh DIR:NODE:NODES: one memif link to every other node, the
// lower-numbered node of a pair being the server, socket DIR/link-A-B.sock.
bool add_mesh(const char* v, WireOptions* o) {
  char dir[200];
  unsigned node = 0, nodes = 0;
  const char* c1 = strchr(v, ':');
  if (c1 == nullptr || static_cast<size_t>(c1 - v) >= sizeof(dir)) return false;
  memcpy(dir, v, c1 - v);
  dir[c1 - v] = 0;
  if (sscanf(c1 + 1, "%u:%u", &node, &nodes) != 2 || nodes < 2 ||
      node >= nodes || nodes - 1 + o->nvdev > WireOptions::kMaxPorts)
    return false;
  for (unsigned peer = 0; peer < nodes; ++peer) {
    if (peer == node) continue;
    const unsigned a = node < peer ? node : peer, b = node < peer ? peer : node;
    char* s = o->made[o->nvdev];
    snprintf(s, sizeof(o->made[0]),
             "net_memif%u,role=%s,id=0,socket=%s/link-%u-%u.sock,bsize=9216",
             o->nvdev, node == a ? "server" : "client", dir, a, b);
    o->vdev[o->nvdev++] = s;
  }
  return true;
}

#if UCC_HAVE_DPDK
plat::wire::DpdkPort* g_ports = nullptr;  // nvdev of them
plat::wire::FramePort* g_list[WireOptions::kMaxPorts];
#endif

}  // namespace

int wire_option(const char* a, const char* v, WireOptions* o) {
  if (strncmp(a, "--wire-", 7) != 0) return 0;
  if (v == nullptr) return -1;
  plat::wire::WireConfig& c = o->cfg;
  plat::wire::WireFaults& f = c.faults;
  bool ok = true;
  if (strcmp(a, "--wire-port") == 0) {
    ok = o->nvdev < WireOptions::kMaxPorts;
    if (ok) o->vdev[o->nvdev++] = v;
  } else if (strcmp(a, "--wire-mesh") == 0) {
    ok = add_mesh(v, o);
  } else if (strcmp(a, "--wire-frame") == 0) {
    ok = parse_u32(v, 512, 9216, &o->max_frame);
  } else if (strcmp(a, "--wire-drop") == 0) {
    ok = parse_prob(v, &f.drop);
  } else if (strcmp(a, "--wire-dup") == 0) {
    ok = parse_prob(v, &f.dup);
  } else if (strcmp(a, "--wire-reorder") == 0) {
    ok = parse_prob(v, &f.reorder);
  } else if (strcmp(a, "--wire-corrupt") == 0) {
    ok = parse_prob(v, &f.corrupt);
  } else if (strcmp(a, "--wire-seed") == 0) {
    char* end = nullptr;
    f.seed = strtoull(v, &end, 10);
    ok = end != v && *end == 0;
  } else if (strcmp(a, "--wire-window") == 0) {
    ok = parse_u32(v, 1, plat::wire::kMaxWindow, &c.window);
  } else if (strcmp(a, "--wire-peer-timeout-ms") == 0) {
    ok = parse_u32(v, 10, 3600000, &c.peer_timeout_ms);
  } else if (strcmp(a, "--wire-rto-us") == 0) {
    ok = parse_u32(v, 10, 1000000, &c.rto_min_us) &&
         c.rto_max_us >= c.rto_min_us;
  } else {
    return -1;
  }
  return ok ? 1 : -1;
}

const char* wire_usage() {
  return "Wire between emulated NICs (DPDK; without these, shared memory):\n"
         "  --wire-port <vdev>   a DPDK port, e.g. net_af_packet0,iface=veth1\n"
         "                       (repeatable)\n"
         "  --wire-mesh <dir>:<node>:<nodes>\n"
         "                       memif links to every other node of the mesh\n"
         "  --wire-frame <bytes> largest frame, Ethernet header included\n"
         "                       (default 9000; 1514 for a 1500-MTU link)\n"
         "  --wire-drop <p>, --wire-dup <p>, --wire-reorder <p>, "
         "--wire-corrupt <p>\n"
         "                       faults injected per frame sent (0..1)\n"
         "  --wire-seed <n>      seed of the fault injection (default 1)\n"
         "  --wire-window <n>    data frames in flight per peer (1..64, "
         "default 64)\n"
         "  --wire-rto-us <us>   smallest retransmission timeout (default "
         "500)\n"
         "  --wire-peer-timeout-ms <ms>\n"
         "                       a silent peer is lost after this (default "
         "2000)\n";
}

off::Status wire_start(WireOptions* o, plat::wire::Wire* w) {
#if UCC_HAVE_DPDK
  off::Status st =
      plat::wire::dpdk_init(o->vdev, o->nvdev, o->max_frame, o->mem_mb);
  if (ok(st)) {
    g_ports = new (std::nothrow) plat::wire::DpdkPort[o->nvdev];
    if (g_ports == nullptr) st = off::Status::kNoMemory;
  }
  for (uint32_t i = 0; i < o->nvdev && ok(st); ++i) {
    st = g_ports[i].open(o->vdev[i], o->max_frame);
    g_list[i] = &g_ports[i];
  }
  if (ok(st)) st = w->init(o->cfg, g_list, o->nvdev);
  if (ok(st)) {
    const plat::wire::Mac m = w->mac();
    UCC_INFO(
        "firmware_sim: wire on %u DPDK port(s), MAC "
        "%02x:%02x:%02x:%02x:%02x:%02x, frames up to %u bytes",
        o->nvdev, m.b[0], m.b[1], m.b[2], m.b[3], m.b[4], m.b[5], o->max_frame);
  }
  return st;
#else
  (void)o;
  (void)w;
  UCC_ERROR(
      "firmware_sim: built without DPDK (libdpdk-dev): no --wire-port or "
      "--wire-mesh");
  return off::Status::kNotSupported;
#endif
}

void wire_stop() {
#if UCC_HAVE_DPDK
  delete[] g_ports;
  g_ports = nullptr;
  plat::wire::dpdk_fini();
#endif
}

}  // namespace ucc::fw

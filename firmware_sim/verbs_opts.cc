#include "firmware_sim/verbs_opts.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "platform/net/net.h"

namespace ucc::fw {

// The node's verbs net (opened through platform/net), and its engines'
// way to their hosts' memory over it.
class VerbsNode final : public HostMemPort {
 public:
  ~VerbsNode() override { delete net; }

  plat::RemoteMem* open(const off::proto::RdmaAddr& host,
                        off::proto::RdmaAddr* mine) override {
    plat::RemoteMemAddr h, m{};
    static_assert(sizeof(h) == sizeof(host) && sizeof(m) == sizeof(*mine));
    memcpy(&h, &host, sizeof(h));
    plat::RemoteMem* r = net->open_remote_mem(h, &m);
    if (r != nullptr) memcpy(mine, &m, sizeof(m));
    return r;
  }
  void close(plat::RemoteMem* m) override { delete m; }

  plat::Net* net = nullptr;
  bool rdma = false;  // verbs (not --tcp-net)
};

int verbs_option(const char* a, const char* v, VerbsOptions* o) {
  const char** str = strcmp(a, "--verbs") == 0       ? &o->device
                     : strcmp(a, "--verbs-lib") == 0 ? &o->lib
                     : strcmp(a, "--net-if") == 0    ? &o->iface
                                                     : nullptr;
  if (str != nullptr) {
    if (v == nullptr) return -1;
    *str = v;
    return 1;
  }
  if (strcmp(a, "--net-peer-timeout") == 0) {
    if (v == nullptr || atoi(v) <= 0) return -1;
    o->peer_timeout_ms = static_cast<uint32_t>(atoi(v));
    return 1;
  }
  return 0;
}

const char* verbs_usage() {
  return "  --verbs <dev>        engines of other nodes over verbs RDMA: "
         "auto (first\n"
         "                       active port) or mlx5_0[:1]\n"
         "  --verbs-lib <path>   the libibverbs to load (tests: "
         "libverbs_loop.so)\n"
         "  --tcp-net            engines of other nodes over TCP instead "
         "(no RDMA;\n"
         "                       with --listen, the dpu TCP fallback's)\n"
         "  --net-if <if>        where verbs connection setup (TCP), or "
         "the TCP net,\n"
         "                       listens\n"
         "  --net-peer-timeout <ms>  a silent or failed peer fails its "
         "teams after this\n"
         "  --has-verbs          exit 0 when built with verbs, else 1\n";
}

bool verbs_built() { return plat::verbs_built(); }

off::Status verbs_start(const VerbsOptions& o, VerbsNode** node,
                        plat::Net** out) {
  *node = nullptr;
  *out = nullptr;
  if (o.device == nullptr && !o.tcp) return off::Status::kOk;
  if (o.device != nullptr && o.tcp) {
    fprintf(stderr, "firmware_sim: --verbs and --tcp-net exclude each other\n");
    return off::Status::kInvalidParam;
  }
  plat::NetConfig nc;
  nc.kind = o.tcp ? plat::NetKind::kTcp : plat::NetKind::kVerbs;
  nc.tcp.iface = o.iface;
  nc.tcp.peer_timeout_ms = o.peer_timeout_ms;
  nc.tcp.keepalive_ms = o.peer_timeout_ms / 4 + 1;
  nc.verbs.device =
      o.device == nullptr || strcmp(o.device, "auto") == 0 ? nullptr : o.device;
  nc.verbs.lib = o.lib;
  nc.verbs.peer_timeout_ms = o.peer_timeout_ms;
  auto* n = new (std::nothrow) VerbsNode;
  if (n == nullptr) return off::Status::kNoMemory;
  const off::Status st = plat::open_net(nc, &n->net);
  if (off::failed(st)) {
    if (o.tcp)
      fprintf(stderr, "firmware_sim: no TCP network (interface %s)\n",
              o.iface != nullptr ? o.iface : "auto");
    else
      fprintf(stderr, "firmware_sim: no verbs network (device %s, lib %s)\n",
              o.device, o.lib != nullptr ? o.lib : "libibverbs.so.1");
    delete n;
    return st;
  }
  n->rdma = !o.tcp;
  *node = n;
  *out = n->net;
  return off::Status::kOk;
}

HostMemPort* verbs_host_mem(VerbsNode* node) {
  return node != nullptr && node->rdma ? node : nullptr;
}

// The net closes its members (delivering what they owe), its device, then
// its connection manager.
void verbs_stop(VerbsNode* node) { delete node; }

}  // namespace ucc::fw

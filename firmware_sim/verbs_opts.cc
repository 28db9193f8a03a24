#include "firmware_sim/verbs_opts.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "platform/os/log.h"
#include "platform/tcp/tcp_net.h"
#if UCC_HAVE_VERBS
#include "platform/verbs/verbs_channel.h"
#include "platform/verbs/verbs_net.h"
#endif

namespace ucc::fw {

#if UCC_HAVE_VERBS
class VerbsNode final : public HostMemPort {
 public:
  plat::tcp::TcpNet tcp;  // connection setup only: never waits on sockets
  plat::verbs::VerbsNet verbs;

  // A channel per client that asks (its memory by RDMA): engine side, with
  // a staging buffer for the transfers.
  plat::RemoteMem* open(const off::proto::RdmaAddr& host,
                        off::proto::RdmaAddr* mine) override {
    auto* ch = new (std::nothrow) plat::verbs::VerbsChannel;
    if (ch == nullptr) return nullptr;
    plat::verbs::QpAddr a{}, h;
    static_assert(sizeof(h) == sizeof(host));
    memcpy(&h, &host, sizeof(h));
    if (off::failed(ch->open(&verbs, kStaging, timeout_ms, &a)) ||
        off::failed(ch->connect(h))) {
      delete ch;
      return nullptr;
    }
    memcpy(mine, &a, sizeof(a));
    return ch;
  }
  void close(plat::RemoteMem* m) override { delete m; }

  static constexpr size_t kStaging = 1 << 20;
  uint32_t timeout_ms = 10000;
};
#else
class VerbsNode final : public HostMemPort {
 public:
  plat::RemoteMem* open(const off::proto::RdmaAddr&,
                        off::proto::RdmaAddr*) override {
    return nullptr;
  }
  void close(plat::RemoteMem*) override {}
};
#endif

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
         "  --net-if <if>        where verbs connection setup (TCP) "
         "listens\n"
         "  --net-peer-timeout <ms>  a silent or failed peer fails its "
         "teams after this\n"
         "  --has-verbs          exit 0 when built with verbs, else 1\n";
}

bool verbs_built() { return UCC_HAVE_VERBS != 0; }

off::Status verbs_start(const VerbsOptions& o, VerbsNode** node,
                        plat::Net** out) {
  *node = nullptr;
  *out = nullptr;
  if (o.device == nullptr) return off::Status::kOk;
#if UCC_HAVE_VERBS
  auto* n = new (std::nothrow) VerbsNode;
  if (n == nullptr) return off::Status::kNoMemory;
  plat::tcp::TcpConfig tc;
  tc.iface = o.iface;
  tc.peer_timeout_ms = o.peer_timeout_ms;
  tc.keepalive_ms = o.peer_timeout_ms / 4 + 1;
  tc.spin = UINT32_MAX;
  tc.wait_us = 0;
  plat::verbs::VerbsConfig vc;
  vc.device = strcmp(o.device, "auto") == 0 ? nullptr : o.device;
  vc.lib = o.lib;
  vc.peer_timeout_ms = o.peer_timeout_ms;
  off::Status st = n->tcp.init(tc);
  if (off::ok(st)) st = n->verbs.init(vc, &n->tcp);
  if (off::failed(st)) {
    fprintf(stderr, "firmware_sim: no verbs network (device %s, lib %s)\n",
            o.device, o.lib != nullptr ? o.lib : "libibverbs.so.1");
    delete n;
    return st;
  }
  n->timeout_ms = o.peer_timeout_ms;
  *node = n;
  *out = &n->verbs;
  return off::Status::kOk;
#else
  fprintf(stderr, "firmware_sim: built without verbs (rdma-core's headers)\n");
  return off::Status::kNotSupported;
#endif
}

HostMemPort* verbs_host_mem(VerbsNode* node) { return node; }

void verbs_stop(VerbsNode* node) {
#if UCC_HAVE_VERBS
  if (node == nullptr) return;
  node->verbs.fini();
  node->tcp.fini();
#endif
  delete node;
}

}  // namespace ucc::fw

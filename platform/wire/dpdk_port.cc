#include "platform/wire/dpdk_port.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "platform/os/log.h"

namespace ucc::plat::wire {
namespace {

rte_mempool* g_pool = nullptr;
// The EAL's arguments: it keeps pointers into them until dpdk_fini.
char** g_eal_argv = nullptr;
char** g_eal_vdevs = nullptr;  // the --vdev ones, which we allocated
bool g_eal_up = false;
constexpr uint16_t kRing = 1024;

}  // namespace

Status dpdk_init(const char* const* vdevs, uint32_t n, uint32_t max_frame,
                 uint32_t mem_mb) {
  if (g_pool != nullptr) return Status::kOk;
  cpu_set_t mask;
  const bool have_mask = sched_getaffinity(0, sizeof(mask), &mask) == 0;
  char mem[16], prefix[64];
  snprintf(mem, sizeof(mem), "%u", mem_mb);
  snprintf(prefix, sizeof(prefix), "--file-prefix=ucc-wire-%d", getpid());
  const uint32_t fixed = 11;
  char** argv = static_cast<char**>(calloc(fixed + n + 1, sizeof(char*)));
  char** vd = static_cast<char**>(calloc(n + 1, sizeof(char*)));
  if (argv == nullptr || vd == nullptr) {
    free(argv);
    free(vd);
    return Status::kNoMemory;
  }
  g_eal_argv = argv;
  g_eal_vdevs = vd;
  const char* base[fixed] = {
      "firmware_sim", "--no-huge", "--no-pci", "--no-shconf", "--no-telemetry",
      "-m",           mem,         prefix,     "-l",          "0",
      "--log-level=3"};
  int argc = 0;
  for (const char* a : base) argv[argc++] = const_cast<char*>(a);
  for (uint32_t i = 0; i < n; ++i) {
    size_t len = strlen(vdevs[i]) + 8;
    vd[i] = static_cast<char*>(malloc(len));
    if (vd[i] == nullptr) break;
    snprintf(vd[i], len, "--vdev=%s", vdevs[i]);
    argv[argc++] = vd[i];
  }
  // The EAL keeps pointers into argv: both stay allocated for the process.
  int r = rte_eal_init(argc, argv);
  if (have_mask) sched_setaffinity(0, sizeof(mask), &mask);
  if (r < 0) {
    UCC_ERROR("wire: DPDK EAL init failed: %s", rte_strerror(rte_errno));
    return Status::kError;
  }
  g_eal_up = true;
  // At least the usual 2 KiB: some PMDs (af_packet) want whole frames of
  // their ring's size in one mbuf.
  const uint32_t room =
      (max_frame > 2048 ? max_frame : 2048) + RTE_PKTMBUF_HEADROOM;
  g_pool = rte_pktmbuf_pool_create("ucc_wire", 4095 + 2048 * n, 0, 0,
                                   static_cast<uint16_t>(room), SOCKET_ID_ANY);
  if (g_pool == nullptr) {
    UCC_ERROR("wire: no mbuf pool: %s", rte_strerror(rte_errno));
    return Status::kNoMemory;
  }
  return Status::kOk;
}

void dpdk_fini() {
  if (g_pool != nullptr) rte_mempool_free(g_pool);
  g_pool = nullptr;
  if (g_eal_up) rte_eal_cleanup();
  g_eal_up = false;
  for (uint32_t i = 0; g_eal_vdevs != nullptr && g_eal_vdevs[i] != nullptr;
       ++i)
    free(g_eal_vdevs[i]);
  free(g_eal_vdevs);
  free(g_eal_argv);
  g_eal_vdevs = nullptr;
  g_eal_argv = nullptr;
}

DpdkPort::~DpdkPort() {
  flush();
  for (uint32_t i = 0; i < ntx_; ++i)
    rte_pktmbuf_free(static_cast<rte_mbuf*>(txq_[i]));
  if (started_) rte_eth_dev_stop(port_);
  if (configured_) rte_eth_dev_close(port_);
  lin_.release();
}

Status DpdkPort::open(const char* vdev, uint32_t max_frame) {
  if (g_pool == nullptr) return Status::kInvalidParam;
  size_t k = strcspn(vdev, ",");
  if (k == 0 || k >= sizeof(name_)) return Status::kInvalidParam;
  memcpy(name_, vdev, k);
  name_[k] = 0;
  if (rte_eth_dev_get_port_by_name(name_, &port_) != 0) {
    UCC_ERROR("wire: no DPDK port %s (is the vdev right?)", name_);
    return Status::kError;
  }
  max_frame_ = max_frame;
  if (!lin_.init(max_frame, 64)) return Status::kNoMemory;
  rte_eth_conf conf;
  memset(&conf, 0, sizeof(conf));
  int r = rte_eth_dev_configure(port_, 1, 1, &conf);
  if (r == 0)
    r = rte_eth_rx_queue_setup(port_, 0, kRing, SOCKET_ID_ANY, nullptr, g_pool);
  if (r == 0)
    r = rte_eth_tx_queue_setup(port_, 0, kRing, SOCKET_ID_ANY, nullptr);
  if (r == 0) {
    // Some PMDs (memif) take any MTU, some cannot change it: best effort.
    rte_eth_dev_set_mtu(port_, static_cast<uint16_t>(max_frame - kEthHdr));
    configured_ = true;
    r = rte_eth_dev_start(port_);
  }
  // A memif client whose server has not made its socket yet cannot start
  // (the daemons of a mesh come up in any order): it stays down and
  // maintain() starts it again until the server is there.
  const bool client = strstr(vdev, "role=client") != nullptr;
  if (r != 0 && !(configured_ && client)) {
    UCC_ERROR("wire: cannot start DPDK port %s: %s", name_, rte_strerror(-r));
    return Status::kError;
  }
  started_ = r == 0;
  if (started_) rte_eth_promiscuous_enable(port_);
  if (!started_)
    UCC_DEBUG("wire: port %s: no server yet, starting it later", name_);
  rte_ether_addr a;
  rte_eth_macaddr_get(port_, &a);
  memcpy(mac_.b, a.addr_bytes, 6);
  return Status::kOk;
}

bool DpdkPort::tx(const void* frame, uint32_t len) {
  if (len > max_frame_) return false;
  if (ntx_ == kBurst) flush();
  if (ntx_ == kBurst) return false;
  rte_mbuf* m = rte_pktmbuf_alloc(g_pool);
  if (m == nullptr) return false;
  char* d = rte_pktmbuf_append(m, static_cast<uint16_t>(len));
  if (d == nullptr) {
    rte_pktmbuf_free(m);
    return false;
  }
  memcpy(d, frame, len);
  txq_[ntx_++] = m;
  return true;
}

void DpdkPort::flush() {
  if (ntx_ == 0 || !started_) return;
  auto** q = reinterpret_cast<rte_mbuf**>(txq_);
  uint16_t sent = rte_eth_tx_burst(port_, 0, q, static_cast<uint16_t>(ntx_));
  // What the device did not take stays queued, in order (back-pressure:
  // tx() refuses once the queue is full).
  memmove(q, q + sent, (ntx_ - sent) * sizeof(void*));
  ntx_ -= sent;
}

uint32_t DpdkPort::rx(RxFn fn, void* ctx, uint32_t port, uint32_t max) {
  if (!started_) return 0;
  rte_mbuf* b[kBurst];
  uint32_t total = 0;
  while (total < max) {
    uint16_t n = rte_eth_rx_burst(port_, 0, b, kBurst);
    for (uint16_t i = 0; i < n; ++i) {
      rte_mbuf* m = b[i];
      const uint32_t len = rte_pktmbuf_pkt_len(m);
      if (m->nb_segs == 1) {
        fn(ctx, port, rte_pktmbuf_mtod(m, const uint8_t*), len);
      } else if (len <= max_frame_) {
        const void* p = rte_pktmbuf_read(m, 0, len, lin_.data());
        if (p != nullptr) fn(ctx, port, static_cast<const uint8_t*>(p), len);
      }
      rte_pktmbuf_free(m);
    }
    total += n;
    if (n < kBurst) break;
  }
  return total;
}

bool DpdkPort::up() {
  rte_eth_link l;
  memset(&l, 0, sizeof(l));
  return started_ && rte_eth_link_get_nowait(port_, &l) == 0 &&
         l.link_status == RTE_ETH_LINK_UP;
}

void DpdkPort::maintain(uint64_t now_ns) {
  if (up()) {
    down_since_ = 0;
    return;
  }
  if (down_since_ == 0) {
    down_since_ = now_ns;
    return;
  }
  // A memif client that came before its server, or lost it: (re)start the
  // port, which connects again.
  if (now_ns - down_since_ > 500000000ull) {
    UCC_DEBUG("wire: port %s down for 500 ms: restarting it", name_);
    if (started_) rte_eth_dev_stop(port_);
    started_ = rte_eth_dev_start(port_) == 0;
    if (started_) rte_eth_promiscuous_enable(port_);
    down_since_ = now_ns;
  }
}

}  // namespace ucc::plat::wire

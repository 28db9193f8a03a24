// DpdkPort: a frame port on a DPDK ethdev (Debian's libdpdk 22.11), made
// from a vdev string such as
//   net_memif0,role=server,id=0,socket=/tmp/link.sock,bsize=9216
//   net_af_packet0,iface=veth1
// Built only when CMake finds libdpdk; firmware_sim links it.
//
// The EAL is started once per process (dpdk_init) without hugepages, PCI,
// shared config or telemetry, and this thread's CPU affinity is given
// back afterwards (the EAL pins its main thread; a daemon sharing a small
// machine with its hosts must not be).
//
// Threads: the wire's.
#pragma once

#include <cstdint>

#include "platform/base/arena.h"
#include "platform/base/status.h"
#include "platform/wire/port.h"

struct rte_mempool;

namespace ucc::plat::wire {

using base::Status;

// Starts the EAL with these vdevs and one mbuf pool for frames of up to
// max_frame bytes. mem_mb: the EAL's memory (-m). kError when the EAL
// refuses (the message is logged).
Status dpdk_init(const char* const* vdevs, uint32_t n, uint32_t max_frame,
                 uint32_t mem_mb);
// Ends what dpdk_init started (the pool, the EAL and its arguments), once
// every DpdkPort is gone. The EAL cannot start again in this process.
void dpdk_fini();

class DpdkPort final : public FramePort {
 public:
  DpdkPort() = default;
  DpdkPort(const DpdkPort&) = delete;
  DpdkPort& operator=(const DpdkPort&) = delete;
  ~DpdkPort() override;

  // Configures and starts the ethdev of this vdev (its name is the part
  // before the first comma). kError when it does not exist or fails; a
  // memif client whose server is not there yet opens stopped and is
  // started by maintain() once it is.
  Status open(const char* vdev, uint32_t max_frame);

  bool tx(const void* frame, uint32_t len) override;
  void flush() override;
  uint32_t rx(RxFn fn, void* ctx, uint32_t port, uint32_t max) override;
  Mac mac() const override { return mac_; }
  uint32_t max_frame() const override { return max_frame_; }
  bool up() override;
  void maintain(uint64_t now_ns) override;

 private:
  static constexpr uint32_t kBurst = 32;
  uint16_t port_ = 0;
  bool configured_ = false;
  bool started_ = false;  // rte_eth_dev_start succeeded (rx/tx allowed)
  Mac mac_{};
  uint32_t max_frame_ = 0;
  void* txq_[kBurst] = {};
  uint32_t ntx_ = 0;
  base::Array<uint8_t> lin_;  // a chained frame made contiguous
  uint64_t down_since_ = 0;
  char name_[64] = {};
};

}  // namespace ucc::plat::wire

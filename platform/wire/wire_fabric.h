// The fabric of one team member over the wire (fabric.h): the inbox
// protocol (fabric/inbox.h) on its endpoint's memory. Messages to a peer
// are written into the endpoint's shadow of the peer's inbox and framed
// by the endpoint (endpoint.h); the peers' messages arrive in the
// endpoint's segment. A message to ourselves goes straight into our own
// segment, as over shared memory.
//
// Threads: the wire's.
#pragma once

#include <cstdint>

#include "platform/fabric/inbox_fabric.h"

namespace ucc::plat::wire {

class Endpoint;

class WireFabric final : public InboxFabric {
 public:
  explicit WireFabric(Endpoint* ep);
  ~WireFabric() override;
  WireFabric(const WireFabric&) = delete;
  WireFabric& operator=(const WireFabric&) = delete;

  Endpoint* endpoint() const { return ep_; }

  Status connect(const FabricAddr* addrs, const bool* mine) override;
  void seal() override {}
  void tx_commit(uint32_t peer, uint32_t len, const MsgKey& key, uint8_t kind,
                 uint32_t lag = 0) override;
  void rx_release(uint32_t peer, uint32_t i) override {
    if (pair(peer).rx_release(i)) ++events_;
  }
  bool peer_lost() const override;
  uint32_t attention() const override;
  uint64_t events() const override { return events_; }

 private:
  Endpoint* ep_;
  uint64_t events_ = 0;
};

}  // namespace ucc::plat::wire

#include "platform/wire/wire_fabric.h"

#include "platform/wire/endpoint.h"

namespace ucc::plat::wire {

WireFabric::WireFabric(Endpoint* ep) : InboxFabric(ep->config()), ep_(ep) {}

WireFabric::~WireFabric() = default;

Status WireFabric::connect(const FabricAddr* addrs, const bool* mine) {
  Status st = ep_->connect(addrs, mine);
  if (failed(st)) return st;
  char* seg = ep_->segment();
  // Ourselves (into our own segment) and the ranks the wire reaches.
  st = take_pairs(mine, true, seg);
  if (failed(st)) return st;
  for (uint32_t i = 0; i < cfg_.nranks; ++i) {
    if (i == cfg_.rank) {  // to ourselves: straight into our segment
      pair(i).bind_tx(
          InboxView{seg_ctl(seg, cfg_.rank), seg_slots(seg, cfg_, cfg_.rank)});
    } else if (mine[i]) {
      pair(i).bind_tx(ep_->shadow(i));
    }
  }
  return Status::kOk;
}

void WireFabric::tx_commit(uint32_t peer, uint32_t len, const MsgKey& key,
                           uint8_t kind, uint32_t lag) {
  pair(peer).tx_commit(cfg_, len, key, kind, lag);
  ++events_;
  if (peer != cfg_.rank) {
    ep_->kick(peer);  // the receiver's side counts attention
  } else if (kind != 0) {
    seg_header(ep_->segment())
        ->attention.fetch_add(1, std::memory_order_release);
  }
}

bool WireFabric::peer_lost() const { return ep_->peer_lost(); }

uint32_t WireFabric::attention() const {
  return seg_header(ep_->segment())->attention.load(std::memory_order_acquire);
}

}  // namespace ucc::plat::wire

#include "platform/wire/mem_port.h"

#include <cstring>
#include <type_traits>

namespace ucc::plat::wire {

struct MemPort::Ring {
  uint32_t depth;
  uint32_t head;  // frames written
  uint32_t tail;  // frames read
  uint32_t* len;
  uint8_t* data;  // depth frames of max_frame bytes
};

MemPort::~MemPort() {
  static_assert(std::is_trivially_destructible_v<Ring>);
  if (peer_ != nullptr) peer_->peer_ = nullptr;
}

bool MemPort::join(MemPort* a, MemPort* b, const Mac& mac_a, const Mac& mac_b,
                   uint32_t max_frame, uint32_t depth) {
  MemPort* both[2] = {a, b};
  for (MemPort* p : both) {
    // The ring, its lengths and its frames: one block, the port's.
    Ring* r = nullptr;
    uint32_t* len = nullptr;
    uint8_t* data = nullptr;
    for (int pass = 0; pass < 2; ++pass) {
      r = p->mem_.take<Ring>(1);
      len = p->mem_.take<uint32_t>(depth);
      data = p->mem_.take<uint8_t>(size_t{depth} * max_frame, 64);
      if (pass == 0 && !p->mem_.commit()) return false;
    }
    r->depth = depth;
    r->len = len;
    r->data = data;
    p->in_ = r;
    p->max_frame_ = max_frame;
  }
  a->mac_ = mac_a;
  b->mac_ = mac_b;
  a->peer_ = b;
  b->peer_ = a;
  return true;
}

bool MemPort::tx(const void* frame, uint32_t len) {
  if (peer_ == nullptr || len > max_frame_) return false;
  Ring* r = peer_->in_;
  if (r->head - r->tail == r->depth) return false;
  uint32_t i = r->head % r->depth;
  memcpy(r->data + size_t{i} * max_frame_, frame, len);
  r->len[i] = len;
  ++r->head;
  return true;
}

uint32_t MemPort::rx(RxFn fn, void* ctx, uint32_t port, uint32_t max) {
  uint32_t n = 0;
  for (; n < max && in_->tail != in_->head; ++n) {
    uint32_t i = in_->tail % in_->depth;
    fn(ctx, port, in_->data + size_t{i} * max_frame_, in_->len[i]);
    ++in_->tail;
  }
  return n;
}

}  // namespace ucc::plat::wire

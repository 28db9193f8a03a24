#include "platform/wire/mem_port.h"

#include <cstdlib>
#include <cstring>

namespace ucc::plat::wire {

struct MemPort::Ring {
  uint32_t depth;
  uint32_t head;  // frames written
  uint32_t tail;  // frames read
  uint32_t* len;
  uint8_t* data;  // depth frames of max_frame bytes
};

MemPort::~MemPort() {
  if (in_ != nullptr) {
    free(in_->len);
    free(in_->data);
    free(in_);
  }
  if (peer_ != nullptr) peer_->peer_ = nullptr;
}

bool MemPort::join(MemPort* a, MemPort* b, const Mac& mac_a, const Mac& mac_b,
                   uint32_t max_frame, uint32_t depth) {
  MemPort* both[2] = {a, b};
  for (MemPort* p : both) {
    auto* r = static_cast<Ring*>(calloc(1, sizeof(Ring)));
    if (r == nullptr) return false;
    r->depth = depth;
    r->len = static_cast<uint32_t*>(calloc(depth, sizeof(uint32_t)));
    r->data = static_cast<uint8_t*>(malloc(size_t{depth} * max_frame));
    p->in_ = r;
    if (r->len == nullptr || r->data == nullptr) return false;
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

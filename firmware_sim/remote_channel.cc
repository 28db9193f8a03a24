#include "firmware_sim/remote_channel.h"

#include <cstring>

#include "platform/mem/remote_mem.h"
#include "platform/os/log.h"

namespace ucc::fw {

void RemoteChannel::init(const plat::RemoteMemSlot* mem, uint64_t addr,
                         uint32_t rkey, uint32_t cap, uint32_t ncomp,
                         off::Channel* local, const void* inbox) {
  mem_ = mem;
  addr_ = addr;
  rkey_ = rkey;
  lay_ = off::Channel::layout(cap, ncomp);
  mask_ = cap - 1;
  ncomp_ = ncomp;
  local_ = local;
  local_->set_sink(this);
  inbox_ = static_cast<const char*>(inbox);
}

bool RemoteChannel::move(plat::MemStep step, bool to_host, uint64_t off,
                         void* local, uint64_t len) {
  if (broken_) return false;
  broken_ = !mem_->transfer(step, to_host, addr_ + off, rkey_, local, len);
  return !broken_;
}

uint32_t RemoteChannel::pull() {
  if (broken_ || corrupt_) return 0;
  if (inbox_ == nullptr) return pull_ring();
  const uint32_t n = pull_inbox();
  if (n != 0 || !look_ring_) return n;
  look_ring_ = false;
  return pull_ring();
}

uint32_t RemoteChannel::how_many(uint32_t ahead) {
  if (ahead > mask_ + 1) {
    UCC_ERROR("dpu: the host's ring is %u descriptors ahead of a ring of %u",
              ahead, mask_ + 1);
    corrupt_ = true;
    return 0;
  }
  // Room in our copy (the engine releases what it has taken).
  const uint32_t room = mask_ + 1 - local_->sq_pending();
  const uint32_t n = ahead < room ? ahead : room;
  return n < kBatch ? n : kBatch;
}

uint32_t RemoteChannel::pull_ring() {
  uint32_t head = 0;
  if (!move(plat::MemStep::kRingHead, false, lay_.head, &head, sizeof(head)))
    return 0;
  const uint32_t n = how_many(head - taken_);
  if (n == 0) return 0;
  // At most two pieces: up to the end of the host's array, then from 0.
  const uint32_t first = taken_ & mask_;
  const uint32_t n1 = off::first_run(taken_, n, mask_ + 1);
  const uint64_t dsz = sizeof(off::CollDesc);
  if (!move(plat::MemStep::kDescriptors, false, lay_.sq + first * dsz, batch_,
            n1 * dsz))
    return 0;
  if (n1 < n && !move(plat::MemStep::kDescriptors, false, lay_.sq, batch_ + n1,
                      (n - n1) * dsz))
    return 0;
  return take(n);
}

uint32_t RemoteChannel::pull_inbox() {
  // The host's NIC wrote the slots before the index (one queue pair, in
  // order): once the index is seen, so are they.
  const uint32_t head = __atomic_load_n(
      reinterpret_cast<const uint32_t*>(inbox_ + off::InboxLayout::kHead),
      __ATOMIC_ACQUIRE);
  // Behind or at what was taken: the ring was read first, or nothing new.
  if (static_cast<int32_t>(head - taken_) <= 0) return 0;
  const uint32_t n = how_many(head - taken_);
  const uint64_t dsz = sizeof(off::CollDesc);
  // Copied out before the engine checks them: the host may write the
  // inbox at any time.
  for (uint32_t i = 0; i < n; ++i)
    memcpy(&batch_[i],
           inbox_ + off::InboxLayout::kSlots + ((taken_ + i) & mask_) * dsz,
           dsz);
  pushed_ += n;
  return take(n);
}

uint32_t RemoteChannel::take(uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) local_->submit(batch_[i]);
  taken_ += n;
  // The host may reuse the slots: we have our copies. It is told once a
  // quarter of the ring has been taken since it last was, and whenever we
  // nap (set_idle), so it never sees less than three quarters free
  // beyond what we hold: one transfer in four descriptors or fewer.
  if (taken_ - told_ >= (mask_ + 1) / 4) tell_tail();
  return broken_ ? 0 : n;
}

void RemoteChannel::completed(uint32_t slot) {
  if (npending_ == kPending) flush();  // empties it, broken or not
  pending_[npending_++] = slot;
}

void RemoteChannel::flush() {
  for (uint32_t i = 0; i < npending_ && !broken_; ++i) {
    const uint32_t s = pending_[i];
    if (s >= ncomp_) continue;  // the engine checked it already
    uint64_t w = local_->word(s);
    move(plat::MemStep::kCompletion, true, lay_.comp + uint64_t{s} * sizeof(w),
         &w, sizeof(w));
  }
  npending_ = 0;
}

void RemoteChannel::tell_tail() {
  if (move(plat::MemStep::kRingTail, true, lay_.tail, &taken_, sizeof(taken_)))
    told_ = taken_;
}

void RemoteChannel::set_idle(bool idle) {
  if (idle && told_ != taken_) tell_tail();
  // Pushed: the flag is in the host's memory before the next pull reads
  // the host's ring (this write is waited for). A host that published a
  // descriptor after that read sees the flag and rings the doorbell; one
  // that did before is seen by the read, pushed or not.
  look_ring_ = idle;
  local_->set_engine_idle(idle);
  uint32_t v = idle ? 1 : 0;
  move(plat::MemStep::kIdleFlag, true, lay_.idle, &v, sizeof(v));
}

}  // namespace ucc::fw

#include "device/coll/streams.h"

#include <cstring>

namespace ucc::dev {

Status take_offer(const CollRun& run, uint32_t peer, RmaOffer* o) {
  Status err = Status::kOk;
  const void* m = run.peek(peer, sizeof(RmaOffer), &err);
  if (m == nullptr) return failed(err) ? err : Status::kInProgress;
  memcpy(o, m, sizeof *o);
  run.release(peer);
  return Status::kOk;
}

Status post_gets(const CollRun& run, uint32_t peer, const plat::RmaReg& reg,
                 char* local, uint64_t raddr, uint32_t rkey, uint64_t len,
                 uint64_t* at, uint64_t* ticket) {
  while (*at < len) {
    const uint64_t rest = len - *at;
    const uint32_t piece =
        rest < plat::kRmaMaxOp ? static_cast<uint32_t>(rest) : plat::kRmaMaxOp;
    Status st =
        run.get(peer, local + *at, reg, raddr + *at, rkey, piece, ticket);
    if (st != Status::kOk) return st;  // kInProgress: queue full
    *at += piece;
  }
  return Status::kOk;
}

Status SendStream::progress(const CollRun& run) {
  if (phase != RmaPhase::kSlots) {
    Status st = offer(run);
    if (st != Status::kOk) return st;
    // Finished one-sided (done == n), or slots from here on.
  }
  while (done < n) {
    void* slot = run.reserve(peer);
    if (slot == nullptr) return Status::kInProgress;
    uint32_t len = msg_len(bytes, run.slot, done);
    Status st = run.copy_in(slot, buf, off + uint64_t{done} * run.slot, len);
    if (failed(st)) return st;
    run.commit(peer, len);
    ++done;
  }
  return Status::kOk;
}

Status SendStream::offer(const CollRun& run) {
  if (phase == RmaPhase::kOffer) {
    void* m = run.reserve(peer);
    if (m == nullptr) return Status::kInProgress;
    // A registration the device refuses is no error: the offer says so
    // and the bytes go through slots.
    Status st = run.rma_reg(buf, off, bytes, plat::kRmaRemoteRead, &reg);
    if (st == Status::kInvalidParam) return st;
    const bool registered = ok(st);
    const RmaOffer o{registered ? reg.addr : 0, bytes,
                     registered ? reg.rkey : 0, registered ? 1u : 0u};
    memcpy(m, &o, sizeof o);
    run.commit(peer, sizeof o);
    if (!registered) {
      phase = RmaPhase::kSlots;
      return Status::kOk;
    }
    phase = RmaPhase::kWait;
  }
  uint32_t len = 0;
  if (run.peek_done(peer, &len) == nullptr) return Status::kInProgress;
  if (len > 1) return Status::kNoMessage;  // not an answer (or a clash)
  run.release_done(peer);
  run.rma_dereg(reg);
  phase = RmaPhase::kSlots;
  // One byte: the receiver could not register; slots follow.
  if (len == 0) done = n;
  return Status::kOk;
}

Status RecvStream::one_sided_step(const CollRun& run) {
  for (;;) {
    switch (phase) {
      case RmaPhase::kOffer: {
        RmaOffer o;
        Status got = take_offer(run, peer, &o);
        if (got != Status::kOk) return got;
        if (o.bytes != bytes) return Status::kNoMessage;
        if (o.ok == 0) {  // the sender's slots follow
          phase = RmaPhase::kSlots;
          return Status::kOk;
        }
        Status st = run.rma_reg(buf, off, bytes, plat::kRmaLocal, &reg);
        if (st == Status::kInvalidParam) return st;
        if (failed(st)) {
          phase = RmaPhase::kRefuse;
          break;
        }
        raddr = o.addr;
        rkey = o.rkey;
        posted = 0;
        phase = RmaPhase::kGet;
        break;
      }
      case RmaPhase::kGet: {
        Status st = post_gets(run, peer, reg, reinterpret_cast<char*>(reg.addr),
                              raddr, rkey, bytes, &posted, &ticket);
        if (st != Status::kOk) return st;
        phase = RmaPhase::kWait;
        break;
      }
      case RmaPhase::kWait:
        // A link that fails never gets here: the team's failure ends us.
        if (run.rma_done(peer) < ticket) return Status::kInProgress;
        phase = RmaPhase::kDone;
        break;
      case RmaPhase::kDone:
        if (!run.send_done(peer, nullptr, 0)) return Status::kInProgress;
        run.rma_dereg(reg);
        done = n;
        phase = RmaPhase::kSlots;
        return Status::kOk;
      case RmaPhase::kRefuse: {
        const uint8_t no = 1;
        if (!run.send_done(peer, &no, 1)) return Status::kInProgress;
        phase = RmaPhase::kSlots;
        return Status::kOk;
      }
      case RmaPhase::kSlots:
        return Status::kOk;
    }
  }
}

Status RecvStream::progress(const CollRun& run, uint32_t limit) {
  if (phase != RmaPhase::kSlots) {
    Status st = one_sided_step(run);
    if (st != Status::kOk) return st;
  }
  while (done < n && done < limit) {
    uint32_t len = msg_len(bytes, run.slot, done);
    Status err = Status::kOk;
    const void* msg = run.peek(peer, len, &err);
    if (msg == nullptr) return failed(err) ? err : Status::kInProgress;
    uint64_t at = off + uint64_t{done} * run.slot;
    Status st = reduce ? run.reduce_out(buf, at, msg, buf, at, len / run.esize)
                       : run.copy_out(buf, at, msg, len);
    if (failed(st)) return st;
    run.release(peer);
    ++done;
  }
  return done == n ? Status::kOk : Status::kInProgress;
}

}  // namespace ucc::dev

#include "device/coll/streams.h"

namespace ucc::dev {

Status SendStream::progress(const CollRun& run) {
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

Status RecvStream::progress(const CollRun& run, uint32_t limit) {
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

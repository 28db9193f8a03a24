// CollRun's data operations for memory the adapter cannot map (an engine
// outside the host process): user bytes move through engine memory with
// MemAccess::read / write, in pieces of at most `slot` bytes staged in the
// collective's bounce buffer. Every range is checked before the first
// byte moves, so a refused operation leaves user memory untouched.
// Also the single-copy read from a peer's process.
#include "device/run/coll_run.h"

#include "platform/mem/cma.h"

namespace ucc::dev {
namespace {

uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

// count elements of `esize` bytes; false when that overflows (the fast
// paths' bounds check then saw a wrapped length, so refuse here too).
bool span(uint64_t count, uint32_t esize, uint64_t* bytes) {
  return !__builtin_mul_overflow(count, uint64_t{esize}, bytes);
}

}  // namespace

uint64_t CollRun::piece_elems() const {
  if (bounce == nullptr || esize == 0 || slot < esize) return 0;
  return slot / esize;
}

Status CollRun::copy_uu_staged(Buf db, uint64_t doff, Buf sb, uint64_t soff,
                               uint64_t bytes) const {
  const off::BufRef& dr = ref(db);
  const off::BufRef& sr = ref(sb);
  if (!mem->check(dr, doff, bytes) || !mem->check(sr, soff, bytes))
    return Status::kInvalidParam;
  const uint64_t to = dr.addr + doff, from = sr.addr + soff;
  if (to == from) return Status::kOk;
  if (bounce == nullptr || slot == 0) return Status::kNoResource;
  // With the destination overlapping above the source, the last piece goes
  // first, so that no piece is overwritten before it is read (memmove).
  const bool backward = to > from && to - from < bytes;
  const uint64_t npieces = (bytes + slot - 1) / slot;
  for (uint64_t i = 0; i < npieces; ++i) {
    uint64_t at = (backward ? npieces - 1 - i : i) * slot;
    uint64_t n = min64(slot, bytes - at);
    if (!mem->read(sr, soff + at, bounce, n) ||
        !mem->write(dr, doff + at, bounce, n))
      return Status::kInvalidParam;
  }
  return Status::kOk;
}

Status CollRun::reduce_in_staged(void* eng_dst, const void* eng_a, Buf b,
                                 uint64_t off, uint64_t count) const {
  uint64_t bytes;
  if (!span(count, esize, &bytes) || !mem->check(ref(b), off, bytes))
    return Status::kInvalidParam;
  const uint64_t per = piece_elems();
  if (per == 0) return Status::kNoResource;
  auto* dst = static_cast<unsigned char*>(eng_dst);
  auto* a = static_cast<const unsigned char*>(eng_a);
  for (uint64_t i = 0; i < count; i += per) {
    uint64_t n = min64(per, count - i);
    if (!mem->read(ref(b), off + i * esize, bounce, n * esize))
      return Status::kInvalidParam;
    Status st = combine(dst + i * esize, a + i * esize, bounce, n);
    if (failed(st)) return st;
  }
  return Status::kOk;
}

Status CollRun::reduce_out_staged(Buf db, uint64_t doff, const void* eng_a,
                                  Buf b, uint64_t boff, uint64_t count) const {
  uint64_t bytes;
  if (!span(count, esize, &bytes) || !mem->check(ref(db), doff, bytes) ||
      !mem->check(ref(b), boff, bytes))
    return Status::kInvalidParam;
  const uint64_t per = piece_elems();
  if (per == 0) return Status::kNoResource;
  auto* a = static_cast<const unsigned char*>(eng_a);
  for (uint64_t i = 0; i < count; i += per) {
    uint64_t n = min64(per, count - i);
    // bounce <- a (op) b, then out; b's piece is read before dst's piece
    // is written, so b may be dst.
    if (!mem->read(ref(b), boff + i * esize, bounce, n * esize))
      return Status::kInvalidParam;
    Status st = combine(bounce, a + i * esize, bounce, n);
    if (failed(st)) return st;
    if (!mem->write(ref(db), doff + i * esize, bounce, n * esize))
      return Status::kInvalidParam;
  }
  return Status::kOk;
}

Status CollRun::finish_avg_staged(Buf b, uint64_t off, uint64_t count) const {
  uint64_t bytes;
  if (!span(count, esize, &bytes) || !mem->check(ref(b), off, bytes))
    return Status::kInvalidParam;
  const uint64_t per = piece_elems();
  if (per == 0) return Status::kNoResource;
  for (uint64_t i = 0; i < count; i += per) {
    uint64_t n = min64(per, count - i);
    uint64_t at = off + i * esize;
    if (!mem->read(ref(b), at, bounce, n * esize)) return Status::kInvalidParam;
    scale_div(d->dtype, bounce, n, size);
    if (!mem->write(ref(b), at, bounce, n * esize))
      return Status::kInvalidParam;
  }
  return Status::kOk;
}

Status CollRun::read_peer(uint32_t peer, uint64_t remote, Buf b, uint64_t off,
                          uint64_t len) const {
  if (len == 0) return Status::kOk;
  void* p = at(b, off, len);
  const int32_t pid = port->links().peer_pid(team_rank(peer));
  if (p == nullptr || pid <= 0) return Status::kInvalidParam;
  return plat::cma_transfer(pid, false, remote, p, len) ? Status::kOk
                                                        : Status::kError;
}

}  // namespace ucc::dev

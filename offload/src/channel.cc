#include "offload/channel.h"

#include <cstddef>
#include <new>

namespace ucc::off {
namespace {

constexpr uint32_t kChannelMagic = 0x55434348u;  // "UCCH"

struct Offsets {
  size_t idx, sq, comp, res, total;
};

constexpr size_t align64(size_t v) { return (v + 63) & ~size_t{63}; }

Offsets offsets(uint32_t sq_capacity, uint32_t ncomp, uint32_t nres) {
  Offsets o{};
  o.idx = align64(sizeof(ChannelHeader));
  o.sq = o.idx + sizeof(RingIndices);
  o.comp = align64(o.sq + sizeof(CollDesc) * sq_capacity);
  o.res = align64(o.comp + sizeof(uint64_t) * ncomp);
  o.total = align64(o.res + size_t{kInlineBytes} * nres);
  return o;
}

}  // namespace

ChannelLayout Channel::layout(uint32_t sq_capacity, uint32_t ncomp,
                              uint32_t nres) {
  const Offsets o = offsets(sq_capacity, ncomp, nres);
  ChannelLayout l{};
  l.idle = offsetof(ChannelHeader, engine_idle);
  l.head = o.idx + offsetof(RingIndices, head);
  l.tail = o.idx + offsetof(RingIndices, tail);
  l.sq = o.sq;
  l.comp = o.comp;
  l.res = o.res;
  l.total = o.total;
  return l;
}

size_t Channel::bytes_needed(uint32_t sq_capacity, uint32_t ncomp,
                             uint32_t nres) {
  return offsets(sq_capacity, ncomp, nres).total;
}

void Channel::init(void* mem, uint32_t sq_capacity, uint32_t ncomp,
                   uint32_t nres) {
  auto* base = static_cast<char*>(mem);
  if (nres > ncomp) nres = ncomp;
  Offsets o = offsets(sq_capacity, ncomp, nres);
  auto* hdr = reinterpret_cast<ChannelHeader*>(base);
  hdr->magic = kChannelMagic;
  hdr->version = kDescVersion;
  hdr->sq_capacity = sq_capacity;
  hdr->ncomp = ncomp;
  hdr->nres = nres;
  new (&hdr->engine_idle) std::atomic<uint32_t>(0);
  hdr_ = hdr;
  auto* idx = new (base + o.idx) RingIndices;
  sq_.init(idx, reinterpret_cast<CollDesc*>(base + o.sq), sq_capacity);
  // The completion words are left as they are (zero: the block comes
  // zero-filled): a context may have room for many teams, and only the
  // pages of the teams it creates should be touched. A slot is armed
  // before each post anyway.
  comp_ = reinterpret_cast<std::atomic<uint64_t>*>(base + o.comp);
  res_ = reinterpret_cast<unsigned char*>(base + o.res);
  ncomp_ = ncomp;
  nres_ = nres;
}

Status Channel::attach(void* mem, size_t bytes) {
  auto* base = static_cast<char*>(mem);
  if (bytes < sizeof(ChannelHeader)) return Status::kInvalidParam;
  auto* hdr = reinterpret_cast<ChannelHeader*>(base);
  if (hdr->magic != kChannelMagic || hdr->version != kDescVersion)
    return Status::kInvalidParam;
  // The geometry is read once, here, and kept: the other side may
  // rewrite the header at any time.
  const uint32_t cap = hdr->sq_capacity;
  const uint32_t ncomp = hdr->ncomp;
  const uint32_t nres = hdr->nres;
  if (cap == 0 || (cap & (cap - 1)) != 0 || nres > ncomp)
    return Status::kInvalidParam;
  Offsets o = offsets(cap, ncomp, nres);
  if (o.total > bytes) return Status::kInvalidParam;
  sq_.attach(reinterpret_cast<RingIndices*>(base + o.idx),
             reinterpret_cast<CollDesc*>(base + o.sq), cap);
  comp_ = reinterpret_cast<std::atomic<uint64_t>*>(base + o.comp);
  res_ = reinterpret_cast<unsigned char*>(base + o.res);
  ncomp_ = ncomp;
  nres_ = nres;
  hdr_ = hdr;
  return Status::kOk;
}

}  // namespace ucc::off

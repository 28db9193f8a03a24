#include "device/engine/blocks.h"

#include <cstring>

#include "device/coll/patterns.h"
#include "offload/vectors.h"
#include "platform/mem/direct_mem.h"

namespace ucc::dev {
namespace {

using off::CollType;

// The host array at `addr` (n entries), mapped through the memory
// adapter, or nullptr.
const void* map_array(uint64_t addr, bool wide, uint32_t n) {
  if (addr == 0) return nullptr;
  off::BufRef ref{addr, off::vec_bytes(wide, n), 0, 0, {0, 0, 0}};
  return plat::DirectMem::map(ref, 0, ref.bytes);
}

// Counts and offsets of one side from user arrays.
bool from_arrays(uint64_t counts, uint64_t displs, bool wc, bool wd, uint32_t n,
                 uint64_t* cnt, uint64_t* off) {
  const void* c = map_array(counts, wc, n);
  const void* d = map_array(displs, wd, n);
  if (c == nullptr || (displs != 0 && d == nullptr)) return false;
  uint64_t packed = 0;
  for (uint32_t i = 0; i < n; ++i) {
    cnt[i] = off::vec_entry(c, wc, i);
    off[i] = d != nullptr ? off::vec_entry(d, wd, i) : packed;
    if (__builtin_add_overflow(packed, cnt[i], &packed)) return false;
  }
  return true;
}

void uniform(uint32_t n, uint64_t count, uint64_t* cnt, uint64_t* off) {
  for (uint32_t i = 0; i < n; ++i) {
    cnt[i] = count;
    off[i] = count * i;
  }
}

void same_everywhere(uint32_t n, uint64_t count, uint64_t at, uint64_t* cnt,
                     uint64_t* off) {
  for (uint32_t i = 0; i < n; ++i) {
    cnt[i] = count;
    off[i] = at;
  }
}

}  // namespace

bool is_vector_coll(CollType c) {
  return c == CollType::kGatherv || c == CollType::kScatterv ||
         c == CollType::kAllgatherv || c == CollType::kAlltoallv ||
         c == CollType::kReduceScatterv;
}

bool vector_count(uint64_t counts, bool wide, uint32_t n, uint32_t i,
                  uint64_t* out) {
  const void* c = map_array(counts, wide, n);
  if (c == nullptr || i >= n) return false;
  *out = off::vec_entry(c, wide, i);
  return true;
}

bool vector_extent(uint64_t counts, uint64_t displs, bool wc, bool wd,
                   uint32_t n, uint64_t* end, uint64_t* total) {
  const void* c = map_array(counts, wc, n);
  const void* d = map_array(displs, wd, n);
  if (c == nullptr || (displs != 0 && d == nullptr)) return false;
  return off::vec_extent(c, d, wc, wd, n, end, total);
}

Status fill_blocks(const off::CollDesc& d, uint32_t n, uint32_t rank,
                   uint64_t* scratch, CollRun* run) {
  uint64_t* scnt = scratch;
  uint64_t* soff = scratch + n;
  uint64_t* dcnt = scratch + 2 * n;
  uint64_t* doff = scratch + 3 * n;
  bool wc = (d.flags & off::kDescCount64) != 0;
  bool wd = (d.flags & off::kDescDispl64) != 0;
  bool in_place = (d.flags & off::kDescInPlace) != 0;
  bool root = d.root == rank;
  bool okay = true;
  memset(scratch, 0, sizeof(uint64_t) * 4 * n);
  switch (d.coll) {
    case CollType::kAllreduce:
      for (uint32_t i = 0; i < n; ++i) {
        scnt[i] = dcnt[i] = pat::block_count(d.count, n, i);
        soff[i] = doff[i] = pat::block_offset(d.count, n, i);
      }
      break;
    case CollType::kAllgather:
      uniform(n, d.count, dcnt, doff);
      same_everywhere(n, d.count, in_place ? doff[rank] : 0, scnt, soff);
      break;
    case CollType::kAlltoall:
      uniform(n, d.count, scnt, soff);
      uniform(n, d.count, dcnt, doff);
      break;
    case CollType::kReduceScatter:
      uniform(n, d.count, scnt, soff);
      same_everywhere(n, d.count, in_place ? soff[rank] : 0, dcnt, doff);
      break;
    case CollType::kReduceScatterv:
      okay = from_arrays(d.dst_counts, 0, wc, wd, n, scnt, soff);
      if (okay)
        same_everywhere(n, scnt[rank], in_place ? soff[rank] : 0, dcnt, doff);
      break;
    case CollType::kGather:
      if (root) uniform(n, d.count, dcnt, doff);
      same_everywhere(n, d.count, in_place && root ? doff[rank] : 0, scnt,
                      soff);
      break;
    case CollType::kGatherv:
    case CollType::kAllgatherv:
      if (root || d.coll == CollType::kAllgatherv)
        okay = from_arrays(d.dst_counts, d.dst_displs, wc, wd, n, dcnt, doff);
      if (okay)
        same_everywhere(n, d.count, in_place ? doff[rank] : 0, scnt, soff);
      break;
    case CollType::kScatter:
      if (root) uniform(n, d.count, scnt, soff);
      same_everywhere(n, d.count, 0, dcnt, doff);
      break;
    case CollType::kScatterv:
      if (root)
        okay = from_arrays(d.src_counts, d.src_displs, wc, wd, n, scnt, soff);
      same_everywhere(n, d.count, 0, dcnt, doff);
      break;
    case CollType::kAlltoallv:
      okay = from_arrays(d.src_counts, d.src_displs, wc, wd, n, scnt, soff) &&
             from_arrays(d.dst_counts, d.dst_displs, wc, wd, n, dcnt, doff);
      break;
    default:
      break;
  }
  run->src_cnt = scnt;
  run->src_off = soff;
  run->dst_cnt = dcnt;
  run->dst_off = doff;
  return okay ? Status::kOk : Status::kInvalidParam;
}

}  // namespace ucc::dev

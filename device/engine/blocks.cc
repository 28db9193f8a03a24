#include "device/engine/blocks.h"

#include <cstring>

#include "device/coll/patterns.h"
#include "offload/vectors.h"

namespace ucc::dev {
namespace {

using off::CollType;

// Entries [first, first + cnt) of the host array at `addr` (n entries),
// widened to 64 bits into out[0, cnt). false when the array is absent or
// cannot be read.
bool read_entries(const plat::MemAccess& mem, uint64_t addr, bool wide,
                  uint32_t n, uint32_t first, uint32_t cnt, uint64_t* out) {
  if (addr == 0) return false;
  const uint64_t es = wide ? 8 : 4;
  off::BufRef ref{addr, off::vec_bytes(wide, n), 0, 0, {0, 0, 0}};
  if (!mem.read(ref, es * first, out, es * cnt)) return false;
  if (!wide) {
    // Widen in place from the top: entry i's 4 bytes sit below where
    // entry i's 8 bytes go, and entries below i are still untouched.
    const auto* raw = reinterpret_cast<const unsigned char*>(out);
    for (uint32_t i = cnt; i-- > 0;) {
      uint32_t v;
      memcpy(&v, raw + 4 * size_t{i}, 4);
      out[i] = v;
    }
  }
  return true;
}

// Counts and offsets of one side from user arrays.
bool from_arrays(const plat::MemAccess& mem, uint64_t counts, uint64_t displs,
                 bool wc, bool wd, uint32_t n, uint64_t* cnt, uint64_t* off) {
  if (!read_entries(mem, counts, wc, n, 0, n, cnt)) return false;
  if (displs != 0 && !read_entries(mem, displs, wd, n, 0, n, off)) return false;
  uint64_t packed = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (displs == 0) off[i] = packed;
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

bool vector_count(const plat::MemAccess& mem, uint64_t counts, bool wide,
                  uint32_t n, uint32_t i, uint64_t* out) {
  return i < n && read_entries(mem, counts, wide, n, i, 1, out);
}

bool vector_extent(const plat::MemAccess& mem, uint64_t counts, uint64_t displs,
                   bool wc, bool wd, uint32_t n, uint64_t* end,
                   uint64_t* total) {
  // The arrays come in pieces through a small buffer on the stack, so
  // validation needs no engine memory of team size.
  constexpr uint32_t kPiece = 64;
  uint64_t c[kPiece], o[kPiece];
  uint64_t packed = 0, far = 0;
  for (uint32_t first = 0; first < n; first += kPiece) {
    uint32_t m = n - first < kPiece ? n - first : kPiece;
    if (!read_entries(mem, counts, wc, n, first, m, c) ||
        (displs != 0 && !read_entries(mem, displs, wd, n, first, m, o)))
      return false;
    for (uint32_t i = 0; i < m; ++i) {
      uint64_t at = displs != 0 ? o[i] : packed;
      uint64_t e;
      if (__builtin_add_overflow(at, c[i], &e) ||
          __builtin_add_overflow(packed, c[i], &packed))
        return false;
      if (c[i] != 0 && e > far) far = e;
    }
  }
  *end = far;
  *total = packed;
  return true;
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
      okay = from_arrays(*run->mem, d.dst_counts, 0, wc, wd, n, scnt, soff);
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
        okay = from_arrays(*run->mem, d.dst_counts, d.dst_displs, wc, wd, n,
                           dcnt, doff);
      if (okay)
        same_everywhere(n, d.count, in_place ? doff[rank] : 0, scnt, soff);
      break;
    case CollType::kScatter:
      if (root) uniform(n, d.count, scnt, soff);
      same_everywhere(n, d.count, 0, dcnt, doff);
      break;
    case CollType::kScatterv:
      if (root)
        okay = from_arrays(*run->mem, d.src_counts, d.src_displs, wc, wd, n,
                           scnt, soff);
      same_everywhere(n, d.count, 0, dcnt, doff);
      break;
    case CollType::kAlltoallv:
      okay = from_arrays(*run->mem, d.src_counts, d.src_displs, wc, wd, n, scnt,
                         soff) &&
             from_arrays(*run->mem, d.dst_counts, d.dst_displs, wc, wd, n, dcnt,
                         doff);
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

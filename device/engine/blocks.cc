#include "device/engine/blocks.h"

#include <cstring>
#include <initializer_list>

#include "device/coll/patterns.h"
#include "offload/vectors.h"

namespace ucc::dev {
namespace {

using off::Layout;
using off::Side;

// Reads array entries through the memory adapter (off::vec_scan's
// reader): the whole n-entry array must lie inside what the adapter
// allows.
struct MemReader {
  const plat::MemAccess& mem;
  uint32_t n;
  bool operator()(uint64_t addr, bool wide, uint32_t first, uint32_t cnt,
                  uint64_t* out) const {
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
};

struct Table {
  uint64_t* cnt;
  uint64_t* off;
};

bool wide_counts(const off::CollDesc& d) {
  return (d.flags & off::kDescCount64) != 0;
}
bool wide_displs(const off::CollDesc& d) {
  return (d.flags & off::kDescDispl64) != 0;
}

// Counts and offsets from user arrays (displs 0: blocks packed).
bool from_arrays(const MemReader& rd, const off::CollDesc& d, uint64_t counts,
                 uint64_t displs, Table tb) {
  if (!rd(counts, wide_counts(d), 0, rd.n, tb.cnt)) return false;
  if (displs != 0 && !rd(displs, wide_displs(d), 0, rd.n, tb.off)) return false;
  uint64_t packed = 0;
  for (uint32_t i = 0; i < rd.n; ++i) {
    if (displs == 0) tb.off[i] = packed;
    if (__builtin_add_overflow(packed, tb.cnt[i], &packed)) return false;
  }
  return true;
}

// Side s's table; a kOwn side after the other side's (it may sit at this
// rank's block there).
bool fill_side(const off::CollTraits& t, Side s, const off::CollDesc& d,
               const off::Role& r, const MemReader& rd, const Table* tabs) {
  const Table tb = tabs[static_cast<int>(s)];
  const uint32_t n = r.n;
  uint64_t counts = 0, displs = 0;
  off::side_arrays(t, s, d, r.root, &counts, &displs);
  switch (t.of(s).layout) {
    case Layout::kNone:
      return true;
    case Layout::kSplit:
      for (uint32_t i = 0; i < n; ++i) {
        tb.cnt[i] = pat::block_count(r.count, n, i);
        tb.off[i] = pat::block_offset(r.count, n, i);
      }
      return true;
    case Layout::kTeam:
      for (uint32_t i = 0; i < n; ++i) {
        tb.cnt[i] = r.count;
        tb.off[i] = r.count * i;
      }
      return true;
    case Layout::kVec:
      return from_arrays(rd, d, counts, displs, tb);
    case Layout::kDstVecPacked:
      return from_arrays(rd, d, d.dst_counts, 0, tb);
    case Layout::kOwn: {
      uint64_t own = r.count;
      if (t.of(s).extent == off::Extent::kVecMine &&
          !rd(counts, wide_counts(d), r.me, 1, &own))
        return false;
      const uint64_t at = off::in_place_applies(t, r.in_place, r.root)
                              ? tabs[static_cast<int>(off::other(s))].off[r.me]
                              : 0;
      for (uint32_t i = 0; i < n; ++i) {
        tb.cnt[i] = own;
        tb.off[i] = at;
      }
      return true;
    }
  }
  return false;
}

}  // namespace

bool side_facts(const plat::MemAccess& mem, const off::CollTraits& t,
                const off::CollDesc& d, const off::Role& r,
                off::VecFacts facts[2]) {
  const MemReader rd{mem, r.n};
  for (Side s : {Side::kSrc, Side::kDst}) {
    off::VecFacts& f = facts[static_cast<int>(s)];
    f = off::VecFacts{};
    uint64_t counts = 0, displs = 0;
    if (off::side_arrays(t, s, d, r.root, &counts, &displs) &&
        !off::vec_scan(rd, counts, displs, wide_counts(d), wide_displs(d), r.n,
                       r.me, &f))
      return false;
  }
  return true;
}

Status fill_blocks(const off::CollTraits& t, const off::CollDesc& d,
                   const off::Role& r, uint64_t* scratch, CollRun* run) {
  const uint32_t n = r.n;
  const Table tabs[2] = {{scratch, scratch + n},
                         {scratch + 2 * size_t{n}, scratch + 3 * size_t{n}}};
  memset(scratch, 0, sizeof(uint64_t) * 4 * n);
  const MemReader rd{*run->mem, n};
  bool okay = true;
  for (bool own_pass : {false, true}) {
    for (Side s : {Side::kSrc, Side::kDst}) {
      if ((t.of(s).layout == Layout::kOwn) != own_pass ||
          !off::side_present(t, s, r.root))
        continue;
      okay = okay && fill_side(t, s, d, r, rd, tabs);
    }
  }
  run->src_cnt = tabs[0].cnt;
  run->src_off = tabs[0].off;
  run->dst_cnt = tabs[1].cnt;
  run->dst_off = tabs[1].off;
  return okay ? Status::kOk : Status::kInvalidParam;
}

}  // namespace ucc::dev

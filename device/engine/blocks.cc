#include "device/engine/blocks.h"

#include <cstring>
#include <initializer_list>

#include "device/run/patterns.h"
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
  // Whether entries [first, first+cnt) hold seen[0..cnt), in place where
  // the adapter maps, else through a copy.
  bool same(uint64_t addr, bool wide, uint32_t first, uint32_t cnt,
            const uint64_t* seen) const {
    if (addr == 0) return false;
    const uint64_t es = wide ? 8 : 4;
    off::BufRef ref{addr, off::vec_bytes(wide, n), 0, 0, {0, 0, 0}};
    const void* p = mem.map(ref, es * first, es * cnt);
    if (p == nullptr) {
      constexpr uint32_t kChunk = 64;
      uint64_t now[kChunk];
      for (uint32_t i = 0; i < cnt; i += kChunk) {
        const uint32_t k = cnt - i < kChunk ? cnt - i : kChunk;
        if (!(*this)(addr, wide, first + i, k, now) ||
            memcmp(now, seen + i, sizeof(uint64_t) * k) != 0)
          return false;
      }
      return true;
    }
    for (uint32_t i = 0; i < cnt; ++i)
      if (off::vec_entry(p, wide, i) != seen[i]) return false;
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

// Side s's table, and the same in `twin` when it is not null; a kOwn
// side after the other side's (it may sit at this rank's block there).
bool fill_side(const off::CollTraits& t, Side s, const off::CollDesc& d,
               const off::Role& r, const MemReader& rd, const Table* tabs,
               const Table* twin = nullptr) {
  const Table tb = tabs[static_cast<int>(s)];
  const uint32_t n = r.n;
  uint64_t counts = 0, displs = 0;
  switch (t.of(s).layout) {
    case Layout::kNone:
      memset(tb.cnt, 0, sizeof(uint64_t) * n);
      memset(tb.off, 0, sizeof(uint64_t) * n);
      return true;
    case Layout::kSplit:
      for (uint32_t i = 0; i < n; ++i) {
        tb.cnt[i] = pat::block_count(r.count, n, i);
        tb.off[i] = pat::block_offset(r.count, n, i);
        if (twin != nullptr) twin->cnt[i] = tb.cnt[i], twin->off[i] = tb.off[i];
      }
      return true;
    case Layout::kTeam:
      for (uint32_t i = 0; i < n; ++i) {
        tb.cnt[i] = r.count;
        tb.off[i] = r.count * i;
        if (twin != nullptr) twin->cnt[i] = tb.cnt[i], twin->off[i] = tb.off[i];
      }
      return true;
    case Layout::kVec:
      off::side_arrays(t, s, d, r.root, &counts, &displs);
      return from_arrays(rd, d, counts, displs, tb);
    case Layout::kDstVecPacked:
      return from_arrays(rd, d, d.dst_counts, 0, tb);
    case Layout::kOwn: {
      uint64_t own = r.count;
      if (t.of(s).extent == off::Extent::kVecMine &&
          (!off::side_arrays(t, s, d, r.root, &counts, &displs) ||
           !rd(counts, wide_counts(d), r.me, 1, &own)))
        return false;
      const uint64_t at = off::role_plan(t, r).in_place
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

// Calls f(address, wide) for every array side_facts reads, in its order;
// false at the first call that returns false.
template <typename F>
bool each_array(const off::CollTraits& t, const off::CollDesc& d,
                const off::Role& r, F f) {
  for (Side s : {Side::kSrc, Side::kDst}) {
    uint64_t counts = 0, displs = 0;
    if (!off::side_arrays(t, s, d, r.root, &counts, &displs)) continue;
    if (!f(counts, wide_counts(d))) return false;
    if (displs != 0 && !f(displs, wide_displs(d))) return false;
  }
  return true;
}

}  // namespace

bool read_arrays(const plat::MemAccess& mem, const off::CollTraits& t,
                 const off::CollDesc& d, const off::Role& r, uint64_t* out) {
  const MemReader rd{mem, r.n};
  return each_array(t, d, r, [&](uint64_t addr, bool wide) {
    if (!rd(addr, wide, 0, r.n, out)) return false;
    out += r.n;
    return true;
  });
}

bool arrays_same(const plat::MemAccess& mem, const off::CollTraits& t,
                 const off::CollDesc& d, const off::Role& r,
                 const uint64_t* seen) {
  const MemReader rd{mem, r.n};
  return each_array(t, d, r, [&](uint64_t addr, bool wide) {
    if (!rd.same(addr, wide, 0, r.n, seen)) return false;
    seen += r.n;
    return true;
  });
}

Status fill_kept_blocks(const off::CollTraits& t, const off::CollDesc& d,
                        const off::Role& r, const uint64_t* kept,
                        uint64_t* scratch, const CollRun& run) {
  // d with its arrays naming the copies (64-bit entries, engine memory);
  // an array read_arrays() did not copy reads as missing.
  off::CollDesc dk = d;
  dk.flags |= off::kDescCount64 | off::kDescDispl64;
  dk.src_counts = dk.src_displs = dk.dst_counts = dk.dst_displs = 0;
  for (Side s : {Side::kSrc, Side::kDst}) {
    uint64_t counts = 0, displs = 0;
    if (!off::side_arrays(t, s, d, r.root, &counts, &displs)) continue;
    const bool src = s == Side::kSrc;
    (src ? dk.src_counts : dk.dst_counts) = reinterpret_cast<uintptr_t>(kept);
    kept += r.n;
    if (displs == 0) continue;
    (src ? dk.src_displs : dk.dst_displs) = reinterpret_cast<uintptr_t>(kept);
    kept += r.n;
  }
  CollRun direct = run;
  direct.mem = &plat::kDirectAccess;
  return fill_blocks(t, dk, r, scratch, &direct);
}

void use_tables(uint64_t* tables, uint32_t n, CollRun* run) {
  run->src_cnt = tables;
  run->src_off = tables + n;
  run->dst_cnt = tables + 2 * size_t{n};
  run->dst_off = tables + 3 * size_t{n};
}

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
  use_tables(scratch, n, run);
  const MemReader rd{*run->mem, n};
  // Both sides laid out alike from the count alone (allreduce,
  // alltoall): one pass fills both.
  const Layout sl = t.side[0].layout;
  if (sl == t.side[1].layout && (sl == Layout::kSplit || sl == Layout::kTeam))
    return fill_side(t, Side::kSrc, d, r, rd, tabs, &tabs[1])
               ? Status::kOk
               : Status::kInvalidParam;
  // A side this rank does not have reads as empty blocks; a kOwn side
  // comes after the other (it may sit at this rank's block there).
  const off::RolePlan& plan = off::role_plan(t, r);
  bool okay = true;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < 2; ++i) {
      if ((t.side[i].layout == Layout::kOwn) != (pass == 1)) continue;
      if (plan.present[i]) {
        okay = okay && fill_side(t, static_cast<Side>(i), d, r, rd, tabs);
      } else {
        memset(tabs[i].cnt, 0, sizeof(uint64_t) * n);
        memset(tabs[i].off, 0, sizeof(uint64_t) * n);
      }
    }
  }
  return okay ? Status::kOk : Status::kInvalidParam;
}

}  // namespace ucc::dev

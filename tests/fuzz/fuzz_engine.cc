// Fuzz target for what the engine takes from an untrusted host: collective
// descriptors and the buffer references in them, checked against the
// host's registrations. Builds as a libFuzzer target (clang,
// -DUCC_FUZZ_LIBFUZZER=ON) and under the standalone driver (fuzz_driver.cc).
//
// Input: 192 bytes of descriptor (zero-padded when shorter), then a
// program of registration operations (below).
//
// The world, built once: engines in cross-process mode aimed at this very
// process (so every access is a real process_vm_readv/writev), their
// registrations covering parts of an "arena":
//
//   [0, 64K)        unregistered guard          sentinel bytes
//   [64K, 320K)     region 1 (key index 1)      v-arrays at 64K, buffers
//   [320K, 576K)    region 2 (key index 2)      adjacent to region 1
//   [576K, 704K)    unregistered hole           sentinel bytes
//   [704K, 1088K)   region 3 (key index 3)
//   [768K, 832K)    region 4 (key index 4)      inside region 3
//   [1088K, 1280K)  unregistered tail           sentinel bytes
//
// Addresses in the input below 2 MiB (except 0) are offsets into the arena
// (those past 1280K point beyond it), others are taken as they are; keys
// 1..4 in the input stand for the regions' real keys. So inputs are
// reproducible across runs although the arena moves.
//
// Properties checked (a violation aborts, which both drivers report):
//   - validate() never crashes or reads out of bounds (ASan build), on a
//     3-rank team (rank 1) and on a 1-rank team;
//   - a descriptor accepted on the 1-rank team is run there to its end:
//     it must end (no hang), must not change a byte outside the
//     registrations (the sentinel bytes), and inside them must change
//     none outside the destination extent its collective's traits give
//     (offload/coll_traits.h: what validation checked);
//   - RegTable answers as a linear model does, for arbitrary sequences of
//     insert / remove / contains, and MemAccess::check answers for
//     arbitrary BufRefs as a model of the arena's registrations does.
//
// Direct (inline) mode is not fuzzed: there the host is the engine's own
// process and its addresses are its own, so nothing checks them against
// registrations.
#include "tests/fuzz/fuzz_engine.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "device/engine/blocks.h"
#include "device/engine/engine.h"
#include "offload/channel.h"
#include "offload/coll_traits.h"
#include "platform/mem/mem_access.h"
#include "platform/mem/reg_table.h"

namespace ucc::fuzz {
namespace {

using off::BufRef;
using off::CollDesc;
using off::Status;

constexpr uint64_t K = 1024;
constexpr uint64_t kArena = 1280 * K;
constexpr uint64_t kWindow = 2048 * K;
constexpr uint8_t kSentinel = 0xa5;

struct Range {
  uint64_t off, len;
};
constexpr Range kRegions[4] = {{64 * K, 256 * K},
                               {320 * K, 256 * K},
                               {704 * K, 384 * K},
                               {768 * K, 64 * K}};
constexpr Range kUnregistered[3] = {
    {0, 64 * K}, {576 * K, 128 * K}, {1088 * K, 192 * K}};

using namespace arena;  // where the seeds keep arrays (fuzz_engine.h)

constexpr uint32_t kTeamRanks = 3;

Stats g_stats;

[[noreturn]] void die(const char* what) {
  fprintf(stderr, "fuzz_engine: property violated: %s\n", what);
  abort();
}

struct World {
  unsigned char* arena = nullptr;
  unsigned char* pristine = nullptr;
  plat::RegTable regs;
  uint32_t keys[4] = {};
  plat::MemAccess mem;
  // eng[0..2]: the ranks of a 3-rank team; eng[3]: a 1-rank team.
  void* chmem[4] = {};
  off::Channel ch[4];
  dev::Engine eng[4];
  uint32_t gen = 0;
};

World* make_world() {
  auto* w = new World;
  void* p = nullptr;
  if (posix_memalign(&p, 4096, kArena) != 0) die("no memory");
  w->arena = static_cast<unsigned char*>(p);
  w->pristine = static_cast<unsigned char*>(malloc(kArena));
  if (w->pristine == nullptr || w->regs.init(16) != Status::kOk)
    die("no memory");
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (uint64_t i = 0; i < kArena; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    w->pristine[i] = static_cast<unsigned char>(x);
  }
  for (const Range& r : kUnregistered)
    memset(w->pristine + r.off, kSentinel, r.len);
  const uint32_t c32[3] = {5, 7, 3}, d32[3] = {0, 5, 12};
  const uint64_t c64[3] = {5, 7, 3}, d64[3] = {0, 5, 12};
  memcpy(w->pristine + kCounts32, c32, sizeof(c32));
  memcpy(w->pristine + kDispls32, d32, sizeof(d32));
  memcpy(w->pristine + kCounts64, c64, sizeof(c64));
  memcpy(w->pristine + kDispls64, d64, sizeof(d64));
  memcpy(w->arena, w->pristine, kArena);
  const auto base = reinterpret_cast<uintptr_t>(w->arena);
  for (int i = 0; i < 4; ++i) {
    w->keys[i] = w->regs.insert(base + kRegions[i].off, kRegions[i].len);
    if (w->keys[i] == 0) die("arena registration");
  }
  w->mem = plat::MemAccess::cross_process(getpid(), &w->regs);

  off::TeamAddr addrs[kTeamRanks], self;
  for (uint32_t e = 0; e < 4; ++e) {
    // Result areas too: the fuzzer reaches inline data (kDescInline).
    size_t bytes = off::Channel::bytes_needed(4, 8, 8);
    if (posix_memalign(&w->chmem[e], 64, bytes) != 0) die("no memory");
    memset(w->chmem[e], 0, bytes);  // Channel::init wants it zero-filled
    w->ch[e].init(w->chmem[e], 4, 8, 8);
    off::EngineConfig cfg;
    cfg.max_teams = 1;
    cfg.team_queue = 4;
    cfg.slot_size = 1024;
    cfg.nslots = 2;
    cfg.inflight = 1;
    cfg.unexpected = 2;
    dev::EngineEnv env;
    env.mem = w->mem;
    uint32_t idx = 0;
    if (w->eng[e].init(cfg, env, &w->ch[e]) != Status::kOk ||
        w->eng[e].team_open(e < 3 ? kTeamRanks : 1, e < 3 ? e : 0, &idx,
                            e < 3 ? &addrs[e] : &self) != Status::kOk)
      die("engine setup");
  }
  for (uint32_t e = 0; e < 4; ++e) {
    if (w->eng[e].team_connect(0, e < 3 ? addrs : &self) != Status::kOk)
      die("team connect");
  }
  for (uint32_t e = 0; e < 4; ++e) w->eng[e].team_seal(0);
  return w;
}

World& world() {
  static World* w = make_world();
  return *w;
}

// Input reading: little-endian, zeros once the input is used up.
struct Reader {
  const uint8_t* p;
  size_t n;
  bool empty() const { return n == 0; }
  uint64_t take(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes && n != 0; ++i, ++p, --n)
      v |= uint64_t{*p} << (8 * i);
    return v;
  }
};

uint64_t addr_in(const World& w, uint64_t v) {
  return v != 0 && v < kWindow ? reinterpret_cast<uintptr_t>(w.arena) + v : v;
}
uint32_t key_in(const World& w, uint32_t k) {
  return k >= 1 && k <= 4 ? w.keys[k - 1] : k;
}

void translate(const World& w, CollDesc* d) {
  for (BufRef* r : {&d->src, &d->dst}) {
    r->addr = addr_in(w, r->addr);
    r->key = key_in(w, r->key);
  }
  for (uint64_t* a :
       {&d->src_counts, &d->src_displs, &d->dst_counts, &d->dst_displs})
    *a = addr_in(w, *a);
}

// The bytes [*lo, *hi) a descriptor the 1-rank team accepted may write:
// its dst side's extent by the traits.
void dst_window(const World& w, const CollDesc& d, uint64_t* lo, uint64_t* hi) {
  const off::CollTraits& t = *off::coll_traits(d.coll);
  const off::Role r{d.count, 1, 0, t.rooted && d.root == 0,
                    (d.flags & off::kDescInPlace) != 0};
  off::VecFacts f[2];
  uint64_t elems = 0;
  if (!dev::side_facts(w.mem, t, d, r, f) ||
      !off::side_extent(t, off::Side::kDst, r, f, &elems))
    die("an accepted descriptor has no extent");
  *lo = d.dst.addr;
  *hi = d.dst.addr + elems * off::elem_size(d);
  // One-sided: the dst arrays place blocks in the peers' buffers; the
  // peers (here, this rank) may write anywhere in the room dst names.
  // (validated: the room is registered, so it does not wrap).
  if (d.flags & off::kDescOneSided) *hi = d.dst.addr + d.dst.bytes;
}

// Whether arena bytes [from, to) still hold their pristine values.
bool pristine(const World& w, uint64_t from, uint64_t to) {
  return from >= to ||
         memcmp(w.arena + from, w.pristine + from, to - from) == 0;
}

// Runs a descriptor the 1-rank team accepted, then checks the sentinels
// and the registered bytes outside its destination, and puts the arena
// back as it was.
void run_team1(World& w, CollDesc d) {
  uint64_t lo = 0, hi = 0;
  dst_window(w, d, &lo, &hi);
  off::Channel& ch = w.ch[3];
  d.gen = ++w.gen;
  ch.arm(d.comp_slot, d.gen);
  if (!ch.submit(d)) die("submission ring full");
  Status st = Status::kInProgress;
  for (int i = 0; i < 100000 && st == Status::kInProgress; ++i) {
    w.eng[3].progress();
    uint64_t word = ch.read(d.comp_slot);
    if (off::completion_gen(word) == d.gen) st = off::completion_status(word);
  }
  if (st == Status::kInProgress) die("a collective on a 1-rank team hangs");
  ++(off::ok(st) ? g_stats.ran_ok : g_stats.ran_failed);
  for (const Range& r : kUnregistered)
    for (uint64_t i = 0; i < r.len; ++i)
      if (w.arena[r.off + i] != kSentinel)
        die("a collective wrote outside the registrations");
  // The window in arena offsets (clipped: it may lie elsewhere).
  const auto base = reinterpret_cast<uintptr_t>(w.arena);
  auto clip = [&](uint64_t a) {
    return a < base ? 0 : a - base > kArena ? kArena : a - base;
  };
  const uint64_t wlo = clip(lo), whi = clip(hi) > wlo ? clip(hi) : wlo;
  if (!pristine(w, 0, wlo) || !pristine(w, whi, kArena))
    die("a collective wrote outside its destination extent");
  memcpy(w.arena, w.pristine, kArena);
}

// The arena's registrations as a model: is [a, a + len) inside the
// region named by `key` (0: any region)?
bool arena_model(const World& w, const BufRef& r, uint64_t off, uint64_t len) {
  if (off > r.bytes || len > r.bytes - off || r.mem_type != 0) return false;
  uint64_t a, end;
  if (__builtin_add_overflow(r.addr, off, &a) ||
      __builtin_add_overflow(a, len, &end))
    return false;
  const auto base = reinterpret_cast<uintptr_t>(w.arena);
  for (int i = 0; i < 4; ++i) {
    if (r.key != 0 && r.key != w.keys[i]) continue;
    uint64_t lo = base + kRegions[i].off, hi = lo + kRegions[i].len;
    if (lo <= a && end <= hi) return true;
  }
  return false;
}

// Registration program: each op is one byte, then its operands.
//   op % 4 == 0  insert(base, len) into a small table
//   op % 4 == 1  remove(key of a live entry, or a raw key)
//   op % 4 == 2  contains(key, addr, len)
//   op % 4 == 3  MemAccess::check of the arena engines on a raw BufRef
// Bit 7 makes addresses and lengths full 64-bit values (wrap-around),
// otherwise they are small, so that entries overlap and touch.
void program(World& w, Reader in) {
  plat::RegTable t;
  if (t.init(8) != Status::kOk) die("no memory");
  struct Entry {
    uint32_t key;
    uint64_t base, end;
  } live[8];
  uint32_t n = 0;
  auto model = [&](uint32_t key, uint64_t a, uint64_t len) {
    uint64_t end;
    if (__builtin_add_overflow(a, len, &end)) return false;
    for (uint32_t i = 0; i < n; ++i)
      if ((key == 0 || live[i].key == key) && live[i].base <= a &&
          end <= live[i].end)
        return true;
    return false;
  };
  auto pick_key = [&](uint8_t sel) -> uint32_t {
    if (sel < 64 && n != 0) return live[sel % n].key;
    if (sel < 96) return 0;
    return static_cast<uint32_t>(in.take(4));
  };
  while (!in.empty()) {
    uint8_t op = static_cast<uint8_t>(in.take(1));
    bool wide = (op & 0x80) != 0;
    switch (op % 4) {
      case 0: {
        uint64_t base = wide ? in.take(8) : in.take(2) * 16;
        uint64_t len = wide ? in.take(8) : in.take(2);
        uint64_t end;
        bool fits = len != 0 && !__builtin_add_overflow(base, len, &end);
        uint32_t k = t.insert(base, len);
        if (!fits || n == 8) {
          if (k != 0) die("insert accepted an invalid range or overfilled");
          break;
        }
        if (k == 0) die("insert refused a valid range");
        for (uint32_t i = 0; i < n; ++i)
          if (live[i].key == k) die("insert reissued a live key");
        live[n++] = {k, base, end};
        break;
      }
      case 1: {
        uint32_t key = pick_key(static_cast<uint8_t>(in.take(1)));
        uint32_t at = n;
        for (uint32_t i = 0; i < n; ++i)
          if (live[i].key == key) at = i;
        if (t.remove(key) != (at != n)) die("remove disagrees with model");
        if (at != n) live[at] = live[--n];
        break;
      }
      case 2: {
        uint32_t key = pick_key(static_cast<uint8_t>(in.take(1)));
        uint64_t a = wide ? in.take(8) : in.take(2) * 16 + in.take(1);
        uint64_t len = wide ? in.take(8) : in.take(2);
        if (t.contains(key, a, len) != model(key, a, len))
          die("contains disagrees with model");
        ++g_stats.reg_checks;
        break;
      }
      case 3: {
        BufRef r{};
        r.addr = addr_in(w, in.take(wide ? 8 : 3));
        r.bytes = in.take(wide ? 8 : 3);
        r.key = key_in(w, static_cast<uint32_t>(in.take(1)));
        r.mem_type = static_cast<uint8_t>(in.take(1) & 1);
        uint64_t off = in.take(wide ? 8 : 3), len = in.take(wide ? 8 : 3);
        if (w.mem.check(r, off, len) != arena_model(w, r, off, len))
          die("MemAccess::check disagrees with the arena model");
        ++g_stats.reg_checks;
        break;
      }
    }
  }
  if (t.size() != n) die("table size disagrees with model");
}

}  // namespace

const Stats& stats() { return g_stats; }

}  // namespace ucc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ucc::fuzz;
  World& w = world();
  ++g_stats.inputs;
  ucc::off::CollDesc d;
  memset(&d, 0, sizeof(d));
  memcpy(&d, data, size < sizeof(d) ? size : sizeof(d));
  translate(w, &d);
  if (ucc::off::ok(w.eng[1].validate(d))) ++g_stats.accepted_team3;
  if (ucc::off::ok(w.eng[3].validate(d))) {
    ++g_stats.accepted_team1;
    run_team1(w, d);
  }
  if (size > sizeof(d)) program(w, Reader{data + sizeof(d), size - sizeof(d)});
  return 0;
}

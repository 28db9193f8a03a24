// Issue 4: a forged descriptor cannot read (or write) another process's
// memory through the firmware_sim daemon; in dpu mode, another tenant's.
//
// Two host processes share one daemon: B, an ordinary UCC process holding
// a secret in memory it has mapped with ucc_mem_map (so the daemon holds
// registrations for it), and A, which also runs an ordinary context but in
// addition talks to the daemon as a hostile host would: through a raw
// EngineLink and Channel of its own (the host side of the contract,
// offload/ and proto.h, with none of the library's argument checks or
// implicit registrations), it writes descriptors by hand into its own
// submission ring. The daemon must judge each of them by A's registrations
// and A's address space only (the pid it takes from the socket). Two
// addresses are B's:
//
//   S  usable in B only: "another process's memory" in the plain sense.
//      In A it stays the inaccessible reservation made before the fork
//      (PROT_NONE), not unmapped: A's own later mappings (the test's
//      buffers, a sanitizer's allocations) could land in an unmapped hole
//      of exactly this size and make it A's memory after all;
//   R  mapped in both (reserved before the fork), holding B's secret in B
//      and A's own pattern in A, registered by B and not by A.
//
// A forges, each on a one-rank team of its raw client:
//   reads from S, from R, and from A's own memory it never registered;
//   writes into S and into R;
//   reads from R naming the keys B's registrations are likely to have
//   (keys are per host process; guessing B's means nothing to A's table);
//   registrations of S, of page zero and of a kernel address (the daemon
//   refuses memory A has not mapped).
// Each forged collective must end with an error and leave A's output
// buffer as poisoned as before. Then, as a control, A registers its own R
// and reads it legitimately: the result is A's pattern, never B's secret,
// which shows that the daemon reads A's address space for A. Afterwards B
// finds its memory unchanged, the daemon is alive, and a normal allreduce
// of A and B (B's buffers in its mapped memory) is correct.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "host/link/link.h"
#include "offload/channel.h"
#include "offload/descriptor.h"
#include "tests/common/harness.h"
#include "tests/mp/dpu_daemon.h"
#include "tests/mp/emu_daemon.h"

namespace {

namespace off = ucc::off;

constexpr size_t kPages = 4;
constexpr uint32_t kSecret = 0x5ec7e75e;   // B's bytes
constexpr uint32_t kMine = 0x0aa0aa0a;     // A's pattern (in A's R)
constexpr uint32_t kPoison = 0xa5a5a5a5u;  // A's output before anything

size_t page() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
uint64_t addr_of(const void* p) { return reinterpret_cast<uintptr_t>(p); }

void fill(void* p, size_t bytes, uint32_t v) {
  auto* w = static_cast<uint32_t*>(p);
  for (size_t i = 0; i < bytes / 4; ++i) w[i] = v;
}

bool all_are(const void* p, size_t bytes, uint32_t v) {
  const auto* w = static_cast<const uint32_t*>(p);
  for (size_t i = 0; i < bytes / 4; ++i)
    if (w[i] != v) return false;
  return true;
}

bool contains_word(const void* p, size_t bytes, uint32_t v) {
  const auto* w = static_cast<const uint32_t*>(p);
  for (size_t i = 0; i < bytes / 4; ++i)
    if (w[i] == v) return true;
  return false;
}

// A hostile host: its own connection to the daemon, its own channel, one
// team of one rank, and descriptors written by hand.
class Forger {
 public:
  // `cfg`: where the daemon is (emu: its socket; dpu: its address).
  bool init(ucc::host::LinkConfig cfg) {
    cfg.engine.max_teams = 1;
    cfg.engine.team_queue = kQueue;
    cfg.engine.slot_size = 4096;
    cfg.engine.nslots = 2;
    cfg.engine.inflight = 1;
    cfg.engine.unexpected = 0;
    off::EngineLink* l = nullptr;
    if (off::failed(ucc::host::open_daemon_link(cfg, 16, kQueue, &ch_, &l)))
      return false;
    link_.reset(l);
    ucc::off::TeamAddr addr{};
    if (off::failed(link_->team_open(1, 0, &team_, &addr)) ||
        off::failed(link_->team_connect(team_, 1, &addr)))
      return false;
    link_->team_seal(team_);
    return true;
  }

  // A registration request, as the host library would send it.
  off::Status reg(uint64_t addr, uint64_t len, uint32_t* key) {
    return link_->pin(addr, len, key);
  }
  void dereg(uint32_t key) { link_->unpin(key); }

  // An int32 allreduce of `bytes` from src to dst; the final status, or
  // kTimedOut when none comes within 10 s.
  off::Status allreduce(off::BufRef src, off::BufRef dst, uint64_t bytes) {
    off::CollDesc d;
    memset(&d, 0, sizeof(d));
    d.magic = off::kDescMagic;
    d.version = off::kDescVersion;
    d.coll = off::CollType::kAllreduce;
    d.dtype = off::DType::kInt32;
    d.op = off::ROp::kSum;
    d.team = team_;
    d.comp_slot = team_ * kQueue;
    d.gen = ++gen_;
    d.count = bytes / 4;
    d.src = src;
    d.dst = dst;
    ch_.arm(d.comp_slot, d.gen);
    if (!ch_.submit(d)) return off::Status::kNoResource;
    link_->submitted();
    const double deadline = ucct::now_s() + 10;
    for (;;) {
      const uint64_t w = ch_.read(d.comp_slot);
      const off::Status st = off::completion_status(w);
      if (off::completion_gen(w) == d.gen && st != off::Status::kInProgress)
        return st;
      if (ucct::now_s() > deadline) return off::Status::kTimedOut;
      sched_yield();
    }
  }

 private:
  static constexpr uint32_t kQueue = 4;
  std::unique_ptr<off::EngineLink> link_;
  off::Channel ch_;
  uint32_t team_ = 0;
  uint32_t gen_ = 0;
};

off::BufRef ref(const void* p, uint64_t bytes, uint32_t key = 0) {
  return off::BufRef{addr_of(p), bytes, key, 0, {0, 0, 0}};
}

// Rank 0: the forger.
int forge(const ucc::host::LinkConfig& where, char* S, char* R) {
  const size_t bytes = kPages * page();
  int bad = 0;
  auto expect = [&](bool c, const char* what) {
    if (!c) {
      ++bad;
      std::fprintf(stderr, "A: %s\n", what);
    }
  };
  Forger f;
  if (!f.init(where)) return 100;
  // A's own memory: output (registered, poisoned), input (registered), and
  // memory it never registers.
  auto* out = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  std::vector<uint32_t> in(bytes / 4, 1), unreg(bytes / 4, kMine);
  if (out == MAP_FAILED) return 101;
  fill(out, bytes, kPoison);
  uint32_t kout = 0, kin = 0;
  if (failed(f.reg(addr_of(out), bytes, &kout)) ||
      failed(f.reg(addr_of(in.data()), bytes, &kin)))
    return 102;

  // Every forged collective fails, and out stays poisoned.
  auto refused = [&](const char* what, off::BufRef src, off::BufRef dst) {
    const off::Status st = f.allreduce(src, dst, bytes);
    if (st == off::Status::kOk || st == off::Status::kTimedOut) {
      ++bad;
      std::fprintf(stderr, "A: %s: status %d, not an error\n", what,
                   static_cast<int>(st));
    }
    if (!all_are(out, bytes, kPoison)) {
      ++bad;
      std::fprintf(stderr, "A: %s: the output changed%s\n", what,
                   contains_word(out, bytes, kSecret) ? " (B's secret!)" : "");
      fill(out, bytes, kPoison);
    }
  };
  refused("read B-only memory S", ref(S, bytes), ref(out, bytes, kout));
  refused("read R, registered by B only", ref(R, bytes), ref(out, bytes, kout));
  refused("read A's unregistered memory", ref(unreg.data(), bytes),
          ref(out, bytes, kout));
  refused("read R under A's output key", ref(R, bytes, kout),
          ref(out, bytes, kout));
  refused("write into S", ref(in.data(), bytes, kin), ref(S, bytes));
  refused("write into R", ref(in.data(), bytes, kin), ref(R, bytes));
  // B's keys, guessed: keys are (generation << slot bits) | slot, slot
  // bits 12 for the daemon's 4096 entries, first generation 1; B's first
  // registrations sit in its low slots. In A's table they name A's own
  // entries (or nothing), none of which holds R.
  for (uint32_t gen = 1; gen <= 2; ++gen)
    for (uint32_t slot = 0; slot < 8; ++slot)
      refused("read R under a guessed key", ref(R, bytes, gen << 12 | slot),
              ref(out, bytes, kout));
  expect(all_are(R, bytes, kMine), "A's own R changed");

  // Registrations of memory A cannot use.
  uint32_t k = 0;
  expect(f.reg(addr_of(S), bytes, &k) == off::Status::kInvalidParam,
         "registering S (inaccessible in A) was not refused");
  expect(f.reg(0, page(), &k) == off::Status::kInvalidParam,
         "registering page zero was not refused");
  expect(f.reg(uint64_t{0xffff800000000000}, page(), &k) ==
             off::Status::kInvalidParam,
         "registering a kernel address was not refused");

  // Control: A's own R, registered by A, reads A's bytes.
  uint32_t kr = 0;
  expect(ok(f.reg(addr_of(R), bytes, &kr)), "registering A's own R failed");
  const off::Status st =
      f.allreduce(ref(R, bytes, kr), ref(out, bytes, kout), bytes);
  expect(st == off::Status::kOk, "the legitimate read of R failed");
  expect(all_are(out, bytes, kMine), "the legitimate read of R is wrong");
  expect(!contains_word(out, bytes, kSecret), "B's secret reached A");
  f.dereg(kr);
  fill(out, bytes, kPoison);
  refused("read R after A deregistered it", ref(R, bytes), ref(out, bytes));
  munmap(out, bytes);
  return bad;
}

// B and A (the forger) on one daemon, reached as `env` says (A's raw
// link as `where` says); the daemon is alive afterwards.
void forgery(const std::vector<std::pair<std::string, std::string>>& env,
             const ucc::host::LinkConfig& where,
             const std::function<bool()>& alive) {
  const size_t bytes = kPages * page();
  // Both numbers exist before the fork: R mapped, S reserved.
  auto* R = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  auto* S = static_cast<char*>(
      mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(R, MAP_FAILED);
  ASSERT_NE(S, MAP_FAILED);
  bool ok = ucct::run_ranks(2, [&](ucct::Rank& r) {
    ucct::World w;
    w.env = env;
    if (w.init(r) != UCC_OK) return 1;
    ucc_mem_map_mem_h h = nullptr;
    if (r.rank == 1) {  // B
      if (mprotect(S, bytes, PROT_READ | PROT_WRITE) != 0) return 2;
      fill(S, bytes, kSecret);
      fill(R, bytes, kSecret);
      ucc_mem_map_t seg[2] = {{S, bytes}, {R, bytes}};
      ucc_mem_map_params_t mp{seg, 2};
      size_t sz = 0;
      if (ucc_mem_map(w.ctx, UCC_MEM_MAP_MODE_EXPORT, &mp, &sz, &h) != UCC_OK)
        return 3;
    } else {  // A: S stays PROT_NONE here (see the top of the file)
      fill(R, bytes, kMine);
    }
    if (w.barrier() != UCC_OK) return 4;  // B's memory is registered
    int bad = r.rank == 0 ? forge(where, S, R) : 0;
    if (w.barrier() != UCC_OK) return 5;
    if (r.rank == 1 &&
        (!all_are(S, bytes, kSecret) || !all_are(R, bytes, kSecret))) {
      std::fprintf(stderr, "B: its memory changed\n");
      ++bad;
    }
    // The daemon still serves both: an allreduce, B's side in its mapped
    // memory.
    std::vector<int32_t> mine(1000, r.rank + 1), res(1000, -1);
    int32_t* src = r.rank == 1 ? reinterpret_cast<int32_t*>(S) : mine.data();
    int32_t* dst = r.rank == 1 ? reinterpret_cast<int32_t*>(R) : res.data();
    if (r.rank == 1) fill(S, 4000, 2);
    ucc_coll_args_t a{};
    a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
    a.src.info = {src, 1000, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    a.dst.info = {dst, 1000, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
    a.op = UCC_OP_SUM;
    if (r.rank == 1) {
      a.mask = UCC_COLL_ARGS_FIELD_FLAGS |
               UCC_COLL_ARGS_FIELD_MEM_MAP_SRC_MEMH |
               UCC_COLL_ARGS_FIELD_MEM_MAP_DST_MEMH;
      a.flags = UCC_COLL_ARGS_FLAG_MEM_MAPPED_BUFFERS;
      a.src_memh.local_memh = h;
      a.dst_memh.local_memh = h;
    }
    ucc_status_t st = w.run(a);
    if (st != UCC_OK || !all_are(dst, 4000, 3)) {
      std::fprintf(stderr, "rank %d: allreduce afterwards: %s\n", r.rank,
                   ucct::status_name(st));
      ++bad;
    }
    if (h != nullptr && ucc_mem_unmap(&h) != UCC_OK) ++bad;
    return bad == 0 ? 0 : 6;
  });
  EXPECT_TRUE(alive());
  munmap(R, bytes);
  munmap(S, bytes);
  EXPECT_TRUE(ok);
}

TEST(EmuForged, DescriptorCannotReachAnotherProcess) {
  if (!ucct::have_firmware_sim()) GTEST_SKIP() << "no firmware_sim";
  ucct::Daemon d;
  ASSERT_TRUE(d.start("forged"));
  ucc::host::LinkConfig where;
  where.emu = true;
  where.socket_path = d.sock.c_str();
  where.daemon_path = "none";
  forgery(d.env(), where, [&] { return d.alive(); });
  d.stop();
}

// The same in dpu mode: A and B are two tenants of one DPU, each proved
// the key; A's forged descriptors and guessed keys reach nothing of B's
// (each connection's engine checks its own registrations; the NIC checks
// A's rkeys, which name only A's memory).
TEST(DpuForged, DescriptorCannotReachAnotherTenant) {
  NEEDS_DPU();
  ucct::DpuDaemon d;
  ASSERT_TRUE(d.start("forged"));
  setenv("UCC_DPU_KEY_FILE", d.key.c_str(), 1);  // for A's raw link
  ucc::host::LinkConfig where;
  where.emu = where.dpu = where.rdma_mem = true;
  where.dpu_addr = d.addr.c_str();
  where.net.verbs.lib = ucct::kLoopLib;
  forgery(d.env(d.key), where, [&] { return d.d.alive(); });
  unsetenv("UCC_DPU_KEY_FILE");
}

}  // namespace

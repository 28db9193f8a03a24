// The fixture of the engine memory tests (test_engine_mem.cc,
// test_engine_direct.cc): two engines in this process, one per rank of a
// two-rank team over the shared-memory fabric, reaching user buffers
// directly (inline mode) or cross-process (aimed at this very process,
// checked against each rank's registrations). Parameter: cross-process.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "device/engine/engine.h"
#include "offload/channel.h"
#include "platform/mem/mem_access.h"
#include "platform/mem/reg_table.h"
#include "tests/unit/cma_probe.h"

namespace ucct_engine {

using ucc::dev::Engine;
using ucc::dev::EngineEnv;
using ucc::off::BufRef;
using ucc::off::Channel;
using ucc::off::CollDesc;
using ucc::off::CollType;
using ucc::off::DType;
using ucc::off::EngineConfig;
using ucc::off::ROp;
using ucc::off::Status;
using ucc::plat::MemAccess;
using ucc::plat::RegTable;

constexpr uint32_t kRanks = 2;
constexpr uint32_t kSlot = 256;  // small: multi-segment paths early

// One rank: its channel, its engine, its registrations.
struct Rank {
  // 16 completion slots, each with a result area (inline data).
  Rank() : chmem(aligned_alloc(64, Channel::bytes_needed(16, 16, 16))) {
    memset(chmem, 0, Channel::bytes_needed(16, 16, 16));  // as init() wants
  }
  ~Rank() {
    eng.fini();
    free(chmem);
  }
  void* chmem;
  Channel ch;
  RegTable regs;
  Engine eng;
  uint32_t idx = 0;
  uint32_t gen = 0;
  // Registers a buffer as this rank's host would; returns its key.
  template <typename T>
  uint32_t reg(const std::vector<T>& v) {
    return regs.insert(reinterpret_cast<uintptr_t>(v.data()),
                       v.size() * sizeof(T));
  }
};

class EngineMem : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (cross()) SKIP_WITHOUT_CMA_HERE();
    ucc::off::TeamAddr addrs[kRanks];
    for (uint32_t r = 0; r < kRanks; ++r) {
      Rank& k = rank[r];
      k.ch.init(k.chmem, 16, 16, 16);
      ASSERT_EQ(k.regs.init(64), Status::kOk);
      EngineConfig cfg;
      cfg.max_teams = 2;
      cfg.team_queue = 4;
      cfg.slot_size = kSlot;
      cfg.nslots = 4;
      cfg.inflight = 2;
      EngineEnv env;
      if (cross()) env.mem = MemAccess::cross_process(getpid(), &k.regs);
      ASSERT_EQ(k.eng.init(cfg, env, &k.ch), Status::kOk);
      ASSERT_EQ(k.eng.team_open(kRanks, r, &k.idx, &addrs[r]), Status::kOk);
    }
    for (uint32_t r = 0; r < kRanks; ++r)
      ASSERT_EQ(rank[r].eng.team_connect(rank[r].idx, addrs), Status::kOk);
    for (uint32_t r = 0; r < kRanks; ++r) rank[r].eng.team_seal(rank[r].idx);
  }

  bool cross() const { return GetParam(); }

  static CollDesc desc(CollType c, DType dt, ROp op, uint64_t count) {
    CollDesc d{};
    d.magic = ucc::off::kDescMagic;
    d.version = ucc::off::kDescVersion;
    d.coll = c;
    d.dtype = dt;
    d.op = op;
    d.count = count;
    return d;
  }
  template <typename T>
  static BufRef ref(const std::vector<T>& v, uint32_t key = 0) {
    return BufRef{reinterpret_cast<uintptr_t>(v.data()),
                  v.size() * sizeof(T),
                  key,
                  0,
                  {0, 0, 0}};
  }

  // Posts the descriptor `d[r]` rank r would post (`only` >= 0: rank
  // `only` alone) and progresses both engines until those complete.
  // With `as_known`, each rank first offers it as a repost of the one its
  // engine knows at the slot (Engine::submit_known, as an inline host
  // reposts a persistent request), and submits it only where refused.
  void post(CollDesc* d, int only = -1) {
    for (uint32_t r = 0; r < kRanks; ++r) {
      if (only >= 0 && static_cast<uint32_t>(only) != r) continue;
      Rank& k = rank[r];
      d[r].team = k.idx;
      d[r].comp_slot = 0;
      d[r].gen = ++k.gen;
      k.ch.arm(0, k.gen);
      if (as_known && k.eng.submit_known(k.idx, 0, k.gen)) {
        ++known_posts;
        continue;
      }
      ASSERT_TRUE(k.ch.submit(d[r]));
    }
  }
  Status status(uint32_t r) const {
    uint64_t w = rank[r].ch.read(0);
    return ucc::off::completion_gen(w) == rank[r].gen
               ? ucc::off::completion_status(w)
               : Status::kInProgress;
  }
  // Progresses both engines until every rank's last post has ended.
  void wait(Status* st) {
    for (long i = 0; i < 2000000; ++i) {
      bool done = true;
      for (uint32_t r = 0; r < kRanks; ++r) {
        rank[r].eng.progress();
        st[r] = status(r);
        done &= st[r] != Status::kInProgress;
      }
      if (done) return;
    }
    FAIL() << "collective did not finish";
  }
  // An int32 sum allreduce of `count` per rank: src[r] a pattern, dst[r]
  // poisoned, both registered (dkey[r] names dst's registration, which d
  // leaves implicit).
  void registered_allreduce(uint64_t count, std::vector<int32_t>* src,
                            std::vector<int32_t>* dst, uint32_t* dkey,
                            CollDesc* d);
  void run_ok(CollDesc* d) {
    post(d);
    Status st[kRanks];
    wait(st);
    for (uint32_t r = 0; r < kRanks; ++r) ASSERT_EQ(st[r], Status::kOk) << r;
  }

  // The v-collective reposts below (RepostedVectorCollective*).
  void revalidates_its_arrays();
  void follows_its_arrays();

  Rank rank[kRanks];
  bool as_known = false;  // post(): offer reposts as known first
  int known_posts = 0;    // posts the engines took as known
};

inline std::vector<int32_t> pattern(uint32_t r, size_t n) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<int32_t>((r + 1) * 1000003 + i * 7);
  return v;
}

inline void EngineMem::registered_allreduce(uint64_t count,
                                            std::vector<int32_t>* src,
                                            std::vector<int32_t>* dst,
                                            uint32_t* dkey, CollDesc* d) {
  for (uint32_t r = 0; r < kRanks; ++r) {
    src[r] = pattern(r, count);
    dst[r].assign(count, -1);
    d[r] = desc(CollType::kAllreduce, DType::kInt32, ROp::kSum, count);
    d[r].src = ref(src[r], rank[r].reg(src[r]));
    dkey[r] = rank[r].reg(dst[r]);
    d[r].dst = ref(dst[r]);
  }
}

}  // namespace ucct_engine

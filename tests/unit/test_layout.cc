// Layout guards for what crosses the host/device boundary, the channel's
// completion protocol, and the shared-memory fabric within one process.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "device/engine/engine.h"
#include "offload/channel.h"
#include "offload/descriptor.h"
#include "offload/team_addr.h"
#include "platform/shm/shm_fabric.h"

namespace {

using ucc::off::Channel;
using ucc::off::CollDesc;
using ucc::off::Status;

TEST(Layout, DescriptorIsOneFixedPod) {
  EXPECT_EQ(sizeof(CollDesc), 192u);
  EXPECT_EQ(alignof(CollDesc), 64u);
  EXPECT_EQ(offsetof(CollDesc, magic), 0u);
  EXPECT_EQ(offsetof(CollDesc, version), 4u);
  EXPECT_EQ(offsetof(CollDesc, flags), 6u);
  EXPECT_EQ(offsetof(CollDesc, coll), 8u);
  EXPECT_EQ(offsetof(CollDesc, comp_slot), 16u);
  EXPECT_EQ(offsetof(CollDesc, gen), 20u);
  EXPECT_EQ(offsetof(CollDesc, root), 24u);
  EXPECT_EQ(offsetof(CollDesc, count), 32u);
  EXPECT_EQ(offsetof(CollDesc, src), 40u);
  EXPECT_EQ(offsetof(CollDesc, dst), 64u);
  EXPECT_TRUE(std::is_trivially_copyable_v<CollDesc>);
}

TEST(Layout, CompletionWordRoundTrip) {
  for (Status st : {Status::kOk, Status::kInProgress, Status::kInvalidParam,
                    Status::kError}) {
    for (bool inl : {false, true}) {
      uint64_t w = ucc::off::completion_word(0xfffffff0u, st, inl);
      EXPECT_EQ(ucc::off::completion_gen(w), 0xfffffff0u);
      EXPECT_EQ(ucc::off::completion_status(w), st);
      EXPECT_EQ(ucc::off::completion_inline(w), inl);
    }
  }
}

struct AlignedBlock {
  // Zero-filled, as Channel::init wants its block.
  explicit AlignedBlock(size_t n)
      : p(aligned_alloc(64, (n + 63) & ~size_t{63})) {
    memset(p, 0, (n + 63) & ~size_t{63});
  }
  ~AlignedBlock() { free(p); }
  void* p;
};

TEST(Channel, SubmitCompleteAndAttach) {
  size_t bytes = Channel::bytes_needed(16, 32);
  AlignedBlock mem(bytes);
  Channel host;
  host.init(mem.p, 16, 32);
  Channel eng;
  ASSERT_EQ(eng.attach(mem.p, bytes), Status::kOk);
  EXPECT_EQ(eng.ncomp(), 32u);
  CollDesc d{};
  d.comp_slot = 5;
  d.gen = 3;
  for (int i = 0; i < 16; ++i) EXPECT_TRUE(host.submit(d));
  EXPECT_FALSE(host.submit(d));
  const CollDesc* got = eng.next();
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->comp_slot, 5u);
  eng.done();
  host.arm(5, 3);
  EXPECT_EQ(ucc::off::completion_status(host.read(5)), Status::kInProgress);
  eng.complete(5, 3, Status::kOk);
  EXPECT_EQ(ucc::off::completion_gen(host.read(5)), 3u);
  EXPECT_EQ(ucc::off::completion_status(host.read(5)), Status::kOk);
}

// Inline data: the result areas follow the completion words, one per
// slot, in the block the host lays out and the engine attaches to; the
// engine's result and flag reach the host's side.
TEST(Channel, ResultAreasAttachWithTheBlock) {
  EXPECT_GT(Channel::bytes_needed(16, 32, 32),
            Channel::bytes_needed(16, 32) + 31 * ucc::off::kInlineBytes);
  size_t bytes = Channel::bytes_needed(16, 32, 32);
  AlignedBlock mem(bytes);
  Channel host;
  host.init(mem.p, 16, 32, 32);
  Channel eng;
  ASSERT_EQ(eng.attach(mem.p, bytes), Status::kOk);
  EXPECT_EQ(eng.nres(), 32u);
  // Short of the result areas: refused.
  Channel shortb;
  EXPECT_EQ(shortb.attach(mem.p, Channel::bytes_needed(16, 32)),
            Status::kInvalidParam);
  const ucc::off::ChannelLayout l = Channel::layout(16, 32, 32);
  EXPECT_GE(l.res, l.comp + 32 * sizeof(uint64_t));
  EXPECT_EQ(l.total, bytes);
  memset(eng.result(31), 0x5a, ucc::off::kInlineBytes);
  host.arm(31, 7);
  eng.complete(31, 7, Status::kOk, true);
  EXPECT_TRUE(ucc::off::completion_inline(host.read(31)));
  EXPECT_EQ(host.result(31)[ucc::off::kInlineBytes - 1], 0x5a);
  EXPECT_EQ(host.result(31), static_cast<unsigned char*>(mem.p) + l.res +
                                 31 * ucc::off::kInlineBytes);
}

TEST(Channel, AttachRejectsGarbage) {
  std::vector<unsigned char> junk(4096, 0xab);
  Channel c;
  EXPECT_EQ(c.attach(junk.data(), junk.size()), Status::kInvalidParam);
  EXPECT_EQ(c.attach(junk.data(), 4), Status::kInvalidParam);
}

// Two fabric endpoints of one team in this process: messages flow both ways,
// in order, with back-pressure when the inbox is full.
TEST(ShmFabric, TwoEndpointsInOneProcess) {
  using ucc::plat::FabricAddr;
  using ucc::plat::FabricConfig;
  using ucc::plat::shm::ShmFabric;
  ShmFabric a, b;
  FabricAddr addrs[2];
  const bool both[2] = {true, true};
  ASSERT_EQ(a.open(FabricConfig{2, 0, 256, 4}, &addrs[0]), Status::kOk);
  ASSERT_EQ(b.open(FabricConfig{2, 1, 256, 4}, &addrs[1]), Status::kOk);
  ASSERT_EQ(a.connect(addrs, both), Status::kOk);
  ASSERT_EQ(b.connect(addrs, both), Status::kOk);
  a.seal();
  b.seal();
  using ucc::plat::MsgHdr;
  using ucc::plat::MsgKey;
  for (uint32_t i = 0; i < 4; ++i) {
    void* s = a.tx_reserve(1);
    ASSERT_NE(s, nullptr);
    memset(s, static_cast<int>(i), 256);
    a.tx_commit(1, 100 + i, MsgKey{{42 + i, i, 7}}, 0);
  }
  EXPECT_EQ(a.tx_reserve(1), nullptr);  // inbox full
  ASSERT_EQ(b.rx_poll(0), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    const MsgHdr* h = b.rx_hdr(0, i);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->len, 100 + i);
    EXPECT_EQ(h->key, (MsgKey{{42 + i, i, 7}}));
    EXPECT_EQ(static_cast<const unsigned char*>(b.rx_payload(0, i))[99], i);
  }
  // Released out of order: each slot is free at once.
  b.rx_release(0, 2);
  b.rx_release(0, 1);
  EXPECT_EQ(b.rx_hdr(0, 2), nullptr);
  EXPECT_NE(b.rx_hdr(0, 3), nullptr);
  EXPECT_EQ(a.tx_free(1), 2u);
  void* s = a.tx_reserve(1);
  ASSERT_NE(s, nullptr);
  memset(s, 9, 256);
  a.tx_commit(1, 9, MsgKey{{9, 9, 9}}, 0);
  // The next poll keeps the arrival order: 0, 3, then the new one.
  ASSERT_EQ(b.rx_poll(0), 3u);
  EXPECT_EQ(b.rx_hdr(0, 0)->len, 100u);
  EXPECT_EQ(b.rx_hdr(0, 1)->len, 103u);
  EXPECT_EQ(b.rx_hdr(0, 2)->len, 9u);
  EXPECT_EQ(static_cast<const unsigned char*>(b.rx_payload(0, 2))[8], 9);
  for (uint32_t i = 0; i < 3; ++i) b.rx_release(0, i);
  EXPECT_EQ(b.rx_poll(0), 0u);
  EXPECT_EQ(a.tx_free(1), 4u);
  EXPECT_EQ(b.attention(), 0u);  // data messages only
  // A control message bumps the receiver's attention counter.
  ASSERT_NE(a.tx_reserve(1), nullptr);
  a.tx_commit(1, 0, MsgKey{{1, 2, 3}}, 1);
  EXPECT_EQ(b.attention(), 1u);
  ASSERT_EQ(b.rx_poll(0), 1u);
  EXPECT_EQ(b.rx_hdr(0, 0)->kind, 1);
}

TEST(ShmFabric, RejectsMismatchedPeers) {
  using ucc::plat::FabricAddr;
  using ucc::plat::FabricConfig;
  using ucc::plat::shm::ShmFabric;
  ShmFabric a, b;
  FabricAddr addrs[2];
  const bool both[2] = {true, true};
  ASSERT_EQ(a.open(FabricConfig{2, 0, 256, 4}, &addrs[0]), Status::kOk);
  ASSERT_EQ(b.open(FabricConfig{2, 1, 512, 4}, &addrs[1]), Status::kOk);
  EXPECT_EQ(a.connect(addrs, both), Status::kError);
  FabricAddr wrong = addrs[1];
  wrong.kind = 7;  // not a shared-memory address
  FabricAddr mixed[2] = {addrs[0], wrong};
  ShmFabric c;
  ASSERT_EQ(c.open(FabricConfig{2, 0, 256, 4}, &mixed[0]), Status::kOk);
  EXPECT_EQ(c.connect(mixed, both), Status::kError);
  ShmFabric d;
  FabricAddr bad;
  EXPECT_EQ(d.open(FabricConfig{0, 0, 256, 4}, &bad), Status::kInvalidParam);
}

// Forged descriptors are rejected by the engine before any buffer is used.
TEST(EngineValidate, RejectsForgedDescriptors) {
  ucc::off::EngineConfig cfg;
  cfg.max_teams = 2;
  cfg.team_queue = 4;
  cfg.slot_size = 256;
  cfg.nslots = 2;
  size_t bytes = Channel::bytes_needed(8, 8);
  AlignedBlock mem(bytes);
  Channel ch;
  ch.init(mem.p, 8, 8);
  ucc::dev::Engine eng;
  ASSERT_EQ(eng.init(cfg, ucc::dev::EngineEnv{}, &ch), Status::kOk);
  uint32_t idx = 0;
  ucc::off::TeamAddr addr;
  ASSERT_EQ(eng.team_open(1, 0, &idx, &addr), Status::kOk);
  ASSERT_EQ(eng.team_connect(idx, &addr), Status::kOk);
  std::vector<float> buf(16, 1.0f);
  CollDesc good{};
  good.magic = ucc::off::kDescMagic;
  good.version = ucc::off::kDescVersion;
  good.coll = ucc::off::CollType::kAllreduce;
  good.dtype = ucc::off::DType::kFloat32;
  good.op = ucc::off::ROp::kSum;
  good.team = idx;
  good.count = 16;
  good.src = {reinterpret_cast<uintptr_t>(buf.data()), 64, 0, 0, {}};
  good.dst = good.src;
  EXPECT_EQ(eng.validate(good), Status::kOk);
  auto bad = [&](auto mutate) {
    CollDesc d = good;
    mutate(d);
    return eng.validate(d);
  };
  EXPECT_NE(bad([](CollDesc& d) { d.magic = 0; }), Status::kOk);
  EXPECT_NE(bad([](CollDesc& d) { d.version = 99; }), Status::kOk);
  EXPECT_NE(bad([](CollDesc& d) { d.team = 1; }), Status::kOk);  // not open
  EXPECT_NE(bad([](CollDesc& d) { d.team = 77; }), Status::kOk);
  EXPECT_NE(bad([](CollDesc& d) { d.comp_slot = 8; }), Status::kOk);
  EXPECT_NE(bad([](CollDesc& d) { d.count = 17; }), Status::kOk);  // > buffer
  EXPECT_NE(bad([](CollDesc& d) { d.count = ~0ull / 2; }), Status::kOk);
  EXPECT_NE(bad([](CollDesc& d) { d.dst.addr = 0; }), Status::kOk);
  EXPECT_NE(bad([](CollDesc& d) { d.dst.addr = ~0ull - 8; }), Status::kOk);
  EXPECT_NE(bad([](CollDesc& d) { d.dst.mem_type = 1; }), Status::kOk);
  EXPECT_NE(bad([](CollDesc& d) { d.coll = ucc::off::CollType::kCount; }),
            Status::kOk);
  EXPECT_NE(bad([](CollDesc& d) { d.dtype = ucc::off::DType::kCount; }),
            Status::kOk);
  EXPECT_EQ(bad([](CollDesc& d) { d.op = ucc::off::ROp::kBand; }),
            Status::kNotSupported);
  EXPECT_NE(bad([](CollDesc& d) { d.alg = 200; }), Status::kOk);
  EXPECT_NE(bad([](CollDesc& d) { d.flags = 0x80; }), Status::kOk);
  // MAXLOC pairs are two floats: 16 of them need 128 bytes, not 64.
  EXPECT_EQ(bad([](CollDesc& d) { d.op = ucc::off::ROp::kMaxloc; }),
            Status::kInvalidParam);
  EXPECT_EQ(bad([](CollDesc& d) {
              d.op = ucc::off::ROp::kMinloc;
              d.count = 8;
            }),
            Status::kOk);
  EXPECT_EQ(bad([](CollDesc& d) {
              d.op = ucc::off::ROp::kMaxloc;
              d.dtype = ucc::off::DType::kFloat16;
            }),
            Status::kNotSupported);
  // Generic types: their own element size; reductions need the host's
  // hook, which this engine does not have; moving them needs none.
  auto generic = [](CollDesc& d) {
    d.dtype = ucc::off::DType::kGeneric;
    d.user_dt = 3;
    d.user_esize = 4;
  };
  EXPECT_EQ(bad(generic), Status::kNotSupported);
  EXPECT_EQ(bad([&](CollDesc& d) {
              generic(d);
              d.coll = ucc::off::CollType::kBcast;
              d.op = ucc::off::ROp::kNone;
            }),
            Status::kOk);
  EXPECT_EQ(bad([&](CollDesc& d) {
              generic(d);
              d.coll = ucc::off::CollType::kBcast;
              d.op = ucc::off::ROp::kNone;
              d.user_esize = 0;
            }),
            Status::kInvalidParam);
  EXPECT_EQ(bad([&](CollDesc& d) {
              generic(d);
              d.coll = ucc::off::CollType::kBcast;
              d.op = ucc::off::ROp::kNone;
              d.user_esize = 8;  // 16 elements of 8 bytes > 64
            }),
            Status::kInvalidParam);
  eng.team_close(idx);

  // With the hook: generic reductions pass, but not AVG, not an op out of
  // range, and not elements larger than a message slot.
  ucc::dev::EngineEnv env;
  env.user_reduce.fn = [](void*, uint32_t, void*, const void*, const void*,
                          uint64_t) { return Status::kOk; };
  ucc::dev::Engine hooked;
  ASSERT_EQ(hooked.init(cfg, env, &ch), Status::kOk);
  ASSERT_EQ(hooked.team_open(1, 0, &idx, &addr), Status::kOk);
  ASSERT_EQ(hooked.team_connect(idx, &addr), Status::kOk);
  auto hbad = [&](auto mutate) {
    CollDesc d = good;
    d.team = idx;
    generic(d);
    mutate(d);
    return hooked.validate(d);
  };
  EXPECT_EQ(hbad([](CollDesc&) {}), Status::kOk);
  EXPECT_EQ(hbad([](CollDesc& d) { d.op = ucc::off::ROp::kMaxloc; }),
            Status::kOk);
  EXPECT_EQ(hbad([](CollDesc& d) { d.op = ucc::off::ROp::kAvg; }),
            Status::kNotSupported);
  EXPECT_EQ(hbad([](CollDesc& d) { d.op = ucc::off::ROp::kNone; }),
            Status::kInvalidParam);
  EXPECT_EQ(hbad([](CollDesc& d) {
              d.user_esize = 512;  // > slot_size 256
              d.count = 0;
            }),
            Status::kNotSupported);
  hooked.team_close(idx);
}

}  // namespace

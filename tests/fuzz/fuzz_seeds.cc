// Seeds for the engine fuzz target: one valid descriptor per collective
// type and per interesting shape (in place, active sets, 64-bit arrays,
// generic types, other regions), each followed by a small registration
// program. Addresses are offsets into the target's arena and keys 1..4
// name its regions (fuzz_engine.cc).
#include <cstring>

#include "offload/coll_traits.h"
#include "offload/descriptor.h"
#include "tests/fuzz/fuzz_engine.h"

namespace ucc::fuzz {
namespace {

using namespace arena;
using off::BufRef;
using off::CollDesc;
using off::CollType;
using off::DType;
using off::ROp;

CollDesc desc(CollType c, uint64_t count, ROp op = ROp::kNone,
              DType dt = DType::kInt32) {
  CollDesc d;
  memset(&d, 0, sizeof(d));
  d.magic = off::kDescMagic;
  d.version = off::kDescVersion;
  d.coll = c;
  d.dtype = dt;
  d.op = op;
  d.count = count;
  d.team = 0;
  d.comp_slot = 1;
  return d;
}

BufRef buf(uint64_t at, uint64_t bytes, uint32_t key = 1) {
  return BufRef{at, bytes, key, 0, {0, 0, 0}};
}

void put(std::vector<uint8_t>* v, uint64_t x, int bytes) {
  for (int i = 0; i < bytes; ++i)
    v->push_back(static_cast<uint8_t>(x >> 8 * i));
}

// A registration program (fuzz_engine.cc, program()) varied by `i`.
std::vector<uint8_t> program(uint32_t i) {
  std::vector<uint8_t> p;
  // insert [0x100, 0x300), insert an overlapping [0x180 + 16i, ...)
  put(&p, 0, 1), put(&p, 0x10, 2), put(&p, 0x200, 2);
  put(&p, 4, 1), put(&p, 0x18 + i, 2), put(&p, 0x100 + 8 * i, 2);
  // contains: by the first key, by key 0, across both entries
  put(&p, 2, 1), put(&p, 0, 1), put(&p, 0x12, 2), put(&p, 0, 1),
      put(&p, 0x40, 2);
  put(&p, 6, 1), put(&p, 70, 1), put(&p, 0x2f, 2), put(&p, 8, 1),
      put(&p, 0x20 + i, 2);
  // remove the second entry, then look again
  put(&p, 1, 1), put(&p, 1, 1);
  put(&p, 2, 1), put(&p, 70, 1), put(&p, 0x19, 2), put(&p, 0, 1),
      put(&p, 0x10, 2);
  // MemAccess::check: inside region 1, then straddling regions 1 and 2
  put(&p, 3, 1), put(&p, kSrc, 3), put(&p, 4096, 3), put(&p, 1, 1),
      put(&p, 0, 1), put(&p, 8 * i, 3), put(&p, 512, 3);
  put(&p, 7, 1), put(&p, kRegion2 - 8, 3), put(&p, 16, 3), put(&p, 0, 1),
      put(&p, 0, 1), put(&p, 0, 3), put(&p, 16, 3);
  // A wide insert that wraps, and a wide contains
  put(&p, 0x80, 1), put(&p, ~uint64_t{0} - 16, 8), put(&p, 64, 8);
  put(&p, 0x82, 1), put(&p, 70, 1), put(&p, ~uint64_t{0} - 8, 8),
      put(&p, 16, 8);
  return p;
}

}  // namespace

std::vector<Seed> seeds() {
  struct Item {
    const char* name;
    CollDesc d;
    bool team1, team3;
  };
  std::vector<Item> items;
  auto add = [&](const char* name, const CollDesc& d, bool t1 = true,
                 bool t3 = true) {
    items.push_back({name, d, t1, t3});
  };

  add("barrier", desc(CollType::kBarrier, 0));
  {
    CollDesc d = desc(CollType::kBcast, 100);
    d.src = buf(kSrc, 400);
    add("bcast", d);
  }
  {
    CollDesc d = desc(CollType::kReduce, 100, ROp::kSum);
    d.src = buf(kSrc, 400);
    d.dst = buf(kDst, 400, 0);
    add("reduce", d);
  }
  {
    CollDesc d = desc(CollType::kAllreduce, 1000, ROp::kSum);
    d.src = buf(kSrc, 4000);
    d.dst = buf(kDst, 4000);
    add("allreduce", d);
    d.timeout_ns = 1000000000;
    add("allreduce_timeout", d);
    d.timeout_ns = 0;
    d.src = buf(kRegion2, 4000, 2);
    d.dst = buf(kRegion4, 4000, 4);
    add("allreduce_regions", d);
  }
  {
    CollDesc d = desc(CollType::kAllreduce, 300, ROp::kAvg, DType::kFloat64);
    d.src = d.dst = buf(kDst, 2400);
    d.alg = 2;
    add("allreduce_inplace_avg_ring", d);
  }
  {
    CollDesc d = desc(CollType::kAllreduce, 64, ROp::kMax);
    d.src = buf(kSrc, 256);
    d.dst = buf(kDst, 256);
    d.flags = off::kDescTagged;
    d.tag = 7;
    d.set_start = 1;
    d.set_stride = 1;
    d.set_size = 2;
    add("allreduce_set_of_2", d, false, true);
    d.set_start = 0;
    d.set_size = 1;
    add("allreduce_set_of_1", d, true, false);
  }
  {
    CollDesc d = desc(CollType::kAllgather, 50);
    d.src = buf(kSrc, 200);
    d.dst = buf(kDst, 600);
    add("allgather", d);
  }
  {
    CollDesc d = desc(CollType::kAlltoall, 50);
    d.src = buf(kSrc, 600);
    d.dst = buf(kDst, 600);
    add("alltoall", d);
  }
  {
    CollDesc d = desc(CollType::kReduceScatter, 50, ROp::kBxor);
    d.src = buf(kSrc, 600);
    d.dst = buf(kDst, 200);
    add("reduce_scatter", d);
  }
  {
    CollDesc d = desc(CollType::kGather, 50);
    d.src = buf(kSrc, 200);
    d.dst = buf(kDst, 600);
    add("gather", d);
  }
  {
    CollDesc d = desc(CollType::kGatherv, 5);
    d.src = buf(kSrc, 20);
    d.dst = buf(kDst, 60);
    d.dst_counts = kCounts32;
    d.dst_displs = kDispls32;
    add("gatherv", d);
  }
  {
    CollDesc d = desc(CollType::kScatter, 50);
    d.src = buf(kSrc, 600);
    d.dst = buf(kDst, 200);
    add("scatter", d);
  }
  {
    CollDesc d = desc(CollType::kScatterv, 5);
    d.src = buf(kSrc, 60);
    d.dst = buf(kDst, 20);
    d.src_counts = kCounts32;
    d.src_displs = kDispls32;
    add("scatterv", d);
  }
  {
    CollDesc d = desc(CollType::kAllgatherv, 5);
    d.flags = off::kDescCount64 | off::kDescDispl64;
    d.src = buf(kSrc, 20);
    d.dst = buf(kDst, 60);
    d.dst_counts = kCounts64;
    d.dst_displs = kDispls64;
    // count is this rank's entry of the counts: 5 for rank 0 of one, 7
    // for rank 1 of three.
    add("allgatherv_64_1", d, true, false);
    d.count = 7;
    d.src = buf(kSrc, 28);
    add("allgatherv_64_3", d, false, true);
  }
  {
    CollDesc d = desc(CollType::kAlltoallv, 0);
    d.src = buf(kSrc, 60);
    d.dst = buf(kDst, 60);
    d.src_counts = d.dst_counts = kCounts32;
    d.src_displs = d.dst_displs = kDispls32;
    add("alltoallv", d);
    // UCC's one-sided convention: dst_displs are places in the peers'
    // buffers, each checked by the receiver (here, ourselves).
    d.flags |= off::kDescOneSided;
    d.alg = off::kAlltoallvOneSided;
    add("alltoallv_onesided", d);
  }
  {
    // count is the whole vector: 5 on one rank ({5}), 15 on three.
    CollDesc d = desc(CollType::kReduceScatterv, 5, ROp::kSum);
    d.src = buf(kSrc, 60);
    d.dst = buf(kDst, 60);
    d.dst_counts = kCounts32;
    add("reduce_scatterv_1", d, true, false);
    d.count = 15;
    add("reduce_scatterv_3", d, false, true);
  }
  add("fanin", desc(CollType::kFanin, 0));
  add("fanout", desc(CollType::kFanout, 0));
  {
    CollDesc d = desc(CollType::kBcast, 10, ROp::kNone, DType::kGeneric);
    d.user_esize = 12;
    d.user_dt = 3;
    d.src = buf(kSrc, 120, 0);
    add("bcast_generic", d);
  }

  std::vector<Seed> out;
  for (uint32_t i = 0; i < items.size(); ++i) {
    Seed s{items[i].name, {}, items[i].team1, items[i].team3};
    s.bytes.resize(sizeof(CollDesc));
    memcpy(s.bytes.data(), &items[i].d, sizeof(CollDesc));
    std::vector<uint8_t> p = program(i);
    s.bytes.insert(s.bytes.end(), p.begin(), p.end());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ucc::fuzz

// The team's node map (device/run/links.h, map_nodes) against the rule it
// implements, computed the slow way: nodes numbered by first appearance in
// rank order, their ranks in rank order, each led by its lowest rank.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "device/run/links.h"

namespace {

using ucc::dev::NodeMap;
using ucc::off::TeamAddr;

// Every rank's host, as team addresses.
std::vector<TeamAddr> addrs_of(const std::vector<uint64_t>& hosts) {
  std::vector<TeamAddr> a(hosts.size());
  for (size_t r = 0; r < hosts.size(); ++r) {
    a[r] = TeamAddr{};
    // Two words, as host_identity gives; equal first words apart by the
    // second too.
    a[r].host[0] = hosts[r] / 3;
    a[r].host[1] = hosts[r] % 3;
  }
  return a;
}

void expect_map(const std::vector<uint64_t>& hosts) {
  const auto n = static_cast<uint32_t>(hosts.size());
  const std::vector<TeamAddr> a = addrs_of(hosts);
  std::vector<uint32_t> mem(6 * size_t{n}, 0xdeadbeef);  // poisoned
  NodeMap m;
  ucc::dev::map_nodes(a.data(), n, mem.data(), &m);
  // The reference: first appearance.
  std::vector<uint64_t> seen;
  std::vector<uint32_t> size;
  for (uint32_t r = 0; r < n; ++r) {
    uint32_t k = 0;
    while (k < seen.size() && seen[k] != hosts[r]) ++k;
    if (k == seen.size()) {
      seen.push_back(hosts[r]);
      size.push_back(0);
      ASSERT_LT(k, n);
      EXPECT_EQ(m.leaders[k], r) << "node " << k;
    }
    EXPECT_EQ(m.node[r], k) << "rank " << r;
    EXPECT_EQ(m.local_rank[r], size[k]) << "rank " << r;
    ++size[k];
  }
  ASSERT_EQ(m.nnodes, seen.size());
  uint32_t at = 0;
  for (uint32_t k = 0; k < m.nnodes; ++k) {
    EXPECT_EQ(m.node_size[k], size[k]);
    EXPECT_EQ(m.node_first[k], at);
    for (uint32_t i = 0; i < size[k]; ++i) {
      const uint32_t r = m.order[at + i];
      EXPECT_EQ(m.node[r], k);
      EXPECT_EQ(m.local_rank[r], i);
    }
    at += size[k];
  }
  EXPECT_EQ(at, n);
}

TEST(NodeMap, OneHostAndOneRankPerHost) {
  expect_map({7});
  expect_map({4, 4, 4, 4});
  std::vector<uint64_t> h;
  for (uint64_t r = 0; r < 257; ++r) h.push_back(1000 - r);  // descending
  expect_map(h);
}

TEST(NodeMap, HostsInterleavedAndUneven) {
  expect_map({5, 2, 5, 9, 2, 5, 0, 9});
  expect_map({1, 1, 2, 2, 2, 3, 1, 3});
  std::mt19937_64 rng(7);
  for (uint32_t n : {2u, 3u, 17u, 64u, 255u, 1000u}) {
    for (uint64_t nh : {1ull, 2ull, 5ull, 40ull}) {
      std::vector<uint64_t> h(n);
      for (auto& x : h) x = rng() % nh * 7919;  // some hosts share a first word
      expect_map(h);
    }
  }
}

}  // namespace

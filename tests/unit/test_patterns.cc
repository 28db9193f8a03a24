// Pattern math checked exhaustively for team sizes 1..70 (trees, blocks,
// recursive-doubling roles, pairwise and dissemination schedules).
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "device/run/patterns.h"

namespace pat = ucc::dev::pat;

TEST(Patterns, BalancedBlocksCoverTheVector) {
  for (uint32_t n = 1; n <= 70; ++n) {
    for (uint64_t count : {0ull, 1ull, 5ull, 69ull, 70ull, 71ull, 1000ull}) {
      uint64_t next = 0;
      for (uint32_t b = 0; b < n; ++b) {
        EXPECT_EQ(pat::block_offset(count, n, b), next);
        uint64_t c = pat::block_count(count, n, b);
        EXPECT_LE(c, count / n + 1);
        EXPECT_GE(c, count / n);
        next += c;
      }
      EXPECT_EQ(next, count);
    }
  }
}

// Every rank but the root is the child of exactly one rank, whose child
// list names it, and the parent links lead to the root within `depth` steps.
template <typename Tree>
void expect_spanning_tree(uint32_t max_depth_at_70) {
  for (uint32_t n = 1; n <= 70; ++n) {
    for (uint32_t root = 0; root < n; ++root) {
      std::vector<int> seen_as_child(n, 0);
      for (uint32_t r = 0; r < n; ++r) {
        uint32_t nc = Tree::nchildren(r, root, n);
        for (uint32_t i = 0; i < nc; ++i) {
          uint32_t c = Tree::child(r, root, n, i);
          ASSERT_LT(c, n);
          ASSERT_NE(c, root);
          EXPECT_EQ(Tree::parent(c, root, n), r);
          seen_as_child[c]++;
        }
      }
      for (uint32_t r = 0; r < n; ++r) {
        EXPECT_EQ(seen_as_child[r], r == root ? 0 : 1) << "n=" << n;
        uint32_t depth = 0;
        for (uint32_t v = r; v != root && depth <= n; ++depth)
          v = Tree::parent(v, root, n);
        EXPECT_LE(depth, max_depth_at_70) << "n=" << n << " r=" << r;
      }
    }
  }
}

TEST(Patterns, BinomialTreeIsASpanningTree) {
  expect_spanning_tree<pat::BinomialTree>(7);  // ceil(log2 70)
}

TEST(Patterns, KnomialTreeIsASpanningTree) {
  expect_spanning_tree<pat::KnomialTree<4>>(4);  // ceil(log4 70)
  expect_spanning_tree<pat::KnomialTree<3>>(4);  // ceil(log3 70)
  expect_spanning_tree<pat::KnomialTree<2>>(7);
  // Radix 2 is the binomial tree, child for child.
  for (uint32_t n = 1; n <= 70; ++n)
    for (uint32_t r = 0; r < n; ++r) {
      ASSERT_EQ(pat::KnomialTree<2>::nchildren(r, 3 % n, n),
                pat::BinomialTree::nchildren(r, 3 % n, n));
      for (uint32_t i = 0; i < pat::BinomialTree::nchildren(r, 3 % n, n); ++i)
        EXPECT_EQ(pat::KnomialTree<2>::child(r, 3 % n, n, i),
                  pat::BinomialTree::child(r, 3 % n, n, i));
    }
  // Radix 4 over 20 ranks from root 0: the root's children 1, 2, 3, 4,
  // 8, 12, 16; rank 4's 5, 6, 7; rank 16's 17, 18, 19; rank 6 a leaf.
  using K4 = pat::KnomialTree<4>;
  const uint32_t want[] = {1, 2, 3, 4, 8, 12, 16};
  ASSERT_EQ(K4::nchildren(0, 0, 20), 7u);
  for (uint32_t i = 0; i < 7; ++i) EXPECT_EQ(K4::child(0, 0, 20, i), want[i]);
  EXPECT_EQ(K4::nchildren(4, 0, 20), 3u);
  EXPECT_EQ(K4::child(4, 0, 20, 2), 7u);
  EXPECT_EQ(K4::nchildren(16, 0, 20), 3u);
  EXPECT_EQ(K4::nchildren(6, 0, 20), 0u);
  EXPECT_EQ(K4::parent(7, 0, 20), 4u);
  EXPECT_EQ(K4::parent(12, 0, 20), 0u);
  EXPECT_EQ(K4::parent(13, 0, 20), 12u);
  // Rooted elsewhere: virtual ranks from the root on.
  EXPECT_EQ(K4::parent(1, 5, 20), 5u);  // v 16 -> v 0, the root
}

TEST(Patterns, FlatTreeIsASpanningTreeOfDepthOne) {
  expect_spanning_tree<pat::FlatTree>(1);
  // The root's children in rank order after it, wrapping around.
  EXPECT_EQ(pat::flat_child(2, 2, 5, 0), 3u);
  EXPECT_EQ(pat::flat_child(2, 2, 5, 2), 0u);
  EXPECT_EQ(pat::flat_child(2, 2, 5, 3), 1u);
}

TEST(Patterns, RecursiveDoublingRoles) {
  for (uint32_t n = 1; n <= 70; ++n) {
    uint32_t p = pat::pow2_floor(n);
    ASSERT_LE(p, n);
    ASSERT_GT(2 * p, n);
    std::set<uint32_t> vranks;
    for (uint32_t r = 0; r < n; ++r) {
      pat::RdRole role = pat::rd_role(r, n);
      if (role.folded) {
        ASSERT_LT(role.partner, n);
        EXPECT_FALSE(pat::rd_role(role.partner, n).folded);
        EXPECT_EQ(pat::rd_role(role.partner, n).partner, r);
        continue;
      }
      ASSERT_LT(role.vrank, p);
      EXPECT_TRUE(vranks.insert(role.vrank).second);
      EXPECT_EQ(pat::rd_real(role.vrank, n), r);
    }
    EXPECT_EQ(vranks.size(), p);
  }
}

TEST(Patterns, PairwiseIsSymmetricAndComplete) {
  for (uint32_t n = 1; n <= 70; ++n) {
    for (uint32_t r = 0; r < n; ++r) {
      std::set<uint32_t> partners;
      for (uint32_t s = 0; s < n; ++s) {
        uint32_t p = pat::pair_partner(r, n, s);
        ASSERT_LT(p, n);
        EXPECT_EQ(pat::pair_partner(p, n, s), r);
        partners.insert(p);
      }
      EXPECT_EQ(partners.size(), n);
    }
  }
  // Powers of two: an aligned block of 2^k ranks (a host's) pairs within
  // itself in steps below 2^k and across blocks from there on.
  for (uint32_t n = 2; n <= 64; n *= 2)
    for (uint32_t b = 1; b <= n; b *= 2)
      for (uint32_t r = 0; r < n; ++r)
        for (uint32_t s = 0; s < n; ++s)
          EXPECT_EQ(pat::pair_partner(r, n, s) / b == r / b, s < b)
              << "n " << n << " block " << b << " rank " << r << " step " << s;
}

// Radix k: every rank hears, through others, from every rank after
// ceil(log_k n) rounds; the signals of a round pair up (j-th to and
// from); no rank signals itself, and no pair of ranks carries two
// signals of one barrier in the same direction.
TEST(Patterns, KaryDisseminationReachesEveryone) {
  for (uint32_t k = 2; k <= 5; ++k) {
    for (uint32_t n = 1; n <= 70; ++n) {
      const uint32_t rounds = pat::kdissem_rounds(n, k);
      uint64_t span = 1;
      for (uint32_t i = 0; i < rounds; ++i) span *= k;
      ASSERT_GE(span, n);
      ASSERT_LT(span / k, n > 1 ? n : 2u);
      std::vector<std::vector<bool>> knows(n, std::vector<bool>(n, false));
      std::set<std::pair<uint32_t, uint32_t>> pairs;
      for (uint32_t r = 0; r < n; ++r) knows[r][r] = true;
      uint64_t d = 1;
      for (uint32_t i = 0; i < rounds; ++i, d *= k) {
        auto next = knows;
        const uint32_t np = pat::kdissem_peers(n, k, d);
        ASSERT_GE(np, 1u);
        ASSERT_LE(np, k - 1);
        for (uint32_t r = 0; r < n; ++r) {
          for (uint32_t j = 1; j <= np; ++j) {
            const uint32_t from = pat::kdissem_from(r, n, d, j);
            const uint32_t to = pat::kdissem_to(r, n, d, j);
            ASSERT_NE(to, r);
            EXPECT_EQ(pat::kdissem_to(from, n, d, j), r);
            EXPECT_TRUE(pairs.insert({r, to}).second)
                << "k=" << k << " n=" << n << " " << r << "->" << to;
            for (uint32_t x = 0; x < n; ++x)
              if (knows[from][x]) next[r][x] = true;
          }
        }
        knows = next;
      }
      for (uint32_t r = 0; r < n; ++r)
        for (uint32_t x = 0; x < n; ++x)
          EXPECT_TRUE(knows[r][x]) << "k=" << k << " n=" << n;
    }
  }
  // Radix 2 is the plain dissemination's schedule.
  for (uint32_t n = 2; n <= 70; ++n)
    for (uint32_t i = 0; i < pat::ceil_log2(n); ++i)
      for (uint32_t r = 0; r < n; ++r)
        EXPECT_EQ(pat::kdissem_to(r, n, uint64_t{1} << i, 1),
                  pat::dissem_to(r, n, i));
}

TEST(Patterns, DisseminationReachesEveryone) {
  for (uint32_t n = 1; n <= 70; ++n) {
    uint32_t rounds = pat::ceil_log2(n);
    // Knowledge spreads: after all rounds rank r has heard from all.
    std::vector<std::vector<bool>> knows(n, std::vector<bool>(n, false));
    for (uint32_t r = 0; r < n; ++r) knows[r][r] = true;
    for (uint32_t k = 0; k < rounds; ++k) {
      auto next = knows;
      for (uint32_t r = 0; r < n; ++r) {
        uint32_t from = pat::dissem_from(r, n, k);
        EXPECT_EQ(pat::dissem_to(from, n, k), r);
        for (uint32_t x = 0; x < n; ++x)
          if (knows[from][x]) next[r][x] = true;
      }
      knows = next;
    }
    for (uint32_t r = 0; r < n; ++r)
      for (uint32_t x = 0; x < n; ++x) EXPECT_TRUE(knows[r][x]);
  }
}

TEST(Patterns, MessageCounts) {
  EXPECT_EQ(pat::nmsgs(0, 64), 1u);
  EXPECT_EQ(pat::nmsgs(1, 64), 1u);
  EXPECT_EQ(pat::nmsgs(64, 64), 1u);
  EXPECT_EQ(pat::nmsgs(65, 64), 2u);
  EXPECT_EQ(pat::nmsgs(1 << 20, 65536), 16u);
}

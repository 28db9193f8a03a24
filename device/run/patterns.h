// Pure pattern math for the collective algorithms: who talks to whom and
// which part of a vector each step covers. No I/O, no state; everything is
// constexpr so tests/unit/test_patterns.cc can check it exhaustively.
#pragma once

#include <cstdint>

namespace ucc::dev::pat {

// --- Balanced blocks -------------------------------------------------------
// Splits `count` elements into `n` blocks whose sizes differ by at most one;
// the first count % n blocks are one element larger.
constexpr uint64_t block_offset(uint64_t count, uint32_t n, uint32_t b) {
  uint64_t q = count / n, r = count % n;
  return q * b + (b < r ? b : r);
}
constexpr uint64_t block_count(uint64_t count, uint32_t n, uint32_t b) {
  return count / n + (b < count % n ? 1 : 0);
}

// v mod n in [0, n). The callers' values lie within one n of the range
// (a rank plus or minus a distance below n): those take a compare instead
// of a division, which would cost tens of cycles on every message.
constexpr uint32_t mod(int64_t v, uint32_t n) {
  const int64_t sn = static_cast<int64_t>(n);
  if (v >= 0 && v < sn) return static_cast<uint32_t>(v);
  if (v < 0 && v >= -sn) return static_cast<uint32_t>(v + sn);
  if (v >= sn && v < 2 * sn) return static_cast<uint32_t>(v - sn);
  int64_t m = v % sn;
  return static_cast<uint32_t>(m < 0 ? m + n : m);
}

// Number of slot-sized messages a stream of `bytes` needs; a stream always
// carries at least one message so that empty streams still synchronise.
constexpr uint32_t nmsgs(uint64_t bytes, uint32_t slot) {
  return bytes <= slot ? 1 : static_cast<uint32_t>((bytes + slot - 1) / slot);
}

// --- Binomial tree rooted at `root` ----------------------------------------
// Virtual rank v = (rank - root) mod n. The parent of v clears v's lowest
// set bit; the children of v are v + 2^i for every 2^i below v's lowest set
// bit (all powers of two for the root) that stay below n.
constexpr uint32_t vrank(uint32_t rank, uint32_t root, uint32_t n) {
  return mod(static_cast<int64_t>(rank) - root, n);
}
constexpr uint32_t real_rank(uint32_t v, uint32_t root, uint32_t n) {
  return mod(int64_t{v} + root, n);
}
constexpr uint32_t lowbit(uint32_t v) { return v & (~v + 1); }
// Parent's real rank; only for rank != root.
constexpr uint32_t tree_parent(uint32_t rank, uint32_t root, uint32_t n) {
  uint32_t v = vrank(rank, root, n);
  return real_rank(v - lowbit(v), root, n);
}
// Number of children and the i-th child's real rank, children ordered by
// increasing distance.
constexpr uint32_t tree_nchildren(uint32_t rank, uint32_t root, uint32_t n) {
  uint32_t v = vrank(rank, root, n);
  uint32_t lim = v == 0 ? 0x80000000u : lowbit(v);
  uint32_t c = 0;
  for (uint32_t d = 1; d < lim && v + d < n; d <<= 1) ++c;
  return c;
}
constexpr uint32_t tree_child(uint32_t rank, uint32_t root, uint32_t n,
                              uint32_t i) {
  return real_rank(vrank(rank, root, n) + (1u << i), root, n);
}

// --- Flat tree rooted at `root` --------------------------------------------
// Every other rank is a child of the root, children in rank order after the
// root. Depth one: a message reaches every rank in one step, whoever runs
// first, which is what oversubscribed one-host teams need.
constexpr uint32_t flat_nchildren(uint32_t rank, uint32_t root, uint32_t n) {
  return rank == root ? n - 1 : 0;
}
constexpr uint32_t flat_child(uint32_t /*rank*/, uint32_t root, uint32_t n,
                              uint32_t i) {
  return real_rank(i + 1, root, n);
}

// --- K-nomial tree rooted at `root` ----------------------------------------
// The binomial tree in base k: v's parent clears v's lowest nonzero base-k
// digit; v's children are v + j k^i for j = 1..k-1 at every digit place
// k^i below that digit (every place for the root) that stays below n.
// Depth ceil(log_k n) where the binomial tree's is ceil(log2 n), for up to
// k - 1 children per place instead of one: fewer rounds of latency, more
// sends per rank. Children numbered nearest first (place by place, j
// rising), as the binomial tree's.
//
// knomial_place(v, k): k^i of v's lowest nonzero digit; for v = 0 a
// place past every rank (the root's children span all places).
constexpr uint64_t knomial_place(uint32_t v, uint32_t k) {
  uint64_t m = 1;
  if (v == 0) return uint64_t{1} << 32;
  while ((v / m) % k == 0) m *= k;
  return m;
}
constexpr uint32_t knomial_parent(uint32_t rank, uint32_t root, uint32_t n,
                                  uint32_t k) {
  const uint32_t v = vrank(rank, root, n);
  const uint64_t m = knomial_place(v, k);
  return real_rank(static_cast<uint32_t>(v - ((v / m) % k) * m), root, n);
}
constexpr uint32_t knomial_nchildren(uint32_t rank, uint32_t root, uint32_t n,
                                     uint32_t k) {
  const uint32_t v = vrank(rank, root, n);
  const uint64_t lim = knomial_place(v, k);
  uint32_t c = 0;
  for (uint64_t m = 1; m < lim && v + m < n; m *= k)
    for (uint32_t j = 1; j < k && v + j * m < n; ++j) ++c;
  return c;
}
// Only the last children can be missing (v + j k^i past n leaves every
// later one past n too), so child i (i < nchildren) is v + j k^p with
// p = i / (k - 1), j = i % (k - 1) + 1.
constexpr uint32_t knomial_child(uint32_t rank, uint32_t root, uint32_t n,
                                 uint32_t k, uint32_t i) {
  uint64_t m = 1;
  for (uint32_t p = i / (k - 1); p > 0; --p) m *= k;
  const uint64_t c = vrank(rank, root, n) + (i % (k - 1) + 1) * m;
  return real_rank(static_cast<uint32_t>(c), root, n);
}

// The tree shapes as types, for algorithms written once for all.
struct BinomialTree {
  static constexpr uint32_t parent(uint32_t rank, uint32_t root, uint32_t n) {
    return tree_parent(rank, root, n);
  }
  static constexpr uint32_t nchildren(uint32_t rank, uint32_t root,
                                      uint32_t n) {
    return tree_nchildren(rank, root, n);
  }
  static constexpr uint32_t child(uint32_t rank, uint32_t root, uint32_t n,
                                  uint32_t i) {
    return tree_child(rank, root, n, i);
  }
};
// Of radix K (the algorithms take 4: half the binomial tree's depth, up
// to three sends per digit place; docs/scale.md, "K-nomial trees").
template <uint32_t K>
struct KnomialTree {
  static_assert(K >= 2);
  static constexpr uint32_t parent(uint32_t rank, uint32_t root, uint32_t n) {
    return knomial_parent(rank, root, n, K);
  }
  static constexpr uint32_t nchildren(uint32_t rank, uint32_t root,
                                      uint32_t n) {
    return knomial_nchildren(rank, root, n, K);
  }
  static constexpr uint32_t child(uint32_t rank, uint32_t root, uint32_t n,
                                  uint32_t i) {
    return knomial_child(rank, root, n, K, i);
  }
};
struct FlatTree {
  static constexpr uint32_t parent(uint32_t, uint32_t root, uint32_t) {
    return root;
  }
  static constexpr uint32_t nchildren(uint32_t rank, uint32_t root,
                                      uint32_t n) {
    return flat_nchildren(rank, root, n);
  }
  static constexpr uint32_t child(uint32_t rank, uint32_t root, uint32_t n,
                                  uint32_t i) {
    return flat_child(rank, root, n, i);
  }
};

// --- Dissemination (barrier) -----------------------------------------------
constexpr uint32_t ceil_log2(uint32_t n) {
  uint32_t k = 0;
  while ((1u << k) < n) ++k;
  return k;
}
constexpr uint32_t dissem_to(uint32_t rank, uint32_t n, uint32_t round) {
  return mod(static_cast<int64_t>(rank) + (int64_t{1} << round), n);
}
constexpr uint32_t dissem_from(uint32_t rank, uint32_t n, uint32_t round) {
  return mod(static_cast<int64_t>(rank) - (int64_t{1} << round), n);
}
// Of radix k: ceil(log_k n) rounds; in the round of distance d = k^i a
// rank signals rank + j d and hears from rank - j d, for every j = 1..k-1
// with j d < n (the last round may have fewer). Every distance j k^i is
// another, so no two signals of one barrier share a pair of ranks in the
// same direction; after the round of d a rank has heard from the ranks
// within (j_max + 1) d - 1 behind it, all of them after the last.
constexpr uint32_t kdissem_rounds(uint32_t n, uint32_t k) {
  uint32_t r = 0;
  for (uint64_t span = 1; span < n; span *= k) ++r;
  return r;
}
constexpr uint32_t kdissem_peers(uint32_t n, uint32_t k, uint64_t d) {
  const uint64_t j = (n - 1) / d;
  return j < k - 1 ? static_cast<uint32_t>(j) : k - 1;
}
// The j-th (1-based) peer's rank in the round of distance d.
constexpr uint32_t kdissem_to(uint32_t rank, uint32_t n, uint64_t d,
                              uint32_t j) {
  return mod(static_cast<int64_t>(rank) + static_cast<int64_t>(j * d), n);
}
constexpr uint32_t kdissem_from(uint32_t rank, uint32_t n, uint64_t d,
                                uint32_t j) {
  return mod(static_cast<int64_t>(rank) - static_cast<int64_t>(j * d), n);
}

// --- Recursive doubling with a fold for non-powers of two -----------------
// p = largest power of two <= n, rem = n - p. Among the first 2*rem ranks
// the even ones fold their data into the next odd rank and wait; the rest
// take part in log2(p) exchange rounds under virtual ranks 0..p-1.
constexpr uint32_t pow2_floor(uint32_t n) {
  uint32_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}
struct RdRole {
  bool folded;       // sends its data away and receives the result at the end
  uint32_t partner;  // fold partner (folded or its receiver), or n if none
  uint32_t vrank;    // virtual rank among p when not folded
};
constexpr RdRole rd_role(uint32_t rank, uint32_t n) {
  uint32_t p = pow2_floor(n), rem = n - p;
  if (rank < 2 * rem) {
    if (rank % 2 == 0) return RdRole{true, rank + 1, 0};
    return RdRole{false, rank - 1, rank / 2};
  }
  return RdRole{false, n, rank - rem};
}
constexpr uint32_t rd_real(uint32_t v, uint32_t n) {
  uint32_t rem = n - pow2_floor(n);
  return v < rem ? 2 * v + 1 : v + rem;
}

// --- Pairwise exchange (alltoall) ------------------------------------------
// In step s (0..n-1) rank r exchanges with r XOR s where n is a power of
// two, else with (s - r) mod n: a symmetric pairing either way, every
// pair meets exactly once, and a rank whose partner is itself sits the
// step out. Symmetric pairs make in-place exchange safe. XOR keeps the
// ranks of an aligned block of 2^k (a host's, numbered host by host) to
// themselves in steps 1..2^k - 1 and pairs every rank across blocks in
// the others, so that a step between hosts has all of them sending at
// once, both ways; (s - r) mod n mixes the two in every step, where a
// rank done with a copy on its host waits on a partner still sending
// between hosts (2 hosts x 2 ranks over TCP, 1 MiB blocks: 0.88 of Open
// MPI's time against 0.70; docs/perf/hosts.md).
constexpr uint32_t pair_partner(uint32_t rank, uint32_t n, uint32_t step) {
  return (n & (n - 1)) == 0 ? rank ^ step
                            : mod(static_cast<int64_t>(step) - rank, n);
}

}  // namespace ucc::dev::pat

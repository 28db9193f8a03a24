// Teams over an ep_map on the context OOB (no team OOB): every map type
// (full, strided both ways, 4- and 8-byte arrays, callback) on contexts of
// 2, 3, 5 and 8 ranks; concurrent creations of different teams, of the
// same members under different ids; 1,000 create/destroy cycles; a member
// that never comes; invalid maps and ep combinations; EXCLUSIVE and
// SHARED contexts.
//
// Helpers and words: team_util.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/mp/team_util.h"

namespace {

using ucct::maps::ArrayMap;
using ucct::maps::cb_map;
using ucct::maps::check_team;
using ucct::maps::create;
using ucct::maps::create_check_destroy;
using ucct::maps::destroy;
using ucct::maps::finish;
using ucct::maps::full_map;
using ucct::maps::map_params;
using ucct::maps::Members;
using ucct::maps::Node;
using ucct::maps::open_fds;
using ucct::maps::permutation;
using ucct::maps::post_map;
using ucct::maps::run_on;
using ucct::maps::strided_map;
using ucct::maps::strided_members;

class TeamMaps : public ::testing::TestWithParam<int> {};

std::string ranks_name(const ::testing::TestParamInfo<int>& i) {
  return "n" + std::to_string(i.param);
}

// --- every map type
// ------------------------------------------------------------

TEST_P(TeamMaps, EveryMapType) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    Node n;
    if (n.init(r) != UCC_OK) return 1;
    const uint64_t size = static_cast<uint64_t>(r.size);
    const uint64_t half = (size + 1) / 2;
    const Members all = strided_members(0, 1, size);
    const Members perm = permutation(size, 42);
    Members sub(perm.begin(),
                perm.begin() + static_cast<long>(std::max<uint64_t>(
                                   2, size > 2 ? size - 2 : size)));
    std::reverse(sub.begin(), sub.end());
    Members rot(size);
    for (uint64_t i = 0; i < size; ++i) rot[i] = perm[(i + 1) % size];
    ArrayMap arr;
    struct Case {
      const char* what;
      ucc_ep_map_t map;
      Members members;
    };
    const Case cases[] = {
        {"full, ep_num 0", full_map(0), all},
        {"full, ep_num n", full_map(size), all},
        {"strided +2", strided_map(0, 2, half), strided_members(0, 2, half)},
        {"strided -1", strided_map(size - 1, -1, size),
         strided_members(size - 1, -1, size)},
        {"strided -2", strided_map(size - 1, -2, half),
         strided_members(size - 1, -2, half)},
        {"array int32, permuted", arr.map(perm, 4), perm},
        {"callback, rotated", cb_map(&rot), rot},
    };
    for (const Case& c : cases) {
      int rc = create_check_destroy(n, map_params(c.map), c.members, c.what);
      if (rc != 0) return rc;
    }
    // After the int32 case: arr's storage is reused for the uint64 one.
    return create_check_destroy(n, map_params(arr.map(sub, 8)), sub,
                                "array uint64, permuted subset");
  }));
}

// --- concurrent creations
// --------------------------------------------------------

// Each rank creates two teams at once: its parity class (disjoint teams,
// created concurrently by different ranks) and its half of the context
// in reverse order (overlapping the other parity's team).
TEST_P(TeamMaps, DisjointAndOverlappingTeamsConcurrently) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    Node n;
    if (n.init(r) != UCC_OK) return 1;
    const uint64_t size = static_cast<uint64_t>(r.size);
    const uint64_t me = static_cast<uint64_t>(r.rank);
    const uint64_t par = me % 2;
    const uint64_t npar = (size - par + 1) / 2;
    const Members parity = strided_members(par, 2, npar);
    const uint64_t lo = size / 2;
    Members half = me < lo ? strided_members(lo - 1, -1, lo)
                           : strided_members(size - 1, -1, size - lo);
    ucc_team_h t[2] = {};
    CK(post_map(n, strided_map(par, 2, npar), &t[0]));
    ArrayMap arr;
    CK(post_map(n, arr.map(half, 8), &t[1]));
    CK(finish(n, {t[0], t[1]}));
    // Checks in one global order: parity teams first, then halves.
    int rc = check_team(n, t[0], parity, "parity team");
    if (rc == 0) rc = check_team(n, t[1], half, "half team");
    CK(destroy(n, t[0]));
    CK(destroy(n, t[1]));
    return rc;
  }));
}

// The same members twice at once: fine with distinct ids; without ids the
// second creation is refused at post while the first goes on.
TEST_P(TeamMaps, SameMembersNeedDistinctIds) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    Node n;
    if (n.init(r) != UCC_OK) return 1;
    const uint64_t size = static_cast<uint64_t>(r.size);
    const Members rev = strided_members(size - 1, -1, size);
    ucc_team_params_t p = map_params(strided_map(size - 1, -1, size));
    p.mask |= UCC_TEAM_PARAM_FIELD_ID;
    ucc_team_h t[2] = {};
    p.id = 11;
    CK(ucc_team_create_post(&n.ctx, 1, &p, &t[0]));
    p.id = 22;
    CK(ucc_team_create_post(&n.ctx, 1, &p, &t[1]));
    CK(finish(n, {t[1], t[0]}));
    int rc = check_team(n, t[0], rev, "id 11");
    if (rc == 0) rc = check_team(n, t[1], rev, "id 22");
    // Both at once: allreduces on the two teams in flight together.
    int64_t v[2] = {r.rank + 1, 100 * (r.rank + 1)}, s[2] = {-1, -1};
    ucc_coll_req_h q[2] = {};
    for (int i = 0; i < 2 && rc == 0; ++i) {
      ucc_coll_args_t a{};
      a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
      a.op = UCC_OP_SUM;
      a.src.info = {&v[i], 1, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
      a.dst.info = {&s[i], 1, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
      CK(ucc_collective_init_and_post(&a, &q[i], t[i]));
    }
    while (rc == 0 && (ucc_collective_test(q[0]) == UCC_INPROGRESS ||
                       ucc_collective_test(q[1]) == UCC_INPROGRESS))
      ucc_context_progress(n.ctx);
    const int64_t tri = static_cast<int64_t>(size * (size + 1) / 2);
    if (rc == 0 && (ucc_collective_test(q[0]) != UCC_OK ||
                    ucc_collective_test(q[1]) != UCC_OK || s[0] != tri ||
                    s[1] != 100 * tri)) {
      std::fprintf(stderr, "rank %d: concurrent sums %lld %lld\n", r.rank,
                   static_cast<long long>(s[0]), static_cast<long long>(s[1]));
      rc = 6;
    }
    for (ucc_coll_req_h q1 : q)
      if (q1 != nullptr) ucc_collective_finalize(q1);
    CK(destroy(n, t[0]));
    CK(destroy(n, t[1]));
    if (rc != 0) return rc;

    ucc_team_params_t np = map_params(strided_map(size - 1, -1, size));
    CK(ucc_team_create_post(&n.ctx, 1, &np, &t[0]));
    WANT(ucc_team_create_post(&n.ctx, 1, &np, &t[1]), UCC_ERR_INVALID_PARAM);
    CK(finish(n, {t[0]}));
    rc = check_team(n, t[0], rev, "no id");
    CK(destroy(n, t[0]));
    return rc;
  }));
}

// More creations at once than a context has mailbox requests (4): the
// later ones wait for a free request, in post order, whatever order they
// are tested in.
TEST_P(TeamMaps, MoreConcurrentCreationsThanRequests) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    Node n;
    if (n.init(r) != UCC_OK) return 1;
    const uint64_t size = static_cast<uint64_t>(r.size);
    constexpr int kTeams = 7;
    std::vector<ucc_team_h> t(kTeams);
    for (int i = 0; i < kTeams; ++i) {
      ucc_team_params_t p = map_params(strided_map(size - 1, -1, size));
      p.mask |= UCC_TEAM_PARAM_FIELD_ID;
      p.id = 100 + i;
      CK(ucc_team_create_post(&n.ctx, 1, &p, &t[i]));
    }
    std::vector<ucc_team_h> rev(t.rbegin(), t.rend());
    CK(finish(n, rev));
    int rc = 0;
    for (int i = 0; i < kTeams && rc == 0; ++i)
      rc = check_team(n, t[i], strided_members(size - 1, -1, size), "many");
    for (ucc_team_h x : t) CK(destroy(n, x));
    return rc;
  }));
}

// --- parameter combinations
// -----------------------------------------------------------

// Consistent ep / ep_range / ep_list / team_size / team OOB combinations
// are accepted and give the team the map describes.
TEST_P(TeamMaps, ConsistentEpFieldsAreAccepted) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    Node n;
    if (n.init(r) != UCC_OK) return 1;
    const uint64_t size = static_cast<uint64_t>(r.size);
    const uint64_t me = static_cast<uint64_t>(r.rank);
    const Members rev = strided_members(size - 1, -1, size);
    const uint64_t pos = size - 1 - me;
    // ep (CONTIG) = our position in the map; team_size agrees.
    ucc_team_params_t p = map_params(strided_map(size - 1, -1, size));
    p.mask |= UCC_TEAM_PARAM_FIELD_EP | UCC_TEAM_PARAM_FIELD_EP_RANGE |
              UCC_TEAM_PARAM_FIELD_TEAM_SIZE;
    p.ep = pos;
    p.ep_range = UCC_COLLECTIVE_EP_RANGE_CONTIG;
    p.team_size = size;
    int rc = create_check_destroy(n, p, rev, "ep = position");
    if (rc != 0) return rc;
    // NONCONTIG: ep is our own label, listed in ep_list at our position.
    std::vector<uint64_t> labels(size);
    for (uint64_t i = 0; i < size; ++i) labels[i] = 1000 + 7 * rev[i];
    p.ep = 1000 + 7 * me;
    p.ep_range = UCC_COLLECTIVE_EP_RANGE_NONCONTIG;
    p.mask |= UCC_TEAM_PARAM_FIELD_EP_LIST;
    p.ep_list = labels.data();
    rc = create_check_destroy(n, p, rev, "noncontig labels");
    if (rc != 0) return rc;
    // CONTIG ep_list: 0..size-1.
    std::vector<uint64_t> ids(size);
    for (uint64_t i = 0; i < size; ++i) ids[i] = i;
    p.ep = pos;
    p.ep_range = UCC_COLLECTIVE_EP_RANGE_CONTIG;
    p.ep_list = ids.data();
    rc = create_check_destroy(n, p, rev, "contig ep_list");
    if (rc != 0) return rc;
    // A team OOB with a map that agrees with it (team rank = oob_ep).
    ucc_team_params_t q = map_params(full_map(size));
    q.mask |= UCC_TEAM_PARAM_FIELD_OOB | UCC_TEAM_PARAM_FIELD_ID;
    q.oob = r.oob;
    q.id = 5;
    return create_check_destroy(n, q, strided_members(0, 1, size),
                                "team OOB + full map");
  }));
}

// Invalid maps and inconsistent fields fail at post with
// UCC_ERR_INVALID_PARAM; nothing is left behind (a valid team follows).
TEST_P(TeamMaps, InvalidMapsAreRefusedAtPost) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    Node n;
    if (n.init(r) != UCC_OK) return 1;
    const uint64_t size = static_cast<uint64_t>(r.size);
    const uint64_t me = static_cast<uint64_t>(r.rank);
    ucc_team_h t = nullptr;
    ArrayMap arr;
    auto post = [&](const ucc_team_params_t& p) {
      return ucc_team_create_post(&n.ctx, 1, &p, &t);
    };
    const ucc_status_t kInv = UCC_ERR_INVALID_PARAM;
    // Out of range: an array entry == size, a stride running below 0,
    // ep_num beyond the context, a negative int32.
    WANT(post(map_params(arr.map({me, size}, 8))), kInv);
    WANT(post(map_params(strided_map(me, -1, me + 2))), kInv);
    WANT(post(map_params(strided_map(0, 1, size + 1))), kInv);
    ucc_ep_map_t neg = arr.map({me, 0}, 4);
    arr.v4[1] = -1;
    WANT(post(map_params(neg)), kInv);
    // Duplicates.
    WANT(post(map_params(arr.map({me, me}, 4))), kInv);
    WANT(post(map_params(strided_map(me, 0, 2))), kInv);
    // This process not in the map.
    WANT(post(map_params(arr.map({(me + 1) % size}, 8))), kInv);
    // ep_num mismatches.
    WANT(post(map_params(full_map(size + 1))), kInv);
    if (size > 1) WANT(post(map_params(full_map(size - 1))), kInv);
    ucc_team_params_t p = map_params(arr.map({me}, 8));
    p.ep_map.ep_num = 0;
    WANT(post(p), kInv);
    p = map_params(full_map(0));
    p.mask |= UCC_TEAM_PARAM_FIELD_TEAM_SIZE;
    p.team_size = size + 1;
    WANT(post(p), kInv);
    // Malformed maps.
    p = map_params(arr.map({me}, 8));
    p.ep_map.array.elem_size = 2;
    WANT(post(p), kInv);
    p.ep_map.array.elem_size = 8;
    p.ep_map.array.map = nullptr;
    WANT(post(p), kInv);
    Members one{me};
    p = map_params(cb_map(&one));
    p.ep_map.cb.cb = nullptr;
    WANT(post(p), kInv);
    p = map_params(full_map(0));
    p.ep_map.type = static_cast<ucc_ep_map_type_t>(9);
    WANT(post(p), kInv);
    // ep that disagrees with our position (CONTIG), bad ep_range, bad
    // ep_lists.
    p = map_params(full_map(0));
    p.mask |= UCC_TEAM_PARAM_FIELD_EP;
    p.ep = (me + 1) % (size + 1);
    WANT(post(p), kInv);
    p.mask |= UCC_TEAM_PARAM_FIELD_EP_RANGE;
    p.ep_range = static_cast<ucc_ep_range_type_t>(7);
    p.ep = me;
    WANT(post(p), kInv);
    std::vector<uint64_t> list(size);
    for (uint64_t i = 0; i < size; ++i) list[i] = size - 1 - i;
    p.ep_range = UCC_COLLECTIVE_EP_RANGE_CONTIG;
    p.mask |= UCC_TEAM_PARAM_FIELD_EP_LIST;
    p.ep_list = list.data();
    if (size > 1) WANT(post(p), kInv);  // CONTIG list must be 0..size-1
    p.ep_list = nullptr;
    WANT(post(p), kInv);
    std::vector<uint64_t> dup(size, 3);
    p.ep_range = UCC_COLLECTIVE_EP_RANGE_NONCONTIG;
    p.ep = 3;
    p.ep_list = dup.data();
    if (size > 1) WANT(post(p), kInv);  // a label twice
    for (uint64_t i = 0; i < size; ++i) list[i] = 50 + i;
    p.ep_list = list.data();
    p.ep = 49;  // not at our position in the list
    WANT(post(p), kInv);
    // A team OOB whose rank the map gives to another context ep.
    if (size > 1) {
      ucc_team_params_t q = map_params(strided_map(size - 1, -1, size));
      q.mask |= UCC_TEAM_PARAM_FIELD_OOB;
      q.oob = r.oob;
      if (size - 1 - me != me) WANT(post(q), kInv);
    }
    // An ep_map on a context without an OOB.
    ucc_context_params_t cp{};
    ucc_context_h lone = nullptr;
    CK(ucc_context_create(n.lib, &cp, nullptr, &lone));
    p = map_params(full_map(1));
    ucc_status_t st = ucc_team_create_post(&lone, 1, &p, &t);
    ucc_context_destroy(lone);
    WANT(st, kInv);
    // Still usable: a valid team of everyone.
    return create_check_destroy(n, map_params(full_map(0)),
                                strided_members(0, 1, size), "after refusals");
  }));
}

// --- context types
// ---------------------------------------------------------------

// EXCLUSIVE: one team at a time (a second post, or a split, fails with
// UCC_ERR_NO_RESOURCE until it is destroyed), also without a lock under
// UCC_THREAD_MULTIPLE. SHARED, and no TYPE field: many teams at once.
TEST_P(TeamMaps, ExclusiveAndSharedContexts) {
  EXPECT_TRUE(ucct::run_ranks(GetParam(), [](ucct::Rank& r) {
    const uint64_t size = static_cast<uint64_t>(r.size);
    const Members all = strided_members(0, 1, size);
    const Members rev = strided_members(size - 1, -1, size);
    {
      Node n;
      CK(n.init(r, UCC_CONTEXT_EXCLUSIVE, nullptr, UCC_THREAD_MULTIPLE));
      ucc_context_attr_t ca{};
      ca.mask = UCC_CONTEXT_ATTR_FIELD_TYPE;
      CK(ucc_context_get_attr(n.ctx, &ca));
      if (ca.type != UCC_CONTEXT_EXCLUSIVE) return 2;
      for (int round = 0; round < 2; ++round) {
        ucc_team_h t = nullptr, t2 = nullptr;
        CK(post_map(n, full_map(0), &t));
        WANT(post_map(n, strided_map(size - 1, -1, size), &t2),
             UCC_ERR_NO_RESOURCE);
        CK(finish(n, {t}));
        WANT(ucc_team_create_from_parent(0, 1, t, &t2), UCC_ERR_NO_RESOURCE);
        int rc = check_team(n, t, all, "exclusive");
        CK(destroy(n, t));
        if (rc != 0) return rc;
      }
    }
    for (int type : {static_cast<int>(UCC_CONTEXT_SHARED), -1}) {
      Node n;
      CK(n.init(r, type));
      ucc_context_attr_t ca{};
      ca.mask = UCC_CONTEXT_ATTR_FIELD_TYPE;
      CK(ucc_context_get_attr(n.ctx, &ca));
      if (ca.type != UCC_CONTEXT_SHARED) return 3;
      ucc_team_h t[3] = {};
      CK(post_map(n, full_map(0), &t[0]));
      CK(post_map(n, strided_map(size - 1, -1, size), &t[1]));
      CK(finish(n, {t[0], t[1]}));
      CK(ucc_team_create_from_parent(0, 1, t[0], &t[2]));
      CK(finish(n, {t[2]}));
      int rc = check_team(n, t[0], all, "shared 1");
      if (rc == 0) rc = check_team(n, t[1], rev, "shared 2");
      if (rc == 0) rc = check_team(n, t[2], all, "shared split");
      for (ucc_team_h x : t) CK(destroy(n, x));
      if (rc != 0) return rc;
    }
    // An unknown type is refused before any exchange.
    Node bad;
    ucc_status_t st = bad.init(r, 7);
    if (st != UCC_ERR_INVALID_PARAM) {
      std::fprintf(stderr, "rank %d: context type 7: %s\n", r.rank,
                   ucct::status_name(st));
      return 4;
    }
    return 0;
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, TeamMaps, ::testing::Values(2, 3, 5, 8),
                         ranks_name);

// UCC_THREAD_MULTIPLE: two threads per rank create, use and destroy ep_map
// teams on one shared context at the same time (distinct ids, the same
// order on every rank within a thread). The suite's name puts it in CI's
// ThreadSanitizer run.
TEST(TeamMapsThreadMultiple, ThreadsCreateTeamsConcurrently) {
  EXPECT_TRUE(ucct::run_ranks(3, [](ucct::Rank& r) {
    Node n;
    if (n.init(r, UCC_CONTEXT_SHARED, nullptr, UCC_THREAD_MULTIPLE) != UCC_OK)
      return 1;
    std::atomic<int> failures{0};
    auto body = [&](int thread) {
      for (int i = 0; i < 20 && failures.load() == 0; ++i) {
        ucc_team_params_t p = map_params(strided_map(2, -1, 3));
        p.mask |= UCC_TEAM_PARAM_FIELD_ID;
        p.id = 1000 * (thread + 1) + i;
        ucc_team_h t = nullptr;
        int64_t v = r.rank + 1, sum = -1;
        ucc_coll_args_t a{};
        a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
        a.op = UCC_OP_SUM;
        a.src.info = {&v, 1, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
        a.dst.info = {&sum, 1, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
        ucc_status_t st = create(n, p, &t);
        if (st == UCC_OK) st = run_on(n, t, a);
        if (t != nullptr && destroy(n, t) != UCC_OK) st = UCC_ERR_NO_MESSAGE;
        if (st != UCC_OK || sum != 6) {
          std::fprintf(stderr, "rank %d thread %d cycle %d: %s, sum %lld\n",
                       r.rank, thread, i, ucct::status_name(st),
                       static_cast<long long>(sum));
          ++failures;
        }
      }
    };
    std::thread t0(body, 0), t1(body, 1);
    t0.join();
    t1.join();
    return failures.load() == 0 ? 0 : 2;
  }));
}

// --- cycles and failures
// -------------------------------------------------------------

// 1,000 create/destroy cycles of a subset team (context eps 2 and 0 of
// 3): no descriptor or mailbox slot may leak, no stale message may be
// read by a later cycle.
TEST(TeamMapCycles, ThousandCreateDestroyCycles) {
  EXPECT_TRUE(ucct::run_ranks(3, [](ucct::Rank& r) {
    Node n;
    if (n.init(r) != UCC_OK) return 1;
    const Members m{2, 0};
    ArrayMap arr;
    const ucc_team_params_t p = map_params(arr.map(m, 4));
    const int before = open_fds();
    if (n.member(m)) {
      for (int i = 0; i < 1000; ++i) {
        ucc_team_h t = nullptr;
        CK(create(n, p, &t));
        if (i % 100 == 0) {
          int64_t v = r.rank + 1, s = -1;
          ucc_coll_args_t a{};
          a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
          a.op = UCC_OP_SUM;
          a.src.info = {&v, 1, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
          a.dst.info = {&s, 1, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
          CK(run_on(n, t, a));
          if (s != 4) {
            std::fprintf(stderr, "rank %d: cycle %d: sum %lld\n", r.rank, i,
                         static_cast<long long>(s));
            return 2;
          }
        }
        CK(destroy(n, t));
      }
    }
    const int after = open_fds();
    // One connection to another host's engine may stay open (it is kept
    // for the teams to come); more would be a leak.
    if (after < before || after > before + 1) {
      std::fprintf(stderr, "rank %d: %d fds before, %d after\n", r.rank, before,
                   after);
      return 3;
    }
    return ucct::oob_barrier(r.oob, n.ctx, 300) == UCC_OK ? 0 : 4;
  }));
}

// A member that never posts: the others fail with UCC_ERR_TIMED_OUT
// within UCC_TEAM_CREATE_TIMEOUT (300 ms here), not a hang; afterwards
// the same team (same key) is created by all and works.
TEST(TeamMapFailures, MemberThatNeverJoinsTimesOut) {
  EXPECT_TRUE(ucct::run_ranks(3, [](ucct::Rank& r) {
    Node n;
    if (n.init(r, -1, "300ms") != UCC_OK) return 1;
    const Members m{1, 2, 0};
    ArrayMap arr;
    const ucc_team_params_t p = map_params(arr.map(m, 8));
    if (r.rank != 2) {
      ucc_team_h t = nullptr;
      CK(ucc_team_create_post(&n.ctx, 1, &p, &t));
      const double t0 = ucct::now_s();
      WANT(finish(n, {t}, 30), UCC_ERR_TIMED_OUT);
      const double took = ucct::now_s() - t0;
      WANT(ucc_team_create_test(t), UCC_ERR_TIMED_OUT);  // stays failed
      ucc_coll_args_t a{};
      a.coll_type = UCC_COLL_TYPE_BARRIER;
      ucc_coll_req_h req = nullptr;
      WANT(ucc_collective_init(&a, &req, t), UCC_ERR_INVALID_PARAM);
      CK(destroy(n, t));
      if (took < 0.25 || took > 10) {
        std::fprintf(stderr, "rank %d: timed out after %.2f s\n", r.rank, took);
        return 2;
      }
    }
    if (ucct::oob_barrier(r.oob, n.ctx) != UCC_OK) return 3;
    return create_check_destroy(n, p, m, "after the timeout");
  }));
}

// A context whose OOB spans two hosts (UCC_HOST_ID tells them apart):
// creation succeeds, an ep_map team within one host works through the
// mailbox, and one across the hosts is refused at post with an error that
// says to give the team an OOB (the mailbox is shared memory).
TEST(TeamMapHosts, EpMapTeamsStayOnOneHost) {
  EXPECT_TRUE(ucct::run_ranks(4, [](ucct::Rank& r) {
    setenv("UCC_OFFLOAD", "inline", 1);
    const std::string id = "ucct-maps-host-" + std::to_string(r.rank / 2);
    setenv("UCC_HOST_ID", id.c_str(), 1);
    Node n;
    CK(n.init(r));
    const uint64_t base = static_cast<uint64_t>(r.rank / 2 * 2);
    int rc = create_check_destroy(n, map_params(strided_map(base, 1, 2)),
                                  strided_members(base, 1, 2), "one host");
    if (rc != 0) return rc;
    if (r.rank % 2 == 0) {
      ucc_team_h t = nullptr;
      WANT(post_map(n, strided_map(0, 2, 2), &t), UCC_ERR_NOT_SUPPORTED);
    }
    return 0;
  }));
}

}  // namespace

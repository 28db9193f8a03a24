// Helpers of the ep_map team tests (test_team_maps.cc): a rank's library
// and context without a team, maps of every type with the member lists
// they stand for, team life cycle, and one check of a team against its
// members.
//
// Words used below:
//   members  the context eps of a team in team-rank order: what the map
//            says, computed here independently of the library.
//   check    on a team: size, rank (= position in members), reported eps,
//            then an allgather of context eps (shows the fabric's order),
//            an allreduce and a bcast, each against a serial model.
//   CK, WANT a call that must give UCC_OK / a given status, else the rank
//            function returns 1 after one line on stderr (a Node `n` must
//            be in scope).
//
// Threads: a rank's own single thread.
#pragma once

#include <dirent.h>
#include <sched.h>
#include <ucc/api/ucc.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "tests/common/harness.h"

namespace ucct::maps {

using Members = std::vector<uint64_t>;

#define CK(call)                                                          \
  do {                                                                    \
    ucc_status_t s_ = (call);                                             \
    if (s_ != UCC_OK) {                                                   \
      std::fprintf(stderr, "rank %d: %s:%d: %s = %s\n", n.rank, __FILE__, \
                   __LINE__, #call, ucct::status_name(s_));               \
      return 1;                                                           \
    }                                                                     \
  } while (0)

#define WANT(call, want)                                                 \
  do {                                                                   \
    ucc_status_t s_ = (call);                                            \
    if (s_ != (want)) {                                                  \
      std::fprintf(stderr, "rank %d: %s:%d: %s = %s, want %s\n", n.rank, \
                   __FILE__, __LINE__, #call, ucct::status_name(s_),     \
                   ucct::status_name(want));                             \
      return 1;                                                          \
    }                                                                    \
  } while (0)

inline int open_fds() {
  int count = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (readdir(d) != nullptr) ++count;
  closedir(d);
  return count;
}

// A rank's library and context (over the harness OOB); no team.
struct Node {
  ucc_lib_h lib = nullptr;
  ucc_context_h ctx = nullptr;
  int rank = 0;
  int size = 0;
  ucc_oob_coll_t oob{};

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node() {
    if (ctx != nullptr) ucc_context_destroy(ctx);
    if (lib != nullptr) ucc_finalize(lib);
  }

  // type < 0: no UCC_CONTEXT_PARAM_FIELD_TYPE. timeout: a value for
  // UCC_TEAM_CREATE_TIMEOUT, or null for the default.
  ucc_status_t init(ucct::Rank& r, int type = -1, const char* timeout = nullptr,
                    ucc_thread_mode_t tm = UCC_THREAD_SINGLE) {
    rank = r.rank;
    size = r.size;
    oob = r.oob;
    ucc_lib_config_h lc = nullptr;
    ucc_status_t st = ucc_lib_config_read(nullptr, nullptr, &lc);
    if (st != UCC_OK) return st;
    ucc_lib_params_t lp{};
    lp.mask = UCC_LIB_PARAM_FIELD_THREAD_MODE;
    lp.thread_mode = tm;
    st = ucc_init(&lp, lc, &lib);
    ucc_lib_config_release(lc);
    if (st != UCC_OK) {
      lib = nullptr;
      return st;
    }
    ucc_context_config_h cc = nullptr;
    st = ucc_context_config_read(lib, nullptr, &cc);
    if (st != UCC_OK) return st;
    if (timeout != nullptr)
      st = ucc_context_config_modify(cc, nullptr, "TEAM_CREATE_TIMEOUT",
                                     timeout);
    ucc_context_params_t cp{};
    cp.mask = UCC_CONTEXT_PARAM_FIELD_OOB;
    cp.oob = oob;
    if (type >= 0) {
      cp.mask |= UCC_CONTEXT_PARAM_FIELD_TYPE;
      cp.type = static_cast<ucc_context_type_t>(type);
    }
    if (st == UCC_OK) st = ucc_context_create(lib, &cp, cc, &ctx);
    ucc_context_config_release(cc);
    if (st != UCC_OK) ctx = nullptr;
    return st;
  }

  bool member(const Members& m) const {
    return std::find(m.begin(), m.end(), static_cast<uint64_t>(rank)) !=
           m.end();
  }
};

// --- maps --------------------------------------------------------------------

inline ucc_ep_map_t full_map(uint64_t ep_num) {
  ucc_ep_map_t m{};
  m.type = UCC_EP_MAP_FULL;
  m.ep_num = ep_num;
  return m;
}

inline ucc_ep_map_t strided_map(uint64_t start, int64_t stride, uint64_t num) {
  ucc_ep_map_t m{};
  m.type = UCC_EP_MAP_STRIDED;
  m.ep_num = num;
  m.strided.start = start;
  m.strided.stride = stride;
  return m;
}

inline Members strided_members(uint64_t start, int64_t stride, uint64_t num) {
  Members out;
  for (uint64_t i = 0; i < num; ++i)
    out.push_back(static_cast<uint64_t>(static_cast<int64_t>(start) +
                                        static_cast<int64_t>(i) * stride));
  return out;
}

// Map arrays must outlive the post only; these live in the test's frame.
struct ArrayMap {
  std::vector<int32_t> v4;
  std::vector<uint64_t> v8;
  ucc_ep_map_t map(const Members& m, size_t elem) {
    ucc_ep_map_t out{};
    out.type = UCC_EP_MAP_ARRAY;
    out.ep_num = m.size();
    out.array.elem_size = elem;
    if (elem == 4) {
      v4.assign(m.begin(), m.end());
      out.array.map = v4.data();
    } else {
      v8 = m;
      out.array.map = v8.data();
    }
    return out;
  }
};

inline uint64_t members_cb(uint64_t ep, void* ctx) {
  return (*static_cast<const Members*>(ctx))[ep];
}

inline ucc_ep_map_t cb_map(const Members* m) {
  ucc_ep_map_t out{};
  out.type = UCC_EP_MAP_CB;
  out.ep_num = m->size();
  out.cb.cb = members_cb;
  out.cb.cb_ctx = const_cast<Members*>(m);
  return out;
}

// The same permutation of 0..n-1 on every rank (Fisher-Yates on an LCG).
inline Members permutation(uint64_t n, uint64_t seed) {
  Members p(n);
  for (uint64_t i = 0; i < n; ++i) p[i] = i;
  uint64_t x = seed;
  for (uint64_t i = n; i > 1; --i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(p[i - 1], p[(x >> 33) % i]);
  }
  return p;
}

// --- team life cycle
// -----------------------------------------------------------

inline ucc_team_params_t map_params(const ucc_ep_map_t& m) {
  ucc_team_params_t p{};
  p.mask = UCC_TEAM_PARAM_FIELD_EP_MAP;
  p.ep_map = m;
  return p;
}

// Drives creation of every team in ts (nullptr entries skipped) together.
inline ucc_status_t finish(Node& n, std::vector<ucc_team_h> ts,
                           double timeout_s = 60) {
  const double deadline = ucct::now_s() + timeout_s;
  ucc_status_t worst = UCC_OK;
  for (unsigned polls = 0;; ++polls) {
    bool busy = false;
    for (ucc_team_h& t : ts) {
      if (t == nullptr) continue;
      ucc_status_t st = ucc_team_create_test(t);
      if (st == UCC_INPROGRESS) {
        busy = true;
        continue;
      }
      if (st != UCC_OK && worst == UCC_OK) worst = st;
      t = nullptr;
    }
    if (!busy) return worst;
    ucc_context_progress(n.ctx);
    if ((polls & 15) == 15) {
      if (ucct::now_s() > deadline) return UCC_ERR_TIMED_OUT;
      sched_yield();
    }
  }
}

inline ucc_status_t post_map(Node& n, const ucc_ep_map_t& m, ucc_team_h* t) {
  const ucc_team_params_t p = map_params(m);
  return ucc_team_create_post(&n.ctx, 1, &p, t);
}

inline ucc_status_t create(Node& n, const ucc_team_params_t& p, ucc_team_h* t) {
  ucc_status_t st = ucc_team_create_post(&n.ctx, 1, &p, t);
  return st == UCC_OK ? finish(n, {*t}) : st;
}

inline ucc_status_t destroy(Node& n, ucc_team_h t) {
  ucc_status_t st;
  while ((st = ucc_team_destroy(t)) == UCC_INPROGRESS)
    ucc_context_progress(n.ctx);
  return st;
}

inline ucc_status_t run_on(Node& n, ucc_team_h t, ucc_coll_args_t& a) {
  ucc_coll_req_h req = nullptr;
  ucc_status_t st = ucc_collective_init(&a, &req, t);
  if (st != UCC_OK) return st;
  st = ucc_collective_post(req);
  const double deadline = ucct::now_s() + 60;
  for (unsigned polls = 0; st == UCC_OK; ++polls) {
    st = ucc_collective_test(req);
    if (st != UCC_INPROGRESS) break;
    st = ucc_context_progress(n.ctx);
    if ((polls & 127) == 127) {
      if (ucct::now_s() > deadline) return UCC_ERR_TIMED_OUT;
      sched_yield();
    }
  }
  ucc_collective_finalize(req);
  return st;
}

// Checks team t against its members (see the header comment).
inline int check_team(Node& n, ucc_team_h t, const Members& m,
                      const char* what) {
  uint64_t me = static_cast<uint64_t>(n.rank);
  const uint64_t pos = std::find(m.begin(), m.end(), me) - m.begin();
  const uint32_t size = static_cast<uint32_t>(m.size());
  uint32_t got_size = 0;
  uint64_t got_ep = 99;
  CK(ucc_team_get_size(t, &got_size));
  CK(ucc_team_get_my_ep(t, &got_ep));
  ucc_team_attr_t attr{};
  attr.mask = UCC_TEAM_ATTR_FIELD_EP | UCC_TEAM_ATTR_FIELD_SIZE |
              UCC_TEAM_ATTR_FIELD_EPS;
  CK(ucc_team_get_attr(t, &attr));
  bool eps_ok = attr.eps != nullptr;
  for (uint32_t i = 0; eps_ok && i < size; ++i) eps_ok = attr.eps[i] == m[i];
  if (got_size != size || got_ep != pos || attr.ep != pos ||
      attr.size != size || !eps_ok) {
    std::fprintf(stderr,
                 "rank %d: %s: size %u ep %llu (attr %llu), want %u and %llu; "
                 "eps %s\n",
                 n.rank, what, got_size,
                 static_cast<unsigned long long>(got_ep),
                 static_cast<unsigned long long>(attr.ep), size,
                 static_cast<unsigned long long>(pos),
                 eps_ok ? "ok" : "differ from the map");
    return 2;
  }
  // The fabric's order: team rank i is context ep m[i].
  std::vector<uint64_t> all(size, ~0ull);
  ucc_coll_args_t a{};
  a.coll_type = UCC_COLL_TYPE_ALLGATHER;
  a.src.info = {&me, 1, UCC_DT_UINT64, UCC_MEMORY_TYPE_HOST};
  a.dst.info = {all.data(), size, UCC_DT_UINT64, UCC_MEMORY_TYPE_HOST};
  CK(run_on(n, t, a));
  if (all != m) {
    std::fprintf(stderr, "rank %d: %s: allgather of context eps differs\n",
                 n.rank, what);
    return 3;
  }
  // Allreduce: element i of ep e is (e + 1) * 1000 + i.
  constexpr size_t kCount = 37;
  std::vector<int64_t> src(kCount), dst(kCount, -1);
  for (size_t i = 0; i < kCount; ++i)
    src[i] = static_cast<int64_t>((me + 1) * 1000 + i);
  a = {};
  a.coll_type = UCC_COLL_TYPE_ALLREDUCE;
  a.op = UCC_OP_SUM;
  a.src.info = {src.data(), kCount, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
  a.dst.info = {dst.data(), kCount, UCC_DT_INT64, UCC_MEMORY_TYPE_HOST};
  CK(run_on(n, t, a));
  for (size_t i = 0; i < kCount; ++i) {
    int64_t want = 0;
    for (uint64_t e : m) want += static_cast<int64_t>((e + 1) * 1000 + i);
    if (dst[i] != want) {
      std::fprintf(stderr, "rank %d: %s: allreduce[%zu] = %lld, want %lld\n",
                   n.rank, what, i, static_cast<long long>(dst[i]),
                   static_cast<long long>(want));
      return 4;
    }
  }
  // Bcast from team rank size/2: its context ep's pattern everywhere.
  constexpr size_t kBcast = 29;
  const uint32_t root = size / 2;
  std::vector<int32_t> buf(kBcast);
  for (size_t i = 0; i < kBcast; ++i)
    buf[i] = pos == root ? static_cast<int32_t>(m[root] * 100 + i) : -7;
  a = {};
  a.coll_type = UCC_COLL_TYPE_BCAST;
  a.root = root;
  a.src.info = {buf.data(), kBcast, UCC_DT_INT32, UCC_MEMORY_TYPE_HOST};
  CK(run_on(n, t, a));
  for (size_t i = 0; i < kBcast; ++i) {
    if (buf[i] != static_cast<int32_t>(m[root] * 100 + i)) {
      std::fprintf(stderr, "rank %d: %s: bcast[%zu] = %d\n", n.rank, what, i,
                   buf[i]);
      return 5;
    }
  }
  return 0;
}

// Creates the team of `m` from parameters p (members only), checks it and
// destroys it.
inline int create_check_destroy(Node& n, const ucc_team_params_t& p,
                                const Members& m, const char* what) {
  if (!n.member(m)) return 0;
  ucc_team_h t = nullptr;
  ucc_status_t st = create(n, p, &t);
  if (st != UCC_OK) {
    std::fprintf(stderr, "rank %d: %s: creation = %s\n", n.rank, what,
                 ucct::status_name(st));
    return 1;
  }
  int rc = check_team(n, t, m, what);
  CK(destroy(n, t));
  return rc;
}

}  // namespace ucct::maps

/*
 * ucc_ext.h - our extensions to the UCC 1.x API (included by ucc.h).
 *
 * Team queries from the UCC API drafts, a capability query in the spirit
 * of libfabric's fi_query_collective, task lists (the drafts' group
 * submission, oneCCL's group calls), and a TCP rendezvous for the
 * out-of-band allgather.
 */
#ifndef UCC_EXT_H_
#define UCC_EXT_H_

#include <ucc/api/ucc.h>

BEGIN_C_DECLS

/* Number of endpoints in the team (0 for a member left out of
 * ucc_team_create_from_parent). */
ucc_status_t ucc_team_get_size(ucc_team_h team, uint32_t *size);

/* Endpoint of the calling member. */
ucc_status_t ucc_team_get_my_ep(ucc_team_h team, uint64_t *ep);

/* All endpoints of the team: *ep points to an array of *num_eps entries
 * owned by the team (valid until ucc_team_destroy). */
ucc_status_t ucc_team_get_all_eps(ucc_team_h team, uint64_t **ep,
                                  uint64_t *num_eps);

/* What ucc_coll_query reports about one kind of collective. */
#define UCC_COLL_CAPS_MAX_ALGS 8
typedef struct ucc_coll_caps {
    int         supported;      /* 1: ucc_collective_init accepts it */
    uint32_t    n_algs;         /* algorithms that can run it */
    const char *alg_names[UCC_COLL_CAPS_MAX_ALGS]; /* UCC_<COLL>_ALG names */
    uint64_t    max_count;      /* largest element count accepted */
    uint32_t    max_team_size;  /* largest team it runs on */
} ucc_coll_caps_t;

/* Whether a collective of type `coll` on `datatype` with reduction `op`
 * (ignored for collectives that do not reduce) over memory of `mem_type`
 * is supported on `context`, by which algorithms and up to which count
 * and team size. Returns UCC_OK with caps->supported = 0 for a valid but
 * unsupported combination, UCC_ERR_INVALID_PARAM for invalid arguments. */
ucc_status_t ucc_coll_query(ucc_context_h context, ucc_coll_type_t coll,
                            ucc_datatype_t datatype, ucc_reduction_op_t op,
                            ucc_memory_type_t mem_type,
                            ucc_coll_caps_t *caps);

/* One size range of a collective's algorithm selection: from min_bytes
 * (included) up to the next range's min_bytes (excluded; the last range
 * has no end), the algorithm called alg_name (a UCC_<COLL>_ALG name)
 * runs. */
typedef struct ucc_coll_alg_range {
    uint64_t    min_bytes;
    const char *alg_name;
} ucc_coll_alg_range_t;

/* Which algorithm the engine that runs `team`'s collectives selects for a
 * collective of type `coll`, by message size: bytes of one rank's block
 * (allgather, alltoall, reduce_scatter, gather, scatter), of the largest
 * block of the dst counts (allgatherv, reduce_scatterv), of this rank's
 * block (the other v-collectives, whose selection no size changes) or of
 * the whole vector (bcast, reduce, allreduce), not in place, on host
 * memory, under the context's configuration (UCC_<COLL>_ALG,
 * UCC_ALLREDUCE_RING_MIN, UCC_CMA, ...).
 * Fills up to *n entries of `ranges`, in increasing min_bytes, the first
 * at 0, and sets *n to how many ranges there are (at most 13). In emu mode
 * the answer comes from the daemon's engine. UCC_ERR_INVALID_PARAM for a
 * bad team, type or pointer. */
ucc_status_t ucc_team_coll_algs(ucc_team_h team, ucc_coll_type_t coll,
                                ucc_coll_alg_range_t *ranges, uint32_t *n);

/* A TCP rendezvous for the out-of-band allgather, for runtimes without
 * MPI or PMIx (as NCCL's unique id or PyTorch's TCP store). oob_ep 0
 * listens on `server`; every other ep connects to it; allgathers then go
 * through oob_ep 0 (a star). Every ep passes the same server, n_oob_eps
 * and key. See docs/network.md for an example. */
typedef struct ucc_ext_oob_tcp_params {
    const char *server;    /* "HOST:PORT" (IPv4 address or name) where
                              oob_ep 0 listens; PORT not 0 */
    uint32_t    n_oob_eps; /* participants */
    uint32_t    oob_ep;    /* this one, < n_oob_eps */
    uint64_t    key;       /* the job's secret: a connection that presents
                              another is refused (0 is a key too) */
    double      timeout;   /* seconds create waits for all eps; <= 0: 60 */
} ucc_ext_oob_tcp_params_t;

/* Blocks until every ep has connected (oob_ep 0: accepted), then fills
 * *oob with a non-blocking allgather for ucc_context_params_t.oob and
 * ucc_team_params_t.oob. UCC_ERR_INVALID_PARAM (bad parameters, server
 * not HOST:PORT), UCC_ERR_TIMED_OUT (not everyone came), UCC_ERR_NO_MESSAGE
 * (ep 0 refused us: another n_oob_eps or key, or our oob_ep taken),
 * UCC_ERR_NO_RESOURCE (cannot listen), UCC_ERR_NO_MEMORY. */
ucc_status_t ucc_ext_oob_tcp_create(const ucc_ext_oob_tcp_params_t *params,
                                    ucc_oob_coll_t *oob);
/* Closes the connections (after every context and team made with *oob is
 * destroyed). */
ucc_status_t ucc_ext_oob_tcp_destroy(ucc_oob_coll_t *oob);

/* Task lists: n collectives of one team as one unit, one request, one
 * completion. ucc_collective_list_init lowers args[0..n) as
 * ucc_collective_init would, each into a request of the team's pool
 * (n <= the team's outstanding collectives), and returns one request for
 * the list. ucc_collective_post on it hands every member to the engine
 * at once, in order, with no round trip to the caller between them (the
 * engine runs them as it runs posted collectives: in posting order,
 * UCC_TEAM_INFLIGHT at a time); its status (ucc_collective_test, or
 * request->status) stays UCC_INPROGRESS until the last member has ended,
 * then is UCC_OK or the first member's error, and `cb` (may be NULL) is
 * called once then. ucc_collective_finalize releases every member. The
 * list may be posted again when every member has
 * UCC_COLL_ARGS_FLAG_PERSISTENT. Members may not have their own callback
 * (UCC_COLL_ARGS_FIELD_CB). Every rank posts the same members in the same
 * order, as for separate collectives. Errors: those of
 * ucc_collective_init (the first failing member, with its log line; no
 * request is kept), UCC_ERR_INVALID_PARAM for n = 0, NULL pointers or a
 * member callback, UCC_ERR_NO_RESOURCE when the pool has fewer than n
 * requests free. */
ucc_status_t ucc_collective_list_init(ucc_coll_args_t *args, uint32_t n,
                                      const ucc_coll_callback_t *cb,
                                      ucc_coll_req_h *request,
                                      ucc_team_h team);

END_C_DECLS

#endif /* UCC_EXT_H_ */

/*
 * ucc_ext.h - our extensions to the UCC 1.x API (included by ucc.h).
 *
 * Team queries from the UCC API drafts, and a capability query in the
 * spirit of libfabric's fi_query_collective.
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
 * (allgather, alltoall, reduce_scatter, gather, scatter), of this rank's
 * block (v-collectives) or of the whole vector (bcast, reduce,
 * allreduce), not in place, on host memory, under the context's
 * configuration (UCC_<COLL>_ALG, UCC_ALLREDUCE_RING_MIN, UCC_CMA, ...).
 * Fills up to *n entries of `ranges`, in increasing min_bytes, the first
 * at 0, and sets *n to how many ranges there are (at most 8). In emu mode
 * the answer comes from the daemon's engine. UCC_ERR_INVALID_PARAM for a
 * bad team, type or pointer. */
ucc_status_t ucc_team_coll_algs(ucc_team_h team, ucc_coll_type_t coll,
                                ucc_coll_alg_range_t *ranges, uint32_t *n);

END_C_DECLS

#endif /* UCC_EXT_H_ */

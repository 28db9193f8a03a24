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

END_C_DECLS

#endif /* UCC_EXT_H_ */

/*
 * ucc_def.h - basic handle and scalar types of the UCC API.
 *
 * Part of our UCC implementation; source-compatible with UCC 1.x.
 */
#ifndef UCC_DEF_H_
#define UCC_DEF_H_

#include <ucc/api/ucc_status.h>
#include <stddef.h>
#include <stdint.h>

/* Opaque handles. */
typedef struct ucc_lib_info *ucc_lib_h;      /* library instance */
typedef struct ucc_context  *ucc_context_h;  /* communication resources */
typedef struct ucc_team     *ucc_team_h;     /* group of endpoints */

/* Collective request. The public part is only the status word, which
 * ucc_collective_test() reads directly; the library extends it privately. */
typedef struct ucc_coll_req *ucc_coll_req_h;
typedef struct ucc_coll_req {
    ucc_status_t status;
} ucc_coll_req_t;

/* Completion callback; from inside it only ucc_collective_finalize may be called. */
typedef struct ucc_coll_callback {
    void (*cb)(void *data, ucc_status_t status);
    void  *data;
} ucc_coll_callback_t;

typedef struct ucc_mem_handle     *ucc_mem_h;            /* registered memory */
typedef struct ucc_lib_config     *ucc_lib_config_h;     /* library configuration */
typedef struct ucc_context_config *ucc_context_config_h; /* context configuration */

/* Element counts and displacements are always 64-bit wide in memory. */
typedef uint64_t ucc_count_t;
typedef uint64_t ucc_aint_t;

/* Single bit i, and the mask of the i lowest bits. */
#define UCC_BIT(i)  (1ul << (i))
#define UCC_MASK(i) (UCC_BIT(i) - 1)

/* Flags for ucc_lib_config_print / ucc_context_config_print. */
typedef enum {
    UCC_CONFIG_PRINT_CONFIG = UCC_BIT(0),
    UCC_CONFIG_PRINT_HEADER = UCC_BIT(1),
    UCC_CONFIG_PRINT_DOC    = UCC_BIT(2),
    UCC_CONFIG_PRINT_HIDDEN = UCC_BIT(3)
} ucc_config_print_flags_t;

/* Tag that orders collectives on unordered teams. */
typedef uint16_t ucc_coll_id_t;

typedef void  *ucc_p2p_conn_t;          /* user point-to-point connection info */
typedef void  *ucc_context_addr_h;      /* packed context address */
typedef size_t ucc_context_addr_len_t;  /* its length in bytes */

/* Execution engine (stream / thread) handle. */
typedef struct ucc_ee *ucc_ee_h;

/* User-defined datatype object (defined by the library). */
typedef struct ucc_dt_generic ucc_dt_generic_t;

/* The low UCC_DATATYPE_SHIFT bits of a ucc_datatype_t give its class:
 * 0 = predefined (id in the upper bits), 1 = generic (the rest is a pointer). */
typedef enum {
    UCC_DATATYPE_PREDEFINED = 0,
    UCC_DATATYPE_GENERIC    = UCC_BIT(0),
    UCC_DATATYPE_SHIFT      = 3,
    UCC_DATATYPE_CLASS_MASK = UCC_MASK(UCC_DATATYPE_SHIFT)
} ucc_dt_type_t;

/* Encodes predefined datatype number _id. */
#define UCC_PREDEFINED_DT(_id)                                   \
    (ucc_datatype_t)((((uint64_t)(_id)) << UCC_DATATYPE_SHIFT) | \
                     (UCC_DATATYPE_PREDEFINED))

#endif /* UCC_DEF_H_ */

/*
 * ucc_status.h - status codes of the UCC API.
 *
 * Part of our UCC implementation; source-compatible with UCC 1.x.
 */
#ifndef UCC_STATUS_H_
#define UCC_STATUS_H_

/* C linkage helpers, also used by the other public headers. */
#ifdef __cplusplus
#define BEGIN_C_DECLS extern "C" {
#define END_C_DECLS   }
#else
#define BEGIN_C_DECLS
#define END_C_DECLS
#endif

BEGIN_C_DECLS

/* Result of every API call. Non-negative: success or pending; negative: error. */
typedef enum {
    UCC_OK                    = 0,    /* done */
    UCC_INPROGRESS            = 1,    /* posted, not complete yet */
    UCC_OPERATION_INITIALIZED = 2,    /* initialized, not posted yet */

    UCC_ERR_NOT_SUPPORTED     = -1,
    UCC_ERR_NOT_IMPLEMENTED   = -2,
    UCC_ERR_INVALID_PARAM     = -3,
    UCC_ERR_NO_MEMORY         = -4,
    UCC_ERR_NO_RESOURCE       = -5,
    UCC_ERR_NO_MESSAGE        = -6,   /* unspecified failure */
    UCC_ERR_NOT_FOUND         = -7,
    UCC_ERR_TIMED_OUT         = -8,
    UCC_ERR_IO_ERROR          = -9,
    UCC_ERR_LAST              = -100,
} ucc_status_t;

/* Human-readable name of a status code; never NULL. */
const char *ucc_status_string(ucc_status_t status);

END_C_DECLS

#endif /* UCC_STATUS_H_ */

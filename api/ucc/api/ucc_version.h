/*
 * ucc_version.h - API and library version of our UCC implementation.
 */
#ifndef UCC_VERSION_H_
#define UCC_VERSION_H_

/* Packs an API version as (major << 24) | (minor << 16). */
#define UCC_VERSION(_major, _minor)                \
    (((_major) << UCC_VERSION_MAJOR_SHIFT) |       \
     ((_minor) << UCC_VERSION_MINOR_SHIFT))
#define UCC_VERSION_MAJOR_SHIFT 24
#define UCC_VERSION_MINOR_SHIFT 16

/* The UCC API level these headers implement (UCC 1.9). */
#define UCC_API_MAJOR      1
#define UCC_API_MINOR      9
#define UCC_API_VERSION    UCC_VERSION(1, 9)

/* Our library's own release string and source revision. */
#define UCC_VERSION_STRING "1.9.0"
#define UCC_GIT_REVISION   "unknown"

#endif /* UCC_VERSION_H_ */

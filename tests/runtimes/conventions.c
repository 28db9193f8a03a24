/* The conventions real runtimes rely on, replayed through ucc.h alone, in
 * C, the way they call it:
 *
 *   PyTorch's ProcessGroupUCC   UCC_THREAD_MULTIPLE asked for and checked
 *                               with ucc_lib_get_attr; ESTIMATED_NUM_EPS;
 *                               a team over EP | EP_RANGE | OOB; a
 *                               progress thread that calls
 *                               ucc_context_progress while the caller
 *                               polls request->status; allreduce in place
 *                               with a NULL src buffer; allgather, gather,
 *                               scatter and alltoall over lists of
 *                               separate tensors as v-collectives of
 *                               UINT8 with a NULL base buffer and absolute
 *                               addresses as 64-bit displacements;
 *                               send/recv as a two-member bcast with an
 *                               active set (negative strides too) and a
 *                               tag; reduce with IN_PLACE on every rank;
 *                               fp16/bf16 with AVG; a barrier and an
 *                               alltoall with mask 0 (flags ignored).
 *   Open MPI's coll/ucc, mpi4py CLS, ESTIMATED_NUM_EPS/PPN, NODE_LOCAL_ID;
 *                               a completion callback that finalizes its
 *                               request; count and displacement arrays
 *                               freed right after the nonblocking call
 *                               returns.
 *   UCC_COLL_ARGS_FLAG_TIMEOUT  a collective its peer never posts ends
 *                               with UCC_ERR_TIMED_OUT.
 *
 *     conventions NRANKS
 *
 * forks NRANKS processes that meet over the TCP rendezvous of ucc_ext.h
 * on 127.0.0.1 and checks every result element by element against a
 * serial reference, outputs poisoned first. Exit 0 when every rank
 * passed. The engine is what UCC_OFFLOAD says (ctest runs it inline and
 * emu). */
#include <ucc/api/ucc.h>

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POISON 0xA5

static int g_rank, g_size;

#define FAIL(...)                                              \
    do {                                                       \
        fprintf(stderr, "rank %d: ", g_rank);                  \
        fprintf(stderr, __VA_ARGS__);                          \
        fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);     \
        return 1;                                              \
    } while (0)

#define CHECK(call)                                                      \
    do {                                                                 \
        ucc_status_t st_ = (call);                                       \
        if (st_ != UCC_OK) FAIL("%s: %s", #call, ucc_status_string(st_)); \
    } while (0)

/* ---- the progress thread and the caller's wait (ProcessGroupUCC) ------ */

typedef struct {
    ucc_context_h ctx;
    volatile int  stop;
} progress_t;

static void *progress_loop(void *arg)
{
    progress_t *p = (progress_t *)arg;
    while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
        ucc_context_progress(p->ctx);
    }
    return NULL;
}

/* Waits the way ProcessGroupUCC does: it never calls ucc_collective_test,
 * it reads the request's status while another thread progresses. */
static ucc_status_t wait_status(ucc_coll_req_h req, double limit_s)
{
    struct timespec t0, t;
    ucc_status_t    st;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while ((st = __atomic_load_n(&req->status, __ATOMIC_ACQUIRE)) > 0) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 > limit_s) {
            return UCC_ERR_TIMED_OUT;
        }
        sched_yield();
    }
    return st;
}

static ucc_status_t run(ucc_team_h team, ucc_coll_args_t *a)
{
    ucc_coll_req_h req;
    ucc_status_t   st = ucc_collective_init(a, &req, team);
    if (st != UCC_OK) return st;
    st = ucc_collective_post(req);
    if (st == UCC_OK) st = wait_status(req, 60);
    ucc_collective_finalize(req);
    return st;
}

/* ---- data ------------------------------------------------------------- */

/* What rank r contributes at byte i of a moved buffer. */
static uint8_t byte_of(int r, size_t i) { return (uint8_t)(r * 37 + i * 11 + 5); }

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16); /* exact for the values used here */
}

static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float    f;
    memcpy(&f, &u, 4);
    return f;
}

/* IEEE binary16 for normal values with at most 10 fraction bits (exact). */
static uint16_t f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) == 0) return (uint16_t)(u >> 16);
    uint32_t sign = (u >> 16) & 0x8000;
    int      e    = (int)((u >> 23) & 0xff) - 127 + 15;
    return (uint16_t)(sign | ((uint32_t)e << 10) | ((u >> 13) & 0x3ff));
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e    = (h >> 10) & 0x1f, m = h & 0x3ff, u;
    float    f;
    if (e == 0 && m == 0) {
        u = sign;
    } else if (e == 0) { /* subnormal */
        f = (float)m / 1024.0f / 16384.0f;
        return sign ? -f : f;
    } else {
        u = sign | ((e - 15 + 127) << 23) | (m << 13);
    }
    memcpy(&f, &u, 4);
    return f;
}

/* A "tensor": its own allocation, so that tensors lie apart in memory;
 * every other one is a mapping of its own, with unmapped memory between
 * it and the rest (what a NULL base with absolute addresses must cope
 * with, also in emu where the daemon registers only what is mapped). */
typedef struct {
    uint8_t *p;
    size_t   len;
    int      mapped;
} tensor_t;

static int tensor_new(tensor_t *t, size_t len, int i)
{
    t->len    = len;
    t->mapped = (i % 2) == 1;
    if (t->mapped) {
        size_t span = (len + 4095) & ~(size_t)4095;
        t->p = mmap(NULL, span + 8192, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (t->p == MAP_FAILED) return -1;
        /* guard pages on both sides: no access */
        munmap(t->p, 4096);
        munmap(t->p + 4096 + span, 4096);
        t->p += 4096;
    } else {
        t->p = malloc(len ? len : 1);
        if (t->p == NULL) return -1;
    }
    memset(t->p, POISON, len);
    return 0;
}

static void tensor_free(tensor_t *t)
{
    if (t->mapped) {
        munmap(t->p, (t->len + 4095) & ~(size_t)4095);
    } else {
        free(t->p);
    }
}

/* ---- the conventions ------------------------------------------------- */

/* allreduce in place, src buffer NULL (ProcessGroupUCC::allreduce), in
 * float32 sum and fp16 / bf16 with AVG. */
static int check_allreduce(ucc_team_h team)
{
    enum { N = 37 };
    float    f[N];
    uint16_t h[N], b[N];
    int      i, k;
    for (i = 0; i < N; i++) {
        f[i] = (float)(g_rank + 1) * 0.25f + (float)(i % 5);
        h[i] = f32_to_f16(f[i]);
        b[i] = f32_to_bf16(f[i]);
    }
    struct {
        void          *buf;
        ucc_datatype_t dt;
        ucc_reduction_op_t op;
    } cases[3] = {{f, UCC_DT_FLOAT32, UCC_OP_SUM},
                  {h, UCC_DT_FLOAT16, UCC_OP_AVG},
                  {b, UCC_DT_BFLOAT16, UCC_OP_AVG}};
    for (k = 0; k < 3; k++) {
        ucc_coll_args_t a;
        memset(&a, 0, sizeof(a));
        a.mask                = UCC_COLL_ARGS_FIELD_FLAGS;
        a.flags               = UCC_COLL_ARGS_FLAG_IN_PLACE;
        a.coll_type           = UCC_COLL_TYPE_ALLREDUCE;
        a.op                  = cases[k].op;
        a.src.info.buffer     = NULL;
        a.src.info.count      = N;
        a.src.info.datatype   = cases[k].dt;
        a.src.info.mem_type   = UCC_MEMORY_TYPE_HOST;
        a.dst.info.buffer     = cases[k].buf;
        a.dst.info.count      = N;
        a.dst.info.datatype   = cases[k].dt;
        a.dst.info.mem_type   = UCC_MEMORY_TYPE_HOST;
        CHECK(run(team, &a));
    }
    for (i = 0; i < N; i++) {
        /* sum over r of (r + 1) / 4 + i % 5 */
        float sum = (float)g_size * (float)(g_size + 1) / 8.0f +
                    (float)g_size * (float)(i % 5);
        float avg = sum / (float)g_size;
        if (f[i] != sum) FAIL("allreduce f32[%d] = %g, expected %g", i, f[i], sum);
        if (fabsf(f16_to_f32(h[i]) - avg) > 0.01f * (1 + avg))
            FAIL("allreduce f16 avg[%d] = %g, expected %g", i,
                 f16_to_f32(h[i]), avg);
        if (fabsf(bf16_to_f32(b[i]) - avg) > 0.02f * (1 + avg))
            FAIL("allreduce bf16 avg[%d] = %g, expected %g", i,
                 bf16_to_f32(b[i]), avg);
    }
    return 0;
}

/* The blocks of a list of tensors as a v-side: NULL base, UINT8, byte
 * counts, absolute addresses as 64-bit displacements. */
static void list_side(ucc_coll_buffer_info_v_t *v, tensor_t *t, int n,
                      uint64_t *counts, uint64_t *displs)
{
    int i;
    for (i = 0; i < n; i++) {
        counts[i] = t[i].len;
        displs[i] = (uint64_t)(uintptr_t)t[i].p;
    }
    v->buffer        = NULL;
    v->counts        = (ucc_count_t *)counts;
    v->displacements = (ucc_aint_t *)displs;
    v->datatype      = UCC_DT_UINT8;
    v->mem_type      = UCC_MEMORY_TYPE_HOST;
}

/* Bytes each rank's block holds in the list collectives (not all equal). */
static size_t block_len(int r) { return 96 + 40 * (size_t)r; }

/* ProcessGroupUCC::allgather: allgatherv into separate output tensors. */
static int check_allgather_list(ucc_team_h team)
{
    tensor_t in, out[64];
    uint64_t counts[64], displs[64];
    int      i;
    size_t   j;
    if (tensor_new(&in, block_len(g_rank), 0) != 0) FAIL("no memory");
    for (j = 0; j < in.len; j++) in.p[j] = byte_of(g_rank, j);
    for (i = 0; i < g_size; i++)
        if (tensor_new(&out[i], block_len(i), i + 1) != 0) FAIL("no memory");
    ucc_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.mask              = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags             = UCC_COLL_ARGS_FLAG_COUNT_64BIT |
                          UCC_COLL_ARGS_FLAG_DISPLACEMENTS_64BIT;
    a.coll_type         = UCC_COLL_TYPE_ALLGATHERV;
    a.src.info.buffer   = in.p;
    a.src.info.count    = in.len;
    a.src.info.datatype = UCC_DT_UINT8;
    a.src.info.mem_type = UCC_MEMORY_TYPE_HOST;
    list_side(&a.dst.info_v, out, g_size, counts, displs);
    CHECK(run(team, &a));
    for (i = 0; i < g_size; i++)
        for (j = 0; j < out[i].len; j++)
            if (out[i].p[j] != byte_of(i, j))
                FAIL("allgather list: tensor %d byte %zu = %u, expected %u", i,
                     j, out[i].p[j], byte_of(i, j));
    for (i = 0; i < g_size; i++) tensor_free(&out[i]);
    tensor_free(&in);
    return 0;
}

/* ProcessGroupUCC::gather and ::scatter: the root's side is the list. */
static int check_gather_scatter_list(ucc_team_h team, int root)
{
    tensor_t mine, list[64];
    uint64_t counts[64], displs[64];
    int      i, is_root = g_rank == root;
    size_t   j;
    ucc_coll_args_t a;

    if (tensor_new(&mine, block_len(g_rank), 0) != 0) FAIL("no memory");
    for (j = 0; j < mine.len; j++) mine.p[j] = byte_of(g_rank, j);
    for (i = 0; is_root && i < g_size; i++)
        if (tensor_new(&list[i], block_len(i), i + 1) != 0) FAIL("no memory");
    memset(&a, 0, sizeof(a));
    a.root              = (uint64_t)root;
    a.mask              = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags             = UCC_COLL_ARGS_FLAG_COUNT_64BIT |
                          UCC_COLL_ARGS_FLAG_DISPLACEMENTS_64BIT;
    a.coll_type         = UCC_COLL_TYPE_GATHERV;
    a.src.info.buffer   = mine.p;
    a.src.info.count    = mine.len;
    a.src.info.datatype = UCC_DT_UINT8;
    a.src.info.mem_type = UCC_MEMORY_TYPE_HOST;
    if (is_root) list_side(&a.dst.info_v, list, g_size, counts, displs);
    CHECK(run(team, &a));
    for (i = 0; is_root && i < g_size; i++)
        for (j = 0; j < list[i].len; j++)
            if (list[i].p[j] != byte_of(i, j))
                FAIL("gather list (root %d): tensor %d byte %zu = %u, "
                     "expected %u", root, i, j, list[i].p[j], byte_of(i, j));

    /* scatter: the root sends tensor i (its bytes as rank i + 7 would
     * make them) to rank i. */
    for (i = 0; is_root && i < g_size; i++)
        for (j = 0; j < list[i].len; j++) list[i].p[j] = byte_of(i + 7, j);
    memset(mine.p, POISON, mine.len);
    memset(&a, 0, sizeof(a));
    a.root              = (uint64_t)root;
    a.mask              = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags             = UCC_COLL_ARGS_FLAG_COUNT_64BIT |
                          UCC_COLL_ARGS_FLAG_DISPLACEMENTS_64BIT;
    a.coll_type         = UCC_COLL_TYPE_SCATTERV;
    if (is_root) list_side(&a.src.info_v, list, g_size, counts, displs);
    a.dst.info.buffer   = mine.p;
    a.dst.info.count    = mine.len;
    a.dst.info.datatype = UCC_DT_UINT8;
    a.dst.info.mem_type = UCC_MEMORY_TYPE_HOST;
    CHECK(run(team, &a));
    for (j = 0; j < mine.len; j++)
        if (mine.p[j] != byte_of(g_rank + 7, j))
            FAIL("scatter list (root %d): byte %zu = %u, expected %u", root, j,
                 mine.p[j], byte_of(g_rank + 7, j));
    for (i = 0; is_root && i < g_size; i++) tensor_free(&list[i]);
    tensor_free(&mine);
    return 0;
}

/* alltoallv between lists of tensors on both sides; the count and
 * displacement arrays are freed (after being scribbled over) as soon as
 * the post returns, as mpi4py does after MPI_Ialltoallv. */
static int check_alltoallv_list(ucc_team_h team)
{
    tensor_t in[64], out[64];
    int      i;
    size_t   j;
    /* rank r sends (r + 2 * i + 1) * 8 bytes to rank i */
    for (i = 0; i < g_size; i++) {
        if (tensor_new(&in[i], (size_t)(g_rank + 2 * i + 1) * 8, i) != 0 ||
            tensor_new(&out[i], (size_t)(i + 2 * g_rank + 1) * 8, i + 1) != 0)
            FAIL("no memory");
        for (j = 0; j < in[i].len; j++) in[i].p[j] = byte_of(g_rank * 64 + i, j);
    }
    uint64_t *arr = malloc(4 * sizeof(uint64_t) * (size_t)g_size);
    if (arr == NULL) FAIL("no memory");
    ucc_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.mask      = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags     = UCC_COLL_ARGS_FLAG_COUNT_64BIT |
                  UCC_COLL_ARGS_FLAG_DISPLACEMENTS_64BIT;
    a.coll_type = UCC_COLL_TYPE_ALLTOALLV;
    list_side(&a.src.info_v, in, g_size, arr, arr + g_size);
    list_side(&a.dst.info_v, out, g_size, arr + 2 * g_size, arr + 3 * g_size);
    ucc_coll_req_h req;
    CHECK(ucc_collective_init(&a, &req, team));
    CHECK(ucc_collective_post(req));
    memset(arr, 0xff, 4 * sizeof(uint64_t) * (size_t)g_size);
    free(arr);
    ucc_status_t st = wait_status(req, 60);
    ucc_collective_finalize(req);
    if (st != UCC_OK) FAIL("alltoallv list: %s", ucc_status_string(st));
    for (i = 0; i < g_size; i++)
        for (j = 0; j < out[i].len; j++)
            if (out[i].p[j] != byte_of(i * 64 + g_rank, j))
                FAIL("alltoallv list: from %d byte %zu = %u, expected %u", i,
                     j, out[i].p[j], byte_of(i * 64 + g_rank, j));
    for (i = 0; i < g_size; i++) {
        tensor_free(&in[i]);
        tensor_free(&out[i]);
    }
    return 0;
}

/* allgatherv with 32-bit arrays on the heap, freed right after post, and
 * a completion callback that finalizes the request (Open MPI's coll/ucc;
 * mpi4py frees the arrays after MPI_Iallgatherv). */
typedef struct {
    volatile int  done;
    ucc_status_t  st;
    ucc_coll_req_h req;
} cb_state_t;

static void finalize_cb(void *data, ucc_status_t st)
{
    cb_state_t *c = (cb_state_t *)data;
    c->st         = st;
    ucc_collective_finalize(c->req);
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
}

static int check_arrays_freed(ucc_team_h team)
{
    uint32_t *counts = malloc(sizeof(uint32_t) * (size_t)g_size);
    uint32_t *displs = malloc(sizeof(uint32_t) * (size_t)g_size);
    int64_t   src[8], *dst;
    uint32_t  total = 0;
    int       i, j;
    if (counts == NULL || displs == NULL) FAIL("no memory");
    for (i = 0; i < g_size; i++) {
        counts[i] = (uint32_t)(i % 3) + 1;
        displs[i] = total + 2; /* a gap of two before every block */
        total += counts[i] + 2;
    }
    dst = malloc(sizeof(int64_t) * total);
    if (dst == NULL) FAIL("no memory");
    memset(dst, POISON, sizeof(int64_t) * total);
    for (j = 0; j < (int)counts[g_rank]; j++) src[j] = g_rank * 1000 + j;
    ucc_coll_args_t a;
    memset(&a, 0, sizeof(a));
    cb_state_t cb = {0, UCC_INPROGRESS, NULL};
    a.mask                  = UCC_COLL_ARGS_FIELD_CB;
    a.cb.cb                 = finalize_cb;
    a.cb.data               = &cb;
    a.coll_type             = UCC_COLL_TYPE_ALLGATHERV;
    a.src.info.buffer       = src;
    a.src.info.count        = counts[g_rank];
    a.src.info.datatype     = UCC_DT_INT64;
    a.src.info.mem_type     = UCC_MEMORY_TYPE_HOST;
    a.dst.info_v.buffer        = dst;
    a.dst.info_v.counts        = (ucc_count_t *)counts;
    a.dst.info_v.displacements = (ucc_aint_t *)displs;
    a.dst.info_v.datatype      = UCC_DT_INT64;
    a.dst.info_v.mem_type      = UCC_MEMORY_TYPE_HOST;
    CHECK(ucc_collective_init(&a, &cb.req, team));
    CHECK(ucc_collective_post(cb.req));
    uint32_t *keep = malloc(sizeof(uint32_t) * (size_t)g_size);
    if (keep == NULL) FAIL("no memory");
    memcpy(keep, displs, sizeof(uint32_t) * (size_t)g_size);
    memset(counts, 0xff, sizeof(uint32_t) * (size_t)g_size);
    memset(displs, 0xff, sizeof(uint32_t) * (size_t)g_size);
    free(counts);
    free(displs);
    while (!__atomic_load_n(&cb.done, __ATOMIC_ACQUIRE)) sched_yield();
    if (cb.st != UCC_OK) FAIL("allgatherv, arrays freed: %s", ucc_status_string(cb.st));
    for (i = 0; i < g_size; i++)
        for (j = 0; j < (i % 3) + 1; j++)
            if (dst[keep[i] + (uint32_t)j] != i * 1000 + j)
                FAIL("allgatherv, arrays freed: block %d[%d] = %lld", i, j,
                     (long long)dst[keep[i] + (uint32_t)j]);
    free(keep);
    free(dst);
    return 0;
}

/* A barrier and an alltoall with mask 0: flags, tag, active set, callback
 * and the unused fields hold garbage that must be ignored. */
static int check_mask_zero(ucc_team_h team)
{
    ucc_coll_args_t a;
    int32_t         src[64 * 3], dst[64 * 3];
    int             i;
    memset(&a, 0x5a, sizeof(a));
    a.mask      = 0;
    a.coll_type = UCC_COLL_TYPE_BARRIER;
    CHECK(run(team, &a));
    for (i = 0; i < 3 * g_size; i++) src[i] = g_rank * 100 + i;
    memset(dst, POISON, sizeof(dst));
    memset(&a, 0x5a, sizeof(a));
    a.mask              = 0;
    a.flags             = ~(uint64_t)0;
    a.coll_type         = UCC_COLL_TYPE_ALLTOALL;
    a.src.info.buffer   = src;
    a.src.info.count    = (uint64_t)(3 * g_size);
    a.src.info.datatype = UCC_DT_INT32;
    a.src.info.mem_type = UCC_MEMORY_TYPE_HOST;
    a.dst.info.buffer   = dst;
    a.dst.info.count    = (uint64_t)(3 * g_size);
    a.dst.info.datatype = UCC_DT_INT32;
    a.dst.info.mem_type = UCC_MEMORY_TYPE_HOST;
    CHECK(run(team, &a));
    for (i = 0; i < 3 * g_size; i++) {
        int from = i / 3, want = from * 100 + 3 * g_rank + i % 3;
        if (dst[i] != want) FAIL("alltoall, mask 0: [%d] = %d, expected %d", i, dst[i], want);
    }
    return 0;
}

/* ProcessGroupUCC::reduce: IN_PLACE with src == dst on every rank. */
static int check_reduce_in_place(ucc_team_h team, int root)
{
    int64_t v[17];
    int     i;
    for (i = 0; i < 17; i++) v[i] = g_rank * 3 + i;
    ucc_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.mask              = UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags             = UCC_COLL_ARGS_FLAG_IN_PLACE;
    a.coll_type         = UCC_COLL_TYPE_REDUCE;
    a.op                = UCC_OP_MAX;
    a.root              = (uint64_t)root;
    a.src.info.buffer   = v;
    a.src.info.count    = 17;
    a.src.info.datatype = UCC_DT_INT64;
    a.src.info.mem_type = UCC_MEMORY_TYPE_HOST;
    a.dst.info          = a.src.info;
    CHECK(run(team, &a));
    for (i = 0; i < 17; i++) {
        int64_t want = g_rank == root ? (int64_t)(g_size - 1) * 3 + i
                                      : (int64_t)g_rank * 3 + i;
        if (v[i] != want) FAIL("reduce in place (root %d): [%d] = %lld, expected %lld",
                               root, i, (long long)v[i], (long long)want);
    }
    return 0;
}

/* ProcessGroupUCC::send / ::recv: a bcast over the active set {root,
 * peer} with the user's tag; here every rank sends to the next and
 * receives from the previous, both posted before either is waited for
 * (strides of both signs). */
static int post_p2p(ucc_team_h team, void *buf, size_t n, int root, int peer,
                    uint16_t tag, ucc_coll_req_h *req)
{
    ucc_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.tag               = tag;
    a.mask              = UCC_COLL_ARGS_FIELD_ACTIVE_SET | UCC_COLL_ARGS_FIELD_TAG;
    a.coll_type         = UCC_COLL_TYPE_BCAST;
    a.src.info.buffer   = buf;
    a.src.info.count    = n;
    a.src.info.datatype = UCC_DT_FLOAT64;
    a.src.info.mem_type = UCC_MEMORY_TYPE_HOST;
    a.root              = (uint64_t)root;
    a.active_set.size   = 2;
    a.active_set.start  = (uint64_t)root;
    a.active_set.stride = (int64_t)peer - (int64_t)root;
    CHECK(ucc_collective_init(&a, req, team));
    CHECK(ucc_collective_post(*req));
    return 0;
}

static int check_p2p(ucc_team_h team)
{
    enum { N = 300 };
    double         out[N], in[N];
    int            i, next = (g_rank + 1) % g_size,
                   prev = (g_rank + g_size - 1) % g_size;
    ucc_coll_req_h s, r;
    if (g_size < 2) return 0;
    for (i = 0; i < N; i++) out[i] = g_rank * 1e3 + i * 0.5;
    memset(in, POISON, sizeof(in));
    /* tag: the sender's rank, so that with two ranks the pairs differ */
    if (post_p2p(team, in, N, prev, g_rank, (uint16_t)(40 + prev), &r) ||
        post_p2p(team, out, N, g_rank, next, (uint16_t)(40 + g_rank), &s))
        return 1;
    ucc_status_t a = wait_status(s, 60), b = wait_status(r, 60);
    ucc_collective_finalize(s);
    ucc_collective_finalize(r);
    if (a != UCC_OK || b != UCC_OK)
        FAIL("p2p: send %s, recv %s", ucc_status_string(a), ucc_status_string(b));
    for (i = 0; i < N; i++)
        if (in[i] != prev * 1e3 + i * 0.5)
            FAIL("p2p: [%d] = %g from %d", i, in[i], prev);
    return 0;
}

/* FLAG_TIMEOUT: rank 0 receives from rank 1, which never sends. (A send
 * may complete without its receiver: its data waits in the peer's
 * inbox.) */
static int check_timeout(ucc_team_h team)
{
    double         buf[4] = {1, 2, 3, 4};
    ucc_coll_req_h req;
    if (g_size < 2 || g_rank != 0) return 0;
    ucc_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.tag               = 999;
    a.mask              = UCC_COLL_ARGS_FIELD_ACTIVE_SET | UCC_COLL_ARGS_FIELD_TAG |
                          UCC_COLL_ARGS_FIELD_FLAGS;
    a.flags             = UCC_COLL_ARGS_FLAG_TIMEOUT;
    a.timeout           = 0.2;
    a.coll_type         = UCC_COLL_TYPE_BCAST;
    a.src.info.buffer   = buf;
    a.src.info.count    = 4;
    a.src.info.datatype = UCC_DT_FLOAT64;
    a.src.info.mem_type = UCC_MEMORY_TYPE_HOST;
    a.root              = 1;
    a.active_set.size   = 2;
    a.active_set.start  = 1;
    a.active_set.stride = -1;
    CHECK(ucc_collective_init(&a, &req, team));
    CHECK(ucc_collective_post(req));
    ucc_status_t st = wait_status(req, 30);
    ucc_collective_finalize(req);
    if (st != UCC_ERR_TIMED_OUT)
        FAIL("timeout: %s, expected UCC_ERR_TIMED_OUT", ucc_status_string(st));
    return 0;
}

/* ---- one rank --------------------------------------------------------- */

static int rank_main(const char *server)
{
    ucc_ext_oob_tcp_params_t boot;
    ucc_oob_coll_t           oob;
    ucc_lib_config_h         lib_config;
    ucc_lib_params_t         lib_params;
    ucc_lib_attr_t           lib_attr;
    ucc_lib_h                lib;
    ucc_context_config_h     ctx_config;
    ucc_context_params_t     ctx_params;
    ucc_context_h            ctx;
    ucc_team_params_t        team_params;
    ucc_team_h               team;
    ucc_status_t             st;
    char                     num[32];
    pthread_t                thr;
    progress_t               prog;
    int                      rc = 0, root;

    memset(&boot, 0, sizeof(boot));
    boot.server    = server;
    boot.n_oob_eps = (uint32_t)g_size;
    boot.oob_ep    = (uint32_t)g_rank;
    boot.key       = 0xc0117e57;
    boot.timeout   = 60;
    CHECK(ucc_ext_oob_tcp_create(&boot, &oob));

    /* The library: what coll/ucc and ProcessGroupUCC set and check. */
    CHECK(ucc_lib_config_read("OMPI", NULL, &lib_config));
    CHECK(ucc_lib_config_modify(lib_config, "CLS", "basic"));
    memset(&lib_params, 0, sizeof(lib_params));
    lib_params.mask        = UCC_LIB_PARAM_FIELD_THREAD_MODE;
    lib_params.thread_mode = UCC_THREAD_MULTIPLE;
    CHECK(ucc_init(&lib_params, lib_config, &lib));
    ucc_lib_config_release(lib_config);
    memset(&lib_attr, 0, sizeof(lib_attr));
    lib_attr.mask = UCC_LIB_ATTR_FIELD_THREAD_MODE;
    CHECK(ucc_lib_get_attr(lib, &lib_attr));
    if (lib_attr.thread_mode != UCC_THREAD_MULTIPLE)
        FAIL("ucc_lib_get_attr: thread mode %d, not UCC_THREAD_MULTIPLE",
             (int)lib_attr.thread_mode);

    CHECK(ucc_context_config_read(lib, NULL, &ctx_config));
    snprintf(num, sizeof(num), "%d", g_size);
    CHECK(ucc_context_config_modify(ctx_config, NULL, "ESTIMATED_NUM_EPS", num));
    CHECK(ucc_context_config_modify(ctx_config, NULL, "ESTIMATED_NUM_PPN", num));
    snprintf(num, sizeof(num), "%d", g_rank);
    CHECK(ucc_context_config_modify(ctx_config, NULL, "NODE_LOCAL_ID", num));
    memset(&ctx_params, 0, sizeof(ctx_params));
    ctx_params.mask = UCC_CONTEXT_PARAM_FIELD_TYPE | UCC_CONTEXT_PARAM_FIELD_OOB;
    ctx_params.type = UCC_CONTEXT_SHARED;
    ctx_params.oob  = oob;
    CHECK(ucc_context_create(lib, &ctx_params, ctx_config, &ctx));
    ucc_context_config_release(ctx_config);

    /* The team as ProcessGroupUCC makes it, progressing while it waits. */
    memset(&team_params, 0, sizeof(team_params));
    team_params.mask     = UCC_TEAM_PARAM_FIELD_EP | UCC_TEAM_PARAM_FIELD_EP_RANGE |
                           UCC_TEAM_PARAM_FIELD_OOB;
    team_params.oob      = oob;
    team_params.ep       = (uint64_t)g_rank;
    team_params.ep_range = UCC_COLLECTIVE_EP_RANGE_CONTIG;
    CHECK(ucc_team_create_post(&ctx, 1, &team_params, &team));
    while ((st = ucc_team_create_test(team)) == UCC_INPROGRESS)
        ucc_context_progress(ctx);
    CHECK(st);

    prog.ctx  = ctx;
    prog.stop = 0;
    if (pthread_create(&thr, NULL, progress_loop, &prog) != 0) FAIL("no thread");
    rc = check_allreduce(team);
    if (rc == 0) rc = check_allgather_list(team);
    for (root = 0; rc == 0 && root < g_size; root++)
        rc = check_gather_scatter_list(team, root);
    if (rc == 0) rc = check_alltoallv_list(team);
    if (rc == 0) rc = check_arrays_freed(team);
    if (rc == 0) rc = check_mask_zero(team);
    for (root = 0; rc == 0 && root < g_size; root++)
        rc = check_reduce_in_place(team, root);
    if (rc == 0) rc = check_p2p(team);
    if (rc == 0) rc = check_timeout(team);
    __atomic_store_n(&prog.stop, 1, __ATOMIC_RELEASE);
    pthread_join(thr, NULL);
    if (rc != 0) return rc;

    /* The way ProcessGroupUCC destroys its team. */
    while ((st = ucc_team_destroy(team)) == UCC_INPROGRESS) ucc_context_progress(ctx);
    CHECK(st);
    CHECK(ucc_context_destroy(ctx));
    CHECK(ucc_finalize(lib));
    CHECK(ucc_ext_oob_tcp_destroy(&oob));
    return 0;
}

/* A port that was free a moment ago, for rank 0 to listen on. */
static int free_port(void)
{
    struct sockaddr_in sa;
    socklen_t          len = sizeof(sa);
    int                s = socket(AF_INET, SOCK_STREAM, 0), port = -1;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family      = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(s, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    if (s >= 0) close(s);
    return port;
}

int main(int argc, char **argv)
{
    char  server[64];
    pid_t pids[64];
    int   i, failed = 0, port;

    if (argc != 2 || atoi(argv[1]) < 1 || atoi(argv[1]) > 64) {
        fprintf(stderr, "usage: conventions NRANKS (1..64)\n");
        return 2;
    }
    g_size = atoi(argv[1]);
    port   = free_port();
    if (port <= 0) {
        fprintf(stderr, "no free port on 127.0.0.1\n");
        return 1;
    }
    snprintf(server, sizeof(server), "127.0.0.1:%d", port);
    for (i = 0; i < g_size; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            g_rank = i;
            alarm(240); /* a hang is a failure, not a stuck CI job */
            _exit(rank_main(server));
        }
    }
    for (i = 0; i < g_size; i++) {
        int ws = 0;
        waitpid(pids[i], &ws, 0);
        if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
            fprintf(stderr, "rank %d: %s %d\n", i,
                    WIFEXITED(ws) ? "exit" : "signal",
                    WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
            failed = 1;
        }
    }
    if (!failed)
        printf("conventions: %d ranks, %s engine: every convention held\n",
               g_size, getenv("UCC_OFFLOAD") ? getenv("UCC_OFFLOAD") : "inline");
    return failed;
}

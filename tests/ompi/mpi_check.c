/* Every MPI collective Open MPI's coll/ucc hands to UCC, checked against
 * a serial reference: barrier, bcast, allreduce, reduce, allgather,
 * allgatherv, alltoall, alltoallv, blocking and nonblocking; every root;
 * MPI_IN_PLACE; several datatypes and ops; sizes below and above one
 * message slot; on MPI_COMM_WORLD, on communicators from MPI_Comm_split
 * and MPI_Comm_dup; count and displacement arrays freed as soon as the
 * nonblocking call returns (as mpi4py does); create/free cycles; many
 * communicators alive at once; threads (MPI_THREAD_MULTIPLE) each on a
 * communicator of its own; and communicators never freed, which
 * MPI_Finalize must take down with the UCC context.
 *
 *   mpirun -np N mpi_check [--cycles C] [--alive A] [--threads T]
 *
 * Outputs are poisoned before every call. Rank 0 prints one line per
 * part and "mpi_check: all passed" at the end; any mismatch aborts the
 * job with a message naming the collective, communicator and element.
 * tests/ompi/run_coll_ucc.sh runs it with coll/ucc forced and counts
 * the collectives that really went through UCC. */
#include <mpi.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrank, wsize;

#define DIE(...)                                                   \
    do {                                                           \
        fprintf(stderr, "mpi_check rank %d: ", wrank);            \
        fprintf(stderr, __VA_ARGS__);                              \
        fprintf(stderr, "\n");                                     \
        MPI_Abort(MPI_COMM_WORLD, 3);                              \
    } while (0)

/* What rank r contributes at index i: small integers, so that sums,
 * products and the rest are exact in every type used. */
static long input(int r, long i) { return (long)((r * 7 + i * 3) % 11) - 3; }
static long factor(int r, long i) { return ((r + i) % 3 == 0) ? 2 : 1; }

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) DIE("out of memory");
    return p;
}

/* ---- reductions ------------------------------------------------------ */

typedef struct {
    MPI_Op      op;
    const char *name;
} op_t;

static long ref_reduce(MPI_Op op, int n, long i)
{
    long acc = op == MPI_PROD ? factor(0, i) : input(0, i);
    int  r;
    for (r = 1; r < n; r++) {
        long v = op == MPI_PROD ? factor(r, i) : input(r, i);
        if (op == MPI_SUM) acc += v;
        else if (op == MPI_PROD) acc *= v;
        else if (op == MPI_MAX) acc = v > acc ? v : acc;
        else if (op == MPI_MIN) acc = v < acc ? v : acc;
        else if (op == MPI_BAND) acc &= v;
        else if (op == MPI_BOR) acc |= v;
        else if (op == MPI_BXOR) acc ^= v;
        else if (op == MPI_LAND) acc = acc && v;
        else if (op == MPI_LOR) acc = acc || v;
    }
    return acc;
}

typedef enum { T_INT, T_LONG, T_DOUBLE, T_FLOAT, T_UCHAR } ty_t;

static MPI_Datatype mpi_type(ty_t t)
{
    switch (t) {
    case T_INT: return MPI_INT;
    case T_LONG: return MPI_LONG;
    case T_DOUBLE: return MPI_DOUBLE;
    case T_FLOAT: return MPI_FLOAT;
    default: return MPI_UNSIGNED_CHAR;
    }
}

static size_t ty_size(ty_t t)
{
    switch (t) {
    case T_INT: return sizeof(int);
    case T_LONG: return sizeof(long);
    case T_DOUBLE: return sizeof(double);
    case T_FLOAT: return sizeof(float);
    default: return 1;
    }
}

static void put(ty_t t, void *b, long i, long v)
{
    switch (t) {
    case T_INT: ((int *)b)[i] = (int)v; break;
    case T_LONG: ((long *)b)[i] = v; break;
    case T_DOUBLE: ((double *)b)[i] = (double)v; break;
    case T_FLOAT: ((float *)b)[i] = (float)v; break;
    default: ((unsigned char *)b)[i] = (unsigned char)v; break;
    }
}

static long get(ty_t t, const void *b, long i)
{
    switch (t) {
    case T_INT: return ((const int *)b)[i];
    case T_LONG: return ((const long *)b)[i];
    case T_DOUBLE: return (long)((const double *)b)[i];
    case T_FLOAT: return (long)((const float *)b)[i];
    default: return ((const unsigned char *)b)[i];
    }
}

/* The reference in type t's arithmetic: unsigned char wraps. */
static long fit(ty_t t, long v) { return t == T_UCHAR ? (long)(unsigned char)v : v; }

static void fill_in(ty_t t, void *b, long n, int r, MPI_Op op)
{
    long i;
    for (i = 0; i < n; i++)
        put(t, b, i, fit(t, op == MPI_PROD ? factor(r, i) : input(r, i)));
}

static void wait_or_not(int nb, MPI_Request *rq)
{
    if (nb) MPI_Wait(rq, MPI_STATUS_IGNORE);
}

static const char *cname;

static void check_reduce_result(ty_t t, const void *b, long n, int csize,
                                MPI_Op op, const char *what, const char *oname)
{
    long i;
    for (i = 0; i < n; i++) {
        long want = fit(t, ref_reduce(op, csize, i));
        /* unsigned char: inputs wrap before the op */
        if (t == T_UCHAR) {
            long acc = fit(t, op == MPI_PROD ? factor(0, i) : input(0, i));
            int  r;
            for (r = 1; r < csize; r++) {
                long v = fit(t, op == MPI_PROD ? factor(r, i) : input(r, i));
                if (op == MPI_SUM) acc = (acc + v) & 0xff;
                else if (op == MPI_MAX) acc = v > acc ? v : acc;
                else if (op == MPI_MIN) acc = v < acc ? v : acc;
                else if (op == MPI_BXOR) acc ^= v;
                else if (op == MPI_BAND) acc &= v;
                else if (op == MPI_BOR) acc |= v;
                else if (op == MPI_PROD) acc = (acc * v) & 0xff;
            }
            want = acc;
        }
        if (get(t, b, i) != want)
            DIE("%s %s on %s: element %ld of %ld is %ld, expected %ld", what,
                oname, cname, i, n, get(t, b, i), want);
    }
}

static void check_allreduce(MPI_Comm c, int crank, int csize)
{
    static const struct {
        ty_t        t;
        MPI_Op      op;
        const char *name;
    } cases[] = {
        {T_INT, MPI_SUM, "int sum"},     {T_INT, MPI_PROD, "int prod"},
        {T_INT, MPI_MAX, "int max"},     {T_INT, MPI_MIN, "int min"},
        {T_INT, MPI_BAND, "int band"},   {T_INT, MPI_BOR, "int bor"},
        {T_INT, MPI_LAND, "int land"},   {T_INT, MPI_LOR, "int lor"},
        {T_LONG, MPI_SUM, "long sum"},   {T_LONG, MPI_BXOR, "long bxor"},
        {T_DOUBLE, MPI_SUM, "double sum"}, {T_DOUBLE, MPI_MAX, "double max"},
        {T_FLOAT, MPI_MIN, "float min"}, {T_UCHAR, MPI_SUM, "uchar sum"},
    };
    static const long sizes[] = {1, 7, 1000, 70000};
    size_t k, s;
    int    nb, ip;
    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            long   n  = sizes[s];
            size_t es = ty_size(cases[k].t);
            if (n > 1000 && k % 3 != 0) continue; /* large ones: a sample */
            char *in = xmalloc(n * es), *out = xmalloc(n * es);
            for (nb = 0; nb < 2; nb++) {
                for (ip = 0; ip < 2; ip++) {
                    MPI_Request rq;
                    fill_in(cases[k].t, ip ? out : in, n, crank, cases[k].op);
                    if (!ip) memset(out, 0xA5, n * es);
                    const void *sb = ip ? MPI_IN_PLACE : in;
                    if (nb)
                        MPI_Iallreduce(sb, out, (int)n, mpi_type(cases[k].t),
                                       cases[k].op, c, &rq);
                    else
                        MPI_Allreduce(sb, out, (int)n, mpi_type(cases[k].t),
                                      cases[k].op, c);
                    wait_or_not(nb, &rq);
                    check_reduce_result(cases[k].t, out, n, csize, cases[k].op,
                                        nb ? "iallreduce" : "allreduce",
                                        cases[k].name);
                }
            }
            free(in);
            free(out);
        }
    }
}

static void check_reduce(MPI_Comm c, int crank, int csize)
{
    static const long sizes[] = {3, 5000, 70000};
    size_t s;
    int    root, nb, ip;
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        long n   = sizes[s];
        int *in  = xmalloc(n * sizeof(int));
        int *out = xmalloc(n * sizeof(int));
        for (root = 0; root < csize; root++) {
            for (nb = 0; nb < 2; nb++) {
                for (ip = 0; ip < 2; ip++) {
                    MPI_Request rq;
                    int         me_root = crank == root;
                    fill_in(T_INT, (ip && me_root) ? out : in, n, crank, MPI_SUM);
                    if (!(ip && me_root)) memset(out, 0xA5, n * sizeof(int));
                    const void *sb = (ip && me_root) ? MPI_IN_PLACE : in;
                    if (nb)
                        MPI_Ireduce(sb, out, (int)n, MPI_INT, MPI_MAX, root, c, &rq);
                    else
                        MPI_Reduce(sb, out, (int)n, MPI_INT, MPI_MAX, root, c);
                    wait_or_not(nb, &rq);
                    if (me_root)
                        check_reduce_result(T_INT, out, n, csize, MPI_MAX,
                                            nb ? "ireduce" : "reduce", "int max");
                }
            }
        }
        free(in);
        free(out);
    }
}

/* ---- data movement -------------------------------------------------- */

static unsigned char byte_of(int r, long i) { return (unsigned char)(r * 29 + i * 7 + 1); }

static void check_bytes(const unsigned char *b, long n, int from, long at,
                        const char *what)
{
    long i;
    for (i = 0; i < n; i++)
        if (b[i] != byte_of(from, at + i))
            DIE("%s on %s: byte %ld from rank %d is %u, expected %u", what,
                cname, at + i, from, b[i], byte_of(from, at + i));
}

static void check_bcast(MPI_Comm c, int crank, int csize)
{
    static const long sizes[] = {1, 100, 65536, 300000};
    size_t s;
    int    root, nb;
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        long           n = sizes[s];
        unsigned char *b = xmalloc(n);
        for (root = 0; root < csize; root++) {
            for (nb = 0; nb < 2; nb++) {
                MPI_Request rq;
                long        i;
                if (crank == root)
                    for (i = 0; i < n; i++) b[i] = byte_of(root, i);
                else
                    memset(b, 0xA5, n);
                if (nb)
                    MPI_Ibcast(b, (int)n, MPI_BYTE, root, c, &rq);
                else
                    MPI_Bcast(b, (int)n, MPI_BYTE, root, c);
                wait_or_not(nb, &rq);
                check_bytes(b, n, root, 0, nb ? "ibcast" : "bcast");
            }
        }
        free(b);
    }
}

static void check_allgather(MPI_Comm c, int crank, int csize)
{
    static const long sizes[] = {1, 333, 70000};
    size_t s;
    int    nb, ip, r;
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        long           n   = sizes[s];
        unsigned char *in  = xmalloc(n);
        unsigned char *out = xmalloc(n * csize);
        long           i;
        for (i = 0; i < n; i++) in[i] = byte_of(crank, i);
        for (nb = 0; nb < 2; nb++) {
            for (ip = 0; ip < 2; ip++) {
                MPI_Request rq;
                memset(out, 0xA5, n * csize);
                if (ip) memcpy(out + n * crank, in, n);
                const void *sb = ip ? MPI_IN_PLACE : in;
                if (nb)
                    MPI_Iallgather(sb, (int)n, MPI_BYTE, out, (int)n, MPI_BYTE, c, &rq);
                else
                    MPI_Allgather(sb, (int)n, MPI_BYTE, out, (int)n, MPI_BYTE, c);
                wait_or_not(nb, &rq);
                for (r = 0; r < csize; r++)
                    check_bytes(out + n * r, n, r, 0, nb ? "iallgather" : "allgather");
            }
        }
        free(in);
        free(out);
    }
}

/* Counts vary per rank, blocks have gaps between them, and the arrays of
 * the nonblocking call are scribbled over and freed right after it. */
static void check_allgatherv(MPI_Comm c, int crank, int csize)
{
    int nb, ip, r, scale;
    for (scale = 1; scale <= 2000; scale *= 2000) {
        int *cnt = xmalloc(sizeof(int) * csize), *dsp = xmalloc(sizeof(int) * csize);
        int  total = 0;
        for (r = 0; r < csize; r++) {
            cnt[r] = (r % 3) * scale + (r == 1 ? 0 : 1);
            dsp[r] = total + 5;
            total += cnt[r] + 5;
        }
        unsigned char *in  = xmalloc(cnt[crank]);
        unsigned char *out = xmalloc(total);
        long           i;
        for (i = 0; i < cnt[crank]; i++) in[i] = byte_of(crank, i);
        for (nb = 0; nb < 2; nb++) {
            for (ip = 0; ip < 2; ip++) {
                MPI_Request rq;
                int        *c2 = cnt, *d2 = dsp;
                memset(out, 0xA5, total);
                if (ip) memcpy(out + dsp[crank], in, cnt[crank]);
                if (nb) { /* the caller's own copies, gone after the call */
                    c2 = xmalloc(sizeof(int) * csize);
                    d2 = xmalloc(sizeof(int) * csize);
                    memcpy(c2, cnt, sizeof(int) * csize);
                    memcpy(d2, dsp, sizeof(int) * csize);
                }
                const void *sb = ip ? MPI_IN_PLACE : in;
                if (nb) {
                    MPI_Iallgatherv(sb, cnt[crank], MPI_BYTE, out, c2, d2, MPI_BYTE, c, &rq);
                    memset(c2, 0xff, sizeof(int) * csize);
                    memset(d2, 0xff, sizeof(int) * csize);
                    free(c2);
                    free(d2);
                } else {
                    MPI_Allgatherv(sb, cnt[crank], MPI_BYTE, out, cnt, dsp, MPI_BYTE, c);
                }
                wait_or_not(nb, &rq);
                for (r = 0; r < csize; r++)
                    check_bytes(out + dsp[r], cnt[r], r, 0,
                                nb ? "iallgatherv" : "allgatherv");
            }
        }
        free(in);
        free(out);
        free(cnt);
        free(dsp);
    }
}

static void check_alltoall(MPI_Comm c, int crank, int csize)
{
    static const long sizes[] = {1, 100, 40000};
    size_t s;
    int    nb, r;
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        long           n   = sizes[s];
        unsigned char *in  = xmalloc(n * csize);
        unsigned char *out = xmalloc(n * csize);
        long           i;
        for (r = 0; r < csize; r++)
            for (i = 0; i < n; i++) in[n * r + i] = byte_of(crank * 64 + r, i);
        for (nb = 0; nb < 2; nb++) {
            MPI_Request rq;
            memset(out, 0xA5, n * csize);
            if (nb)
                MPI_Ialltoall(in, (int)n, MPI_BYTE, out, (int)n, MPI_BYTE, c, &rq);
            else
                MPI_Alltoall(in, (int)n, MPI_BYTE, out, (int)n, MPI_BYTE, c);
            wait_or_not(nb, &rq);
            for (r = 0; r < csize; r++)
                check_bytes(out + n * r, n, r * 64 + crank, 0,
                            nb ? "ialltoall" : "alltoall");
        }
        free(in);
        free(out);
    }
}

static void check_alltoallv(MPI_Comm c, int crank, int csize)
{
    int *sc = xmalloc(sizeof(int) * csize), *sd = xmalloc(sizeof(int) * csize);
    int *rc = xmalloc(sizeof(int) * csize), *rd = xmalloc(sizeof(int) * csize);
    int  r, nb, st = 0, rt = 0;
    /* rank a sends (a + 2b) % 5 * 300 + 1 bytes to rank b, after a gap of 3 */
    for (r = 0; r < csize; r++) {
        sc[r] = ((crank + 2 * r) % 5) * 300 + 1;
        sd[r] = st + 3;
        st += sc[r] + 3;
        rc[r] = ((r + 2 * crank) % 5) * 300 + 1;
        rd[r] = rt + 3;
        rt += rc[r] + 3;
    }
    unsigned char *in = xmalloc(st), *out = xmalloc(rt);
    long           i;
    for (r = 0; r < csize; r++)
        for (i = 0; i < sc[r]; i++) in[sd[r] + i] = byte_of(crank * 64 + r, i);
    for (nb = 0; nb < 2; nb++) {
        MPI_Request rq;
        memset(out, 0xA5, rt);
        if (nb) {
            int *a[4], k;
            int *src[4] = {sc, sd, rc, rd};
            for (k = 0; k < 4; k++) {
                a[k] = xmalloc(sizeof(int) * csize);
                memcpy(a[k], src[k], sizeof(int) * csize);
            }
            MPI_Ialltoallv(in, a[0], a[1], MPI_BYTE, out, a[2], a[3], MPI_BYTE, c, &rq);
            for (k = 0; k < 4; k++) {
                memset(a[k], 0xff, sizeof(int) * csize);
                free(a[k]);
            }
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        } else {
            MPI_Alltoallv(in, sc, sd, MPI_BYTE, out, rc, rd, MPI_BYTE, c);
        }
        for (r = 0; r < csize; r++)
            check_bytes(out + rd[r], rc[r], r * 64 + crank, 0,
                        nb ? "ialltoallv" : "alltoallv");
    }
    /* In place: what goes to r leaves from where r's block comes in, so
     * the counts are symmetric, (min + 2 max) % 5 * 300 + 1 bytes. */
    for (rt = 0, r = 0; r < csize; r++) {
      int lo = crank < r ? crank : r, hi = crank < r ? r : crank;
      rc[r] = ((lo + 2 * hi) % 5) * 300 + 1;
      rd[r] = rt + 3;
      rt += rc[r] + 3;
    }
    free(out);
    out = xmalloc(rt);
    for (nb = 0; nb < 2; nb++) {
      MPI_Request rq;
      memset(out, 0xA5, rt);
      for (r = 0; r < csize; r++)
        for (i = 0; i < rc[r]; i++) out[rd[r] + i] = byte_of(crank * 64 + r, i);
      if (nb) {
        MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_BYTE, out, rc, rd,
                       MPI_BYTE, c, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
      } else {
        MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_BYTE, out, rc, rd, MPI_BYTE,
                      c);
      }
      for (r = 0; r < csize; r++)
        check_bytes(out + rd[r], rc[r], r * 64 + crank, 0,
                    nb ? "ialltoallv in place" : "alltoallv in place");
    }
    free(in);
    free(out);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

static void check_barrier(MPI_Comm c)
{
    MPI_Request rq;
    MPI_Barrier(c);
    MPI_Ibarrier(c, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
}

/* Everything above on one communicator. */
static void check_all(MPI_Comm c, const char *name)
{
    int crank, csize;
    MPI_Comm_rank(c, &crank);
    MPI_Comm_size(c, &csize);
    cname = name;
    check_barrier(c);
    check_allreduce(c, crank, csize);
    check_reduce(c, crank, csize);
    check_bcast(c, crank, csize);
    check_allgather(c, crank, csize);
    check_allgatherv(c, crank, csize);
    check_alltoall(c, crank, csize);
    check_alltoallv(c, crank, csize);
    check_barrier(c);
}

/* A small allreduce whose result names the communicator's size. */
static void quick(MPI_Comm c, int tag)
{
    int csize, crank, v[2], out[2] = {-1, -1};
    MPI_Comm_size(c, &csize);
    MPI_Comm_rank(c, &crank);
    v[0] = crank + tag;
    v[1] = 1;
    MPI_Allreduce(v, out, 2, MPI_INT, MPI_SUM, c);
    if (out[0] != csize * tag + csize * (csize - 1) / 2 || out[1] != csize)
        DIE("allreduce on communicator %d: %d %d", tag, out[0], out[1]);
}

typedef struct {
    MPI_Comm comm;
    int      id;
} thread_arg_t;

static void *thread_main(void *p)
{
    thread_arg_t *a = (thread_arg_t *)p;
    int           i;
    for (i = 0; i < 300; i++) quick(a->comm, a->id * 1000 + i);
    return NULL;
}

int main(int argc, char **argv)
{
    int cycles = 200, alive = 1000, threads = 3, provided, i;
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--cycles")) cycles = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--alive")) alive = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    }
    MPI_Init_thread(&argc, &argv, threads > 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                    &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (threads > 0 && provided < MPI_THREAD_MULTIPLE) threads = 0;

    check_all(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    if (wrank == 0) printf("mpi_check: MPI_COMM_WORLD passed\n");

    /* Split: even and odd ranks, in reverse order. */
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, -wrank, &split);
    check_all(split, "split (parity, reversed)");
    MPI_Comm_free(&split);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    check_all(dup, "dup of MPI_COMM_WORLD");
    MPI_Comm_free(&dup);
    if (wrank == 0) printf("mpi_check: split and dup passed\n");

    for (i = 0; i < cycles; i++) {
        MPI_Comm d;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        quick(d, i);
        MPI_Comm_free(&d);
    }
    if (wrank == 0) printf("mpi_check: %d dup/free cycles passed\n", cycles);

    MPI_Comm *many = xmalloc(sizeof(MPI_Comm) * (alive > 0 ? alive : 1));
    for (i = 0; i < alive; i++) MPI_Comm_dup(MPI_COMM_WORLD, &many[i]);
    for (i = alive; i-- > 0;) quick(many[i], i);
    for (i = 0; i < alive; i++) MPI_Comm_free(&many[i]);
    free(many);
    if (wrank == 0) printf("mpi_check: %d communicators alive at once passed\n", alive);

    if (threads > 0) {
        pthread_t    t[16];
        thread_arg_t a[16];
        if (threads > 16) threads = 16;
        for (i = 0; i < threads; i++) {
            MPI_Comm_dup(MPI_COMM_WORLD, &a[i].comm);
            a[i].id = i + 1;
        }
        for (i = 0; i < threads; i++) pthread_create(&t[i], NULL, thread_main, &a[i]);
        for (i = 0; i < threads; i++) pthread_join(t[i], NULL);
        for (i = 0; i < threads; i++) MPI_Comm_free(&a[i].comm);
        if (wrank == 0) printf("mpi_check: %d threads passed\n", threads);
    }

    /* Communicators the program never frees: MPI_Finalize destroys the
     * UCC context while their teams exist. */
    MPI_Comm leak[3];
    for (i = 0; i < 3; i++) {
        MPI_Comm_split(MPI_COMM_WORLD, (wrank + i) % 2, wrank, &leak[i]);
        quick(leak[i], 77 + i);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (wrank == 0) printf("mpi_check: all passed\n");
    MPI_Finalize();
    return 0;
}

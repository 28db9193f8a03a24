/* A job without MPI: each process is started with the same server and
 * size and its own rank,
 *
 *     tcp_job HOST:PORT SIZE RANK
 *
 * meets the others through the TCP rendezvous of ucc_ext.h, creates a
 * context and a team over it, and checks one allreduce. The example of
 * docs/network.md, built against the installed package and run by
 * tests/install/check_install.sh. */
#include <ucc/api/ucc.h>

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                     \
    do {                                                                \
        ucc_status_t st_ = (call);                                      \
        if (st_ != UCC_OK) {                                            \
            fprintf(stderr, "%s: %s\n", #call, ucc_status_string(st_)); \
            return 1;                                                   \
        }                                                               \
    } while (0)

int main(int argc, char **argv)
{
    ucc_ext_oob_tcp_params_t boot = {0};
    ucc_oob_coll_t oob;
    ucc_lib_config_h lib_config;
    ucc_lib_params_t lib_params = {0};
    ucc_lib_h lib;
    ucc_context_params_t ctx_params = {0};
    ucc_context_h ctx;
    ucc_team_params_t team_params = {0};
    ucc_team_h team;
    ucc_coll_args_t args = {0};
    ucc_coll_req_h req;
    ucc_status_t st;
    int64_t src[3], dst[3];
    uint32_t size, rank;
    int i;

    if (argc != 4) {
        fprintf(stderr, "usage: tcp_job HOST:PORT SIZE RANK\n");
        return 2;
    }
    size = (uint32_t)atoi(argv[2]);
    rank = (uint32_t)atoi(argv[3]);

    /* 1. Meet: rank 0 listens at argv[1], the others connect. */
    boot.server    = argv[1];
    boot.n_oob_eps = size;
    boot.oob_ep    = rank;
    boot.key       = 0x5eed; /* the same secret everywhere */
    boot.timeout   = 30;
    CHECK(ucc_ext_oob_tcp_create(&boot, &oob));

    /* 2. The library, a context and a team, bootstrapped over it. */
    CHECK(ucc_lib_config_read(NULL, NULL, &lib_config));
    lib_params.mask        = UCC_LIB_PARAM_FIELD_THREAD_MODE;
    lib_params.thread_mode = UCC_THREAD_SINGLE;
    CHECK(ucc_init(&lib_params, lib_config, &lib));
    ucc_lib_config_release(lib_config);
    ctx_params.mask = UCC_CONTEXT_PARAM_FIELD_OOB;
    ctx_params.oob  = oob;
    CHECK(ucc_context_create(lib, &ctx_params, NULL, &ctx));
    team_params.mask     = UCC_TEAM_PARAM_FIELD_EP |
                           UCC_TEAM_PARAM_FIELD_EP_RANGE |
                           UCC_TEAM_PARAM_FIELD_OOB;
    team_params.ep       = rank;
    team_params.ep_range = UCC_COLLECTIVE_EP_RANGE_CONTIG;
    team_params.oob      = oob;
    CHECK(ucc_team_create_post(&ctx, 1, &team_params, &team));
    while ((st = ucc_team_create_test(team)) == UCC_INPROGRESS) {
        ucc_context_progress(ctx);
    }
    CHECK(st);

    /* 3. An allreduce: element i sums (r + 1) * (i + 1) over the ranks. */
    for (i = 0; i < 3; i++) {
        src[i] = (int64_t)(rank + 1) * (i + 1);
        dst[i] = -1;
    }
    args.coll_type         = UCC_COLL_TYPE_ALLREDUCE;
    args.src.info.buffer   = src;
    args.src.info.count    = 3;
    args.src.info.datatype = UCC_DT_INT64;
    args.src.info.mem_type = UCC_MEMORY_TYPE_HOST;
    args.dst.info.buffer   = dst;
    args.dst.info.count    = 3;
    args.dst.info.datatype = UCC_DT_INT64;
    args.dst.info.mem_type = UCC_MEMORY_TYPE_HOST;
    args.op                = UCC_OP_SUM;
    CHECK(ucc_collective_init(&args, &req, team));
    CHECK(ucc_collective_post(req));
    while ((st = ucc_collective_test(req)) == UCC_INPROGRESS) {
        ucc_context_progress(ctx);
    }
    CHECK(st);
    CHECK(ucc_collective_finalize(req));
    for (i = 0; i < 3; i++) {
        int64_t want = (int64_t)size * (size + 1) / 2 * (i + 1);
        if (dst[i] != want) {
            fprintf(stderr, "rank %u: dst[%d] = %lld, want %lld\n", rank, i,
                    (long long)dst[i], (long long)want);
            return 1;
        }
    }

    /* 4. Teardown; the rendezvous last. */
    while ((st = ucc_team_destroy(team)) == UCC_INPROGRESS) {
        ucc_context_progress(ctx);
    }
    CHECK(st);
    CHECK(ucc_context_destroy(ctx));
    CHECK(ucc_finalize(lib));
    CHECK(ucc_ext_oob_tcp_destroy(&oob));
    printf("tcp_job: rank %u of %u ok\n", rank, size);
    return 0;
}

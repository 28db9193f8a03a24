/* A program written against the UCC 1.x API alone: it must build unchanged
 * against the installed package (find_package(ucc) and pkg-config ucc).
 * One rank: lib, context, a team of one, an allreduce, teardown. */
#include <ucc/api/ucc.h>

#include <stdio.h>

#define CHECK(call)                                              \
    do {                                                         \
        ucc_status_t st_ = (call);                               \
        if (st_ != UCC_OK) {                                     \
            fprintf(stderr, "%s: %s\n", #call, ucc_status_string(st_)); \
            return 1;                                            \
        }                                                        \
    } while (0)

int main(void)
{
    ucc_lib_config_h lib_config;
    ucc_lib_params_t lib_params = {0};
    ucc_lib_h lib;
    ucc_context_config_h ctx_config;
    ucc_context_params_t ctx_params = {0};
    ucc_context_h ctx;
    ucc_team_params_t team_params = {0};
    ucc_team_h team;
    ucc_coll_args_t args = {0};
    ucc_coll_req_h req;
    ucc_status_t st;
    double src[4] = {1, 2, 3, 4}, dst[4] = {0};
    int i;

    CHECK(ucc_lib_config_read(NULL, NULL, &lib_config));
    lib_params.mask        = UCC_LIB_PARAM_FIELD_THREAD_MODE;
    lib_params.thread_mode = UCC_THREAD_SINGLE;
    CHECK(ucc_init(&lib_params, lib_config, &lib));
    ucc_lib_config_release(lib_config);

    CHECK(ucc_context_config_read(lib, NULL, &ctx_config));
    CHECK(ucc_context_create(lib, &ctx_params, ctx_config, &ctx));
    ucc_context_config_release(ctx_config);

    team_params.mask      = UCC_TEAM_PARAM_FIELD_EP | UCC_TEAM_PARAM_FIELD_EP_RANGE |
                            UCC_TEAM_PARAM_FIELD_TEAM_SIZE;
    team_params.ep        = 0;
    team_params.ep_range  = UCC_COLLECTIVE_EP_RANGE_CONTIG;
    team_params.team_size = 1;
    CHECK(ucc_team_create_post(&ctx, 1, &team_params, &team));
    while ((st = ucc_team_create_test(team)) == UCC_INPROGRESS) {
        ucc_context_progress(ctx);
    }
    CHECK(st);

    args.coll_type         = UCC_COLL_TYPE_ALLREDUCE;
    args.src.info.buffer   = src;
    args.src.info.count    = 4;
    args.src.info.datatype = UCC_DT_FLOAT64;
    args.src.info.mem_type = UCC_MEMORY_TYPE_HOST;
    args.dst.info.buffer   = dst;
    args.dst.info.count    = 4;
    args.dst.info.datatype = UCC_DT_FLOAT64;
    args.dst.info.mem_type = UCC_MEMORY_TYPE_HOST;
    args.op                = UCC_OP_SUM;
    CHECK(ucc_collective_init(&args, &req, team));
    CHECK(ucc_collective_post(req));
    while ((st = ucc_collective_test(req)) == UCC_INPROGRESS) {
        ucc_context_progress(ctx);
    }
    CHECK(st);
    CHECK(ucc_collective_finalize(req));
    for (i = 0; i < 4; i++) {
        if (dst[i] != src[i]) {
            fprintf(stderr, "dst[%d] = %g, want %g\n", i, dst[i], src[i]);
            return 1;
        }
    }
    while ((st = ucc_team_destroy(team)) == UCC_INPROGRESS) {
    }
    CHECK(st);
    CHECK(ucc_context_destroy(ctx));
    CHECK(ucc_finalize(lib));
    printf("consumer: ucc %s ok\n", ucc_get_version_string());
    return 0;
}

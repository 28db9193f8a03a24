// libibverbs, loaded at run time: libucc.a links and runs unchanged on
// machines without rdma-core, and the tests load a provider of the same
// API in its place (UCC_VERBS_LIB=tests' libverbs_loop.so, which has no
// hardware behind it). Only the entry points the transport uses; the
// data path (post_send, post_srq_recv, poll_cq) goes through the
// context's ops, as the header's inline functions do, so it costs no
// extra indirection.
#pragma once

#include <infiniband/verbs.h>

#include "platform/base/status.h"

namespace ucc::plat::verbs {

using base::Status;

struct Api {
  ibv_device** (*get_device_list)(int* n);
  void (*free_device_list)(ibv_device** list);
  const char* (*get_device_name)(ibv_device* dev);
  ibv_context* (*open_device)(ibv_device* dev);
  int (*close_device)(ibv_context* ctx);
  // The exported, ABI-stable query_port (rdma-core's macro of the same
  // name would look for an extended context first).
  int (*query_port)(ibv_context* ctx, uint8_t port, ibv_port_attr* attr);
  int (*query_gid)(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid);
  int (*query_device)(ibv_context* ctx, ibv_device_attr* attr);
  ibv_pd* (*alloc_pd)(ibv_context* ctx);
  int (*dealloc_pd)(ibv_pd* pd);
  ibv_mr* (*reg_mr)(ibv_pd* pd, void* addr, size_t len, int access);
  int (*dereg_mr)(ibv_mr* mr);
  ibv_cq* (*create_cq)(ibv_context* ctx, int cqe, void* user,
                       ibv_comp_channel* ch, int vector);
  int (*destroy_cq)(ibv_cq* cq);
  ibv_srq* (*create_srq)(ibv_pd* pd, ibv_srq_init_attr* attr);
  int (*destroy_srq)(ibv_srq* srq);
  ibv_qp* (*create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr);
  int (*modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int mask);
  int (*query_qp)(ibv_qp* qp, ibv_qp_attr* attr, int mask,
                  ibv_qp_init_attr* init);
  int (*destroy_qp)(ibv_qp* qp);
  const char* (*wc_status_str)(ibv_wc_status st);
  // Optional (rdma-core 34 on): GPU memory by its dma-buf (nullptr where
  // the library lacks it; the pointer is registered then).
  ibv_mr* (*reg_dmabuf_mr)(ibv_pd* pd, uint64_t offset, size_t len,
                           uint64_t iova, int fd, int access);
};

// Loads `path` (nullptr or "": libibverbs.so.1) once per path and
// resolves every entry point; nullptr with the reason logged when the
// library or one of its symbols is missing. Thread-safe.
const Api* load_api(const char* path);

}  // namespace ucc::plat::verbs

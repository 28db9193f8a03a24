#include "platform/verbs/verbs_api.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <mutex>

#include "platform/os/log.h"

namespace ucc::plat::verbs {
namespace {

constexpr const char* kDefaultLib = "libibverbs.so.1";

char g_path[512];

template <typename F>
bool resolve(void* lib, const char* name, F* out) {
  void* sym = dlsym(lib, name);
  if (sym == nullptr) {
    UCC_WARN("verbs: %s has no %s", g_path, name);
    return false;
  }
  *out = reinterpret_cast<F>(sym);
  return true;
}

bool resolve_all(void* lib, Api* a) {
  return resolve(lib, "ibv_get_device_list", &a->get_device_list) &&
         resolve(lib, "ibv_free_device_list", &a->free_device_list) &&
         resolve(lib, "ibv_get_device_name", &a->get_device_name) &&
         resolve(lib, "ibv_open_device", &a->open_device) &&
         resolve(lib, "ibv_close_device", &a->close_device) &&
         resolve(lib, "ibv_query_port", &a->query_port) &&
         resolve(lib, "ibv_query_gid", &a->query_gid) &&
         resolve(lib, "ibv_alloc_pd", &a->alloc_pd) &&
         resolve(lib, "ibv_dealloc_pd", &a->dealloc_pd) &&
         resolve(lib, "ibv_reg_mr", &a->reg_mr) &&
         resolve(lib, "ibv_dereg_mr", &a->dereg_mr) &&
         resolve(lib, "ibv_create_cq", &a->create_cq) &&
         resolve(lib, "ibv_destroy_cq", &a->destroy_cq) &&
         resolve(lib, "ibv_create_srq", &a->create_srq) &&
         resolve(lib, "ibv_destroy_srq", &a->destroy_srq) &&
         resolve(lib, "ibv_create_qp", &a->create_qp) &&
         resolve(lib, "ibv_modify_qp", &a->modify_qp) &&
         resolve(lib, "ibv_query_qp", &a->query_qp) &&
         resolve(lib, "ibv_query_device", &a->query_device) &&
         resolve(lib, "ibv_destroy_qp", &a->destroy_qp) &&
         resolve(lib, "ibv_wc_status_str", &a->wc_status_str);
}

// One library per process is enough: the first path asked for wins, and
// a later different one is refused (two providers in one process would
// hand out each other's objects).
std::mutex g_mu;
Api g_api;
bool g_tried = false;
bool g_ok = false;

}  // namespace

const Api* load_api(const char* path) {
  if (path == nullptr || *path == '\0') path = kDefaultLib;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_tried) {
    if (strcmp(path, g_path) != 0) {
      UCC_WARN("verbs: %s already loaded, not %s", g_path, path);
      return nullptr;
    }
    return g_ok ? &g_api : nullptr;
  }
  g_tried = true;
  snprintf(g_path, sizeof(g_path), "%s", path);
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    UCC_INFO("verbs: cannot load %s: %s", path, dlerror());
    return nullptr;
  }
  g_ok = resolve_all(lib, &g_api);
  g_api.reg_dmabuf_mr = reinterpret_cast<decltype(g_api.reg_dmabuf_mr)>(
      dlsym(lib, "ibv_reg_dmabuf_mr"));
  if (!g_ok) dlclose(lib);
  return g_ok ? &g_api : nullptr;
}

}  // namespace ucc::plat::verbs

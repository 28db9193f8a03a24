// Library-level entry points: versions, status strings, library
// configuration, ucc_init / ucc_finalize.
#include <pthread.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "host/api/graveyard.h"
#include "host/api/objects.h"
#include "platform/os/log.h"

using ucc::host::Scope;
using ucc::off::Status;

namespace ucc::host {

std::atomic<uint32_t> g_fork_gen{0};

namespace {
void after_fork_in_child() {
  g_fork_gen.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

void install_fork_guard() {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once,
               [] { pthread_atfork(nullptr, nullptr, after_fork_in_child); });
}

void forked_away_log(const char* who) {
  UCC_ERROR(
      "%s: the context was made by the parent of this forked process; a "
      "child cannot use it (make its own after fork)",
      who);
}

}  // namespace ucc::host

extern "C" {

const char* ucc_status_string(ucc_status_t status) {
  switch (status) {
    case UCC_OK:
      return "Success";
    case UCC_INPROGRESS:
      return "Operation in progress";
    case UCC_OPERATION_INITIALIZED:
      return "Operation initialized";
    case UCC_ERR_NOT_SUPPORTED:
      return "Operation is not supported";
    case UCC_ERR_NOT_IMPLEMENTED:
      return "Not implemented";
    case UCC_ERR_INVALID_PARAM:
      return "Invalid parameter";
    case UCC_ERR_NO_MEMORY:
      return "Out of memory";
    case UCC_ERR_NO_RESOURCE:
      return "Resources are not available";
    case UCC_ERR_NO_MESSAGE:
      return "Unspecified error";
    case UCC_ERR_NOT_FOUND:
      return "Not found";
    case UCC_ERR_TIMED_OUT:
      return "Timeout expired";
    case UCC_ERR_IO_ERROR:
      return "I/O error";
    default:
      return "Unknown error";
  }
}

void ucc_get_version(unsigned* major_version, unsigned* minor_version,
                     unsigned* release_number) {
  if (major_version) *major_version = UCC_API_MAJOR;
  if (minor_version) *minor_version = UCC_API_MINOR;
  if (release_number) *release_number = 0;
}

const char* ucc_get_version_string(void) { return UCC_VERSION_STRING; }

ucc_status_t ucc_lib_config_read(const char* env_prefix, const char* filename,
                                 ucc_lib_config_h* config) {
  ucc::plat::log_init();
  if (config == nullptr) {
    UCC_ERROR("ucc_lib_config_read: config is NULL");
    return UCC_ERR_INVALID_PARAM;
  }
  if (env_prefix != nullptr && strlen(env_prefix) >= 48) {
    UCC_ERROR("ucc_lib_config_read: env_prefix too long");
    return UCC_ERR_INVALID_PARAM;
  }
  auto* c = static_cast<ucc_lib_config*>(calloc(1, sizeof(ucc_lib_config)));
  if (c == nullptr) return UCC_ERR_NO_MEMORY;
  if (env_prefix != nullptr) strcpy(c->env_prefix, env_prefix);
  Status st =
      ucc::host::config_read(&c->values, Scope::kLib, env_prefix, filename);
  if (ucc::off::failed(st)) {
    free(c);
    return ucc::host::to_ucc(st);
  }
  *config = c;
  return UCC_OK;
}

void ucc_lib_config_release(ucc_lib_config_h config) { free(config); }

void ucc_lib_config_print(const ucc_lib_config_h config, FILE* stream,
                          const char* title,
                          ucc_config_print_flags_t print_flags) {
  if (config == nullptr) return;
  if (!(print_flags & UCC_CONFIG_PRINT_CONFIG) &&
      !(print_flags & UCC_CONFIG_PRINT_HEADER))
    return;
  ucc::host::config_print(config->values, stream, title,
                          print_flags & UCC_CONFIG_PRINT_HEADER,
                          print_flags & UCC_CONFIG_PRINT_DOC);
}

ucc_status_t ucc_lib_config_modify(ucc_lib_config_h config, const char* name,
                                   const char* value) {
  if (config == nullptr) {
    UCC_ERROR("ucc_lib_config_modify: config is NULL");
    return UCC_ERR_INVALID_PARAM;
  }
  return ucc::host::to_ucc(
      ucc::host::config_modify(&config->values, name, value));
}

ucc_status_t ucc_init_version(unsigned api_major_version,
                              unsigned api_minor_version,
                              const ucc_lib_params_t* params,
                              const ucc_lib_config_h config, ucc_lib_h* lib_p) {
  ucc::plat::log_init();
  ucc::host::install_fork_guard();
  if (params == nullptr || lib_p == nullptr) {
    UCC_ERROR("ucc_init: params and lib_p must not be NULL");
    return UCC_ERR_INVALID_PARAM;
  }
  if (api_major_version != UCC_API_MAJOR || api_minor_version > UCC_API_MINOR)
    UCC_WARN("ucc_init: caller built for API %u.%u, library provides %u.%u",
             api_major_version, api_minor_version, UCC_API_MAJOR,
             UCC_API_MINOR);
  ucc_thread_mode_t tm = UCC_THREAD_SINGLE;
  if (params->mask & UCC_LIB_PARAM_FIELD_THREAD_MODE) {
    const int64_t b = ucc::host::enum_bits(params->thread_mode);
    if (b != UCC_THREAD_SINGLE && b != UCC_THREAD_FUNNELED &&
        b != UCC_THREAD_MULTIPLE) {
      UCC_ERROR("ucc_init: unknown thread mode %lld",
                static_cast<long long>(b));
      return UCC_ERR_INVALID_PARAM;
    }
    tm = static_cast<ucc_thread_mode_t>(b);
  }
  if (config != nullptr) {
    ucc::plat::LogLevel lvl;
    if (ucc::off::ok(ucc::host::lib_log_level(config->values, &lvl)))
      ucc::plat::log_set_level(lvl);
  }
  auto* lib = static_cast<ucc_lib_info*>(
      ucc::host::grave_take(ucc::host::Grave::kLib, sizeof(ucc_lib_info)));
  if (lib == nullptr) return UCC_ERR_NO_MEMORY;
  memset(static_cast<void*>(lib), 0, sizeof(*lib));
  lib->magic = ucc::host::kLibMagic;
  lib->thread_mode = tm;
  // Every collective type of ucc.h: bits 0..15.
  lib->coll_types = (uint64_t{UCC_COLL_TYPE_SCATTERV} << 1) - 1;
  if (config != nullptr) strcpy(lib->env_prefix, config->env_prefix);
  *lib_p = lib;
  return UCC_OK;
}

ucc_status_t ucc_finalize(ucc_lib_h lib) {
  if (lib == nullptr || lib->magic != ucc::host::kLibMagic) {
    UCC_ERROR("ucc_finalize: invalid library handle");
    return UCC_ERR_INVALID_PARAM;
  }
  if (lib->ncontexts != 0)
    UCC_WARN("ucc_finalize: %d contexts still exist", lib->ncontexts);
  // Never freed: a second ucc_finalize must find a dead magic.
  ucc::host::grave_bury(ucc::host::Grave::kLib, lib);
  return UCC_OK;
}

ucc_status_t ucc_lib_get_attr(ucc_lib_h lib, ucc_lib_attr_t* attr) {
  if (lib == nullptr || lib->magic != ucc::host::kLibMagic || attr == nullptr) {
    UCC_ERROR("ucc_lib_get_attr: invalid library handle or attr");
    return UCC_ERR_INVALID_PARAM;
  }
  if (attr->mask & UCC_LIB_ATTR_FIELD_THREAD_MODE)
    attr->thread_mode = lib->thread_mode;
  if (attr->mask & UCC_LIB_ATTR_FIELD_COLL_TYPES)
    attr->coll_types = lib->coll_types;
  if (attr->mask & UCC_LIB_ATTR_FIELD_REDUCTION_TYPES)
    attr->reduction_types =
        (1ull << UCC_OP_SUM) | (1ull << UCC_OP_PROD) | (1ull << UCC_OP_MAX) |
        (1ull << UCC_OP_MIN) | (1ull << UCC_OP_LAND) | (1ull << UCC_OP_LOR) |
        (1ull << UCC_OP_LXOR) | (1ull << UCC_OP_BAND) | (1ull << UCC_OP_BOR) |
        (1ull << UCC_OP_BXOR) | (1ull << UCC_OP_MAXLOC) |
        (1ull << UCC_OP_MINLOC) | (1ull << UCC_OP_AVG);
  if (attr->mask & UCC_LIB_ATTR_FIELD_SYNC_TYPE)
    attr->sync_type = UCC_NO_SYNC_COLLECTIVES;
  return UCC_OK;
}

}  // extern "C"

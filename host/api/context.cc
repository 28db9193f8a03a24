// Contexts: the engine (inline: in this process), the channel it is fed
// through, and completion reaping in ucc_context_progress.
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "host/api/datatype.h"
#include "host/api/graveyard.h"
#include "host/api/objects.h"
#include "host/coll/request.h"
#include "offload/team_addr.h"
#include "platform/base/hot.h"
#include "platform/mem/cma.h"
#include "platform/os/clock.h"
#include "platform/os/host_id.h"
#include "platform/os/log.h"

using ucc::host::Scope;
using ucc::off::Status;

namespace {

// UCC_FIRMWARE_SOCKET may list several daemons ("a.sock,b.sock"): the
// context with OOB rank r takes entry r mod n, so that the processes of
// one host can play the ranks of several emulated nodes.
void pick_socket(char* path, size_t cap, uint32_t rank) {
  if (strchr(path, ',') == nullptr) return;
  uint32_t n = 1;
  for (const char* c = path; *c != 0; ++c) n += *c == ',' ? 1 : 0;
  const char* start = path;
  for (uint32_t k = rank % n; k != 0; --k) start = strchr(start, ',') + 1;
  size_t len = strcspn(start, ",");
  if (len >= cap) len = cap - 1;
  memmove(path, start, len);
  path[len] = 0;
}

constexpr uint32_t kSubmitRing = 1024;

bool valid_lib(ucc_lib_h lib) {
  return lib != nullptr && lib->magic == ucc::host::kLibMagic;
}

// Runs one OOB allgather to completion (context creation is blocking in
// ucc.h's model; the user's OOB progresses by itself).
ucc_status_t oob_allgather(const ucc_oob_coll_t& oob, void* src, void* dst,
                           size_t len) {
  void* req = nullptr;
  ucc_status_t st = oob.allgather(src, dst, len, oob.coll_info, &req);
  if (st != UCC_OK) return st;
  ucc::plat::Backoff b;
  while ((st = oob.req_test(req)) == UCC_INPROGRESS) b.idle();
  oob.req_free(req);
  return st;
}

// What each ep of a context OOB tells the others at context creation.
struct EpInfo {
  uint64_t host[2];  // platform/os/host_id.h
  ucc::host::MailboxAddr mbox;
};

// With an OOB over more than one ep: connects the context mailboxes of the
// eps on this host (those on other hosts are reached through team OOBs
// only). Two allgathers: the eps' information, then each ep's outcome, so
// that all of them succeed or fail together, and so that each may close
// its mailbox fd once everyone has mapped it.
ucc_status_t context_wireup(ucc_context* ctx) {
  const uint32_t n = ctx->oob.n_oob_eps;
  EpInfo mine{};
  memcpy(mine.host, ctx->settings.link.host, sizeof(mine.host));
  Status ms = ctx->mbox.open(n, ctx->oob.oob_ep, &mine.mbox);
  if (ucc::off::failed(ms)) mine.mbox = ucc::host::MailboxAddr{};
  // Every array before the first exchange: a rank that cannot take part
  // must fail before the others wait for it. The eps' information goes as
  // soon as the mailbox has taken its host's part, before the second
  // exchange, which waits for every ep: a rank of a job of thousands holds
  // it only for that moment.
  ucc::base::Arena scratch, st_mem;
  EpInfo* all = nullptr;
  ucc::host::MailboxAddr* addrs = nullptr;
  int32_t* sts = nullptr;
  for (int pass = 0; pass < 2; ++pass) {
    all = scratch.take<EpInfo>(n);
    addrs = scratch.take<ucc::host::MailboxAddr>(n);
    sts = st_mem.take<int32_t>(n);
    if (pass == 0 && (!scratch.commit() || !st_mem.commit())) break;
  }
  ucc_status_t st = UCC_ERR_NO_MEMORY;
  if (all != nullptr && addrs != nullptr && sts != nullptr)
    st = oob_allgather(ctx->oob, &mine, all, sizeof(EpInfo));
  if (st == UCC_OK) {
    int32_t my_st = ucc::off::failed(ms) ? ucc::host::to_ucc(ms) : UCC_OK;
    for (uint32_t i = 0; i < n; ++i) {
      addrs[i] = ucc::off::same_host(all[i].host, mine.host)
                     ? all[i].mbox
                     : ucc::host::MailboxAddr{};
    }
    if (my_st == UCC_OK && ucc::off::failed(ctx->mbox.attach(addrs)))
      my_st = UCC_ERR_NO_MESSAGE;
    scratch.release();
    st = oob_allgather(ctx->oob, &my_st, sts, sizeof(int32_t));
    if (st == UCC_OK) st = static_cast<ucc_status_t>(my_st);
    for (uint32_t i = 0; st == UCC_OK && i < n; ++i) {
      if (sts[i] != UCC_OK) {
        UCC_ERROR("ucc_context_create: ep %u could not join the context", i);
        st =
            sts[i] < 0 ? static_cast<ucc_status_t>(sts[i]) : UCC_ERR_NO_MESSAGE;
      }
    }
  }
  // Every ep has mapped our mailbox, or creation failed: the fd can go.
  ctx->mbox.seal();
  return st;
}

}  // namespace

namespace ucc::host {

void context_fit_spin(ucc_context* ctx, uint32_t host_ranks) {
  // host_ranks: the team's ranks on this machine's CPUs (team.cc,
  // cpu_sharers), this host's and those of hosts on the same kernel.
  uint32_t spin = ctx->settings.poll_spin;
  if (spin == kPollSpinAuto) {
    // Oversubscribed ranks must hand their core over almost at once; ranks
    // with a core each may spin a little longer for lower latency. The
    // CPUs are UCC_HOST_CPUS (auto: the machine's online ones).
    if (host_ranks > ctx->max_host_ranks) ctx->max_host_ranks = host_ranks;
    spin = ctx->max_host_ranks > ctx->settings.link.engine.cpus ? 2 : 128;
    // Emu: nothing to do here while waiting; the daemon needs the CPU.
    if (ctx->settings.link.emu) spin = 2;
  }
  ctx->backoff.set_spin_limit(spin);
}

}  // namespace ucc::host

extern "C" {

ucc_status_t ucc_context_config_read(ucc_lib_h lib, const char* filename,
                                     ucc_context_config_h* config) {
  if (!valid_lib(lib) || config == nullptr) {
    UCC_ERROR("ucc_context_config_read: invalid library handle or config");
    return UCC_ERR_INVALID_PARAM;
  }
  auto* c =
      static_cast<ucc_context_config*>(calloc(1, sizeof(ucc_context_config)));
  if (c == nullptr) return UCC_ERR_NO_MEMORY;
  c->lib = lib;
  Status st = ucc::host::config_read(&c->values, Scope::kContext,
                                     lib->env_prefix, filename);
  if (ucc::off::failed(st)) {
    free(c);
    return ucc::host::to_ucc(st);
  }
  *config = c;
  return UCC_OK;
}

void ucc_context_config_release(ucc_context_config_h config) { free(config); }

void ucc_context_config_print(const ucc_context_config_h config, FILE* stream,
                              const char* title,
                              ucc_config_print_flags_t print_flags) {
  if (config == nullptr) return;
  ucc::host::config_print(config->values, stream, title,
                          print_flags & UCC_CONFIG_PRINT_HEADER,
                          print_flags & UCC_CONFIG_PRINT_DOC);
}

ucc_status_t ucc_context_config_modify(ucc_context_config_h config,
                                       const char* component, const char* name,
                                       const char* value) {
  if (config == nullptr) {
    UCC_ERROR("ucc_context_config_modify: config is NULL");
    return UCC_ERR_INVALID_PARAM;
  }
  // As in UCC: NULL names the core table, "all" every collective layer
  // (here the one table), and "cl/<name>" or "tl/<name>" lists name
  // components, of which this library has none: not found, said at info
  // level, since runtimes probe for optional components this way.
  if (component != nullptr && strcmp(component, "all") != 0) {
    const bool named =
        strncmp(component, "cl/", 3) == 0 || strncmp(component, "tl/", 3) == 0;
    if (!named) {
      UCC_ERROR(
          "ucc_context_config_modify: invalid component '%s' (expected "
          "cl/<name> or tl/<name>)",
          component);
      return UCC_ERR_INVALID_PARAM;
    }
    UCC_INFO(
        "ucc_context_config_modify: component %s is not part of this "
        "library",
        component);
    return UCC_ERR_NOT_FOUND;
  }
  return ucc::host::to_ucc(
      ucc::host::config_modify(&config->values, name, value));
}

ucc_status_t ucc_context_create(ucc_lib_h lib,
                                const ucc_context_params_t* params,
                                const ucc_context_config_h config,
                                ucc_context_h* context) {
  if (!valid_lib(lib) || params == nullptr || context == nullptr) {
    UCC_ERROR("ucc_context_create: invalid lib, params or context pointer");
    return UCC_ERR_INVALID_PARAM;
  }
  ucc::host::ConfigValues defaults;
  const ucc::host::ConfigValues* values = nullptr;
  if (config != nullptr) {
    values = &config->values;
  } else {
    Status st = ucc::host::config_read(&defaults, Scope::kContext,
                                       lib->env_prefix, nullptr);
    if (ucc::off::failed(st)) return ucc::host::to_ucc(st);
    values = &defaults;
  }
  ucc::host::ContextSettings settings;
  if (ucc::off::failed(ucc::host::context_settings(*values, &settings)))
    return UCC_ERR_INVALID_PARAM;
  // The inline engine reduces generic datatypes through their callbacks.
  settings.link.user_reduce = {&ucc::host::generic_reduce, nullptr};
  // Single copy: the inline engine reads peers' buffers with cross-memory
  // attach, where the kernel allows it.
  ucc::plat::host_identity(settings.host_id, settings.link.host);
  uint64_t& cma_min = settings.link.engine.cma_min;
  if (cma_min != 0 && (settings.link.emu || !ucc::plat::cma_enable_peers()))
    cma_min = 0;

  // Without the TYPE field a context is shared, as it always was here.
  const int64_t type = (params->mask & UCC_CONTEXT_PARAM_FIELD_TYPE)
                           ? ucc::host::enum_bits(params->type)
                           : int64_t{UCC_CONTEXT_SHARED};
  if (type != UCC_CONTEXT_EXCLUSIVE && type != UCC_CONTEXT_SHARED) {
    UCC_ERROR("ucc_context_create: unknown context type %lld",
              static_cast<long long>(type));
    return UCC_ERR_INVALID_PARAM;
  }
  bool has_oob = (params->mask & UCC_CONTEXT_PARAM_FIELD_OOB) != 0;
  if (has_oob) {
    const ucc_oob_coll_t& o = params->oob;
    if (o.allgather == nullptr || o.req_test == nullptr ||
        o.req_free == nullptr || o.n_oob_eps == 0 || o.oob_ep >= o.n_oob_eps) {
      UCC_ERROR(
          "ucc_context_create: incomplete OOB (callbacks, n_oob_eps "
          "%u, oob_ep %u)",
          o.n_oob_eps, o.oob_ep);
      return UCC_ERR_INVALID_PARAM;
    }
  }

  auto* ctx = static_cast<ucc_context*>(
      ucc::host::grave_take(ucc::host::Grave::kContext, sizeof(ucc_context)));
  if (ctx == nullptr) return UCC_ERR_NO_MEMORY;
  new (ctx) ucc_context();
  ctx->lib = lib;
  ctx->fork_gen = ucc::host::g_fork_gen.load(std::memory_order_relaxed);
  ctx->settings = settings;
  ctx->type = static_cast<ucc_context_type_t>(type);
  // An exclusive context belongs to one team used by one thread at a time
  // (as in UCC), so it needs no lock even in UCC_THREAD_MULTIPLE.
  ctx->mt = lib->thread_mode == UCC_THREAD_MULTIPLE &&
            ctx->type != UCC_CONTEXT_EXCLUSIVE;
  ctx->has_oob = has_oob;
  if (has_oob) ctx->oob = params->oob;
  ctx->addr[0] = static_cast<uint64_t>(getpid());
  ctx->addr[1] = ctx->settings.link.host[0] ^ ctx->settings.link.host[1];
  ucc::host::context_fit_spin(ctx, 1);

  const ucc::off::EngineConfig& ec = settings.link.engine;
  uint32_t ncomp = ec.max_teams * ec.team_queue;
  ucc::host::LinkConfig& link = ctx->settings.link;
  pick_socket(ctx->settings.socket_path, sizeof(ctx->settings.socket_path),
              has_oob ? static_cast<uint32_t>(params->oob.oob_ep) : 0);
  link.socket_path = ctx->settings.socket_path;
  link.daemon_path = ctx->settings.daemon_path;
  link.dpu_addr = ctx->settings.dpu_addr;
  link.net.tcp.iface = ctx->settings.net_if;
  link.net.verbs.device = ctx->settings.net_devices;
  link.net.verbs.lib = ctx->settings.verbs_lib;
  const ucc_mem_map_params_t* attach =
      (params->mask & UCC_CONTEXT_PARAM_FIELD_MEM_PARAMS) ? &params->mem_params
                                                          : nullptr;
  // Segments each, the context's own (mem_params) beside the user's.
  link.mem_map_handles =
      (settings.mem_map_handles + ucc::host::context_handles(attach)) * 16;
  Status st = link.emu ? ucc::host::open_daemon_link(link, kSubmitRing, ncomp,
                                                     &ctx->ch, &ctx->engine)
                       : ucc::host::open_inline_link(link, kSubmitRing, ncomp,
                                                     &ctx->ch, &ctx->engine);
  ucc_status_t ust = ucc::host::to_ucc(st);
  if (ust == UCC_OK) ctx->remote_engine = ctx->engine->remote();
  if (ust == UCC_OK && has_oob && ctx->oob.n_oob_eps > 1)
    ust = context_wireup(ctx);
  if (ust == UCC_OK)
    ust = ucc::host::memmaps_init(ctx, settings.mem_map_handles, attach);
  if (ust != UCC_OK) {
    delete ctx->engine;
    ctx->~ucc_context();
    ucc::host::grave_bury(ucc::host::Grave::kContext, ctx);
    return ust;
  }
  ctx->magic = ucc::host::kCtxMagic;
  ++lib->ncontexts;
  *context = ctx;
  return UCC_OK;
}

UCC_HOT ucc_status_t ucc_context_progress(ucc_context_h ctx) {
  if (ctx == nullptr || ctx->magic != ucc::host::kCtxMagic) {
    UCC_ERROR("ucc_context_progress: invalid context handle");
    return UCC_ERR_INVALID_PARAM;
  }
  if (ucc::host::forked_away(ctx, "ucc_context_progress"))
    return UCC_ERR_INVALID_PARAM;
  ucc::host::Request* due = nullptr;
  uint64_t events = 0;
  {
    ucc::host::Guard g(ctx->lock, ctx->mt);
    events = ctx->engine->progress();
    events += ucc::host::reap(ctx, &due);
    events += ucc::host::release_gated(ctx, &due);
    if (ctx->ees != nullptr) events += ucc::host::ee_progress(ctx);
  }
  // Yield outside the lock so other threads of a shared context go on.
  if (events == 0) {
    ctx->backoff.idle();
  } else {
    ctx->backoff.reset();
  }
  ucc::host::run_callbacks(due);
  return UCC_OK;
}

namespace {

// How long destroying a context lets collectives already posted on its
// teams run before it drops them (docs/api.md, "Contexts and teams").
constexpr uint64_t kDestroyDrainNs = 1000000000ull;

// The teams a context still has when it is destroyed (runtimes leave the
// communicators a program never freed): their posted collectives run to
// their end (peers may need our part of them) for up to kDestroyDrainNs,
// then every team is destroyed. A team still being created is dropped:
// an OOB exchange of the user's under way is left to the user.
void reap_teams(ucc_context* ctx) {
  UCC_DEBUG("ucc_context_destroy: destroying the %d teams still there",
            ctx->nteams);
  const uint64_t deadline = ucc::plat::now_ns() + kDestroyDrainNs;
  while ((ctx->posted != nullptr || ctx->gated != nullptr) &&
         ucc::plat::now_ns() < deadline) {
    ucc::host::Request* due = nullptr;
    uint64_t events = ctx->engine->progress();
    events += ucc::host::reap(ctx, &due);
    events += ucc::host::release_gated(ctx, &due);
    ucc::host::run_callbacks(due);
    if (events == 0) sched_yield();
  }
  while (ctx->live_teams != nullptr) {
    ucc_team* t = ctx->live_teams;
    t->oob_req = nullptr;
    t->boot_req = nullptr;  // a request of the parent team, dropped with it
    ucc::host::team_teardown(ctx, t, ucc::host::kReapedMagic);
  }
}

}  // namespace

ucc_status_t ucc_context_destroy(ucc_context_h ctx) {
  if (ctx == nullptr || ctx->magic != ucc::host::kCtxMagic) {
    UCC_ERROR("ucc_context_destroy: invalid context handle");
    return UCC_ERR_INVALID_PARAM;
  }
  if (ctx->nteams != 0) reap_teams(ctx);
  ucc::host::ee_context_gone(ctx);
  ucc::host::gpu_direct_context_fini(ctx);
  ucc::host::gpu_context_fini(&ctx->gpu);
  ctx->magic = ucc::host::kDeadMagic;
  ucc::host::memmaps_fini(ctx);  // handles still mapped: unmapped now
  delete ctx->engine;
  --ctx->lib->ncontexts;
  ctx->~ucc_context();
  // Never freed: a stale handle must find a dead magic (graveyard.h).
  ucc::host::grave_bury(ucc::host::Grave::kContext, ctx);
  return UCC_OK;
}

ucc_status_t ucc_context_get_attr(ucc_context_h ctx, ucc_context_attr_t* attr) {
  if (ctx == nullptr || ctx->magic != ucc::host::kCtxMagic || attr == nullptr) {
    UCC_ERROR("ucc_context_get_attr: invalid context handle or attr");
    return UCC_ERR_INVALID_PARAM;
  }
  if (attr->mask & UCC_CONTEXT_ATTR_FIELD_TYPE) attr->type = ctx->type;
  if (attr->mask & UCC_CONTEXT_ATTR_FIELD_SYNC_TYPE)
    attr->sync_type = UCC_NO_SYNC_COLLECTIVES;
  if (attr->mask & UCC_CONTEXT_ATTR_FIELD_CTX_ADDR) attr->ctx_addr = ctx->addr;
  if (attr->mask & UCC_CONTEXT_ATTR_FIELD_CTX_ADDR_LEN)
    attr->ctx_addr_len = sizeof(ctx->addr);
  if (attr->mask & UCC_CONTEXT_ATTR_FIELD_WORK_BUFFER_SIZE)
    attr->global_work_buffer_size = 0;
  return UCC_OK;
}

}  // extern "C"

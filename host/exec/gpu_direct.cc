// GPU buffers read and written in place across the ranks of one host
// (see gpu_direct.h).
#include "host/exec/gpu_direct.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "device/gpu/gpu_fatbin.h"
#include "device/gpu/gpu_kernels.h"
#include "host/api/objects.h"
#include "host/coll/coll_args.h"
#include "host/coll/request.h"
#include "host/exec/gpu_direct_impl.h"
#include "offload/coll_traits.h"
#include "platform/os/log.h"

namespace ucc::host {
using namespace gd;
using cu::CtxScope;

namespace {

// Loads the kernels into the buffers' CUDA context, once per UCC context.
bool load_kernels(ucc_context* ctx, GpuDirectCtx& g, cu::CuCtx cuctx) {
  if (g.tried) return g.ok && g.cuctx == cuctx;
  g.tried = true;
  const cu::Driver& d = drv();
  if (gpu::fatbin_size() == 0) {
    UCC_INFO(
        "GPU direct: libucc was built without nvcc, so it has no kernels: "
        "GPU buffers are staged");
    return false;
  }
  CtxScope in(d, cuctx);
  cu::CuResult cr = in.ok() ? d.module_load_data(&g.mod, gpu::fatbin()) : 1;
  for (int t = 0; t < static_cast<int>(off::DType::kCount) && cr == 0; ++t) {
    const char* name = gpu::reduce_kernel_name(static_cast<off::DType>(t));
    if (name != nullptr)
      cr = d.module_get_function(&g.reduce_fn[t], g.mod, name);
    name = gpu::loc_kernel_name(static_cast<off::DType>(t));
    if (cr == cu::kSuccess && name != nullptr)
      cr = d.module_get_function(&g.loc_fn[t], g.mod, name);
  }
  if (cr == cu::kSuccess)
    cr = d.module_get_function(&g.flag_fn, g.mod, gpu::kFlagKernel);
  if (cr == cu::kSuccess)
    cr = d.module_get_function(&g.copy_fn, g.mod, gpu::kCopyKernel);
  if (cr == cu::kSuccess)
    cr = d.module_get_function(&g.swap_fn, g.mod, gpu::kSwapKernel);
  if (cr == cu::kSuccess) cr = d.mem_alloc(&g.counter, 64);
  if (cr == cu::kSuccess) cr = d.memset_d32(g.counter, 0, 16);
  if (cr != cu::kSuccess) {
    UCC_INFO(
        "GPU direct: loading the kernels failed (%s): GPU buffers are "
        "staged",
        cu::error_name(d, cr));
    return false;
  }
  g.cap = ctx->settings.gpu_ipc_cache;
  g.exp = static_cast<Export*>(calloc(g.cap, sizeof(Export)));
  g.imp = static_cast<Import*>(calloc(g.cap, sizeof(Import)));
  if (g.exp == nullptr || g.imp == nullptr) return false;
  g.cuctx = cuctx;
  g.ok = true;
  return true;
}

GpuDirectCtx* context_state(ucc_context* ctx) {
  if (ctx->gpu.direct == nullptr)
    ctx->gpu.direct =
        static_cast<GpuDirectCtx*>(calloc(1, sizeof(GpuDirectCtx)));
  return ctx->gpu.direct;
}

// The team's flag page and token area (its first direct collective).
GpuDirectTeam* team_state(ucc_team* team) {
  if (team->gd != nullptr) return team->gd;
  auto* t = static_cast<GpuDirectTeam*>(calloc(1, sizeof(GpuDirectTeam)));
  if (t == nullptr) return nullptr;
  t->fd = -1;
  // The words of every request slot, then their block tables (pages of
  // a memfd are made when first written: only v-collectives' are).
  const size_t pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t words = size_t{team->nreqs} * kSlotBytes;
  const size_t tables = size_t{team->nreqs} * kVTableBytes;
  t->words_bytes = static_cast<uint32_t>((words + pg - 1) / pg * pg);
  t->page_bytes =
      static_cast<uint32_t>(t->words_bytes + (tables + pg - 1) / pg * pg);
  t->tokens_bytes = size_t{team->nreqs} * (team->size + 1) * kTokenBytes;
  t->fd = memfd_create("ucc-gpu-flags", MFD_CLOEXEC);
  struct stat sb {};
  bool ok = t->fd >= 0 && ftruncate(t->fd, t->page_bytes) == 0 &&
            fstat(t->fd, &sb) == 0;
  if (ok) {
    void* p = mmap(nullptr, t->page_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                   t->fd, 0);
    t->page = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
    t->ino = sb.st_ino;
    t->dev = sb.st_dev;
    t->tokens = static_cast<uint8_t*>(calloc(1, t->tokens_bytes));
    t->peers = static_cast<PeerPage*>(calloc(team->size, sizeof(PeerPage)));
    t->vblk = static_cast<uint64_t*>(
        calloc(size_t{4} * team->size * team->size, sizeof(uint64_t)));
    t->vside = static_cast<VSide*>(calloc(1, sizeof(VSide)));
    ok = t->page != nullptr && t->tokens != nullptr && t->peers != nullptr &&
         t->vblk != nullptr && t->vside != nullptr;
  }
  if (!ok) {
    UCC_ERROR("GPU direct: cannot make the team's flag page (%s)",
              strerror(errno));
    team->gd = t;  // freed by gpu_direct_team_fini
    gpu_direct_team_fini(team);
    return nullptr;
  }
  team->gd = t;
  return t;
}

// Why the direct path leaves a collective to staging (GpuDirectReq::why),
// said once per process and reason (gpu_direct_say_staged).
enum Why : uint8_t {
  kTaken,
  kOff,
  kHosts,
  kTagged,
  kSet,
  kTeamSize,
  kArith,
  kOther,
  kMemory,
  kSecondCtx,
  kNoKernels,
  kWhyCount
};
constexpr const char* kWhyText[kWhyCount] = {
    "",
    "UCC_GPU_DIRECT=no",
    "teams that span hosts",
    "tagged and one-sided collectives",
    "collectives on active sets",
    "teams of one rank or of more than 32",
    "datatypes and ops without GPU arithmetic (128-bit and 80-bit floats)",
    "empty collectives",
    "managed memory, or sides that are not device memory",
    "buffers of a second CUDA context",
    "collectives without kernels (an earlier line says why)"};
std::atomic<uint32_t> g_said{0};

// Whether the direct path takes this collective, whatever its memory: the
// collectives, datatypes and ops it has, untagged, on the whole team
// (kTaken), else why not. A v-collective's count is this rank's own and
// may be 0 where the others' are not: it takes the path all the same.
Why coll_applies(const off::CollDesc& d, uint32_t n) {
  if (d.flags & (off::kDescTagged | off::kDescOneSided)) return kTagged;
  if (d.set_size != 0) return kSet;
  if (n < 2 || n > gpu::kMaxPeers) return kTeamSize;
  if (d.count == 0 && !is_v(d.coll)) return kOther;
  switch (d.coll) {
    case off::CollType::kAllreduce:
    case off::CollType::kReduce:
    case off::CollType::kReduceScatter:
    case off::CollType::kReduceScatterv:
      return gpu::kernel_reduces(d.dtype, d.op) ? kTaken : kArith;
    case off::CollType::kAllgather:
    case off::CollType::kBcast:
    case off::CollType::kGather:
    case off::CollType::kScatter:
    case off::CollType::kAllgatherv:
    case off::CollType::kGatherv:
    case off::CollType::kScatterv:
    case off::CollType::kAlltoall:
    case off::CollType::kAlltoallv:
      return kTaken;
    default:
      return kOther;
  }
}

// Checks the tokens of every rank (each rank checks all of them: one that
// does not fit fails the collective everywhere without a word from the
// worker) and, on the worker, maps every fitting peer's flag page, also
// past one that does not fit or cannot be mapped, so that it can tell
// the others it gave up (tell_failed). False (logged) on a token that
// does not fit.
bool check_tokens(GpuDirectTeam& t, Request* r, const Token* tok) {
  const uint32_t n = r->team->size;
  bool ok = true;
  for (uint32_t p = 0; p < n; ++p) {
    const Token& k = tok[p];
    if (k.magic != kTokenMagic || k.seq != r->gd.seq ||
        k.flag_words > k.flag_bytes || k.slot >= k.flag_words / kSlotBytes) {
      UCC_ERROR(
          "GPU direct: rank %u's token for collective %llu does not fit "
          "(magic %#x, collective %llu, slot %u; did every rank declare the "
          "same memory types?)",
          p, static_cast<unsigned long long>(r->gd.seq), k.magic,
          static_cast<unsigned long long>(k.seq), k.slot);
      ok = false;
    } else if (r->gd.worker && p != r->team->rank &&
               (!map_peer_page(t.peers[p], k, true) ||
                k.slot >= t.peers[p].words / kSlotBytes)) {
      ok = false;
    } else if ((k.flags & kTokBroken) != 0) {
      UCC_ERROR(
          "GPU direct: rank %u could not describe its buffers for collective "
          "%llu",
          p, static_cast<unsigned long long>(r->gd.seq));
      ok = false;
    }
  }
  return ok;
}

// The worker gives up on a collective after the exchange: every peer
// whose page it has mapped ends it with an error instead of waiting for
// its done word (a peer whose page it could not map waits for it, or for
// the worker's exit).
void tell_failed(GpuDirectTeam& t, Request* r, const Token* tok) {
  if (!r->gd.worker) return;
  for (uint32_t p = 0; p < r->team->size; ++p) {
    if (p == r->team->rank || t.peers[p].map == nullptr ||
        tok[p].slot >= t.peers[p].words / kSlotBytes)
      continue;
    slot_at(t.peers[p].map, tok[p].slot)
        ->failed.store(r->gd.seq, std::memory_order_release);
  }
}

// The caller's work on this rank's buffers has ended: a peer says so in
// its ready word at once, even before the exchange ends (the worker reads
// it only after).
void input_ready(GpuDirectTeam& t, Request* r) {
  GpuDirectReq& q = r->gd;
  q.input_ok = true;
  if (!q.worker)
    slot_at(t.page, r->index)->ready.store(q.seq, std::memory_order_release);
}

// Whether the slot's owner gave up collective `seq` (or a later one).
bool gave_up(const Slot* s, uint64_t seq) {
  return s->failed.load(std::memory_order_acquire) >= seq;
}

// Whether a process still exists (a peer the wait depends on).
bool alive(uint32_t pid) {
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

}  // namespace

ucc_status_t gpu_direct_init(ucc_context* ctx, ucc_team* team, Request* r,
                             off::CollDesc* d) {
  GpuDirectReq& q = r->gd;
  q.on = false;
  q.why = !ctx->settings.gpu_direct ? kOff
          : !team->one_host         ? kHosts
                                    : coll_applies(*d, team->size);
  if (q.why != kTaken) return UCC_OK;
  q.why = kMemory;
  // Every side this collective names must be device memory of one context.
  const uint8_t declared[2] = {d->src.mem_type, d->dst.mem_type};
  const off::BufRef* side[2] = {&d->src, &d->dst};
  cu::CuCtx cuctx = nullptr;
  for (int i = 0; i < 2; ++i) {
    if (side[i]->bytes == 0) continue;
    if (declared[i] == kMemHost) return UCC_OK;
    if (declared[i] == kMemUnknown && !cu::driver_in_process()) return UCC_OK;
    const cu::Driver* dr = cu::driver();
    if (dr == nullptr) return UCC_OK;
    if (!dr->direct) {  // said when the driver loaded
      q.why = kNoKernels;
      return UCC_OK;
    }
    cu::CuCtx c = nullptr;
    if (cu::classify(*dr, reinterpret_cast<const void*>(side[i]->addr), &c) !=
        cu::MemKind::kDevice)
      return UCC_OK;
    if (cuctx != nullptr && c != cuctx) return UCC_OK;
    cuctx = c;
  }
  // A v-collective whose sides are all empty here: the buffers' context
  // is the one this context's GPU work runs in, else the thread's.
  if (cuctx == nullptr && is_v(d->coll) &&
      (declared[0] != kMemHost || declared[1] != kMemHost) &&
      cu::driver_in_process()) {
    const cu::Driver* dr = cu::driver();
    cuctx = ctx->gpu.cuctx;
    if (cuctx == nullptr && dr != nullptr && dr->direct &&
        dr->ctx_get_current != nullptr && dr->ctx_get_current(&cuctx) != 0)
      cuctx = nullptr;
  }
  if (cuctx == nullptr) return UCC_OK;
  q.why = kNoKernels;
  GpuDirectCtx* g = context_state(ctx);
  if (g == nullptr || !load_kernels(ctx, *g, cuctx)) return UCC_OK;
  // The context's stream (the worker's work runs there), made once.
  if (ctx->gpu.copy == nullptr) {
    CtxScope in(drv(), cuctx);
    if (!in.ok() ||
        drv().stream_create(&ctx->gpu.copy, cu::kStreamNonBlocking) != 0) {
      ctx->gpu.copy = nullptr;
      return UCC_OK;
    }
    ctx->gpu.cuctx = cuctx;
  }
  q.why = kSecondCtx;
  if (ctx->gpu.cuctx != cuctx) return UCC_OK;  // a second GPU: staged
  GpuDirectTeam* t = team_state(team);
  if (t == nullptr) return UCC_ERR_NO_MEMORY;
  CtxScope in(drv(), cuctx);
  if (q.in_ev == nullptr &&
      drv().event_create(&q.in_ev, cu::kEventDisableTiming) != cu::kSuccess)
    return UCC_ERR_NO_MESSAGE;
  if (q.done_ev == nullptr &&
      drv().event_create(&q.done_ev, cu::kEventDisableTiming) != cu::kSuccess)
    return UCC_ERR_NO_MESSAGE;
  q.user = *d;
  q.user.src.mem_type = q.user.dst.mem_type = kMemHost;
  q.worker = team->rank == 0;
  q.phase = kIdle;
  q.nrefs = 0;
  // The engine carries an allgather of the tokens instead.
  off::CollDesc x = *d;
  x.flags = 0;
  x.coll = off::CollType::kAllgather;
  x.dtype = off::DType::kUint8;
  x.op = off::ROp::kNone;
  x.alg = 0;
  x.root = 0;
  x.count = kTokenBytes;
  Token* mine = token_at(*t, r, team->size);
  x.src = off::BufRef{reinterpret_cast<uintptr_t>(mine), kTokenBytes, 0, 0, {}};
  x.dst = off::BufRef{reinterpret_cast<uintptr_t>(token_at(*t, r, 0)),
                      kTokenBytes * team->size,
                      0,
                      0,
                      {}};
  x.src_counts = x.src_displs = x.dst_counts = x.dst_displs = 0;
  *d = x;
  q.on = true;
  q.why = kTaken;
  return UCC_OK;
}

void gpu_direct_say_staged(const Request* r) {
  const uint8_t why = r->gd.why;
  if (why == kTaken || why >= kWhyCount) return;
  const uint32_t bit = 1u << why;
  if (g_said.fetch_or(bit, std::memory_order_relaxed) & bit) return;
  UCC_INFO(
      "GPU buffers staged through host memory: the direct path does not take "
      "%s (said once)",
      kWhyText[why]);
}

ucc_status_t gpu_direct_post(ucc_context* ctx, Request* r) {
  GpuDirectReq& q = r->gd;
  GpuDirectCtx& g = *ctx->gpu.direct;
  GpuDirectTeam& t = *r->team->gd;
  const cu::Driver& d = drv();
  q.seq = ++t.seq;
  q.polls = 0;
  q.input_ok = false;
  q.more = false;
  q.next = 0;
  release_refs(&g, q);
  CtxScope in(d, g.cuctx);
  if (q.on_stream) {
    // Triggered: the stream has produced the input already. An event on
    // the legacy stream would wait for the caller's stream too, if it is
    // a blocking one, and that stream waits for this collective.
    q.on_stream = false;
    input_ready(t, r);
  } else {
    // The caller's work on the buffers so far (legacy stream: it waits
    // for every blocking stream, as a plain post's staging copy does).
    const cu::CuResult cr = in.ok() ? d.event_record(q.in_ev, nullptr) : 1;
    if (cr != cu::kSuccess) {
      UCC_ERROR("GPU direct: cuEventRecord failed (%s)", cu::error_name(d, cr));
      return UCC_ERR_NO_MESSAGE;
    }
  }
  Token* mine = token_at(t, r, r->team->size);
  if (!fill_token(g, t, r, mine)) mine->flags |= kTokBroken;
  q.phase = kExchange;
  ++g.stats.collectives;
  return UCC_OK;
}

ucc_status_t gpu_direct_progress(ucc_context* ctx, Request* r,
                                 ucc_status_t xst) {
  GpuDirectReq& q = r->gd;
  GpuDirectCtx& g = *ctx->gpu.direct;
  GpuDirectTeam& t = *r->team->gd;
  const uint32_t n = r->team->size;
  const Token* tok = token_at(t, r, 0);
  const cu::Driver& d = drv();
  auto fail = [&](ucc_status_t st) {
    release_refs(&g, q);
    q.phase = kIdle;
    return st;
  };
  // Failing after the exchange: each rank says so in its own slot's
  // failed word, which the worker reads for its peers and the peers for
  // the worker; the worker also writes it into each peer's page it has
  // mapped. Nobody waits for a collective that will not run.
  auto give_up = [&]() {
    if (q.worker) tell_failed(t, r, tok);
    slot_at(t.page, r->index)->failed.store(q.seq, std::memory_order_release);
    return fail(UCC_ERR_NO_MESSAGE);
  };
  // The worker queues the collective, or its next batch.
  auto queue = [&](const Token* k) {
    const Queued w = queue_work(ctx, g, r, k, n);
    q.more = w == Queued::kMore;
    return w != Queued::kFailed;
  };
  // Whether the caller's work on the buffers has ended (input_ready).
  auto input = [&]() {
    if (q.input_ok) return cu::kSuccess;
    CtxScope in(d, g.cuctx);
    const cu::CuResult cr = d.event_query(q.in_ev);
    if (cr == cu::kSuccess) input_ready(t, r);
    return cr;
  };
  switch (q.phase) {
    case kExchange: {
      const cu::CuResult cr = input();
      if (cr != cu::kSuccess && cr != cu::kNotReady)
        return fail(UCC_ERR_NO_MESSAGE);
      if (xst == UCC_INPROGRESS) return UCC_INPROGRESS;
      if (xst != UCC_OK) return fail(xst);
      if (!check_tokens(t, r, tok)) return give_up();
      // A peer watches the worker's own failed word too (once mapped, the
      // page stays): the worker may give up on it without reaching it.
      if (!q.worker) map_peer_page(t.peers[0], tok[0], false);
      q.phase = kInput;
      [[fallthrough]];
    }
    case kInput: {
      const cu::CuResult cr = input();
      if (cr == cu::kNotReady) return UCC_INPROGRESS;
      if (cr != cu::kSuccess) return give_up();
      if (!q.worker) {
        q.phase = kWait;
        return UCC_INPROGRESS;
      }
      for (uint32_t p = 0; p < n; ++p) {
        if (p == r->team->rank) continue;
        const Slot* s = slot_at(t.peers[p].map, tok[p].slot);
        if (gave_up(s, q.seq)) {
          UCC_ERROR("GPU direct: rank %u gave up collective %llu", p,
                    static_cast<unsigned long long>(q.seq));
          return give_up();
        }
        if (s->ready.load(std::memory_order_acquire) < q.seq) {
          if (++q.polls % kLivenessEvery == 0 && !alive(tok[p].pid)) {
            UCC_ERROR("GPU direct: rank %u (process %u) has gone", p,
                      tok[p].pid);
            return give_up();
          }
          return UCC_INPROGRESS;
        }
      }
      q.phase = kRun;
      return queue(tok) ? UCC_INPROGRESS : give_up();
    }
    case kWait: {
      const uint32_t w =
          slot_at(t.page, r->index)->done.load(std::memory_order_acquire);
      if (static_cast<int32_t>(w - static_cast<uint32_t>(q.seq)) >= 0)
        return fail(UCC_OK);
      const PeerPage& wp = t.peers[0];
      if (gave_up(slot_at(t.page, r->index), q.seq) ||
          (wp.map != nullptr && tok[0].slot < wp.words / kSlotBytes &&
           gave_up(slot_at(wp.map, tok[0].slot), q.seq))) {
        UCC_ERROR("GPU direct: the worker gave up collective %llu",
                  static_cast<unsigned long long>(q.seq));
        return fail(UCC_ERR_NO_MESSAGE);
      }
      if (++q.polls % kLivenessEvery == 0 && !alive(tok[0].pid)) {
        UCC_ERROR("GPU direct: the worker (process %u) has gone", tok[0].pid);
        return fail(UCC_ERR_NO_MESSAGE);
      }
      return UCC_INPROGRESS;
    }
    case kRun: {
      CtxScope in(d, g.cuctx);
      const cu::CuResult cr = d.event_query(q.done_ev);
      if (cr == cu::kNotReady) return UCC_INPROGRESS;
      if (cr != cu::kSuccess) return give_up();
      if (!q.more) return fail(UCC_OK);
      // A batch of moves has completed: its entries go back to the
      // cache, and the next batch is queued.
      release_refs(&g, q);
      return queue(tok) ? UCC_INPROGRESS : give_up();
    }
    default:
      return fail(UCC_ERR_NO_MESSAGE);
  }
}

void gpu_direct_team_fini(ucc_team* team) {
  GpuDirectTeam* t = team->gd;
  ucc_context* ctx = team->ctx;
  GpuDirectCtx* g = ctx != nullptr ? ctx->gpu.direct : nullptr;
  const cu::Driver* d = cu::driver();
  for (uint32_t i = 0; team->reqs != nullptr && i < team->nreqs; ++i) {
    GpuDirectReq& q = team->reqs[i].gd;
    if (d == nullptr || (q.in_ev == nullptr && q.done_ev == nullptr)) continue;
    CtxScope in(*d, g != nullptr ? g->cuctx : nullptr);
    // Work a worker queued may still run: wait for it before its
    // mappings go.
    if (q.phase == kRun)
      while (d->event_query(q.done_ev) == cu::kNotReady) sched_yield();
    release_refs(g, q);
    if (q.in_ev != nullptr) d->event_destroy(q.in_ev);
    if (q.done_ev != nullptr) d->event_destroy(q.done_ev);
    q.in_ev = q.done_ev = nullptr;
    q.on = false;
  }
  if (t == nullptr) return;
  for (uint32_t p = 0; t->peers != nullptr && p < team->size; ++p) {
    PeerPage& pp = t->peers[p];
    if (pp.map == nullptr) continue;
    if (d != nullptr && pp.dptr != 0) d->host_unregister(pp.map);
    munmap(pp.map, pp.bytes);
  }
  if (t->page != nullptr) munmap(t->page, t->page_bytes);
  if (t->fd >= 0) close(t->fd);
  free(t->tokens);
  free(t->peers);
  free(t->vblk);
  free(t->vside);
  free(t);
  team->gd = nullptr;
}

void gpu_direct_context_fini(ucc_context* ctx) {
  GpuDirectCtx* g = ctx->gpu.direct;
  if (g == nullptr) return;
  UCC_DEBUG(
      "GPU direct: %llu collectives, %llu peer allocations opened, %llu "
      "batches that left more to do",
      static_cast<unsigned long long>(g->stats.collectives),
      static_cast<unsigned long long>(g->stats.opens),
      static_cast<unsigned long long>(g->stats.batches));
  const cu::Driver* d = cu::driver();
  if (d != nullptr && g->ok) {
    CtxScope in(*d, g->cuctx);
    for (uint32_t i = 0; i < g->cap; ++i)
      if (g->imp[i].live) close_import(*g, g->imp[i]);
    d->module_unload(g->mod);
    if (g->counter != 0) d->mem_free(g->counter);
  }
  free(g->exp);
  free(g->imp);
  free(g);
  ctx->gpu.direct = nullptr;
}

}  // namespace ucc::host

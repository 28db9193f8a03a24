// verbs_loop: a userspace test provider of the libibverbs API.
//
// Built as libverbs_loop.so, it is loaded in place of libibverbs.so.1 so
// that the verbs transport runs on machines without RDMA hardware. It
// exports the rdma-core entry points the transport resolves with dlsym
// and fills ibv_context::ops for the header's inline fast-path wrappers.
// ibv_context::abi_compat is not __VERBS_ABI_IS_EXTENDED, so
// verbs_get_ctx() returns NULL and every extended wrapper in verbs.h
// falls back to these exported functions.
//
// This file: device, context, PD, MR, CQ and SRQ, and the strings. QPs
// are in verbs_loop_qp.cc, the data path in verbs_loop_post.cc, dma-buf
// MRs and the byte copies in verbs_loop_dmabuf.cc, the shared tables in
// verbs_loop_fabric.{h,cc}. Errors follow rdma-core:
// int functions return an errno value, pointer functions return NULL
// with errno set.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs_loop_internal.h"
#include "verbs_loop_nic.h"

// verbs.h wraps these two in macros; we define the exported symbols.
#undef ibv_query_port
#undef ibv_reg_mr

namespace verbs_loop {
namespace {

ibv_device g_device;
pthread_mutex_t g_open_mu = PTHREAD_MUTEX_INITIALIZER;
int g_open_contexts = 0;
int32_t g_open_pid = 0;

void HostName(char* name) {
  memset(name, 0, kHostNameMax);
  if (gethostname(name, kHostNameMax - 1) != 0) strcpy(name, "localhost");
}

// Node GUID of a host: a hash of its name, so it is known before the
// fabric is mapped (ibv_get_device_guid needs no open device).
uint64_t HostGuid(const char* name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (const char* p = name; *p != '\0'; ++p) {
    h ^= uint8_t(*p);
    h *= 0x100000001b3ull;
  }
  return (0x0202c9ull << 40) | (h & 0xffffffffffull);
}

uint32_t NextRandom(LoopContext* lc) {
  // xorshift64*: unguessable enough that a stale or forged key misses.
  uint64_t x = lc->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  lc->rng = x;
  return uint32_t((x * 0x2545f4914f6cdd1dull) >> 32);
}

// Keys carry the MR slot in their low bits and random bits above, never
// zero in the random part.
uint32_t MakeKey(LoopContext* lc, uint32_t slot, uint32_t avoid) {
  for (;;) {
    uint32_t r = NextRandom(lc) << kMrIndexBits;
    uint32_t key = r | slot;
    if (r != 0 && key != avoid) return key;
  }
}

// Registration pins every page, which fails (EFAULT) where one is not
// mapped or not readable: a PROT_NONE range, as GPU memory is to the CPU
// without peer-memory support, cannot be registered. The maps are read
// rather than probed so that no page is faulted in.
bool Readable(const void* addr, size_t len) {
  uint64_t at = reinterpret_cast<uint64_t>(addr);
  uint64_t end;
  if (__builtin_add_overflow(at, uint64_t(len), &end)) return false;
  FILE* maps = fopen("/proc/self/maps", "re");
  if (maps == nullptr) return false;
  unsigned long lo, hi;
  char perms[8];
  // The lines are sorted by address: the first one that does not cover
  // `at` (a hole) or is not readable ends the walk.
  while (at < end && fscanf(maps, "%lx-%lx %7s%*[^\n]", &lo, &hi, perms) == 3) {
    if (hi <= at) continue;
    if (lo > at || perms[0] != 'r') break;
    at = hi;
  }
  fclose(maps);
  return at >= end;
}

ibv_mr* RegMr(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
              unsigned access) {
  if (pd == nullptr || length == 0 || !AccessOk(access)) {
    errno = EINVAL;
    return nullptr;
  }
  if (!Readable(addr, length)) {
    errno = EFAULT;
    return nullptr;
  }
  if (RegRefused(access)) {  // as past RLIMIT_MEMLOCK
    errno = ENOMEM;
    return nullptr;
  }
  MrEntry e{};
  e.kind = kMrMemory;
  e.fd = -1;
  e.access = access;
  e.addr = reinterpret_cast<uint64_t>(addr);
  e.iova = iova;
  e.length = length;
  return InstallMr(pd, e, addr, length, -1);
}

}  // namespace

bool AccessOk(unsigned access) {
  return !((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
           !(access & IBV_ACCESS_LOCAL_WRITE));
}

ibv_mr* InstallMr(ibv_pd* pd, MrEntry e, void* addr, size_t length,
                  int dmabuf_fd) {
  LoopContext* lc = Ctx(pd->context);
  ProcessGuard pg(lc);
  LoopMr* m = static_cast<LoopMr*>(calloc(1, sizeof(LoopMr)));
  if (m == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  FabricFile* f = lc->fab;
  SharedGuard g(&f->lock);
  uint32_t slot = TakeMr(f);
  if (slot == kNone) {
    free(m);
    errno = ENOMEM;
    return nullptr;
  }
  e.lkey = MakeKey(lc, slot, 0);
  e.rkey = MakeKey(lc, slot, e.lkey);
  e.pd_id = Pd(pd)->pd_id;
  e.owner = lc->pid;
  f->mrs[slot] = e;
  m->slot = slot;
  m->dmabuf_fd = dmabuf_fd;
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = addr;
  m->mr.length = length;
  m->mr.handle = slot;
  m->mr.lkey = e.lkey;
  m->mr.rkey = e.rkey;
  ++Pd(pd)->refs;
  return &m->mr;
}

}  // namespace verbs_loop

using namespace verbs_loop;

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
  ibv_device** list = static_cast<ibv_device**>(calloc(2, sizeof(*list)));
  if (list == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  ibv_device& d = g_device;
  if (d.name[0] == '\0') {
    d.node_type = IBV_NODE_CA;
    d.transport_type = IBV_TRANSPORT_IB;
    strcpy(d.name, "loop0");
    strcpy(d.dev_name, "uverbs_loop0");
    strcpy(d.dev_path, "/sys/class/infiniband_verbs/uverbs_loop0");
    strcpy(d.ibdev_path, "/sys/class/infiniband/loop0");
  }
  list[0] = &d;
  if (num_devices != nullptr) *num_devices = 1;
  return list;
}

void ibv_free_device_list(ibv_device** list) { free(list); }

const char* ibv_get_device_name(ibv_device* device) {
  return device != nullptr ? device->name : nullptr;
}

__be64 ibv_get_device_guid(ibv_device*) {
  char name[kHostNameMax];
  HostName(name);
  return htobe64(HostGuid(name));
}

ibv_context* ibv_open_device(ibv_device* device) {
  if (device != &g_device) {
    errno = ENODEV;
    return nullptr;
  }
  const char* link = getenv("VERBS_LOOP_LINK");
  bool eth = link != nullptr && strcmp(link, "eth") == 0;
  if (link != nullptr && link[0] != '\0' && !eth && strcmp(link, "ib") != 0) {
    errno = EINVAL;
    return nullptr;
  }
  FabricFile* f = nullptr;
  int err = MapFabric(&f);
  if (err != 0) {
    errno = err;
    return nullptr;
  }
  LoopContext* lc = static_cast<LoopContext*>(calloc(1, sizeof(LoopContext)));
  if (lc == nullptr) {
    UnmapFabric(f);
    errno = ENOMEM;
    return nullptr;
  }
  char name[kHostNameMax];
  HostName(name);
  // With a NIC process (verbs_loop_nic.h), owners are named by the pids
  // it sees, one namespace for every process of the fabric.
  lc->pid = nic::Enabled() ? nic::SelfPid() : getpid();
  if (lc->pid <= 0) {
    int e = errno;
    free(lc);
    UnmapFabric(f);
    fprintf(stderr,
            "verbs_loop: the NIC at VERBS_LOOP_NIC does not answer: %s\n",
            strerror(e));
    errno = ENXIO;
    return nullptr;
  }
  {
    SharedGuard g(&f->lock);
    lc->host = RegisterHost(f, name, lc->pid);
  }
  if (lc->host == kNone) {
    free(lc);
    UnmapFabric(f);
    errno = ENOSPC;
    return nullptr;
  }
  lc->fab = f;
  lc->guid = HostGuid(name);
  lc->link_layer = eth ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
  lc->gid = HostGid(lc->link_layer, lc->host, lc->guid);
  lc->rng =
      (NowNs() ^ (uint64_t(lc->pid) << 32) ^ reinterpret_cast<uint64_t>(lc)) |
      1;
  pthread_mutex_init(&lc->mu, nullptr);
  ibv_context& c = lc->ctx;
  c.device = device;
  c.cmd_fd = -1;
  c.async_fd = -1;
  c.num_comp_vectors = 1;
  c.abi_compat = nullptr;  // not __VERBS_ABI_IS_EXTENDED: see the top
  pthread_mutex_init(&c.mutex, nullptr);
  c.ops.post_send = PostSend;
  c.ops.post_recv = PostRecv;
  c.ops.post_srq_recv = PostSrqRecv;
  c.ops.poll_cq = PollCq;
  c.ops.req_notify_cq = ReqNotifyCq;

  // Fault counters are per process: (re)armed by its first open, also in
  // a child forked from a process that had one open.
  pthread_mutex_lock(&g_open_mu);
  if (g_open_pid != lc->pid) {
    g_open_pid = lc->pid;
    g_open_contexts = 0;
  }
  if (g_open_contexts++ == 0) ResetFaults();
  pthread_mutex_unlock(&g_open_mu);
  return &c;
}

int ibv_close_device(ibv_context* context) {
  LoopContext* lc = Ctx(context);
  pthread_mutex_lock(&g_open_mu);
  if (g_open_pid == lc->pid && g_open_contexts > 0) --g_open_contexts;
  pthread_mutex_unlock(&g_open_mu);
  UnmapFabric(lc->fab);
  pthread_mutex_destroy(&lc->mu);
  pthread_mutex_destroy(&context->mutex);
  free(lc);
  return 0;
}

int ibv_query_device(ibv_context* context, ibv_device_attr* a) {
  LoopContext* lc = Ctx(context);
  memset(a, 0, sizeof(*a));
  strcpy(a->fw_ver, "verbs_loop-1");
  a->node_guid = htobe64(lc->guid);
  a->sys_image_guid = htobe64(lc->guid);
  a->max_mr_size = kMaxMsg;
  a->page_size_cap = 4096;
  a->vendor_id = 0x02c9;
  a->vendor_part_id = 0x4c4f;
  a->max_qp = kMaxQps;
  a->max_qp_wr = kMaxWr;
  a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN;
  a->max_sge = kMaxSge;
  a->max_sge_rd = kMaxSge;
  a->max_cq = kMaxCqs;
  a->max_cqe = kMaxCqe;
  a->max_mr = kMaxMrs;
  a->max_pd = 1 << 20;
  a->max_qp_rd_atom = 16;
  a->max_res_rd_atom = 16 * kMaxQps;
  a->max_qp_init_rd_atom = 16;
  a->atomic_cap = IBV_ATOMIC_NONE;
  a->max_srq = kMaxSrqs;
  a->max_srq_wr = kMaxWr;
  a->max_srq_sge = kMaxSge;
  a->max_pkeys = 1;
  a->local_ca_ack_delay = 16;
  a->phys_port_cnt = 1;
  return 0;
}

// Exported as in rdma-core with the compat struct; callers (verbs.h's
// wrapper) pass a whole struct ibv_port_attr, which is what we fill.
int ibv_query_port(ibv_context* context, uint8_t port_num,
                   _compat_ibv_port_attr* compat) {
  if (port_num != 1) return EINVAL;
  LoopContext* lc = Ctx(context);
  ibv_port_attr* a = reinterpret_cast<ibv_port_attr*>(compat);
  memset(a, 0, sizeof(*a));
  a->state = IBV_PORT_ACTIVE;
  a->max_mtu = IBV_MTU_4096;
  a->active_mtu = IBV_MTU_4096;
  a->gid_tbl_len = 4;
  a->max_msg_sz = uint32_t(kMaxMsg);
  a->pkey_tbl_len = 1;
  a->max_vl_num = 1;
  a->active_width = 2;   // 4x
  a->active_speed = 32;  // EDR
  a->phys_state = 5;     // LinkUp
  a->link_layer = lc->link_layer;
  if (lc->link_layer == IBV_LINK_LAYER_INFINIBAND) {
    a->lid = uint16_t(lc->host + 1);
    a->sm_lid = 1;
    a->port_cap_flags = IBV_PORT_CM_SUP;
  }
  return 0;
}

int ibv_query_gid(ibv_context* context, uint8_t port_num, int index,
                  ibv_gid* gid) {
  if (port_num != 1 || index < 0 || index >= 4) return EINVAL;
  // Only index 0 is populated; the rest read as zero, as unused entries
  // of a real table do.
  if (index == 0) {
    *gid = Ctx(context)->gid;
  } else {
    memset(gid, 0, sizeof(*gid));
  }
  return 0;
}

ibv_pd* ibv_alloc_pd(ibv_context* context) {
  LoopContext* lc = Ctx(context);
  LoopPd* p = static_cast<LoopPd*>(calloc(1, sizeof(LoopPd)));
  if (p == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  {
    SharedGuard g(&lc->fab->lock);
    p->pd_id = lc->fab->next_pd_id++;
    if (lc->fab->next_pd_id == 0) lc->fab->next_pd_id = 1;
  }
  p->pd.context = context;
  p->pd.handle = p->pd_id;
  return &p->pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  LoopPd* p = Pd(pd);
  if (p->refs != 0) return EBUSY;
  free(p);
  return 0;
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return RegMr(pd, addr, length, reinterpret_cast<uint64_t>(addr),
               unsigned(access));
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                         unsigned int access) {
  return RegMr(pd, addr, length, iova, access);
}

int ibv_dereg_mr(ibv_mr* mr) {
  LoopMr* m = Mr(mr);
  LoopContext* lc = Ctx(mr->context);
  ProcessGuard pg(lc);
  {
    SharedGuard g(&lc->fab->lock);
    MrEntry& e = lc->fab->mrs[m->slot];
    if (e.owner == lc->pid && e.lkey == mr->lkey) {
      // The keys die now: a peer WR after this sees a bad rkey.
      e.owner = 0;
      e.lkey = e.rkey = 0;
    }
  }
  // Only now: a responder's sender opens (or, in this process, dups) the
  // fd only while the entry above is live, under the fabric lock, so it
  // cannot get the fd number reused for another file.
  if (m->dmabuf_fd >= 0) close(m->dmabuf_fd);
  --Pd(mr->pd)->refs;
  free(m);
  return 0;
}

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context,
                      ibv_comp_channel* channel, int) {
  if (cqe < 1 || uint32_t(cqe) > kMaxCqe) {
    errno = EINVAL;
    return nullptr;
  }
  LoopContext* lc = Ctx(context);
  ProcessGuard pg(lc);
  uint32_t cap = CqCapacity(uint32_t(cqe));
  LoopCq* c = static_cast<LoopCq*>(calloc(1, sizeof(LoopCq)));
  if (c == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  FabricFile* f = lc->fab;
  SharedGuard g(&f->lock);
  uint32_t slot = TakeCq(f);
  uint32_t base = slot == kNone ? kNone : AllocCqeSlots(f, cap, slot);
  if (base == kNone) {
    free(c);
    errno = ENOMEM;
    return nullptr;
  }
  CqEntry& e = f->cqs[slot];
  {
    SharedGuard cg(&e.lock);
    e.ring = Ring{base, cap, 0, 0};
    e.overflow = 0;
    e.owner = lc->pid;
  }
  c->slot = slot;
  c->gen = e.gen;
  c->cq.context = context;
  c->cq.channel = channel;
  c->cq.cq_context = cq_context;
  c->cq.handle = slot;
  c->cq.cqe = int(cap);
  pthread_mutex_init(&c->cq.mutex, nullptr);
  pthread_cond_init(&c->cq.cond, nullptr);
  return &c->cq;
}

int ibv_destroy_cq(ibv_cq* cq) {
  LoopCq* c = Cq(cq);
  LoopContext* lc = Ctx(cq->context);
  ProcessGuard pg(lc);
  if (c->refs != 0) return EBUSY;
  {
    FabricFile* f = lc->fab;
    SharedGuard g(&f->lock);
    CqEntry& e = f->cqs[c->slot];
    {
      SharedGuard cg(&e.lock);
      if (e.owner == lc->pid && e.gen == c->gen) e.owner = 0;
    }
    FreeCqeSlots(f, c->slot);
  }
  pthread_mutex_destroy(&cq->mutex);
  pthread_cond_destroy(&cq->cond);
  free(c);
  return 0;
}

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* init) {
  if (pd == nullptr || init == nullptr || init->attr.max_wr == 0 ||
      init->attr.max_wr > kMaxWr || init->attr.max_sge > kMaxSge) {
    errno = EINVAL;
    return nullptr;
  }
  LoopContext* lc = Ctx(pd->context);
  ProcessGuard pg(lc);
  LoopSrq* s = static_cast<LoopSrq*>(calloc(1, sizeof(LoopSrq)));
  if (s == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  FabricFile* f = lc->fab;
  SharedGuard g(&f->lock);
  uint32_t slot = TakeSrq(f);
  uint32_t base = slot == kNone
                      ? kNone
                      : AllocWqeSlots(f, init->attr.max_wr, SrqWqeTag(slot));
  if (base == kNone) {
    free(s);
    errno = ENOMEM;
    return nullptr;
  }
  SrqEntry& e = f->srqs[slot];
  e.pd_id = Pd(pd)->pd_id;
  e.max_sge = init->attr.max_sge;
  e.ring = Ring{base, init->attr.max_wr, 0, 0};
  e.owner = lc->pid;
  s->slot = slot;
  s->gen = e.gen;
  s->max_sge = init->attr.max_sge;
  s->srq.context = pd->context;
  s->srq.srq_context = init->srq_context;
  s->srq.pd = pd;
  s->srq.handle = slot;
  pthread_mutex_init(&s->srq.mutex, nullptr);
  pthread_cond_init(&s->srq.cond, nullptr);
  ++Pd(pd)->refs;
  return &s->srq;
}

int ibv_destroy_srq(ibv_srq* srq) {
  LoopSrq* s = Srq(srq);
  LoopContext* lc = Ctx(srq->context);
  ProcessGuard pg(lc);
  if (s->refs != 0) return EBUSY;
  {
    FabricFile* f = lc->fab;
    SharedGuard g(&f->lock);
    SrqEntry& e = f->srqs[s->slot];
    if (e.owner == lc->pid && e.gen == s->gen) e.owner = 0;
    FreeWqeSlots(f, SrqWqeTag(s->slot));
  }
  --Pd(srq->pd)->refs;
  pthread_mutex_destroy(&srq->mutex);
  pthread_cond_destroy(&srq->cond);
  free(s);
  return 0;
}

const char* ibv_wc_status_str(ibv_wc_status status) {
  static const char* const kNames[] = {
      "success",
      "local length error",
      "local QP operation error",
      "local EE context operation error",
      "local protection error",
      "Work Request Flushed Error",
      "memory management operation error",
      "bad response error",
      "local access error",
      "remote invalid request error",
      "remote access error",
      "remote operation error",
      "transport retry counter exceeded",
      "RNR retry counter exceeded",
      "local RDD violation error",
      "remote invalid RD request",
      "aborted error",
      "invalid EE context number",
      "invalid EE context state",
      "fatal error",
      "response timeout error",
      "general error",
      "TM error",
      "TM software rendezvous",
  };
  unsigned s = unsigned(status);
  return s < sizeof(kNames) / sizeof(kNames[0]) ? kNames[s] : "unknown";
}

const char* ibv_port_state_str(ibv_port_state port_state) {
  static const char* const kNames[] = {"PORT_NOP",    "PORT_DOWN",
                                       "PORT_INIT",   "PORT_ARMED",
                                       "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};
  unsigned s = unsigned(port_state);
  return s < sizeof(kNames) / sizeof(kNames[0]) ? kNames[s] : "invalid state";
}

}  // extern "C"

#include "platform/verbs/verbs_net.h"

#include <sched.h>
#include <strings.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "platform/os/clock.h"
#include "platform/os/log.h"
#include "platform/verbs/verbs_channel.h"
#include "platform/verbs/verbs_fabric.h"

namespace ucc::plat::verbs {
namespace {

constexpr uint64_t kRecvId = ~uint64_t{0};

// The connection manager's fabric for a member: a few small slots
// (hello, ready, goodbye).
FabricConfig cm_config(const FabricConfig& c) {
  return FabricConfig{c.nranks, c.rank, 64, 4};
}

bool ipv4_mapped(const ibv_gid& g) {
  static const uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return memcmp(g.raw, kPrefix, 12) == 0;
}

bool zero_gid(const ibv_gid& g) {
  for (uint8_t b : g.raw)
    if (b != 0) return false;
  return true;
}

}  // namespace

uint64_t VerbsNet::rand64() {
  // xorshift64*: PSNs need to differ, not to be secret.
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  return rng_ * 0x2545f4914f6cdd1dull;
}

Status VerbsNet::open_port(const char* want) {
  // "name" or "name:port"; empty: the first active port of any device.
  char name[64] = "";
  int want_port = 0;
  if (want != nullptr && *want != '\0') {
    snprintf(name, sizeof(name), "%s", want);
    char* colon = strchr(name, ':');
    if (colon != nullptr) {
      *colon = '\0';
      want_port = atoi(colon + 1);
      if (want_port < 1 || want_port > 255) return Status::kInvalidParam;
    }
  }
  int n = 0;
  ibv_device** list = api_->get_device_list(&n);
  if (list == nullptr || n == 0) {
    if (list != nullptr) api_->free_device_list(list);
    UCC_INFO("verbs: no RDMA device");
    return Status::kNoResource;
  }
  bool named = false;
  Status st = Status::kNoResource;
  for (int d = 0; d < n && ctx_ == nullptr; ++d) {
    const char* dn = api_->get_device_name(list[d]);
    if (name[0] != '\0' && (dn == nullptr || strcmp(dn, name) != 0)) continue;
    named = true;
    ibv_context* c = api_->open_device(list[d]);
    if (c == nullptr) continue;
    for (int p = want_port != 0 ? want_port : 1;
         p <= (want_port != 0 ? want_port : 4) && ctx_ == nullptr; ++p) {
      ibv_port_attr pa{};
      if (api_->query_port(c, static_cast<uint8_t>(p), &pa) != 0) break;
      if (pa.state != IBV_PORT_ACTIVE) continue;
      ctx_ = c;
      port_ = static_cast<uint8_t>(p);
      roce_ = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
      lid_ = pa.lid;
      mtu_ = pa.active_mtu;
      st = Status::kOk;
      UCC_INFO("verbs: %s port %d (%s, lid %u, mtu %d)", dn, p,
               roce_ ? "RoCE" : "InfiniBand", lid_, 128 << mtu_);
      gid_index_ = cfg_.gid_index;
      if (gid_index_ < 0) pick_gid(dn, pa.gid_tbl_len);
    }
    if (ctx_ != c) api_->close_device(c);
  }
  api_->free_device_list(list);
  if (name[0] != '\0' && !named) {
    UCC_ERROR("verbs: no device %s (UCC_NET_DEVICES)", name);
    return Status::kInvalidParam;
  }
  if (ctx_ == nullptr) UCC_INFO("verbs: no active port");
  return st;
}

void VerbsNet::pick_gid(const char* dev, int table) {
  // InfiniBand: the port GID (index 0). RoCE: the best of the set GIDs,
  // by the kernel's type of each (sysfs; a provider without it, such as
  // the tests', has none): RoCE v2 over IPv4 (routable; an IPv4-mapped
  // GID appears as v1 too, at another index), then any RoCE v2, then
  // IPv4-mapped, then the first set.
  gid_index_ = 0;
  if (!roce_) return;
  int best = -1, best_score = -1;
  for (int i = 0; i < table && i < 256; ++i) {
    ibv_gid g{};
    if (api_->query_gid(ctx_, port_, i, &g) != 0 || zero_gid(g)) continue;
    char path[256], type[32] = "";
    snprintf(path, sizeof(path),
             "/sys/class/infiniband/%s/ports/%u/gid_attrs/types/%d", dev,
             port_, i);
    if (FILE* f = fopen(path, "r")) {
      if (fgets(type, sizeof(type), f) == nullptr) type[0] = '\0';
      fclose(f);
    }
    const bool v2 = strncasecmp(type, "RoCE v2", 7) == 0;
    const int score = (v2 ? 2 : 0) + (ipv4_mapped(g) ? 1 : 0);
    if (score > best_score) {
      best = i;
      best_score = score;
    }
  }
  if (best >= 0) gid_index_ = best;
}

bool VerbsNet::qp_init(ibv_qp* qp, int access) const {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = port_;
  a.qp_access_flags = static_cast<unsigned>(access);
  return api_->modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                             IBV_QP_ACCESS_FLAGS) == 0;
}

QpAddr VerbsNet::qp_addr(const ibv_qp* qp, uint32_t psn) const {
  QpAddr a{};
  a.qpn = qp->qp_num;
  a.psn = psn;
  a.lid = lid_;
  a.mtu = static_cast<uint8_t>(mtu_);
  a.rd_depth = rd_resp_;
  memcpy(a.gid, gid_.raw, 16);
  return a;
}

bool VerbsNet::qp_connect(ibv_qp* qp, const QpAddr& peer,
                          uint32_t our_psn) const {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = peer.mtu < mtu_ ? static_cast<ibv_mtu>(peer.mtu) : mtu_;
  a.dest_qp_num = peer.qpn;
  a.rq_psn = peer.psn;
  a.max_dest_rd_atomic = rd_resp_;
  a.min_rnr_timer = 12;  // 0.64 ms
  a.ah_attr.dlid = peer.lid;
  a.ah_attr.port_num = port_;
  if (roce_) {  // RoCE routes by GID
    a.ah_attr.is_global = 1;
    memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index_);
    a.ah_attr.grh.hop_limit = 64;
  }
  if (api_->modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                          IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC |
                          IBV_QP_MIN_RNR_TIMER) != 0)
    return false;
  ibv_qp_attr b{};
  b.qp_state = IBV_QPS_RTS;
  b.timeout = 14;  // 67 ms per try
  b.retry_cnt = 7;
  b.rnr_retry = 7;
  b.sq_psn = our_psn;
  // As many RDMA READs in flight as we may and the peer takes (one at a
  // time serializes a link's one-sided blocks on their round trips).
  const uint8_t theirs = peer.rd_depth != 0 ? peer.rd_depth : 1;
  b.max_rd_atomic = theirs < rd_init_ ? theirs : rd_init_;
  return api_->modify_qp(qp, &b,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                             IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                             IBV_QP_MAX_QP_RD_ATOMIC) == 0;
}

Status VerbsNet::init_device(const VerbsConfig& cfg) {
  cfg_ = cfg;
  rng_ = now_ns() ^ (static_cast<uint64_t>(getpid()) << 32) ^ 0x9e3779b97f4a7c15ull;
  api_ = load_api(cfg.lib);
  if (api_ == nullptr) return Status::kNoResource;
  Status st = open_port(cfg.device);
  if (failed(st)) return st;
  ibv_device_attr da{};
  if (api_->query_device(ctx_, &da) == 0) {
    auto depth = [](int v) {
      return static_cast<uint8_t>(v < 1              ? 1
                                  : v > kMaxRdAtomic ? kMaxRdAtomic
                                                     : v);
    };
    rd_init_ = depth(da.max_qp_init_rd_atom);
    rd_resp_ = depth(da.max_qp_rd_atom);
  }
  if (api_->query_gid(ctx_, port_, gid_index_, &gid_) != 0 ||
      (roce_ && zero_gid(gid_))) {
    UCC_ERROR("verbs: no GID at index %d (UCC_NET_GID_INDEX)", gid_index_);
    fini();
    return Status::kInvalidParam;
  }
  pd_ = api_->alloc_pd(ctx_);
  if (pd_ == nullptr) {
    fini();
    return Status::kNoResource;
  }
  return Status::kOk;
}

Status VerbsNet::init(const VerbsConfig& cfg, Net* cm) {
  Status st = init_device(cfg);
  if (failed(st)) return st;
  cm_ = cm;
  if (!eps_.init(cfg_.max_endpoints)) {
    fini();
    return Status::kNoResource;
  }
  // As deep a shared receive queue as the device grants, down to 64.
  for (uint32_t d = cfg_.srq_depth; d >= 64 && srq_ == nullptr; d /= 2) {
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = d;
    sa.attr.max_sge = 1;
    srq_ = api_->create_srq(pd_, &sa);
    if (srq_ != nullptr) srq_owed_ = d;
  }
  if (srq_ == nullptr) {
    UCC_ERROR("verbs: cannot create a shared receive queue");
    fini();
    return Status::kNoResource;
  }
  repost_srq();
  return Status::kOk;
}

void VerbsNet::repost_srq() {
  // Writes with immediate consume a receive each and carry no data: the
  // receives have no buffer.
  ibv_recv_wr wr[32];
  while (srq_owed_ != 0) {
    const uint32_t k = srq_owed_ < 32 ? srq_owed_ : 32;
    for (uint32_t i = 0; i < k; ++i) {
      wr[i] = ibv_recv_wr{};
      wr[i].wr_id = kRecvId;
      wr[i].next = i + 1 < k ? &wr[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_srq_recv(srq_, wr, &bad) != 0) {
      // Those before `bad` were posted; the rest are tried again later.
      const uint32_t done =
          bad != nullptr ? static_cast<uint32_t>(bad - wr) : 0;
      srq_owed_ -= done < k ? done : k;
      if (!srq_warned_) UCC_WARN("verbs: cannot post receives to the shared queue");
      srq_warned_ = true;
      return;
    }
    srq_owed_ -= k;
  }
}

Fabric* VerbsNet::open(const FabricConfig& cfg, FabricAddr* addr) {
  if (ctx_ == nullptr || !fabric_config_ok(cfg) ||
      nopen_ >= cfg_.max_endpoints)
    return nullptr;
  FabricAddr cm_addr{};
  Fabric* cmf = cm_->open(cm_config(cfg), &cm_addr);
  if (cmf == nullptr) return nullptr;
  auto* f = new (std::nothrow) VerbsFabric(this, cfg, cmf);
  bool ok = f != nullptr && f->setup();
  if (!ok && f != nullptr) {
    // Registrations may be what ran out: once more after room is made.
    delete f;
    f = make_room() ? new (std::nothrow) VerbsFabric(this, cfg, cmf) : nullptr;
    ok = f != nullptr && f->setup();
  }
  if (!ok) {
    delete f;
    cm_->close(cmf, false);
    return nullptr;
  }
  *addr = FabricAddr{};
  addr->kind = kVerbsAddrMagic;
  // One-sided messages where this member's buffers are ours to register.
  addr->pad = cfg.rma ? cfg_.zcopy_min : 0;
  cm_kind_ = cm_addr.kind;
  memcpy(addr->bytes, cm_addr.bytes, sizeof(addr->bytes));
  eps_[nopen_++] = f;
  return f;
}

void VerbsNet::close(Fabric* f, bool lost) {
  auto* vf = static_cast<VerbsFabric*>(f);
  vf->leave(lost);
  vf->free_at = now_ns() + uint64_t{cfg_.peer_timeout_ms} * 1000000u;
}

bool VerbsNet::make_room() {
  uint32_t leaving = 0;
  for (uint32_t i = 0; i < nopen_; ++i) leaving += eps_[i]->leaving();
  if (leaving == 0) return false;
  const uint32_t before = nopen_;
  const uint64_t end = now_ns() + (uint64_t{cfg_.linger_ms} + 1000) * 1000000u;
  ++room_waits_;
  while (nopen_ >= before) {
    now_ = now_ns();
    if (now_ >= end) return false;
    for (uint32_t i = 0; i < nopen_; ++i) eps_[i]->progress(true);
    cm_->progress();
    reap(false);
    if (nopen_ >= before) usleep(200);
  }
  return true;
}

void VerbsNet::reap(bool force) {
  for (uint32_t i = 0; i < nopen_;) {
    VerbsFabric* f = eps_[i];
    if (!f->leaving()) {
      ++i;
      continue;
    }
    if (!f->cm_closed && (force || f->drained() || now_ >= f->free_at)) {
      // The goodbyes are out (or never will be): the connection manager
      // delivers them; peers may still have writes in flight to us.
      cm_->close(f->cm(), f->left_lost());
      f->cm_closed = true;
      f->free_at = now_ + uint64_t{cfg_.linger_ms} * 1000000u;
    }
    if (f->cm_closed && (force || now_ >= f->free_at)) {
      delete f;
      eps_[i] = eps_[--nopen_];
      continue;
    }
    ++i;
  }
}

uint64_t VerbsNet::progress() {
  now_ = now_ns();
  // The connection manager costs a system call per look: every pass
  // only while some member connects or leaves, else every 64th.
  const bool cm_pass = (++passes_ & 63) == 0;
  bool busy = false;
  uint64_t ev = 0;
  for (uint32_t i = 0; i < nopen_; ++i) {
    ev += eps_[i]->progress(cm_pass);
    busy |= eps_[i]->busy();
  }
  if (busy || cm_pass) ev += cm_->progress();
  if (srq_owed_ >= 16 || (srq_owed_ != 0 && ev == 0)) repost_srq();
  if (busy) reap(false);
  return ev;
}

void VerbsNet::fini() {
  if (eps_) {
    // Members still open leave now; give their goodbyes and writes the
    // peer timeout (10 s at most) to go out.
    for (uint32_t i = 0; i < nopen_; ++i)
      if (!eps_[i]->leaving()) close(eps_[i], false);
    const uint64_t limit_ms =
        cfg_.peer_timeout_ms < 10000 ? cfg_.peer_timeout_ms : 10000;
    const uint64_t end = now_ns() + limit_ms * 1000000u;
    bool drained = false;
    while (!drained && now_ns() < end) {
      progress();
      drained = true;
      for (uint32_t i = 0; i < nopen_; ++i)
        drained &= eps_[i]->cm_closed || eps_[i]->drained();
      if (!drained) sched_yield();
    }
    now_ = now_ns();
    reap(true);
    eps_.release();
  }
  if (ctx_ != nullptr)
    UCC_INFO(
        "verbs: %llu queue pairs made (%llu completion queue entries, "
        "%llu bytes of inboxes registered); %llu messages out (%llu "
        "inline), %llu in, %llu credit writes, %llu one-sided (%llu bytes, "
        "%llu registrations), %llu error completions, %llu refused",
        static_cast<unsigned long long>(stats_.qps),
        static_cast<unsigned long long>(stats_.cqes),
        static_cast<unsigned long long>(stats_.fabric_regs),
        static_cast<unsigned long long>(stats_.tx_msgs),
        static_cast<unsigned long long>(stats_.inline_msgs),
        static_cast<unsigned long long>(stats_.rx_msgs),
        static_cast<unsigned long long>(stats_.credits),
        static_cast<unsigned long long>(stats_.rma_ops),
        static_cast<unsigned long long>(stats_.rma_bytes),
        static_cast<unsigned long long>(stats_.regs),
        static_cast<unsigned long long>(stats_.errors),
        static_cast<unsigned long long>(stats_.bad_imm));
  if (srq_ != nullptr) api_->destroy_srq(srq_);
  if (pd_ != nullptr) api_->dealloc_pd(pd_);
  if (ctx_ != nullptr) api_->close_device(ctx_);
  srq_ = nullptr;
  pd_ = nullptr;
  ctx_ = nullptr;
  if (own_cm_) delete cm_;  // its own fini: goodbyes, then the sockets
  own_cm_ = false;
  cm_ = nullptr;
}

RemoteMem* VerbsNet::open_remote_mem(const RemoteMemAddr& host,
                                     RemoteMemAddr* mine) {
  auto* ch = new (std::nothrow) VerbsChannel;
  if (ch == nullptr) return nullptr;
  QpAddr a{}, h;
  static_assert(sizeof(h) == sizeof(host) && sizeof(a) == sizeof(*mine));
  memcpy(&h, &host, sizeof(h));
  if (failed(ch->open(this, kChannelStaging, cfg_.peer_timeout_ms, &a)) ||
      failed(ch->connect(h))) {
    delete ch;
    return nullptr;
  }
  memcpy(mine, &a, sizeof(a));
  return ch;
}

}  // namespace ucc::plat::verbs

#include "host/host_rdma.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "platform/os/log.h"
#if UCC_HAVE_VERBS
#include "platform/verbs/verbs_channel.h"
#endif

namespace ucc::host {

#if UCC_HAVE_VERBS

namespace verbs = plat::verbs;

struct HostRdma::Impl {
  verbs::VerbsNet dev;
  verbs::VerbsChannel ch;
  struct Slot {
    ibv_mr* mr;
    uint32_t key;  // the daemon's, once bound
  };
  Slot* slots = nullptr;
  uint32_t nslots = 0;
};

Status HostRdma::open(const verbs::VerbsConfig& cfg, uint32_t nregs,
                      off::proto::RdmaAddr* mine, HostRdma** out) {
  *out = nullptr;
  auto* h = new (std::nothrow) HostRdma;
  Impl* im = h != nullptr ? new (std::nothrow) Impl : nullptr;
  if (im == nullptr) {
    delete h;
    return Status::kNoMemory;
  }
  h->impl_ = im;
  im->slots = static_cast<Impl::Slot*>(calloc(nregs, sizeof(Impl::Slot)));
  im->nslots = nregs;
  Status st = im->slots != nullptr ? im->dev.init_device(cfg)
                                   : Status::kNoMemory;
  verbs::QpAddr a{};
  if (ok(st)) st = im->ch.open(&im->dev, 0, 10000, &a);
  if (failed(st)) {
    UCC_ERROR("UCC_OFFLOAD_MEM=verbs: no RDMA port for the engine to reach "
              "this process's memory (UCC_NET_DEVICES, UCC_VERBS_LIB)");
    delete h;
    return st;
  }
  static_assert(sizeof(a) == sizeof(*mine));
  memcpy(mine, &a, sizeof(a));
  *out = h;
  return Status::kOk;
}

HostRdma::~HostRdma() {
  if (impl_ == nullptr) return;
  for (uint32_t i = 0; i < impl_->nslots; ++i)
    if (impl_->slots[i].mr != nullptr) impl_->ch.dereg(impl_->slots[i].mr);
  free(impl_->slots);
  impl_->ch.close();
  impl_->dev.fini();
  delete impl_;
}

Status HostRdma::connect(const off::proto::RdmaAddr& engine) {
  verbs::QpAddr a;
  memcpy(&a, &engine, sizeof(a));
  return impl_->ch.connect(a);
}

Status HostRdma::reg(uint64_t addr, uint64_t len, uint32_t* rkey,
                     uint32_t* slot) {
  for (uint32_t i = 0; i < impl_->nslots; ++i) {
    Impl::Slot& s = impl_->slots[i];
    if (s.mr != nullptr) continue;
    s.mr = impl_->ch.reg(reinterpret_cast<void*>(addr), len);
    if (s.mr == nullptr) {
      UCC_ERROR("UCC_OFFLOAD_MEM=verbs: cannot register [%#llx, +%llu): %s",
                static_cast<unsigned long long>(addr),
                static_cast<unsigned long long>(len), strerror(errno));
      return Status::kInvalidParam;
    }
    s.key = 0;
    *rkey = s.mr->rkey;
    *slot = i;
    return Status::kOk;
  }
  return Status::kNoResource;
}

void HostRdma::bind(uint32_t slot, uint32_t key) { impl_->slots[slot].key = key; }

void HostRdma::drop(uint32_t slot) {
  impl_->ch.dereg(impl_->slots[slot].mr);
  impl_->slots[slot] = Impl::Slot{};
}

void HostRdma::release(uint32_t key) {
  for (uint32_t i = 0; i < impl_->nslots; ++i)
    if (impl_->slots[i].mr != nullptr && impl_->slots[i].key == key) {
      drop(i);
      return;
    }
}

#else  // no verbs in this build

struct HostRdma::Impl {};

Status HostRdma::open(const plat::verbs::VerbsConfig&, uint32_t,
                      off::proto::RdmaAddr*, HostRdma** out) {
  *out = nullptr;
  UCC_ERROR("UCC_OFFLOAD_MEM=verbs: built without rdma-core's headers");
  return Status::kNotSupported;
}
HostRdma::~HostRdma() {}
Status HostRdma::connect(const off::proto::RdmaAddr&) {
  return Status::kNotSupported;
}
Status HostRdma::reg(uint64_t, uint64_t, uint32_t*, uint32_t*) {
  return Status::kNotSupported;
}
void HostRdma::bind(uint32_t, uint32_t) {}
void HostRdma::drop(uint32_t) {}
void HostRdma::release(uint32_t) {}

#endif

}  // namespace ucc::host

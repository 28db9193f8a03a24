#include "platform/verbs/verbs_export.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#include "platform/os/log.h"

namespace ucc::plat::verbs {

Status VerbsExport::open(const VerbsConfig& cfg, uint32_t nregs,
                         RemoteMemAddr* mine) {
  if (!slots_.init(nregs)) return Status::kNoMemory;
  Status st = dev_.init_device(cfg);
  QpAddr a{};
  if (ok(st)) st = ch_.open(&dev_, 0, 10000, &a, kPushDepth);
  if (failed(st)) return st;
  static_assert(sizeof(a) == sizeof(*mine));
  memcpy(mine, &a, sizeof(a));
  return Status::kOk;
}

VerbsExport::~VerbsExport() {
  for (uint32_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].mr != nullptr) ch_.dereg(slots_[i].mr);
  ch_.close();
  dev_.fini();
}

Status VerbsExport::connect(const RemoteMemAddr& engine) {
  QpAddr a;
  static_assert(sizeof(a) == sizeof(engine));
  memcpy(&a, &engine, sizeof(a));
  return ch_.connect(a);
}

ibv_mr* VerbsExport::reg_gpu(uint64_t addr, uint64_t len, int dmabuf_fd) {
  // Each fallback is said once per process: a job registers many ranges.
  static std::atomic<bool> said_dmabuf{false}, said_ptr{false};
  if (dmabuf_fd >= 0) {
    ibv_mr* mr = ch_.reg_dmabuf(0, len, addr, dmabuf_fd);
    if (mr != nullptr) return mr;
    if (!said_dmabuf.exchange(true))
      UCC_INFO(
          "GPUDirect RDMA: the device refused GPU memory by dma-buf (%s): "
          "registering the pointer instead",
          strerror(errno));
  }
  ibv_mr* mr = ch_.reg(reinterpret_cast<void*>(addr), len);
  if (mr == nullptr && !said_ptr.exchange(true))
    UCC_INFO(
        "GPUDirect RDMA: the device refused GPU memory by pointer too (%s; "
        "nvidia-peermem not loaded?): GPU buffers are staged",
        strerror(errno));
  return mr;
}

Status VerbsExport::reg(uint64_t addr, uint64_t len, uint32_t* rkey,
                        uint32_t* slot, bool gpu, int dmabuf_fd) {
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (s.mr != nullptr) continue;
    if (gpu) {
      s.mr = reg_gpu(addr, len, dmabuf_fd);
      if (s.mr == nullptr) return Status::kNotSupported;
    } else {
      s.mr = ch_.reg(reinterpret_cast<void*>(addr), len);
    }
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

bool VerbsExport::push(uint32_t slot, const Piece* p, uint32_t n, uint32_t word,
                       uint64_t waddr, uint32_t rkey) {
  if (slot >= slots_.size() || slots_[slot].mr == nullptr) return false;
  return ch_.push(slots_[slot].mr, p, n, word, waddr, rkey);
}

void VerbsExport::bind(uint32_t slot, uint32_t key) { slots_[slot].key = key; }

void VerbsExport::drop(uint32_t slot) {
  ch_.dereg(slots_[slot].mr);
  slots_[slot] = Slot{};
}

void VerbsExport::release(uint32_t key) {
  for (uint32_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].mr != nullptr && slots_[i].key == key) {
      drop(i);
      return;
    }
}

}  // namespace ucc::plat::verbs

// dpu mode's half of the daemon link (daemon_link.h): the engine runs in a
// firmware_sim on another computer (a DPU's Arm cores), reached over TCP
// at UCC_DPU_ADDR. Nothing of the emu link's one-kernel means is used:
// no unix socket, no memfd, no peer credentials. Both ends prove the
// deployment's key (UCC_DPU_KEY_FILE) over fresh nonces before anything
// else is said, every later message carries a tag under the session key
// (offload/proto.h, "Over a network"), and the engine reaches this
// process only by RDMA: the channel (ring and completion words) and
// every buffer, through the keys of our registrations with our port; or,
// where no RDMA device exists and the user asked for it (UCC_DPU_MEM=
// tcp), through the TCP fallback's connection and thread.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <new>

#include "host/link/daemon_link.h"
#include "platform/mem/tcp_mem.h"
#include "platform/net/net.h"
#include "platform/os/log.h"
#include "platform/os/sock.h"

namespace ucc::host {

namespace proto = off::proto;

Status DaemonLink::open_dpu(const LinkConfig& cfg) {
  plat::Secret key{};
  if (!plat::load_secret("dpu", "UCC_DPU_KEY_FILE", "UCC_DPU_KEY", 0, &key))
    return Status::kInvalidParam;  // logged
  if (key.len == 0) {
    UCC_ERROR(
        "UCC_OFFLOAD=dpu: no key; the daemon and this process prove to each "
        "other that they hold the same secret: set UCC_DPU_KEY_FILE to a file "
        "of yours, mode 0600 (docs/dpu.md)");
    return Status::kInvalidParam;
  }
  Status st = connect_tcp(cfg);
  if (ok(st)) st = prove(sock_, key, static_cast<int>(timeout_ms_), &session_);
  if (ok(st)) seq_ = 1;  // kAuth's
  // Our memory by RDMA from now on (or, as asked, the TCP fallback), the
  // channel first.
  if (ok(st))
    st = cfg.dpu_mem_tcp ? connect_tcp_mem(cfg, key) : connect_rdma(cfg);
  return st;
}

Status DaemonLink::connect_tcp(const LinkConfig& cfg) {
  const char* addr = cfg.dpu_addr;
  const int s = plat::sock::tcp_connect(addr, static_cast<int>(cfg.timeout_ms));
  if (s < 0) {
    UCC_ERROR("dpu: no firmware_sim daemon at %s (%s; UCC_DPU_ADDR)", addr,
              strerror(-s));
    return Status::kNoResource;
  }
  plat::sock::tcp_tune(s, cfg.net.tcp.peer_timeout_ms);
  sock_ = s;
  return Status::kOk;
}

Status DaemonLink::prove(int fd, const plat::Secret& key, int to,
                         proto::Session* out) {
  proto::MsgHeader h{};
  proto::AuthChallenge ch{};
  const int got = plat::sock::recv_all(fd, &h, sizeof(h), to);
  if (got != 1) {
    UCC_ERROR("dpu: no challenge from the daemon (%s within %d ms)",
              got == 0 ? "it closed the connection" : "nothing came", to);
    return Status::kError;
  }
  if (h.magic != proto::kMagic || h.type != proto::kChallenge ||
      h.len != sizeof(ch) ||
      plat::sock::recv_all(fd, &ch, sizeof(ch), to) != 1 ||
      ch.version != proto::kVersion) {
    UCC_ERROR(
        "dpu: the daemon does not speak this library's protocol "
        "(version %u)",
        static_cast<unsigned>(proto::kVersion));
    return Status::kError;
  }
  proto::AuthProof p{};
  if (!plat::random_bytes(p.nonce, sizeof(p.nonce)) ||
      !proto::auth_proof(key, proto::End::kHost, ch.nonce, p.nonce, p.mac))
    return Status::kError;
  proto::AuthReply r{};
  const proto::Session none{};
  if (!send_on(fd, none, proto::kAuth, 1, &p, sizeof(p), -1) ||
      !recv_on(fd, none, proto::kAuth, 1, &r, sizeof(r), to) ||
      r.status != static_cast<int32_t>(Status::kOk)) {
    UCC_ERROR(
        "dpu: the daemon refused this process's proof of the key "
        "(UCC_DPU_KEY_FILE must hold the daemon's key)");
    return Status::kInvalidParam;
  }
  uint8_t want[32];
  if (!proto::auth_proof(key, proto::End::kEngine, ch.nonce, p.nonce, want) ||
      !plat::mac_equal(want, r.mac)) {
    UCC_ERROR(
        "dpu: the daemon did not prove that it holds the key: "
        "refused (another service on that port?)");
    return Status::kInvalidParam;
  }
  if (!proto::auth_session(key, ch.nonce, p.nonce, out)) return Status::kError;
  return Status::kOk;
}

Status DaemonLink::connect_tcp_mem(const LinkConfig& cfg,
                                   const plat::Secret& key) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    UCC_WARN(
        "dpu: this process's memory over TCP (UCC_DPU_MEM=tcp): a "
        "development fallback for machines without RDMA, slower than RDMA "
        "and served by a thread of its own (docs/dpu.md)");
  auto* srv = new (std::nothrow) plat::TcpMemServer;
  if (srv == nullptr) return Status::kNoMemory;
  rdma_ = srv;
  Status st = srv->open(kRegs + cfg.mem_map_handles + 1,
                        reinterpret_cast<uintptr_t>(mem_), bytes_);
  proto::TcpMemConnectReply r{};
  if (ok(st)) st = call(proto::kTcpMemConnect, nullptr, 0, &r, sizeof(r));
  if (ok(st)) st = static_cast<Status>(r.status);
  if (failed(st)) {
    UCC_ERROR(
        "dpu: the daemon at %s refused the TCP fallback for this "
        "process's memory",
        cfg.dpu_addr);
    return st;
  }
  // The second connection proves the key on its own, then names us.
  const int to = static_cast<int>(timeout_ms_);
  const int s = plat::sock::tcp_connect(cfg.dpu_addr, to);
  if (s < 0) return Status::kNoResource;
  plat::sock::tcp_tune(s, cfg.net.tcp.peer_timeout_ms);
  proto::Session ds{};
  st = prove(s, key, to, &ds);
  proto::TcpMemAttach a{};
  memcpy(a.token, r.token, sizeof(a.token));
  proto::Reply ar{};
  if (ok(st) &&
      (!send_on(s, ds, proto::kTcpMemAttach, 2, &a, sizeof(a), -1) ||
       !recv_on(s, ds, proto::kTcpMemAttach, 2, &ar, sizeof(ar), to) ||
       ar.status != static_cast<int32_t>(Status::kOk))) {
    UCC_ERROR("dpu: the daemon did not take this process's memory channel");
    st = Status::kError;
  }
  if (failed(st)) {
    close(s);
    return st;
  }
  return srv->start(s, ds.key, timeout_ms_);
}

Status DaemonLink::hello_remote(const LinkConfig& cfg, uint32_t sq_capacity,
                                uint32_t ncomp) {
  proto::HelloRemote h{};
  h.hello.desc_version = off::kDescVersion;
  h.hello.sq_capacity = sq_capacity;
  h.hello.ncomp = ncomp;
  h.hello.channel_bytes = bytes_;
  h.hello.engine = cfg.engine;
  h.channel_addr = reinterpret_cast<uintptr_t>(mem_);
  h.flags = cfg.dpu_push && rdma_->can_push() ? proto::kPushDescriptors : 0;
  // The channel, registered for the engine (never given to the daemon's
  // registration table: the engine reaches it through its mirror only).
  Status st = rdma_->reg(h.channel_addr, bytes_, &h.rkey, &ch_slot_);
  if (failed(st)) {
    UCC_ERROR("dpu: cannot register the channel (%zu bytes) with the port",
              bytes_);
    return st;
  }
  proto::HelloReply r{};
  st = accept_hello(call(proto::kHelloRemote, &h, sizeof(h), &r, sizeof(r)), r);
  if (ok(st) && h.flags != 0) {
    push_ = (r.flags & proto::kPushDescriptors) != 0;
    ring_off_ = off::Channel::layout(sq_capacity, ncomp).sq;
    inbox_addr_ = r.inbox_addr;
    inbox_rkey_ = r.inbox_rkey;
    if (!push_)
      UCC_INFO("dpu: the daemon took no pushed descriptors: it reads them");
  }
  return st;
}

void DaemonLink::push_descriptors() {
  const uint32_t head = ch_->sq_produced();
  const uint32_t n = head - pushed_;
  if (n == 0) return;
  // At most two pieces: up to the end of the ring, then from its start;
  // the same slots in the inbox.
  const uint32_t cap = ch_->sq_capacity();
  const uint32_t first = pushed_ & (cap - 1);
  const uint32_t n1 = off::first_run(pushed_, n, cap);
  const uint64_t dsz = sizeof(off::CollDesc);
  const uint64_t slots = inbox_addr_ + off::InboxLayout::kSlots;
  plat::MemExport::Piece p[2] = {
      {ring_off_ + first * dsz, n1 * dsz, slots + first * dsz},
      {ring_off_, (n - n1) * dsz, slots}};
  if (!rdma_->push(ch_slot_, p, n1 < n ? 2 : 1, head,
                   inbox_addr_ + off::InboxLayout::kHead, inbox_rkey_)) {
    // The queue pair is broken or stuck: the engine's reads of our
    // memory are too, and it would look at our ring only before a nap.
    // This context's collectives end in an error now, and the daemon,
    // seeing the control connection close, drops our engine, so that it
    // runs none of them into buffers their owners have taken back.
    UCC_ERROR("dpu: cannot push descriptors to the engine: its link is lost");
    push_ = false;
    dead_ = true;
    shutdown(sock_, SHUT_RDWR);
    return;
  }
  pushed_ = head;
}

}  // namespace ucc::host

// dpu mode's half of the daemon link (daemon_link.h): the engine runs in a
// firmware_sim on another computer (a DPU's Arm cores), reached over TCP
// at UCC_DPU_ADDR. Nothing of the emu link's one-kernel means is used:
// no unix socket, no memfd, no peer credentials. Both ends prove the
// deployment's key (UCC_DPU_KEY_FILE) over fresh nonces before anything
// else is said, every later message carries a tag under the session key
// (offload/proto.h, "Over a network"), and the engine reaches this
// process only by RDMA: the channel (ring and completion words) and
// every buffer, through the keys of our registrations with our port.
#include <unistd.h>

#include <cstring>

#include "host/link/daemon_link.h"
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
  if (ok(st)) st = authenticate(key);
  // Our memory by RDMA from now on, the channel first.
  if (ok(st)) st = connect_rdma(cfg);
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

Status DaemonLink::authenticate(const plat::Secret& key) {
  const int to = static_cast<int>(timeout_ms_);
  proto::MsgHeader h{};
  proto::AuthChallenge ch{};
  if (plat::sock::recv_all(sock_, &h, sizeof(h), to) != 1 ||
      h.magic != proto::kMagic || h.type != proto::kChallenge ||
      h.len != sizeof(ch) ||
      plat::sock::recv_all(sock_, &ch, sizeof(ch), to) != 1 ||
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
  const Status st = call(proto::kAuth, &p, sizeof(p), &r, sizeof(r));
  if (failed(st) || r.status != static_cast<int32_t>(Status::kOk)) {
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
  if (!proto::auth_session(key, ch.nonce, p.nonce, &session_))
    return Status::kError;
  return Status::kOk;
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
  // The channel, registered for the engine (never given to the daemon's
  // registration table: the engine reaches it through its mirror only).
  uint32_t slot = 0;
  Status st = rdma_->reg(h.channel_addr, bytes_, &h.rkey, &slot);
  if (failed(st)) {
    UCC_ERROR("dpu: cannot register the channel (%zu bytes) with the port",
              bytes_);
    return st;
  }
  proto::HelloReply r{};
  return accept_hello(call(proto::kHelloRemote, &h, sizeof(h), &r, sizeof(r)),
                      r);
}

}  // namespace ucc::host

// How a client's engine comes to reach the client's memory other than by
// cross-memory attach: RDMA through the node's verbs device
// (kRdmaConnect: emu with UCC_OFFLOAD_MEM=verbs, and dpu mode), or dpu
// mode's TCP fallback (kTcpMemConnect, then kTcpMemAttach on the
// client's second connection: platform/mem/tcp_mem.h, docs/dpu.md).
// Either is asked for once, before the first registration, so that every
// registration the engine holds has its key.
#include <cstring>
#include <new>

#include "firmware_sim/server.h"
#include "firmware_sim/server_client.h"
#include "platform/os/log.h"

namespace ucc::fw {

namespace proto = off::proto;

bool Server::on_rdma_connect(Client& c, const Msg& m) {
  proto::RdmaConnectReply rr{};
  rr.status = static_cast<int32_t>(Status::kInvalidParam);
  proto::RdmaAddr host;
  if (cfg_.hostmem == nullptr) {
    rr.status = static_cast<int32_t>(Status::kNotSupported);
  } else if ((c.ready || (c.tcp && c.authed)) && c.rmem.mem == nullptr &&
             c.tcpmem == nullptr && c.regs.size() == 0 &&
             m.fixed(sizeof(host))) {
    // Before any registration: every one the engine holds has a key.
    memcpy(&host, m.body, sizeof(host));
    c.rmem.mem = cfg_.hostmem->open(host, &rr.addr);
    UCC_INFO("firmware_sim: pid %d: its memory by RDMA%s", c.pid,
             c.rmem.mem != nullptr ? "" : ": refused (no channel)");
    rr.status = static_cast<int32_t>(c.rmem.mem != nullptr ? Status::kOk
                                                           : Status::kError);
  }
  return reply(c, m.h.type, m.h.seq, &rr, sizeof(rr));
}

bool Server::on_tcp_mem_connect(Client& c, const Msg& m) {
  proto::TcpMemConnectReply r{};
  r.status = static_cast<int32_t>(Status::kInvalidParam);
  // Before the hello and any registration, once.
  if (c.tcp && c.authed && !c.ready && c.rmem.mem == nullptr &&
      c.tcpmem == nullptr && c.regs.size() == 0 && m.fixed(0)) {
    c.tcpmem = new (std::nothrow) plat::TcpMemClient;
    if (c.tcpmem == nullptr || !plat::random_bytes(c.token, sizeof(c.token))) {
      delete c.tcpmem;
      c.tcpmem = nullptr;
      r.status = static_cast<int32_t>(Status::kNoMemory);
    } else {
      memcpy(r.token, c.token, sizeof(r.token));
      r.status = static_cast<int32_t>(Status::kOk);
    }
  }
  return reply(c, m.h.type, m.h.seq, &r, sizeof(r));
}

bool Server::on_tcp_mem_attach(Client& c, const Msg& m) {
  proto::Reply r{static_cast<int32_t>(Status::kInvalidParam), 0};
  proto::TcpMemAttach a;
  Client* owner = nullptr;
  // A connection that proved the key and did nothing else; the token
  // of a client still waiting for its channel.
  if (c.tcp && c.authed && !c.ready && c.tcpmem == nullptr &&
      c.rmem.mem == nullptr && m.fixed(sizeof(a))) {
    memcpy(&a, m.body, sizeof(a));
    static_assert(sizeof(a.token) == plat::kMacBytes);
    for (uint32_t i = 0; i < nclients_ && owner == nullptr; ++i) {
      Client* o = clients_[i];
      if (o != &c && o->tcpmem != nullptr && o->rmem.mem == nullptr &&
          plat::mac_equal(o->token, a.token))
        owner = o;
    }
  }
  if (owner == nullptr) {
    UCC_INFO("firmware_sim: a memory connection named no waiting client");
    reply(c, m.h.type, m.h.seq, &r, sizeof(r));
    return false;
  }
  r.status = static_cast<int32_t>(Status::kOk);
  if (!reply(c, m.h.type, m.h.seq, &r, sizeof(r)) || c.io.wants_out())
    return false;
  // The connection is the owner's memory channel now, under its own
  // session key; this client ends here without closing it.
  const int fd = c.io.release();
  if (owner->tcpmem->init(fd, c.session.key,
                          static_cast<uint32_t>(cfg_.io_timeout_ms))) {
    owner->rmem.mem = owner->tcpmem;
    UCC_INFO(
        "firmware_sim: a dpu client's memory over TCP (the fallback, "
        "UCC_DPU_MEM=tcp)");
  }
  return false;
}

}  // namespace ucc::fw

// What the daemon reports of itself (--stats, kStats): its clients,
// teams and descriptors, registrations, the wire's counters, its reaches
// into other processes, the TCP fallback's clients, and its engines'
// transfers to their hosts' memory by step (docs/dpu.md, "Measured").
#include <cstring>

#include "firmware_sim/server.h"
#include "firmware_sim/server_client.h"
#include "platform/os/proc_id.h"
#include "platform/wire/wire.h"

namespace ucc::fw {

namespace proto = off::proto;

bool Server::on_stats(Client& c, const Msg& m) {
  Stats s = stats();
  proto::StatsReply sr{};
  sr.status = static_cast<int32_t>(Status::kOk);
  sr.clients = s.clients;
  sr.descriptors = s.descriptors;
  sr.pushed = s.pushed;
  sr.teams = s.teams;
  sr.uptime_ms = s.uptime_ms;
  sr.registered = s.registered;
  sr.registrations = s.registrations;
  sr.foreign_reaches = plat::foreign_reaches();
  sr.foreign_copies = plat::foreign_copies();
  sr.tcp_mem_clients = s.tcp_mem_clients;
  sr.tcp_mem_requests = s.tcp_mem_requests;
  static_assert(sizeof(sr.step_n) == sizeof(s.steps.n));
  memcpy(sr.step_n, s.steps.n, sizeof(sr.step_n));
  memcpy(sr.step_bytes, s.steps.bytes, sizeof(sr.step_bytes));
  memcpy(sr.step_ns, s.steps.ns, sizeof(sr.step_ns));
  if (cfg_.wire != nullptr) {
    const plat::wire::WireStats& w = cfg_.wire->stats();
    sr.wire_tx_frames = w.tx_frames;
    sr.wire_rx_frames = w.rx_frames;
    sr.wire_tx_bytes = w.tx_bytes;
    sr.wire_retransmits = w.retransmits;
    sr.wire_bad_frames = w.bad_frames;
    sr.wire_dup_rx = w.dup_rx;
    sr.wire_injected = w.inj_drop + w.inj_dup + w.inj_reorder + w.inj_corrupt;
  }
  return reply(c, m.h.type, m.h.seq, &sr, sizeof(sr));
}

Stats Server::stats() const {
  Stats s{};
  s.uptime_ms = now_ms() - started_ms_;
  s.registered = registered_;
  s.tcp_mem_requests = tcp_mem_requests_;
  s.steps = steps_gone_;
  s.pushed = pushed_gone_;
  for (uint32_t i = 0; i < nclients_; ++i) {
    s.steps.add(clients_[i]->rmem.steps);
    if (clients_[i]->mirror != nullptr)
      s.pushed += clients_[i]->mirror->pushed();
    if (const plat::TcpMemClient* t = clients_[i]->tcpmem; t != nullptr) {
      s.tcp_mem_requests += t->requests();
      s.tcp_mem_clients += clients_[i]->rmem.mem != nullptr ? 1 : 0;
    }
    if (!clients_[i]->ready) continue;  // a --stats query, say
    ++s.clients;
    s.teams += clients_[i]->teams;
    s.descriptors += clients_[i]->engine.taken();
    s.registrations += clients_[i]->regs.size();
  }
  return s;
}

}  // namespace ucc::fw

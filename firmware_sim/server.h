// The firmware_sim daemon: the emulated DPU of one node. It serves any
// number of host contexts (of any number of processes and jobs) over a
// unix socket; for each it attaches the context's channel (a memfd the host
// passes in kHello), runs a device engine on it, and answers the control
// protocol (offload/proto.h). One thread does everything: control
// requests, then a progress pass over every engine, with back-off when
// idle (a host that finds the daemon asleep rings its doorbell).
//
// The engine of a host reaches that host's buffers only through
// process_vm_readv/writev on the host's pid (taken from the socket, not
// from anything the host says), and only inside the ranges the host has
// registered. A registration must name memory the host has mapped
// (/proc/<pid>/maps, platform/mem/proc_maps.h).
#pragma once

#include <poll.h>

#include <cstdint>

#include "offload/proto.h"
#include "offload/types.h"
#include "platform/mem/remote_mem.h"
#include "platform/os/crypto.h"

namespace ucc::plat {
class Net;
namespace wire {
class Wire;
}
}  // namespace ucc::plat

namespace ucc::fw {

using off::Status;
struct Msg;  // a request as read from a client (client_io.h)

// How the engines reach their hosts' memory by RDMA (proto::kRdmaConnect):
// a channel per client over the node's verbs device (verbs_opts.cc, with
// --verbs).
class HostMemPort {
 public:
  virtual ~HostMemPort() = default;
  // A channel connected to the host's end; *mine: the engine's end.
  // nullptr when none can be made (logged).
  virtual plat::RemoteMem* open(const off::proto::RdmaAddr& host,
                                off::proto::RdmaAddr* mine) = 0;
  virtual void close(plat::RemoteMem* m) = 0;
};

struct ServerConfig {
  const char* socket_path = nullptr;
  // dpu mode (docs/dpu.md): also serve hosts over TCP on this "host:port"
  // (remote_client.cc), each proving `key` (and the daemon proving it to
  // them) before anything else; their engines reach their memory by RDMA
  // only, so it needs hostmem.
  const char* listen_addr = nullptr;
  plat::Secret key{};
  uint32_t spin = 256;       // idle passes before sleeping
  int sleep_ms = 5;          // longest sleep while clients exist
  int exit_idle_ms = -1;     // exit after this long without clients
  int io_timeout_ms = 2000;  // a request must arrive whole within this
  // Serve clients of any user (--allow-users); by default only those of
  // the daemon's own effective user, the others are disconnected at once.
  bool any_user = false;
  // The node's wire to other firmware_sims (nullptr: team fabrics use
  // shared memory). Progressed by run(); the daemon never sleeps long
  // while it holds frames in flight.
  plat::wire::Wire* wire = nullptr;
  // Or another network to other nodes (verbs, --verbs), progressed and
  // napped on the same way (its peers cannot ring our doorbell either).
  plat::Net* net = nullptr;
  // Where clients may ask the engine to reach their memory by RDMA.
  // Without it, dpu clients can only use the TCP fallback
  // (kTcpMemConnect, platform/mem/tcp_mem.h), which every daemon that
  // listens serves.
  HostMemPort* hostmem = nullptr;
  // Bytes of pinned memory all dpu clients' inboxes (pushed descriptors,
  // docs/dpu.md) may hold together; a client past it is not given one
  // and its engine reads its ring instead (--inbox-budget).
  uint64_t inbox_budget = uint64_t{64} << 20;
  // The identity of the node this daemon emulates (platform/os/host_id.h):
  // its engines share memory with the engines of daemons of the same node.
  uint64_t node[2] = {0, 0};
};

// What `--stats` (and kStats) report.
struct Stats {
  uint32_t clients;
  uint64_t descriptors;
  uint64_t pushed;  // of which found in inboxes (dpu mode), clients gone too
  uint64_t teams;
  uint64_t uptime_ms;
  uint64_t registered;     // registrations granted so far (all clients)
  uint64_t registrations;  // held now (clients still connected)
  uint64_t tcp_mem_clients;   // dpu clients on the TCP fallback now
  uint64_t tcp_mem_requests;  // their memory requests so far
  plat::MemSteps steps;       // transfers to hosts' memory, by step
};

class Server {
 public:
  Server() = default;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();

  // Binds the socket. kNoResource when a live daemon already listens there.
  Status start(const ServerConfig& cfg);
  // Serves until stop() (from a signal handler too), a kShutdown request
  // once no client is left, or exit_idle_ms without clients.
  void run();
  void stop() { stop_ = 1; }

  // For tests and fuzzing in one process: serve a connected socket as a
  // client (the same checks as an accepted one; false only when out of
  // memory), one pass of the loop without sleeping (engines, then the
  // sockets), how many clients are being served, and its counts.
  bool adopt(int fd);
  // The same for a client over a network (dpu mode): it is challenged at
  // once and must prove the key (remote_client.cc; fuzz_remote.cc).
  bool adopt_remote(int fd);
  uint64_t pass();
  // One pass as the loop makes before it naps: the engines ask their
  // hosts for a doorbell and look once more (dpu: at the host's ring
  // itself), then are awake again; no sleep.
  uint64_t nap_pass();
  uint32_t clients() const { return nclients_; }
  Stats stats() const;

 private:
  struct Client;

  void accept_clients();
  // A new client on fd (ours now), not yet counted; nullptr when out of
  // memory (fd closed).
  Client* add_client(int fd);
  // TCP clients (remote_client.cc): accepted, challenged; a request's tag
  // and seq checked and the tag taken off (false: drop the client); the
  // handshake; the dpu hello; a pass of their channels.
  void accept_tcp();
  bool tcp_in(Client& c, Msg& m);
  bool on_auth(Client& c, const Msg& m);
  bool on_hello_remote(Client& c, const Msg& m);
  // A client that asked to push its descriptors: its inbox, exposed on
  // its channel alone, into *hr (nothing where the channel cannot).
  void offer_inbox(Client& c, uint32_t sq_capacity, off::proto::HelloReply* hr);
  // The TCP fallback: a token for the client's second connection, and
  // that connection, once it proved the key, made its memory channel
  // (false: the connection is no client of its own; drop it).
  bool on_tcp_mem_connect(Client& c, const Msg& m);
  bool on_tcp_mem_attach(Client& c, const Msg& m);
  // A TCP client that has not proved the key within io_timeout_ms (it
  // may not hold a place for longer; remote_client.cc).
  bool stranger_overdue(const Client& c, uint64_t now) const;
  // Whether a dpu client's channel still works (false: logged; drop it).
  bool mirror_ok(Client& c);
  void set_idle(Client& c, bool idle);
  void set_idle_all(bool idle);  // every client that said hello
  // Polls the listening socket and the clients for timeout_ms at most and
  // serves what is ready; drops clients that are overdue. false when out
  // of memory.
  bool io_pass(int timeout_ms);

  bool handle(Client& c);  // false: drop the client
  // Whether a client's process is still the one that said hello (false:
  // logged, and the caller drops it).
  bool still_same(Client& c);
  bool dispatch(Client& c, Msg& m);
  // One handler per request type: false (or a reply that cannot be sent)
  // drops the client; those returning a Status are answered with a
  // plain Reply carrying it.
  bool on_hello(Client& c, Msg& m);
  bool on_team_open(Client& c, const Msg& m);
  Status on_team_connect(Client& c, const Msg& m);
  Status on_team_seal_close(Client& c, const Msg& m);
  bool on_register(Client& c, const Msg& m);
  bool on_rdma_connect(Client& c, const Msg& m);
  bool on_stats(Client& c, const Msg& m);
  bool reply(Client& c, uint16_t type, uint32_t seq, const void* body,
             uint32_t len);
  void drop(uint32_t i);
  uint64_t progress();

  ServerConfig cfg_{};
  int lfd_ = -1;
  int tfd_ = -1;  // TCP, with listen_addr
  Client** clients_ = nullptr;
  ::pollfd* pfds_ = nullptr;  // io_pass's, one per client + listener
  uint32_t pcap_ = 0;
  uint32_t nclients_ = 0;
  uint32_t cap_ = 0;
  uint64_t started_ms_ = 0;
  uint32_t passes_ = 0;  // progress() calls, for the id checks
  bool look_ = true;     // check ids on the next pass (after a nap)
  uint64_t registered_ = 0;
  uint64_t tcp_mem_requests_ = 0;  // of clients gone
  plat::MemSteps steps_gone_;      // of clients gone
  uint64_t pushed_gone_ = 0;       // of clients gone
  uint64_t inbox_bytes_ = 0;       // pinned in the clients' inboxes now
  bool shutdown_ = false;
  volatile int stop_ = 0;
};

}  // namespace ucc::fw

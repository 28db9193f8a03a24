// TCP between hosts: an engine's Net (platform/fabric/fabric.h) for the
// ranks of its teams on other hosts. One TcpNet per engine: a listening
// socket, one connection per remote engine (shared by every team that
// has ranks there), and the endpoints of its team members (TcpFabric,
// tcp_fabric.h). The frames: tcp_proto.h.
//
// Connections: a member's address carries its engine's IPv4 address,
// port and instance id. Connections are made on demand (tcp_fabric.h):
// the engine that first needs one connects, the other accepts, and both
// send a hello; when both call at once, the call of the engine with the
// smaller id stands and the other is refused. Everything is
// non-blocking: a message committed before its connection is up waits in
// the sender's shadow inbox and goes out as soon as it is. Small messages
// are written at once (TCP_NODELAY); what the socket does not take now
// goes out from later progress calls. A lost connection (reset, EOF with
// no goodbye) is made again by the side that made it, and each link then
// resends from the last message the peer acknowledged (the others it
// drops); if that fails within the peer timeout, or the peer refuses, or
// a peer a team waits on stays silent that long (pings go out after the
// keepalive interval), its links are lost and the fabrics report it. The
// side that waits for the other to reconnect knocks on its port meanwhile:
// a closed port (the engine crashed, its host lives) ends the wait at once.
//
// Everything read from a socket is untrusted: every header field is
// checked against the connection's engine and the endpoint's state
// before a byte lands in an inbox; a frame that fails ends the
// connection.
//
// Idle: progress() costs no system call while no endpoint is open; with
// connections, one epoll_wait(0) per call, and after `spin` idle calls a
// wait of at most `wait_us` for data (ppoll on the epoll descriptor).
//
// Threads: the engine's. Memory: endpoints are made at team creation,
// connections come from a fixed pool (TcpConfig::max_peers) when a link
// first needs one (or a peer calls); progress allocates nothing.
#pragma once

#include <cstdint>

#include "platform/base/arena.h"
#include "platform/base/hot.h"
#include "platform/fabric/fabric.h"
#include "platform/fabric/net_config.h"
#include "platform/tcp/tcp_proto.h"

namespace ucc::plat::tcp {

struct TcpStats {
  uint64_t tx_frames, rx_frames;
  uint64_t tx_bytes, rx_bytes;  // message bytes (data frames)
  uint64_t connects;            // connections established (reconnections too)
  uint64_t calls;               // connect()s of ours (calls made again too)
  uint32_t peak_conns;          // connections up at once, at most
  uint64_t breaks;              // connections lost
  uint64_t dup_msgs;            // messages received again after a break
  uint64_t bad_frames;          // refused: the connection was closed
  uint64_t inj_drops;           // connections broken on purpose
  uint64_t strangers_dropped;   // unproven connections closed for a newer one
  uint64_t bad_sums;            // frames that failed a checksum (also bad)
  uint64_t data_sealed;         // data frames about to go out (resent too)
  uint64_t gets, get_bytes;     // one-sided reads of ours answered whole
  uint64_t puts, put_bytes;     // one-sided writes of ours acknowledged
  uint64_t puts_in, put_in_bytes;  // the peers' writes placed in our memory
};

struct Conn;
struct Link;
class TcpFabric;

// A connection's options, both ends alike (TCP_NODELAY, SO_KEEPALIVE).
void tune_socket(int fd);

class TcpNet final : public Net {
 public:
  TcpNet() = default;
  TcpNet(const TcpNet&) = delete;
  TcpNet& operator=(const TcpNet&) = delete;
  ~TcpNet() override { fini(); }

  // Listens. kInvalidParam for a bad configuration or an interface that
  // does not exist, kError when the socket cannot be made.
  Status init(const TcpConfig& cfg);
  // Delivers what endpoints still owe their peers and closes every
  // connection cleanly (for at most the peer timeout, or 10 s, each).
  void fini();

  // --- Net --------------------------------------------------------------------
  Fabric* open(const FabricConfig& cfg, FabricAddr* addr) override;
  void close(Fabric* f, bool lost) override;
  uint64_t progress() override { return poll(true); }
  // progress(), allowed to wait for data (after `spin` idle calls) only
  // where may_wait: the caller knows whether other transports (shared
  // memory, which no descriptor here wakes) are quiet too.
  uint64_t poll(bool may_wait);
  UCC_HOT bool in_use() const override { return active(); }
  uint64_t progress_quiet(uint32_t quiet) override {
    return poll(quiet >= cfg_.spin);
  }

  const TcpConfig& config() const { return cfg_; }
  const TcpStats& stats() const { return stats_; }
  uint32_t ip() const { return ip_; }      // network byte order
  uint16_t port() const { return port_; }  // network byte order
  uint64_t instance() const { return instance_; }
  // What a connecting engine proves it holds (tcp_proto.h).
  const uint64_t* key() const { return key_; }
  // Endpoints open, connections up or being made.
  bool active() const { return nopen_ != 0 || conns_ != nullptr; }
  // Connections up (to other engines) now.
  uint32_t connections() const;
  // Endpoints closed whose goodbyes are not answered yet.
  uint32_t lingering() const;
  // Endpoints open or lingering (not freed yet).
  uint32_t endpoints() const { return nopen_; }

  // --- for fabrics -----------------------------------------------------------

  // Binds a link to the connection to its peer's engine, made now if
  // there is none (the fabric's connect() checked that the peer is not
  // in this engine). kNoMemory.
  Status attach(Link* l);
  // Binds a link to connection c (its peer's engine's).
  void bind(Link* l, Conn* c);
  void detach(Link* l);
  // Something was committed on a link: write what its connection can take.
  void kick(Link* l);
  // A link owes its peer credits: sent from the next progress call.
  // Credits owed on l: at once where urgent, else with the link's next
  // message or after kCreditDelayUs (Conn::pick_link).
  void owe_credit(Link* l, bool urgent);
  // A fabric stuck on a silent peer asks for pings on its connection.
  void want_ping(Link* l);
  uint64_t now() const { return now_; }
  TcpStats& counters() { return stats_; }

  // --- for connections (tcp_conn.cc) -----------------------------------------
  // The endpoint an id names, or nullptr (gone, or never ours).
  TcpFabric* endpoint(uint32_t id) const;
  // The peer engine said hello (tcp_proto.h, one of the three steps):
  // false when it may not (the connection is then closed). tcp_hello.cc.
  bool on_hello(Conn* c, const Hello& hello);
  // A connection from engine `instance` (c, accepted) while we call it
  // too: whether our call is the one that stands (smaller id).
  bool our_call_stands(uint64_t instance, const Conn* c) const;
  // Our connect() succeeded: the opening hello is owed.
  void open_handshake(Conn* c);
  // Connections accepted and not proven yet (kMaxStrangers at most);
  // with `oldest`, also the one accepted first (nullptr when none).
  uint32_t strangers(Conn** oldest = nullptr) const;
  // The socket broke (made again, or timed out); the peer broke the
  // protocol (given up at once).
  void broken(Conn* c, const char* why);
  void protocol_error(Conn* c);
  void watch(Conn* c, bool out);  // EPOLLOUT wanted or not
  uint64_t rand64();
  bool chance(double p);

 private:
  Conn* find_conn(uint64_t instance) const;
  // An accepted connection from `ip` whose caller says it is engine
  // `instance` and has our answer, its proof not come yet.
  Conn* answered_call(uint64_t instance, uint32_t ip) const;
  // A call we answered, with our links waiting on it, that failed before
  // its proof came: we call the engine ourselves on the same record.
  void call_instead(Conn* c, const char* why);
  static bool waits_on_answered(const Conn* c);
  // Closes c's socket (out of the epoll set) and forgets the frames and
  // the handshake half done on it.
  void drop_socket(Conn* c);
  // Connections to engines that said who they are, or that we called,
  // not given up; whether one more fits max_peers (else said, once).
  uint32_t peers_in_use() const;
  bool peer_room();
  Conn* new_conn(uint64_t instance);
  void free_conn(Conn* c);
  void accept_all();
  void start_connect(Conn* c);
  void finish_connect(Conn* c);
  void established(Conn* c);
  void dead(Conn* c, const char* why);
  void probe(Conn* c);
  void end_probe(Conn* c);
  uint64_t maintain();
  void reap_endpoints();
  void close_gracefully(uint64_t limit);

  TcpConfig cfg_{};
  int lfd_ = -1;
  int ep_ = -1;  // epoll
  uint32_t ip_ = 0;
  uint16_t port_ = 0;
  uint64_t instance_ = 0;
  uint64_t key_[2] = {};
  uint64_t now_ = 0;
  uint64_t next_maintain_ = 0;
  uint64_t rng_ = 0;
  uint32_t idle_ = 0;
  TcpStats stats_{};

  Conn* conns_ = nullptr;  // every connection, by list
  base::Arena tables_;     // eps_, gen_ and the connections' pool
  // The pool: max_peers + kMaxStrangers connections, handed out in order
  // (untouched until then), and those given back since.
  Conn* pool_ = nullptr;
  uint32_t pool_used_ = 0;
  Conn* pool_free_ = nullptr;
  bool pool_said_ = false;     // the error for an empty pool, once
  TcpFabric** eps_ = nullptr;  // max_endpoints slots, nullptr when free
  uint16_t* gen_ = nullptr;    // per slot: bumped at each open
  uint32_t nopen_ = 0;         // open or lingering
  // Every open slot lies below top_: what runs each millisecond walks
  // the endpoints open, not the max_endpoints reserved.
  uint32_t top_ = 0;
};

}  // namespace ucc::plat::tcp

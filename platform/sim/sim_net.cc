#include "platform/sim/sim_net.h"

#include <cstdlib>
#include <cstring>
#include <deque>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform/fabric/fabric.h"
#include "platform/net/net.h"
#include "platform/os/log.h"

namespace ucc::plat::sim {
namespace {

namespace sg4 = simgrid::s4u;

constexpr uint32_t kSimAddrMagic = 0x53494d31;  // "SIM1"

// Our FabricAddr: the member's fabric in this process's registry.
struct SimAddr {
  uint32_t id;  // World::fabs index + 1
  uint32_t nranks;
  uint32_t rank;
  uint32_t slot_size;
  uint32_t nslots;
};
static_assert(sizeof(SimAddr) <= sizeof(FabricAddr::bytes));

// One message on its way or waiting to be released. The payload is a
// slot-sized buffer of the simulation's pool.
struct Msg {
  uint32_t from_id;  // the sender's fabric (its credit goes back there)
  uint32_t from;     // the sender's team rank
  MsgHdr hdr;
  char* buf;  // nullptr: a credit, for the fabric itself
};

class SimFabric;

// The simulation's state, one per process (one simulation per process).
// Message buffers come from pools grown as messages are in flight: a
// simulation's bookkeeping, not a transport's memory (the members' own
// memory is the engine's, counted by the driver).
struct World {
  std::vector<SimFabric*> fabs;  // by id - 1; nullptr once closed
  std::unordered_map<uint32_t, std::vector<char*>> bufs;  // by slot size
  std::vector<Msg*> msgs;
  Costs costs;
  Counters ctr{};
};

World& world() {
  static World w;
  return w;
}

char* take_buf(uint32_t size) {
  std::vector<char*>& v = world().bufs[size];
  if (v.empty()) return static_cast<char*>(aligned_alloc(64, size));
  char* b = v.back();
  v.pop_back();
  return b;
}
void give_buf(char* b, uint32_t size) { world().bufs[size].push_back(b); }

Msg* take_msg() {
  std::vector<Msg*>& v = world().msgs;
  if (v.empty()) return new Msg;
  Msg* m = v.back();
  v.pop_back();
  return m;
}
void give_msg(Msg* m) { world().msgs.push_back(m); }

// SimGrid's clock resolves 1 ns: work is charged once it adds up to that.
constexpr double kTick = 1e-9;

class SimFabric final : public Fabric {
 public:
  SimFabric(uint32_t id, const FabricConfig& cfg) : id_(id), cfg_(cfg) {
    mbox_ = sg4::Mailbox::by_name("ucc.sim." + std::to_string(id));
    mbox_->set_receiver(sg4::Actor::self());
    get_ = mbox_->get_async<Msg>(&got_);
  }
  ~SimFabric() override {
    // Sends still on their way finish without us.
    for (sg4::CommPtr& c : sends_)
      if (!c->test()) c->detach();
    if (get_ != nullptr) get_->cancel();
    mbox_->set_receiver(nullptr);
    for (auto& kv : peers_) {
      if (kv.second.reserved != nullptr)
        give_buf(kv.second.reserved, cfg_.slot_size);
      for (Msg* m : kv.second.pend)
        if (m != nullptr) drop(m);
      for (Msg* m : kv.second.arrived) drop(m);
    }
  }

  Status connect(const FabricAddr* addrs, const bool* mine) override {
    ids_.assign(cfg_.nranks, 0);
    uint64_t n = 0;
    for (uint32_t r = 0; r < cfg_.nranks; ++r) {
      // Ourselves too: the simulated net carries every rank's messages
      // (Net::carries_local), those to ourselves included.
      if (!mine[r]) continue;
      SimAddr a;
      memcpy(&a, addrs[r].bytes, sizeof(a));
      if (addrs[r].kind != kSimAddrMagic || a.nranks != cfg_.nranks ||
          a.rank != r || a.slot_size != cfg_.slot_size ||
          a.nslots != cfg_.nslots || a.id == 0 || a.id > world().fabs.size()) {
        UCC_ERROR("sim: team rank %u's address is not one of this team", r);
        return Status::kError;
      }
      ids_[r] = a.id;
      ++n;
    }
    world().ctr.connected += n;
    return Status::kOk;
  }
  void seal() override {}

  void* tx_reserve(uint32_t peer) override {
    Peer* p = link(peer);
    if (p == nullptr) return nullptr;
    if (p->reserved == nullptr && p->out < cfg_.nslots)
      p->reserved = take_buf(cfg_.slot_size);
    return p->reserved;
  }
  uint32_t tx_free(uint32_t peer) override {
    Peer* p = link(peer);
    return p == nullptr ? 0 : cfg_.nslots - p->out;
  }
  void tx_commit(uint32_t peer, uint32_t len, const MsgKey& key, uint8_t kind,
                 uint32_t lag) override {
    Peer* p = link(peer);
    if (p == nullptr || p->reserved == nullptr || len > cfg_.slot_size) return;
    Msg* m = take_msg();
    m->from_id = id_;
    m->from = cfg_.rank;
    m->hdr = MsgHdr{};
    m->hdr.len = len;
    m->hdr.kind = kind;
    m->hdr.key = key;
    set_lag(&m->hdr, lag);
    m->buf = p->reserved;
    p->reserved = nullptr;
    ++p->out;
    ++events_;
    // The copy into the slot, and the post.
    charge(world().costs.send_s_per_byte, len, world().costs.send_s_per_msg);
    World& w = world();
    SimFabric* to = w.fabs[ids_[peer] - 1];
    if (to == nullptr) {  // it left: nothing will release the message
      --p->out;
      recycle(m, cfg_.slot_size);
      return;
    }
    ++w.ctr.messages;
    w.ctr.bytes += len;
    send(to, m, uint64_t{len} + kWireHeader);
  }

  // Messages come only from peers touched (a message touches its sender).
  uint32_t heard_count() const override {
    return static_cast<uint32_t>(heard_.size());
  }
  uint32_t heard_peer(uint32_t i) const override { return heard_[i]; }

  uint32_t rx_poll(uint32_t peer) override {
    auto it = peers_.find(peer);
    if (it == peers_.end()) return 0;
    Peer& p = it->second;
    size_t k = 0;
    for (Msg* m : p.pend)
      if (m != nullptr) p.pend[k++] = m;
    if (k != p.pend.size()) {
      p.pend.resize(k);
      ++p.epoch;
    }
    p.pend.insert(p.pend.end(), p.arrived.begin(), p.arrived.end());
    p.arrived.clear();
    return static_cast<uint32_t>(p.pend.size());
  }
  uint32_t rx_npend(uint32_t peer) const override {
    const Peer* p = find(peer);
    return p == nullptr ? 0 : static_cast<uint32_t>(p->pend.size());
  }
  uint32_t rx_epoch(uint32_t peer) const override {
    const Peer* p = find(peer);
    return p == nullptr ? 0 : p->epoch;
  }
  const MsgHdr* rx_hdr(uint32_t peer, uint32_t i) const override {
    const Msg* m = at(peer, i);
    return m == nullptr ? nullptr : &m->hdr;
  }
  const void* rx_payload(uint32_t peer, uint32_t i) const override {
    const Msg* m = at(peer, i);
    return m == nullptr ? nullptr : m->buf;
  }
  void rx_release(uint32_t peer, uint32_t i) override {
    auto it = peers_.find(peer);
    if (it == peers_.end() || i >= it->second.pend.size()) return;
    Msg* m = it->second.pend[i];
    if (m == nullptr) return;
    it->second.pend[i] = nullptr;
    ++events_;
    // The copy (or reduction) out of the slot, then the slot is free.
    charge(world().costs.recv_s_per_byte, m->hdr.len,
           world().costs.recv_s_per_msg);
    drop(m);
  }

  bool peer_lost() const override { return false; }
  uint32_t attention() const override { return attention_; }
  uint64_t events() const override { return events_; }

  // The net's side. Takes the messages that have arrived; how many.
  uint64_t pull() {
    // Messages complete only as simulated time moves: after a miss, none
    // can have arrived until the clock changes (saves a simulated call,
    // the costliest part of a pass).
    const double now = sg4::Engine::get_clock();
    if (now == missed_at_) return 0;
    reap_sends();
    uint64_t n = 0;
    while (get_ != nullptr && get_->test()) {
      Msg* m = got_;
      got_ = nullptr;
      get_ = mbox_->get_async<Msg>(&got_);
      if (m == nullptr) continue;
      ++n;
      if (m->buf == nullptr) {  // a slot of ours released
        credit(m->from);
        give_msg(m);
        continue;
      }
      Peer& p = touch(m->from);
      p.arrived.push_back(m);
      if (m->hdr.kind != 0) ++attention_;
    }
    missed_at_ = now;
    return n;
  }
  const sg4::CommPtr& pending() const { return get_; }
  // The receiver released one of our messages.
  void credit(uint32_t peer) {
    auto it = peers_.find(peer);
    if (it != peers_.end() && it->second.out != 0) --it->second.out;
  }
  uint32_t id() const { return id_; }

 private:
  // The engine's work on a message of `bytes`, in simulated time (the
  // member's actor sleeps; others run meanwhile).
  void charge(double s_per_byte, uint32_t bytes, double s_per_msg) {
    owed_ += s_per_byte * bytes + s_per_msg;
    if (owed_ < kTick) return;
    sg4::this_actor::sleep_for(owed_);
    owed_ = 0;
  }

  struct Peer {
    uint32_t out = 0;  // our messages it has not released
    uint32_t epoch = 0;
    char* reserved = nullptr;
    std::vector<Msg*> pend;     // numbered as of the last rx_poll
    std::vector<Msg*> arrived;  // since then
  };

  // Per-peer state exists for the peers a member talks to, not for all
  // it was connected to (what "touched" counts).
  Peer& touch(uint32_t peer) {
    auto it = peers_.find(peer);
    if (it != peers_.end()) return it->second;
    ++world().ctr.touched;
    heard_.push_back(peer);
    return peers_[peer];
  }
  Peer* link(uint32_t peer) {
    if (peer >= ids_.size() || ids_[peer] == 0) return nullptr;
    return &touch(peer);
  }
  const Peer* find(uint32_t peer) const {
    auto it = peers_.find(peer);
    return it == peers_.end() ? nullptr : &it->second;
  }
  const Msg* at(uint32_t peer, uint32_t i) const {
    const Peer* p = find(peer);
    return p == nullptr || i >= p->pend.size() ? nullptr : p->pend[i];
  }
  // A message of ours leaves the simulation: its slot goes back to its
  // sender, if that is still there. While the sender has slots left, at
  // once; once it has none (it may be waiting for one), by a credit
  // message, which costs it a trip across the network, as a real
  // transport's credit does, and wakes it.
  void drop(Msg* m) {
    World& w = world();
    SimFabric* from =
        m->from_id - 1 < w.fabs.size() ? w.fabs[m->from_id - 1] : nullptr;
    if (from != nullptr) {
      if (from->starved(cfg_.rank)) {
        Msg* c = take_msg();
        c->from_id = id_;
        c->from = cfg_.rank;
        c->hdr = MsgHdr{};
        c->buf = nullptr;
        ++w.ctr.credits;
        send(from, c, kWireHeader);
      } else {
        from->credit(cfg_.rank);
      }
    }
    recycle(m, cfg_.slot_size);
  }
  // A message on its way to `to`'s mailbox. Not detached: SimGrid 3.32
  // files every detached comm in one list of the whole simulation and
  // walks all of it as each one finishes (CommImpl::finish), which made
  // a run's real time grow with the square of its ranks (docs/scale.md).
  // Ours are kept here, oldest first, and let go once done (reap_sends).
  void send(SimFabric* to, Msg* m, uint64_t bytes) {
    sends_.push_back(to->mbox_->put_async(m, bytes));
  }
  // Lets go of the sends that have arrived, oldest first: each test()
  // of a finished one takes it off our actor's own list, which holds only
  // our sends under way. One still on its way stops the walk (the ones
  // behind it wait for a later pass).
  void reap_sends() {
    while (!sends_.empty() && sends_.front()->test()) sends_.pop_front();
  }
  // Every slot towards `peer` is in use.
  bool starved(uint32_t peer) const {
    const Peer* p = find(peer);
    return p != nullptr && p->out >= cfg_.nslots;
  }
  static void recycle(Msg* m, uint32_t slot_size) {
    give_buf(m->buf, slot_size);
    give_msg(m);
  }

  uint32_t id_;
  FabricConfig cfg_;
  sg4::Mailbox* mbox_ = nullptr;
  sg4::CommPtr get_;
  Msg* got_ = nullptr;
  std::deque<sg4::CommPtr> sends_;  // ours under way, oldest first
  std::vector<uint32_t> ids_;  // peers' fabric ids by team rank; 0: none
  std::unordered_map<uint32_t, Peer> peers_;
  std::vector<uint32_t> heard_;  // the peers touched, in order
  uint32_t attention_ = 0;
  uint64_t events_ = 0;
  double owed_ = 0;        // work not charged yet (below kTick)
  double missed_at_ = -1;  // when pull() last found nothing more
};

// One context's simulated network: the fabrics of its team members.
class SimNet final : public Net {
 public:
  ~SimNet() override {
    for (SimFabric* f : fabs_) forget(f);
  }

  Fabric* open(const FabricConfig& cfg, FabricAddr* addr) override {
    if (!fabric_config_ok(cfg)) return nullptr;
    World& w = world();
    // The id is taken before the constructor's first simulated call, at
    // which other actors run and open fabrics of their own.
    w.fabs.push_back(nullptr);
    const auto id = static_cast<uint32_t>(w.fabs.size());
    auto* f = new SimFabric(id, cfg);
    w.fabs[id - 1] = f;
    fabs_.push_back(f);
    ++w.ctr.fabrics;
    *addr = FabricAddr{};
    addr->kind = kSimAddrMagic;
    const SimAddr a{id, cfg.nranks, cfg.rank, cfg.slot_size, cfg.nslots};
    memcpy(addr->bytes, &a, sizeof(a));
    return f;
  }
  void close(Fabric* f, bool lost) override {
    (void)lost;  // peers see nothing of it: the simulation has no failures
    for (size_t i = 0; i < fabs_.size(); ++i) {
      if (fabs_[i] != f) continue;
      fabs_[i] = fabs_.back();
      fabs_.pop_back();
      forget(static_cast<SimFabric*>(f));
      return;
    }
  }
  uint64_t progress() override {
    uint64_t n = 0;
    for (SimFabric* f : fabs_) n += f->pull();
    return n;
  }
  bool in_use() const override { return !fabs_.empty(); }
  bool carries_local() const override { return true; }
  // Quiet for long enough: wait in simulated time until a message arrives
  // for one of our members (or wait_s passes).
  uint64_t progress_quiet(uint32_t quiet) override {
    uint64_t n = progress();
    World& w = world();
    if (n != 0 || quiet < w.costs.spin || fabs_.empty()) return n;
    waiting_.clear();
    for (SimFabric* f : fabs_) waiting_.push_back(f->pending());
    ++w.ctr.waits;
    if (sg4::Comm::wait_any_for(waiting_, w.costs.wait_s) < 0) ++w.ctr.timeouts;
    return progress();
  }

 private:
  static void forget(SimFabric* f) {
    world().fabs[f->id() - 1] = nullptr;
    delete f;
  }

  std::vector<SimFabric*> fabs_;
  std::vector<sg4::CommPtr> waiting_;
};

Status open_sim(const NetConfig& cfg, Net** out) {
  (void)cfg;
  *out = nullptr;
  if (sg4::Actor::self() == nullptr) {
    UCC_ERROR("UCC_NET=sim: a context opened outside a simulated actor");
    return Status::kInvalidParam;
  }
  *out = new SimNet;
  ++world().ctr.nets;
  return Status::kOk;
}

}  // namespace

void set_costs(const Costs& c) { world().costs = c; }
void install() { set_sim_opener(&open_sim); }
Counters counters() { return world().ctr; }

}  // namespace ucc::plat::sim

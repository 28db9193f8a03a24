#include "device/engine/engine.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "device/engine/blocks.h"
#include "device/engine/team.h"
#include "device/reduce/reduce.h"
#include "device/select/select.h"
#include "platform/os/clock.h"
#include "platform/os/log.h"

namespace ucc::dev {

using off::CollDesc;

Status Engine::init(const off::EngineConfig& cfg, const EngineEnv& env,
                    off::Channel* ch) {
  if (!off::engine_config_ok(cfg) || cfg.inflight > Port::kMaxLive)
    return Status::kInvalidParam;
  cfg_ = cfg;
  env_ = env;
  if (env_.where.owner_pid == 0) env_.where.owner_pid = getpid();
  // Single copy reads peers' memory from this process: only when the
  // engine runs inside a rank's own process.
  if (env_.mem.mode() != plat::MemAccess::Mode::kDirect) cfg_.cma_min = 0;
  fill_caps();
  ch_ = ch;
  // A slot's Team is made when a team first opens in it (team_open) and
  // kept for the next team there: contexts may allow many teams
  // (UCC_MAX_TEAMS) and pay only for those they open.
  for (int pass = 0; pass < 2; ++pass) {
    teams_ = tables_.take<Team*>(cfg.max_teams);
    homes_ = tables_.take<base::Arena>(cfg.max_teams);
    busy_ = tables_.take<uint32_t>(cfg.max_teams);
    if (pass == 0 && !tables_.commit()) return Status::kNoMemory;
  }
  // homes_[i] is constructed with its Team (team_open): a context sized
  // for thousands of teams (UCC_MAX_TEAMS=auto) touches no page of the
  // tables for slots it never uses.
  nbusy_ = 0;
  Status st = store_.init(cfg.unexpected, cfg.slot_size);
  if (failed(st)) fini();
  return st;
}

void Engine::fill_caps() {
  caps_ = off::EngineCaps{};
  caps_.version = off::kCapsVersion;
  caps_.bytes = sizeof(off::EngineCaps);
  caps_.max_team_size = 1u << 20;
  // Reductions combine whole elements per message slot.
  caps_.max_reduce_elem = cfg_.slot_size;
  caps_.max_bytes = uint64_t{1} << 62;
  caps_.user_reduce = env_.user_reduce.fn != nullptr ? 1 : 0;
  for (size_t t = 0; t < off::kNumDTypes; ++t) {
    for (unsigned op = 0; op < static_cast<unsigned>(off::ROp::kNone); ++op) {
      if (reduce_supported(static_cast<off::DType>(t),
                           static_cast<off::ROp>(op)))
        caps_.reduce_ops[t] |= static_cast<uint16_t>(1u << op);
    }
  }
  fill_select_caps(cfg_, &caps_);
}

void Engine::fini(bool lost) {
  if (teams_ == nullptr) return;
  for (uint32_t i = 0; i < cfg_.max_teams; ++i) {
    Team* t = teams_[i];
    if (t == nullptr) continue;
    if (t->state != Team::State::kFree) team_close(i, lost);
    t->~Team();
    homes_[i].~Arena();
  }
  tables_.release();
  teams_ = nullptr;
  homes_ = nullptr;
  busy_ = nullptr;
  nbusy_ = 0;
  store_.fini();
}

Status Engine::team_open(uint32_t size, uint32_t rank, uint32_t* idx,
                         off::TeamAddr* addr) {
  uint32_t i = 0;
  while (i < cfg_.max_teams && teams_[i] != nullptr &&
         teams_[i]->state != Team::State::kFree)
    ++i;
  if (i == cfg_.max_teams) {
    UCC_ERROR("all %u engine team slots are in use (UCC_MAX_TEAMS)",
              cfg_.max_teams);
    return Status::kNoResource;
  }
  if (teams_[i] == nullptr) {
    base::Arena& home = *new (&homes_[i]) base::Arena;
    home.take<Team>(1, 64);
    if (!home.commit()) return Status::kNoMemory;
    teams_[i] = new (home.take<Team>(1, 64)) Team;
  }
  Team& t = *teams_[i];
  const uint32_t k = cfg_.inflight;
  // The team's memory in one block: the queue, the instances, their block
  // tables and the known records' arrays, where map() cannot the
  // instances' bounce and cache buffers (coll_run.h), and the port's
  // tables, and on wide teams the instances' scratch (CollRun::scratch:
  // from 256 KiB the block is a mapping of its own, whose pages cost
  // nothing until an algorithm writes them). A daemon serves several
  // hosts: the block comes zeroed, so none finds another's bytes in it.
  const size_t nvec = size <= Team::kArrayRanks ? 8 * size_t{size} : 0;
  const size_t per_inst = size_t{cfg_.slot_size} + kCacheBytes;
  const bool need_bounce = env_.mem.needs_bounce();
  uint32_t scratch_bytes = off::wide_scratch(cfg_, size);
  if (scratch_bytes == 0 && size >= 3) scratch_bytes = kSmallScratch;
  uint64_t* blocks = nullptr;
  char* bounce = nullptr;
  char* scratch = nullptr;
  Port::Tables port_mem;
  for (int pass = 0; pass < 2; ++pass) {
    t.queue = t.mem.take<CollDesc>(cfg_.team_queue, 64);
    t.qdeadline = t.mem.take<uint64_t>(cfg_.team_queue, 64);
    t.inst = t.mem.take<Inst>(k, 64);
    blocks =
        t.mem.take<uint64_t>(4 * size_t{size} * k + Team::kKnown * nvec, 64);
    bounce = t.mem.take<char>(need_bounce ? per_inst * k : 0, 64);
    scratch = t.mem.take<char>(size_t{scratch_bytes} * k, 64);
    port_mem = Port::take(t.mem, size);
    if (pass == 0 && !t.mem.commit()) return Status::kNoMemory;
  }
  Status st = t.port.init(i, size, k, &store_, port_mem);
  // One-sided messages need user buffers this process can register.
  plat::FabricConfig fc{size, rank, cfg_.slot_size, cfg_.nslots,
                        env_.mem.mode() == plat::MemAccess::Mode::kDirect};
  if (ok(st))
    st = t.port.links().open(fc, env_.net, env_.where, port_mem.links, addr);
  if (failed(st)) {
    t.port.fini();
    t.mem.release();
    return st;
  }
  for (uint32_t j = 0; j < k; ++j) {
    new (&t.inst[j]) Inst;
    t.inst[j].blocks = blocks + 4 * size_t{size} * j;
    if (need_bounce) {
      t.inst[j].bounce = bounce + per_inst * j;
      t.inst[j].cache = bounce + per_inst * j + cfg_.slot_size;
    }
    if (scratch_bytes != 0) {
      t.inst[j].scratch = scratch + size_t{scratch_bytes} * j;
      t.inst[j].scratch_bytes = scratch_bytes;
    }
  }
  for (uint32_t j = 0; j < Team::kKnown; ++j) {
    t.known[j].used = false;
    t.known[j].vec =
        nvec != 0 ? blocks + 4 * size_t{size} * k + nvec * j : nullptr;
  }
  t.qhead = t.qtail = 0;
  t.size = size;
  t.rank = rank;
  t.seq = 0;
  t.nrun = 0;
  t.ntimed = 0;
  t.future_aborts = 0;
  t.idle = 0;
  t.broken = false;
  t.state = Team::State::kOpen;
  *idx = i;
  return Status::kOk;
}

Status Engine::team_connect(uint32_t idx, const off::TeamAddr* addrs) {
  Team* t = team_at(idx);
  if (t == nullptr || t->state != Team::State::kOpen)
    return Status::kInvalidParam;
  Status st = t->port.links().connect(addrs);
  if (ok(st)) t->state = Team::State::kConnected;
  return st;
}

uint32_t Engine::team_size(uint32_t idx) const {
  const Team* t = team_at(idx);
  return t == nullptr || t->state == Team::State::kFree ? 0 : t->size;
}

void Engine::team_seal(uint32_t idx) {
  Team* t = team_at(idx);
  if (t != nullptr && t->state != Team::State::kFree) t->port.links().seal();
}

void Engine::team_close(uint32_t idx, bool lost) {
  Team* tp = team_at(idx);
  if (tp == nullptr || tp->state == Team::State::kFree) return;
  Team& t = *tp;
  // Descriptors of this team may still sit in the submission ring: queue
  // them now so they end with an error instead of meeting a later team
  // that reuses the slot.
  drain();
  if (t.busy()) set_idle(t);
  for (uint32_t j = 0; j < cfg_.inflight; ++j) {
    Inst& in = t.inst[j];
    if (in.phase != Inst::Phase::kFree && !in.reported)
      report(in, Status::kError);
    in.phase = Inst::Phase::kFree;
  }
  t.nrun = 0;
  while (t.qtail != t.qhead) {
    const CollDesc& d = t.queue[t.qhead++ & (cfg_.team_queue - 1)];
    ch_->complete(d.comp_slot, d.gen, Status::kError);
  }
  t.port.fini(lost);
  for (uint32_t j = 0; j < cfg_.inflight; ++j) t.inst[j].~Inst();
  for (Known& kn : t.known) {
    kn.used = false;
    kn.vec = nullptr;  // it was in the team's memory
  }
  t.mem.release();
  t.queue = nullptr;
  t.qdeadline = nullptr;
  t.inst = nullptr;
  t.state = Team::State::kFree;
}

bool Engine::lost_member(Team& t) {
  uint64_t now = plat::now_ns();
  if (now - t.last_check < 100000000ull) return false;
  t.last_check = now;
  t.port.links().waiting_on(t.port.waiting());
  return t.port.links().peer_lost();
}

void Engine::fail_team(Team& t) {
  t.broken = true;
  t.port.links().fail();  // members waiting for us give up too
  while (t.nrun != 0) {
    Inst& in = t.inst[t.order[0]];
    in.st = Status::kError;
    report(in, Status::kError);
    retire(t, t.order[0]);
  }
  while (t.qtail != t.qhead) {
    const CollDesc& d = t.queue[t.qhead++ & (cfg_.team_queue - 1)];
    ch_->complete(d.comp_slot, d.gen, Status::kError);
  }
  t.ntimed = 0;
}

namespace {

// Whether `d` is the known descriptor `k` but for its generation (and
// its inline input, which start() takes from `d`).
bool same_but_gen(const CollDesc& k, const CollDesc& d) {
  CollDesc c = d;
  c.gen = k.gen;
  memcpy(c.inline_data, k.inline_data, sizeof(c.inline_data));
  return memcmp(&c, &k, sizeof(c)) == 0;
}

}  // namespace

Engine::Known* Engine::known_at(uint32_t team, uint32_t slot) {
  Team* t = team_at(team);
  if (t == nullptr || t->state != Team::State::kConnected) return nullptr;
  const uint64_t epoch = env_.mem.check_epoch();
  if (t->known_epoch != epoch) {  // a registration went: validate again
    for (Known& k : t->known) k.used = false;
    t->known_epoch = epoch;
  }
  Known& k = t->known[slot & (Team::kKnown - 1)];
  return k.used && k.d.comp_slot == slot ? &k : nullptr;
}

bool Engine::arrays_hold(const Known& k) const {
  return !k.arrays || arrays_same(env_.mem, *off::coll_traits(k.d.coll), k.d,
                                  role_of(k.d, k.run), k.vec);
}

const Engine::Known* Engine::recall(const CollDesc& d) {
  // The descriptor first: the arrays are read only for the one it names.
  const Known* k = known_at(d.team, d.comp_slot);
  return k != nullptr && same_but_gen(k->d, d) && arrays_hold(*k) ? k
                                                                  : nullptr;
}

const Engine::Known* Engine::remember(Team& t, const CollDesc& d,
                                      uint64_t largest) {
  Known& k = t.known[d.comp_slot & (Team::kKnown - 1)];
  k.alg = choose(t, d, largest, &k.alg_id);
  k.d = d;
  k.run = CollRun{};
  k.sig = prepare(t, d, &k.run);
  k.run.d = &k.d;  // (an instance's copy points at its own)
  const off::CollTraits& traits = *off::coll_traits(d.coll);  // validated
  k.arrays = traits.vector() && keep_arrays(k);
  k.used = !traits.vector() || k.arrays;
  k.direct = k.alg != nullptr && k.alg->sends != nullptr &&
             k.alg->sends(k.run, &k.sends) && direct_ok(t, k);
  return &k;
}

bool Engine::keep_arrays(Known& k) const {
  if (k.vec == nullptr) return false;  // no room: validated every time
  const off::CollTraits& traits = *off::coll_traits(k.d.coll);
  const off::Role role = role_of(k.d, k.run);
  return read_arrays(env_.mem, traits, k.d, role, k.vec) &&
         ok(fill_kept_blocks(traits, k.d, role, k.vec,
                             k.vec + 4 * size_t{role.n}, k.run));
}

bool Engine::direct_ok(const Team& t, const Known& k) const {
  const CollDesc& d = k.d;
  // What needs an instance: a node-aware algorithm's phases, a deadline,
  // an active set (tagged), an agreement on the status (global errors).
  if (k.alg->node_aware || d.timeout_ns != 0 || d.set_size != 0 ||
      (d.flags & (off::kDescTagged | off::kDescErrGlobal)) != 0)
    return false;
  // A message into the peer's shared memory only: a network's would need
  // the flush an instance waits for (Inst::Phase::kFlush).
  return k.sends.peer < t.size && !t.port.links().remote(k.sends.peer);
}

UCC_HOT bool Engine::send_known(Team& t, const Known& k, uint32_t gen) {
  const SendPlan& p = k.sends;
  void* out = t.port.reserve_free(p.peer);
  if (out == nullptr) return false;
  // An unreadable buffer: the instance fails it as it should.
  if (failed(k.run.copy_in(out, Buf::kSrc, 0, p.len))) return false;
  t.port.commit(p.peer, p.len,
                with_sig(key_ordered(t.next_seq(), k.d.coll), k.sig),
                MsgKind::kData);
  ch_->complete(k.d.comp_slot, gen, Status::kOk);
  ++sent_direct_;
  return true;
}

UCC_HOT void Engine::submit(const CollDesc& d) {
  if (ch_->next() != nullptr) drain();
  take(d);
  ++taken_;
}

UCC_HOT void Engine::take(const CollDesc& d) {
  const Known* k = recall(d);
  if (k == nullptr) {
    uint64_t largest = 0;
    Status st = validate(d, &largest);
    if (failed(st)) {
      UCC_ERROR("rejected descriptor (team %u, slot %u): %s", d.team,
                d.comp_slot,
                st == Status::kNotSupported ? "not supported" : "invalid");
      if (d.comp_slot < ch_->ncomp()) ch_->complete(d.comp_slot, d.gen, st);
      return;
    }
    // validate() found it connected
    k = remember(*teams_[d.team], d, largest);
  }
  admit(*teams_[d.team], d, d.gen, k);
}

UCC_HOT bool Engine::submit_known(uint32_t team, uint32_t slot, uint32_t gen) {
  if (ch_->next() != nullptr) drain();
  const Known* k = known_at(team, slot);
  // An inline input is in the descriptor: it comes again with each post.
  if (k == nullptr || !arrays_hold(*k) || (k->d.flags & off::kDescInline))
    return false;
  admit(*teams_[team], k->d, gen, k);
  ++taken_;
  return true;
}

UCC_HOT void Engine::admit(Team& t, const CollDesc& d, uint32_t gen,
                           const Known* k) {
  if (t.broken) {
    ch_->complete(d.comp_slot, gen, Status::kError);
    return;
  }
  if (t.qtail - t.qhead == cfg_.team_queue) {
    ch_->complete(d.comp_slot, gen, Status::kNoResource);
    return;
  }
  // A sender's whole part with nothing before it (not even aborts kept
  // for it): its message goes now, without an instance.
  if (k != nullptr && k->direct && t.nrun == 0 && t.qtail == t.qhead &&
      t.future_aborts == 0 && send_known(t, *k, gen))
    return;
  if (t.busy_at == UINT32_MAX) set_busy(t, d.team);  // not listed yet
  if (t.qtail == t.qhead && t.nrun < cfg_.inflight && d.timeout_ns == 0 &&
      (d.flags & off::kDescTagged) == 0) {
    // Nothing waits before it and an instance is free: start it now, as
    // start_queued() would on this pass, without queueing a copy.
    start(t, d, gen, 0, k);
    if (!t.busy()) set_idle(t);  // it ended at once: off the busy list
    return;
  }
  uint32_t at = t.qtail++ & (cfg_.team_queue - 1);
  t.queue[at] = d;
  t.queue[at].gen = gen;
  // The queued copy carries the algorithm chosen now, so that its start
  // need not look at the user's arrays again (some selections go by them).
  t.queue[at].alg = k->alg_id;
  t.qdeadline[at] = 0;
  if (d.timeout_ns != 0) {
    uint64_t now = plat::now_ns();
    t.qdeadline[at] =
        d.timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + d.timeout_ns;
    ++t.ntimed;
  }
}

UCC_HOT uint64_t Engine::advance(Team& t) {
  uint64_t now = t.ntimed != 0 ? plat::now_ns() : 0;
  uint64_t events = t.qtail != t.qhead ? start_queued(t, now) : 0;
  if (t.port.attention_changed()) check_aborts(t);
  // Oldest first: earlier collectives get the fabric first.
  for (uint32_t i = 0; i < t.nrun;) {
    uint32_t id = t.order[i];
    uint32_t before = t.nrun;
    events += step(t, t.inst[id], now);
    if (t.nrun == before) ++i;  // else retire() shifted the list
  }
  if (t.nrun < cfg_.inflight && t.qtail != t.qhead)
    events += start_queued(t, now);
  return events;
}

uint64_t Engine::drain() {
  uint64_t events = 0;
  // At most a ring's worth per pass: a host that keeps producing cannot
  // keep this engine (and a daemon's other clients) here.
  const uint32_t most = ch_->sq_capacity();
  for (const CollDesc* d = ch_->next(); d != nullptr && events < most;
       d = ch_->next()) {
    CollDesc copy = *d;  // the ring slot is shared memory: read it once
    ch_->done();
    take(copy);
    ++events;
    ++taken_;
  }
  return events;
}

UCC_HOT void Engine::set_busy(Team& t, uint32_t idx) {
  t.busy_at = nbusy_;
  busy_[nbusy_++] = idx;
}

UCC_HOT void Engine::set_idle(Team& t) {
  const uint32_t last = busy_[--nbusy_];
  busy_[t.busy_at] = last;
  teams_[last]->busy_at = t.busy_at;
  t.busy_at = UINT32_MAX;
}

UCC_HOT uint64_t Engine::progress() {
  uint64_t events = ch_->next() != nullptr ? drain() : 0;
  // Only the teams with queued or running collectives, whatever the
  // number of teams open.
  for (uint32_t k = 0; k < nbusy_;) {
    const uint32_t i = busy_[k];
    Team& t = *teams_[i];
    const uint64_t before = t.port.links().events();
    uint64_t ev = advance(t);
    if (ev == 0) ev = t.port.links().events() - before;
    if (ev == 0 && t.nrun != 0) {
      // Stuck: maybe behind messages we cannot consume yet (port.h).
      if ((++t.idle & 15) == 0) ev += t.port.sweep();
      // Stuck: every 100 ms, look whether a member is gone for good.
      if ((t.idle & 63) == 0 && lost_member(t)) {
        UCC_ERROR("team %u: a member has left or died; its collectives fail",
                  i);
        fail_team(t);
        ev += 1;
      }
    }
    if (ev != 0) t.idle = 0;
    events += ev;
    if (t.busy())
      ++k;
    else
      set_idle(t);  // the last busy team moves to position k
  }
  return events;
}

}  // namespace ucc::dev

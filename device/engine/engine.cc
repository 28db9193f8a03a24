#include "device/engine/engine.h"

#include <cstdlib>
#include <new>

#include "device/engine/blocks.h"
#include "device/engine/team.h"
#include "platform/os/log.h"

namespace ucc::dev {

using off::CollDesc;

namespace {

// Collectives whose algorithms read the block tables.
bool uses_blocks(off::CollType c) {
  switch (c) {
    case off::CollType::kBarrier:
    case off::CollType::kBcast:
    case off::CollType::kReduce:
    case off::CollType::kFanin:
    case off::CollType::kFanout:
      return false;
    default:
      return true;
  }
}

}  // namespace

Status Engine::init(const EngineConfig& cfg, off::Channel* ch) {
  if (cfg.max_teams == 0 || cfg.team_queue == 0 ||
      (cfg.team_queue & (cfg.team_queue - 1)) != 0)
    return Status::kInvalidParam;
  cfg_ = cfg;
  ch_ = ch;
  void* mem = nullptr;
  if (posix_memalign(&mem, 64, sizeof(Team) * cfg.max_teams) != 0)
    return Status::kNoMemory;
  teams_ = static_cast<Team*>(mem);
  for (uint32_t i = 0; i < cfg.max_teams; ++i) new (&teams_[i]) Team;
  return Status::kOk;
}

void Engine::fini() {
  if (teams_ == nullptr) return;
  for (uint32_t i = 0; i < cfg_.max_teams; ++i) {
    if (teams_[i].state != Team::State::kFree) team_close(i);
    teams_[i].~Team();
  }
  free(teams_);
  teams_ = nullptr;
}

Status Engine::team_open(uint32_t size, uint32_t rank, uint32_t* idx,
                         plat::shm::SegAddr* addr) {
  uint32_t i = 0;
  while (i < cfg_.max_teams && teams_[i].state != Team::State::kFree) ++i;
  if (i == cfg_.max_teams) {
    UCC_ERROR("all %u engine team slots are in use (UCC_MAX_TEAMS)",
              cfg_.max_teams);
    return Status::kNoResource;
  }
  Team& t = teams_[i];
  void* q = nullptr;
  if (posix_memalign(&q, 64, sizeof(CollDesc) * cfg_.team_queue) != 0)
    return Status::kNoMemory;
  auto* blocks = static_cast<uint64_t*>(calloc(4 * size_t{size}, 8));
  if (blocks == nullptr) {
    free(q);
    return Status::kNoMemory;
  }
  plat::shm::FabricConfig fc{size, rank, cfg_.slot_size, cfg_.nslots};
  Status st = t.fab.open(fc, addr);
  if (failed(st)) {
    free(q);
    free(blocks);
    return st;
  }
  t.queue = static_cast<CollDesc*>(q);
  t.blocks = blocks;
  t.qhead = t.qtail = 0;
  t.size = size;
  t.rank = rank;
  t.seq = 0;
  t.running = false;
  t.state = Team::State::kOpen;
  *idx = i;
  return Status::kOk;
}

Status Engine::team_connect(uint32_t idx, const plat::shm::SegAddr* addrs) {
  if (idx >= cfg_.max_teams || teams_[idx].state != Team::State::kOpen)
    return Status::kInvalidParam;
  Status st = teams_[idx].fab.connect(addrs);
  if (ok(st)) teams_[idx].state = Team::State::kConnected;
  return st;
}

void Engine::team_seal(uint32_t idx) {
  if (idx < cfg_.max_teams) teams_[idx].fab.seal();
}

void Engine::team_close(uint32_t idx) {
  if (idx >= cfg_.max_teams) return;
  Team& t = teams_[idx];
  if (t.state == Team::State::kFree) return;
  // Descriptors of this team may still sit in the submission ring: queue
  // them now so they end with an error instead of meeting a later team
  // that reuses the slot.
  drain();
  if (t.running || t.qtail != t.qhead) --busy_;
  if (t.running) finish(t, Status::kError);
  while (t.qtail != t.qhead) {
    const CollDesc& d = t.queue[t.qhead++ & (cfg_.team_queue - 1)];
    ch_->complete(d.comp_slot, d.gen, Status::kError);
  }
  t.fab.close();
  free(t.queue);
  t.queue = nullptr;
  free(t.blocks);
  t.blocks = nullptr;
  t.state = Team::State::kFree;
}

void Engine::take(const CollDesc& d) {
  Status st = validate(d);
  if (failed(st)) {
    UCC_ERROR("rejected descriptor (team %u, slot %u): %s", d.team, d.comp_slot,
              st == Status::kNotSupported ? "not supported" : "invalid");
    if (d.comp_slot < ch_->ncomp()) ch_->complete(d.comp_slot, d.gen, st);
    return;
  }
  Team& t = teams_[d.team];
  if (t.qtail - t.qhead == cfg_.team_queue) {
    ch_->complete(d.comp_slot, d.gen, Status::kNoResource);
    return;
  }
  if (!t.running && t.qtail == t.qhead) ++busy_;
  t.queue[t.qtail++ & (cfg_.team_queue - 1)] = d;
}

void Engine::finish(Team& t, Status st) {
  ch_->complete(t.cur.comp_slot, t.cur.gen, st);
  t.running = false;
}

uint64_t Engine::advance(Team& t) {
  uint64_t events = 0;
  for (;;) {
    Status st;
    if (!t.running) {
      if (t.qtail == t.qhead) {
        --busy_;  // only busy teams are advanced
        return events;
      }
      t.cur = t.queue[t.qhead++ & (cfg_.team_queue - 1)];
      t.running = true;
      ++events;
      CollRun& r = t.run;
      r.d = &t.cur;
      r.fab = &t.fab;
      r.rank = t.rank;
      r.size = t.size;
      // The tag names the collective's sequence number and type, so a
      // member that posted a different collective fails instead of
      // exchanging data with it.
      r.tag = (++t.seq << 8) | static_cast<uint32_t>(t.cur.coll);
      r.esize = off::elem_size(t.cur);
      // Reductions combine whole elements, so each message carries a whole
      // number of them (validate: esize <= slot size).
      const uint32_t slot = t.fab.slot_size();
      r.slot = off::coll_reduces(t.cur.coll) ? slot - slot % r.esize : slot;
      r.user = cfg_.user_reduce;
      r.avg = t.cur.op == off::ROp::kAvg;
      r.rop = r.avg ? off::ROp::kSum : t.cur.op;
      t.alg = select_alg(cfg_.select, t.cur, t.size);
      st = t.alg == nullptr ? Status::kNotSupported : Status::kOk;
      if (ok(st) && uses_blocks(t.cur.coll))
        st = fill_blocks(t.cur, t.size, t.rank, t.blocks, &r);
      if (ok(st)) st = t.alg->start(t.alg_state, r);
    } else {
      st = t.alg->progress(t.alg_state, t.run);
    }
    if (st == Status::kInProgress) return events;
    if (failed(st))
      UCC_ERROR("%s (%s) failed on rank %u: status %d",
                off::coll_type_name(t.cur.coll),
                t.alg != nullptr ? t.alg->name : "none", t.rank,
                static_cast<int>(st));
    finish(t, st);
    ++events;
  }
}

uint64_t Engine::drain() {
  uint64_t events = 0;
  for (const CollDesc* d = ch_->next(); d != nullptr; d = ch_->next()) {
    CollDesc copy = *d;  // the ring slot is shared memory: read it once
    ch_->done();
    take(copy);
    ++events;
  }
  return events;
}

uint64_t Engine::progress() {
  uint64_t events = drain();
  if (busy_ == 0) return events;
  for (uint32_t i = 0; i < cfg_.max_teams; ++i) {
    Team& t = teams_[i];
    if (t.state != Team::State::kConnected) continue;
    if (!t.running && t.qtail == t.qhead) continue;
    uint64_t before = t.fab.events();
    events += advance(t);
    events += t.fab.events() - before;
  }
  return events;
}

}  // namespace ucc::dev

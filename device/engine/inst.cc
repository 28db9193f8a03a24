// The life of one running collective (team.h, Engine::Inst): start, steps
// of its algorithm, deadline, aborts to and from peers, status agreement,
// and the single write of its completion word.
#include <cstring>

#include "device/engine/blocks.h"
#include "device/engine/engine.h"
#include "device/engine/team.h"
#include "device/select/select.h"
#include "platform/os/log.h"

namespace ucc::dev {

using off::CollDesc;

namespace {

// The catalogue name of the instance's algorithm, for log lines.
const char* alg_name(off::CollType coll, const AlgInfo* alg, uint8_t id) {
  const off::AlgName* a = alg != nullptr ? off::find_alg_id(coll, id) : nullptr;
  return a != nullptr ? a->name : "none";
}

bool tagged(const CollDesc& d) { return (d.flags & off::kDescTagged) != 0; }

MsgKey tagged_key(const CollDesc& d) {
  return key_tagged(d.tag, d.coll, d.set_start, d.set_stride, d.set_size);
}

// What every member of a collective must agree on, folded into 16 bits:
// the datatype (a generic type by its element size: its index is per
// process), the op of reductions, the root of rooted ones, and the count
// where every member's must be equal (not for v-collectives, whose count
// is this rank's part). In place is each member's own business. Every
// engine folds the same way (a multiply-xorshift mix of the four words;
// byte-wise FNV-1a here cost about 130 instructions per collective).
uint16_t sig_of(const CollDesc& d, const off::CollTraits& t) {
  // Whether the members agree on the status is in it too: with
  // UCC_COLL_ERROR_TYPE=args, members that passed different error types
  // see a clash where they exchange data (one that agrees still waits for
  // the status of those that do not, until UCC_COLL_TIMEOUT if set).
  const uint64_t f[4] = {
      static_cast<uint64_t>(d.dtype) |
          (uint64_t{d.dtype == off::DType::kGeneric ? d.user_esize : 0u} << 8) |
          (uint64_t{(d.flags & off::kDescErrGlobal) != 0} << 40),
      t.reduces ? static_cast<uint64_t>(d.op) : 0, t.rooted ? d.root : 0,
      t.vector() ? 0 : d.count};
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (uint64_t v : f) {
    h = (h ^ v) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  h ^= h >> 32;
  return static_cast<uint16_t>(h ^ (h >> 16));
}

// Moves a small allreduce's vector (the first count * esize bytes of dst)
// into the cache `mem` (coll_run.h) where the engine reaches user memory
// by system calls: reads it in where it holds the input (src names the
// same bytes); else only checks that the engine may write it, since
// allreduce writes every byte of its vector. A src that overlaps dst
// otherwise keeps the run on user memory, and so do the node-aware
// algorithms, whose phases name buffers of their own (hier.cc): the
// cache stands for the descriptor's dst, reached through it alone.
Status cache_dst(CollRun& r, const AlgInfo& alg, void* mem) {
  const off::BufRef& dr = r.d->dst;
  const off::BufRef& sr = r.d->src;
  uint64_t n = 0;
  if (mem == nullptr || r.d->coll != off::CollType::kAllreduce ||
      alg.node_aware ||
      __builtin_mul_overflow(r.d->count, uint64_t{r.esize}, &n) || n == 0 ||
      n > kCacheBytes || n > dr.bytes)
    return Status::kOk;
  const bool same = sr.addr == dr.addr && sr.bytes == dr.bytes;
  if (!same && sr.bytes != 0 && sr.addr < dr.addr + dr.bytes &&
      dr.addr < sr.addr + sr.bytes)
    return Status::kOk;
  // Inline (validated: n <= kInlineBytes, a result area): the input is
  // the descriptor's, the result goes to the channel; user memory is not
  // touched.
  const bool inl = (r.d->flags & off::kDescInline) != 0;
  if (inl)
    memcpy(mem, r.d->inline_data, n);
  else if (same ? !r.mem->read(dr, 0, mem, n) : !r.mem->check(dr, 0, n))
    return Status::kInvalidParam;
  r.cache = mem;
  r.cache_bytes = static_cast<uint32_t>(n);
  r.cache_src = same || inl;
  return Status::kOk;
}

// The worse of two final statuses: any error beats success, and among
// errors the lowest value, so every member picks the same one.
Status worse(Status a, Status b) {
  return static_cast<int>(a) <= static_cast<int>(b) ? a : b;
}

// A status message of the collective to set position `to`: the status
// (4 bytes), and for the agreement (kStatus) the collective's signature
// after it, so that members that posted it differently learn it even
// where no data passed between them (two roots of one bcast). false while
// the peer's inbox has no room.
bool send_status(Port& port, const CollRun& r, uint32_t to, MsgKind kind,
                 Status st) {
  void* slot = port.reserve(r.team_rank(to), r.id);
  if (slot == nullptr) return false;
  const uint32_t msg[2] = {static_cast<uint32_t>(static_cast<int32_t>(st)),
                           sig_in(r.key)};
  const uint32_t len = kind == MsgKind::kStatus ? 8 : 4;
  memcpy(slot, msg, len);
  port.commit(r.team_rank(to), len, nosig(r.key), kind);
  return true;
}

}  // namespace

uint32_t Engine::set_rank(const Team& t, const CollDesc& d) const {
  if (d.set_size == 0) return t.rank;
  if (d.set_stride == 0) return 0;  // validated: a set of one, this rank
  int64_t off = int64_t{t.rank} - int64_t{d.set_start};
  return static_cast<uint32_t>(off / d.set_stride);  // validated: exact
}

uint64_t Engine::start_queued(Team& t, uint64_t now) {
  uint64_t events = 0;
  const uint32_t mask = cfg_.team_queue - 1;
  while (t.qtail != t.qhead && t.nrun < cfg_.inflight) {
    const CollDesc& d = t.queue[t.qhead & mask];
    uint64_t deadline = t.qdeadline[t.qhead & mask];
    if (deadline != 0 && now >= deadline) {
      // Never started here. An ordered one still takes its place in the
      // sequence, so its peers' messages are recognised as stale.
      if (!tagged(d)) t.next_seq();
      ch_->complete(d.comp_slot, d.gen, Status::kTimedOut);
      --t.ntimed;
      ++t.qhead;
      ++events;
      continue;
    }
    if (tagged(d)) {
      // Two collectives with one key must not overlap: the later waits.
      MsgKey k = tagged_key(d);
      bool clash = false;
      for (uint32_t i = 0; i < t.nrun; ++i)
        clash |= nosig(t.inst[t.order[i]].run.key) == k;
      if (clash) break;
    }
    CollDesc copy = d;
    ++t.qhead;
    start(t, copy, copy.gen, deadline, nullptr);
    ++events;
  }
  return events;
}

uint16_t Engine::prepare(const Team& t, const CollDesc& d,
                         CollRun* r) const {
  r->size = d.set_size != 0 ? d.set_size : t.size;
  r->rank = set_rank(t, d);
  r->set_start = d.set_size != 0 ? d.set_start : 0;
  r->set_stride = d.set_size != 0 ? d.set_stride : 1;
  const off::CollTraits& traits = *off::coll_traits(d.coll);  // validated
  r->esize = off::elem_size(d);
  // Reductions combine whole elements, so each message carries a whole
  // number of them (validate: esize <= slot size).
  const uint32_t slot = t.port.slot_size();
  r->slot = traits.reduces ? slot - slot % r->esize : slot;
  r->user = env_.user_reduce;
  r->mem = &env_.mem;
  r->avg = d.op == off::ROp::kAvg;
  r->rop = r->avg ? off::ROp::kSum : d.op;
  return sig_of(d, traits);
}

const AlgInfo* Engine::choose(const Team& t, const CollDesc& d,
                              uint64_t largest, uint8_t* id) const {
  const NodeMap& nodes = t.port.links().nodes();
  const off::CollTraits& traits = *off::coll_traits(d.coll);  // validated
  return select_alg(caps_, d, off::select_bytes(d, traits, largest),
                    nodes.nnodes == 1, nodes.hierarchical(t.size), t.size, id);
}

UCC_HOT void Engine::start(Team& t, const CollDesc& d, uint32_t gen,
                           uint64_t deadline, const Known* k) {
  uint32_t id = 0;
  while (t.inst[id].phase != Inst::Phase::kFree) ++id;
  Inst& in = t.inst[id];
  in.d = d;
  in.d.gen = gen;
  in.phase = Inst::Phase::kRun;
  in.global = (d.flags & off::kDescErrGlobal) != 0;
  in.reported = false;
  in.res_inline = false;
  in.st = Status::kOk;
  in.deadline = deadline;
  in.notify_next = 0;
  in.agree_dist = 1;
  in.agree_sent = false;
  t.order[t.nrun++] = static_cast<uint8_t>(id);
  t.port.set_oldest(t.order[0]);

  // What the descriptor alone decides (the whole run for a known one),
  // then this instance's and this sequence's part.
  CollRun& r = in.run;
  uint16_t sig;
  if (k != nullptr) {
    r = k->run;
    sig = k->sig;
  } else {
    r = CollRun{};
    sig = prepare(t, d, &r);
  }
  r.d = &in.d;
  r.port = &t.port;
  r.id = id;
  r.bounce = in.bounce;
  r.scratch = in.scratch;
  r.scratch_bytes = in.scratch_bytes;
  r.drop_cache();
  r.key = with_sig(
      tagged(d) ? tagged_key(d) : key_ordered(t.next_seq(), d.coll), sig);
  t.port.set_live(id, r.key);
  const off::CollTraits& traits = *off::coll_traits(d.coll);  // validated

  // A peer may have given up on this collective before we started it.
  if (t.future_aborts != 0) {
    check_aborts(t);
    if (in.phase != Inst::Phase::kRun) return;
  }
  if (k != nullptr) {
    in.alg = k->alg;
    in.alg_id = k->alg_id;
  } else {
    // A queued copy: it carries the id chosen when it was taken (admit).
    in.alg = choose(t, in.d, 0, &in.alg_id);
  }
  Status st = in.alg == nullptr ? Status::kNotSupported : Status::kOk;
  if (ok(st)) st = cache_dst(r, *in.alg, in.cache);
  if (ok(st) && traits.uses_blocks() && in.alg->blocks) {
    if (k != nullptr && k->arrays) {
      // The tables its arrays gave, which arrays_hold() found unchanged.
      const size_t n = r.size;
      memcpy(in.blocks, k->vec + 4 * n, sizeof(uint64_t) * 4 * n);
      use_tables(in.blocks, r.size, &r);
    } else {
      st = fill_blocks(traits, in.d, role_of(in.d, r), in.blocks, &r);
    }
  }
  if (ok(st)) st = in.alg->start(in.alg_state, r);
  if (st != Status::kInProgress) alg_ended(t, in, st, true);
}

UCC_HOT uint64_t Engine::step(Team& t, Inst& in, uint64_t now) {
  if (in.deadline != 0 && now >= in.deadline && !in.reported) {
    if (in.phase == Inst::Phase::kRun || in.phase == Inst::Phase::kFlush) {
      UCC_DEBUG("%s timed out on rank %u", off::coll_type_name(in.d.coll),
                in.run.rank);
      alg_ended(t, in, Status::kTimedOut, true);
      return 1;
    }
    report(in, Status::kTimedOut);
    if (in.phase == Inst::Phase::kAgree) {
      retire(t, in.run.id);
      return 1;
    }
    // kNotify: the aborts still go out.
  }
  switch (in.phase) {
    case Inst::Phase::kRun: {
      Status st = in.alg->progress(in.alg_state, in.run);
      if (st == Status::kInProgress) return 0;
      alg_ended(t, in, st, true);
      return 1;
    }
    case Inst::Phase::kFlush:
      if (!t.port.links().tx_flushed()) return 0;
      alg_ended(t, in, Status::kOk, true);
      return 1;
    case Inst::Phase::kNotify:
      return notify(t, in);
    case Inst::Phase::kAgree:
      return agree(t, in);
    case Inst::Phase::kFree:
      break;
  }
  return 0;
}

UCC_HOT void Engine::alg_ended(Team& t, Inst& in, Status st, bool tell) {
  CollRun& r = in.run;
  if (r.cache != nullptr) {
    // The result leaves the cache in one write (inline, where the cache
    // came from the descriptor: into the result area, which the
    // completion word will point to); a run that fails before its
    // algorithm ends leaves the user's dst as it was.
    if (st == Status::kOk && (in.d.flags & off::kDescInline) != 0) {
      memcpy(ch_->result(in.d.comp_slot), r.cache, r.cache_bytes);
      in.res_inline = true;
    } else if (st == Status::kOk &&
               !r.mem->write(in.d.dst, 0, r.cache, r.cache_bytes)) {
      st = Status::kInvalidParam;
    }
    r.drop_cache();
  }
  if (st == Status::kOk && in.phase == Inst::Phase::kRun &&
      !t.port.links().tx_flushed()) {
    in.phase = Inst::Phase::kFlush;
    return;
  }
  in.st = st;
  t.port.drop_reservations(in.run.id);
  if (failed(st) && st != Status::kTimedOut)
    UCC_ERROR("%s (%s) failed on rank %u: status %d",
              off::coll_type_name(in.d.coll),
              alg_name(in.d.coll, in.alg, in.alg_id), in.run.rank,
              static_cast<int>(st));
  if (failed(st) && tell) {
    // Local failure: the others may be waiting for us. A local error type
    // reports now; the aborts follow.
    if (!in.global) report(in, st);
    in.phase = Inst::Phase::kNotify;
    in.notify_next = 0;
    notify(t, in);
    return;
  }
  if (in.global) {
    in.phase = Inst::Phase::kAgree;
    agree(t, in);
    return;
  }
  report(in, st);
  retire(t, in.run.id);
}

UCC_HOT void Engine::report(Inst& in, Status st) {
  if (in.reported) return;
  in.reported = true;
  if (in.deadline != 0) {
    Team& t = *teams_[in.d.team];
    --t.ntimed;
  }
  ch_->complete(in.d.comp_slot, in.d.gen, st, in.res_inline);
}

UCC_HOT void Engine::retire(Team& t, uint32_t id) {
  Inst& in = t.inst[id];
  t.port.drop_reservations(id);
  t.port.end_live(id, failed(in.st));
  in.phase = Inst::Phase::kFree;
  uint32_t i = 0;
  while (i < t.nrun && t.order[i] != id) ++i;
  if (i < t.nrun) {
    --t.nrun;
    for (; i < t.nrun; ++i) t.order[i] = t.order[i + 1];  // a few entries
  }
  if (t.nrun != 0) t.port.set_oldest(t.order[0]);
}

uint64_t Engine::notify(Team& t, Inst& in) {
  uint64_t events = 0;
  CollRun& r = in.run;
  while (in.notify_next < r.size) {
    uint32_t p = in.notify_next;
    if (p != r.rank) {
      if (!send_status(t.port, r, p, MsgKind::kAbort, in.st)) return events;
      ++events;
    }
    ++in.notify_next;
  }
  if (in.global) {
    in.phase = Inst::Phase::kAgree;
    return events + agree(t, in);
  }
  report(in, in.st);
  retire(t, r.id);
  return events + 1;
}

// Dissemination: in the round at distance d, send our status to rank + d
// and combine the one from rank - d; after ceil(log2 n) rounds every
// member holds the worst status of all.
uint64_t Engine::agree(Team& t, Inst& in) {
  uint64_t events = 0;
  CollRun& r = in.run;
  while (in.agree_dist < r.size) {
    if (!in.agree_sent) {
      uint32_t to = (r.rank + in.agree_dist) % r.size;
      if (!send_status(t.port, r, to, MsgKind::kStatus, in.st)) return events;
      in.agree_sent = true;
      ++events;
    }
    uint32_t from = (r.rank + r.size - in.agree_dist) % r.size;
    uint32_t len = 0;
    const void* m =
        t.port.find(r.team_rank(from), nosig(r.key), MsgKind::kStatus, &len);
    if (m == nullptr) return events;
    int32_t code = static_cast<int32_t>(Status::kNoMessage);
    uint32_t their_sig = 0;
    if (len == 8) {
      memcpy(&code, m, sizeof(code));
      memcpy(&their_sig, static_cast<const char*>(m) + 4, sizeof(their_sig));
      // The peer posted this collective differently (datatype, op, root,
      // count): wrong data somewhere, whatever the statuses say.
      if (their_sig != sig_in(r.key))
        code = static_cast<int32_t>(Status::kInvalidParam);
    }
    t.port.release(r.team_rank(from), nosig(r.key), MsgKind::kStatus);
    in.st = worse(in.st, static_cast<Status>(code));
    in.agree_sent = false;
    in.agree_dist *= 2;
    ++events;
  }
  report(in, in.st);
  retire(t, r.id);
  return events + 1;
}

void Engine::check_aborts(Team& t) {
  t.port.scan_aborts(
      [&](const MsgKey& k, int32_t code) {
        Status st = static_cast<Status>(code);
        if (!failed(st) || st == Status::kInProgress) st = Status::kError;
        for (uint32_t i = 0; i < t.nrun; ++i) {
          Inst& in = t.inst[t.order[i]];
          if (!same_coll(in.run.key, k)) continue;
          if (in.phase == Inst::Phase::kRun) {
            // The sender has told everyone: no need to pass it on.
            alg_ended(t, in, st, false);
          } else if (in.phase == Inst::Phase::kAgree) {
            in.st = worse(in.st, st);
          }
          return true;
        }
        return true;
      },
      &t.future_aborts);
}

}  // namespace ucc::dev

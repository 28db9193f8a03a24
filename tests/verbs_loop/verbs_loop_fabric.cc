// The shared fabric file: mapping, table entries, arenas, rings, CQ push.
#include "verbs_loop_fabric.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "verbs_loop_nic.h"

namespace verbs_loop {
namespace {

void InitSharedMutex(pthread_mutex_t* m) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(m, &a);
  pthread_mutexattr_destroy(&a);
}

// Done once per file, by the process holding the flock; magic goes last
// so a crash mid-way leaves a file the next opener initialises again.
void InitFile(FabricFile* f) {
  memset(f, 0, offsetof(FabricFile, cqe));
  f->version = kVersion;
  f->size = sizeof(FabricFile);
  f->next_pd_id = 1;
  InitSharedMutex(&f->lock);
  for (CqEntry& c : f->cqs) InitSharedMutex(&c.lock);
  __atomic_store_n(&f->magic, kMagic, __ATOMIC_RELEASE);
}

// First-fit run of `want` free chunks in `owner`; kNone if none.
uint32_t FirstFit(const uint16_t* owner, uint32_t nchunks, uint32_t want) {
  uint32_t run = 0;
  for (uint32_t i = 0; i < nchunks; ++i) {
    run = owner[i] == 0 ? run + 1 : 0;
    if (run == want) return i + 1 - want;
  }
  return kNone;
}

// Releases what a dead owner's entries still hold in the arenas, so a
// full arena can be retried.
void ReclaimDeadQueues(FabricFile* f) {
  for (uint32_t i = 0; i < kMaxQps; ++i) {
    QpEntry& q = f->qps[i];
    if (q.owner != 0 && !Alive(q.owner)) {
      q.owner = 0;
      FreeWqeSlots(f, QpWqeTag(i));
    }
  }
  for (uint32_t i = 0; i < kMaxSrqs; ++i) {
    SrqEntry& s = f->srqs[i];
    if (s.owner != 0 && !Alive(s.owner)) {
      s.owner = 0;
      FreeWqeSlots(f, SrqWqeTag(i));
    }
  }
  for (uint32_t i = 0; i < kMaxCqs; ++i) {
    CqEntry& c = f->cqs[i];
    if (c.owner != 0 && !Alive(c.owner)) {
      c.owner = 0;
      FreeCqeSlots(f, i);
    }
  }
}

// Two passes: never-used or released entries first, so kill() is only
// paid when the table looks full.
template <typename Entry, typename Release>
uint32_t TakeEntry(Entry* table, uint32_t n, Release release) {
  for (uint32_t i = 0; i < n; ++i)
    if (table[i].owner == 0) return i;
  for (uint32_t i = 0; i < n; ++i) {
    if (!Alive(table[i].owner)) {
      release(i);
      return i;
    }
  }
  return kNone;
}

uint32_t NextGen(uint32_t gen) {
  // The QPN carries 12 bits of it; 0 is skipped so a QPN is never 0.
  ++gen;
  if ((gen & ((1u << (24 - kQpIndexBits)) - 1)) == 0) ++gen;
  return gen;
}

}  // namespace

int MapFabric(FabricFile** out) {
  char path[256];
  const char* env = getenv("VERBS_LOOP_FABRIC");
  if (env != nullptr && env[0] != '\0') {
    snprintf(path, sizeof(path), "%s", env);
  } else {
    snprintf(path, sizeof(path), "/tmp/verbs_loop-%u.fabric",
             unsigned(geteuid()));
  }
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  int err = 0;
  void* p = MAP_FAILED;
  struct stat st;
  if (flock(fd, LOCK_EX) != 0 || fstat(fd, &st) != 0) {
    err = errno;
  } else if (st.st_size != 0 && uint64_t(st.st_size) != sizeof(FabricFile)) {
    // Made by another build of this provider: refuse rather than clobber
    // a file that live processes may still use.
    fprintf(stderr, "verbs_loop: %s has the wrong size; delete it\n", path);
    err = EPROTO;
  } else if (st.st_size == 0 && ftruncate(fd, sizeof(FabricFile)) != 0) {
    err = errno;
  } else {
    p = mmap(nullptr, sizeof(FabricFile), PROT_READ | PROT_WRITE, MAP_SHARED,
             fd, 0);
    if (p == MAP_FAILED) err = errno;
  }
  if (err == 0) {
    FabricFile* f = static_cast<FabricFile*>(p);
    uint64_t magic = __atomic_load_n(&f->magic, __ATOMIC_ACQUIRE);
    if (magic == 0) {
      InitFile(f);
    } else if (magic != kMagic || f->version != kVersion ||
               f->size != sizeof(FabricFile)) {
      fprintf(stderr, "verbs_loop: %s has another layout; delete it\n", path);
      err = EPROTO;
    }
    if (err == 0) *out = f;
  }
  if (err != 0 && p != MAP_FAILED) munmap(p, sizeof(FabricFile));
  flock(fd, LOCK_UN);
  close(fd);
  return err;
}

void UnmapFabric(FabricFile* f) { munmap(f, sizeof(FabricFile)); }

void LockShared(pthread_mutex_t* m) {
  if (pthread_mutex_lock(m) == EOWNERDEAD) pthread_mutex_consistent(m);
}

void UnlockShared(pthread_mutex_t* m) { pthread_mutex_unlock(m); }

bool Alive(int32_t pid) {
  if (pid <= 0) return false;
  if (nic::Enabled()) return nic::Alive(pid);  // pids of its namespace
  return kill(pid, 0) == 0 || errno != ESRCH;
}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

uint32_t RegisterHost(FabricFile* f, const char* name, int32_t pid) {
  uint32_t free_slot = kNone;
  for (uint32_t i = 0; i < kMaxHosts; ++i) {
    HostEntry& h = f->hosts[i];
    if (h.used == 0) {
      if (free_slot == kNone) free_slot = i;
      continue;
    }
    if (strncmp(h.name, name, kHostNameMax) == 0) {
      h.last_pid = pid;
      return i;
    }
  }
  if (free_slot == kNone) {
    // Hosts are only recycled when the table is full; a host whose last
    // registered process is dead is assumed gone.
    for (uint32_t i = 0; i < kMaxHosts && free_slot == kNone; ++i)
      if (!Alive(f->hosts[i].last_pid)) free_slot = i;
    if (free_slot == kNone) return kNone;
  }
  HostEntry& h = f->hosts[free_slot];
  memset(h.name, 0, sizeof(h.name));
  strncpy(h.name, name, kHostNameMax - 1);
  h.last_pid = pid;
  h.used = 1;
  return free_slot;
}

uint32_t TakeQp(FabricFile* f) {
  uint32_t i = TakeEntry(f->qps, kMaxQps,
                         [f](uint32_t k) { FreeWqeSlots(f, QpWqeTag(k)); });
  if (i != kNone) {
    QpEntry& q = f->qps[i];
    uint32_t gen = NextGen(q.gen);
    memset(&q, 0, sizeof(q));
    q.gen = gen;
    q.srq = kNone;
  }
  return i;
}

uint32_t TakeMr(FabricFile* f) {
  uint32_t i = TakeEntry(f->mrs, kMaxMrs, [](uint32_t) {});
  if (i != kNone) memset(&f->mrs[i], 0, sizeof(MrEntry));
  return i;
}

uint32_t TakeCq(FabricFile* f) {
  uint32_t i =
      TakeEntry(f->cqs, kMaxCqs, [f](uint32_t k) { FreeCqeSlots(f, k); });
  if (i != kNone) {
    CqEntry& c = f->cqs[i];
    // The lock stays: a pusher may be waiting on it for the old CQ and
    // will see the new generation.
    SharedGuard g(&c.lock);
    c.gen = NextGen(c.gen);
    c.overflow = 0;
    c.ring = Ring{};
  }
  return i;
}

uint32_t TakeSrq(FabricFile* f) {
  uint32_t i = TakeEntry(f->srqs, kMaxSrqs,
                         [f](uint32_t k) { FreeWqeSlots(f, SrqWqeTag(k)); });
  if (i != kNone) {
    SrqEntry& s = f->srqs[i];
    uint32_t gen = NextGen(s.gen);
    memset(&s, 0, sizeof(s));
    s.gen = gen;
  }
  return i;
}

uint32_t AllocCqeSlots(FabricFile* f, uint32_t slots, uint32_t cq) {
  uint32_t want = (slots + kChunk - 1) / kChunk;
  uint32_t at = FirstFit(f->cqe_chunk_owner, kCqeChunks, want);
  if (at == kNone) {
    ReclaimDeadQueues(f);
    at = FirstFit(f->cqe_chunk_owner, kCqeChunks, want);
    if (at == kNone) return kNone;
  }
  for (uint32_t i = 0; i < want; ++i)
    f->cqe_chunk_owner[at + i] = uint16_t(cq + 1);
  return at * kChunk;
}

uint32_t AllocWqeSlots(FabricFile* f, uint32_t slots, uint16_t tag) {
  uint32_t want = (slots + kChunk - 1) / kChunk;
  uint32_t at = FirstFit(f->wqe_chunk_owner, kWqeChunks, want);
  if (at == kNone) {
    ReclaimDeadQueues(f);
    at = FirstFit(f->wqe_chunk_owner, kWqeChunks, want);
    if (at == kNone) return kNone;
  }
  for (uint32_t i = 0; i < want; ++i) f->wqe_chunk_owner[at + i] = tag;
  return at * kChunk;
}

void FreeCqeSlots(FabricFile* f, uint32_t cq) {
  for (uint16_t& o : f->cqe_chunk_owner)
    if (o == cq + 1) o = 0;
}

void FreeWqeSlots(FabricFile* f, uint16_t tag) {
  for (uint16_t& o : f->wqe_chunk_owner)
    if (o == tag) o = 0;
}

bool RingOk(const Ring& r, uint32_t arena_slots) {
  return r.cap != 0 && r.base < arena_slots && r.cap <= arena_slots - r.base &&
         r.tail - r.head <= r.cap;
}

QpEntry* FindQp(FabricFile* f, uint32_t qpn) {
  QpEntry& q = f->qps[qpn & (kMaxQps - 1)];
  if (q.owner == 0 || q.qpn != qpn || qpn == 0 || !Alive(q.owner))
    return nullptr;
  return &q;
}

MrEntry* FindMrByLkey(FabricFile* f, uint32_t key, int32_t owner) {
  MrEntry& m = f->mrs[key & (kMaxMrs - 1)];
  if (m.owner == 0 || m.owner != owner || m.lkey != key) return nullptr;
  return &m;
}

MrEntry* FindMrByRkey(FabricFile* f, uint32_t key, int32_t owner) {
  MrEntry& m = f->mrs[key & (kMaxMrs - 1)];
  if (m.owner == 0 || m.owner != owner || m.rkey != key) return nullptr;
  return &m;
}

bool MrRange(const MrEntry& mr, uint64_t iova, uint64_t len, uint64_t* addr) {
  if (iova < mr.iova) return false;
  uint64_t off = iova - mr.iova;
  if (off > mr.length || len > mr.length - off) return false;
  *addr = mr.addr + off;
  return true;
}

bool PopRecv(FabricFile* f, QpEntry* qp, RecvWqe* out, uint32_t* pd_id) {
  Ring* r = &qp->rq;
  *pd_id = qp->pd_id;
  if (qp->srq != kNone) {
    if (qp->srq >= kMaxSrqs) return false;
    SrqEntry& s = f->srqs[qp->srq];
    if (s.owner != qp->owner || s.gen != qp->srq_gen) return false;
    r = &s.ring;
    *pd_id = s.pd_id;
  }
  if (!RingOk(*r, kWqeSlots) || r->head == r->tail) return false;
  *out = f->wqe[r->base + r->head % r->cap];
  if (out->num_sge > kMaxSge) out->num_sge = kMaxSge;
  ++r->head;
  return true;
}

namespace {

// Sets QP `slot` to ERR and flushes its RQ; a CQ found full is appended
// to `work` (each CQ at most once, since kOverflowed comes once).
void ErrOne(FabricFile* f, uint32_t slot, uint32_t* work, uint32_t* nwork) {
  QpEntry& q = f->qps[slot];
  if (q.owner == 0 || q.state == IBV_QPS_ERR) return;
  q.state = IBV_QPS_ERR;
  if (q.srq != kNone || !RingOk(q.rq, kWqeSlots)) return;
  while (q.rq.head != q.rq.tail) {
    const RecvWqe& w = f->wqe[q.rq.base + q.rq.head % q.rq.cap];
    Cqe c{};
    c.wr_id = w.wr_id;
    c.qp_num = q.qpn;
    c.status = IBV_WC_WR_FLUSH_ERR;
    c.opcode = IBV_WC_RECV;
    ++q.rq.head;
    if (q.recv_cq < kMaxCqs &&
        PushCqe(f, q.recv_cq, q.recv_cq_gen, c) == Push::kOverflowed &&
        *nwork < kMaxCqs) {
      work[(*nwork)++] = q.recv_cq;
    }
  }
}

void DrainOverflows(FabricFile* f, uint32_t* work, uint32_t nwork) {
  for (uint32_t w = 0; w < nwork; ++w) {
    uint32_t cq = work[w];
    uint32_t gen = f->cqs[cq].gen;
    for (uint32_t i = 0; i < kMaxQps; ++i) {
      const QpEntry& q = f->qps[i];
      if (q.owner == 0) continue;
      if ((q.send_cq == cq && q.send_cq_gen == gen) ||
          (q.recv_cq == cq && q.recv_cq_gen == gen)) {
        ErrOne(f, i, work, &nwork);
      }
    }
  }
}

}  // namespace

void SetErrLocked(FabricFile* f, uint32_t slot) {
  uint32_t work[kMaxCqs];
  uint32_t nwork = 0;
  ErrOne(f, slot, work, &nwork);
  DrainOverflows(f, work, nwork);
}

void CqOverflowedLocked(FabricFile* f, uint32_t cq) {
  uint32_t work[kMaxCqs];
  work[0] = cq;
  DrainOverflows(f, work, 1);
}

Push PushCqe(FabricFile* f, uint32_t cq, uint32_t gen, const Cqe& c) {
  if (cq >= kMaxCqs) return Push::kDropped;
  CqEntry& e = f->cqs[cq];
  SharedGuard g(&e.lock);
  if (e.owner == 0 || e.gen != gen || e.overflow != 0 ||
      !RingOk(e.ring, kCqeSlots)) {
    return Push::kDropped;
  }
  if (e.ring.tail - e.ring.head == e.ring.cap) {
    __atomic_store_n(&e.overflow, 1u, __ATOMIC_RELEASE);
    return Push::kOverflowed;
  }
  f->cqe[e.ring.base + e.ring.tail % e.ring.cap] = c;
  // R1: publishes the CQE (and, before it, the payload written by
  // process_vm_writev); pairs with A1 in PollCq.
  __atomic_store_n(&e.ring.tail, e.ring.tail + 1, __ATOMIC_RELEASE);
  return Push::kPushed;
}

}  // namespace verbs_loop

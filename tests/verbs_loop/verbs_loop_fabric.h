// The shared fabric file of the verbs_loop test provider.
//
// Every process that opens the "loop0" device maps one file (env
// VERBS_LOOP_FABRIC, default /tmp/verbs_loop-<euid>.fabric) MAP_SHARED. It
// holds whatever a peer must see or change without the owner's help:
//
//   hosts   one entry per distinct hostname; its index + 1 is the LID.
//   qps     state, destination, access flags and receive queue of each QP:
//           the sender executes a WR itself, so it checks the responder's
//           state and consumes the responder's receive WQEs.
//   mrs     lkey/rkey, range and access of each MR, checked by peers, and
//           where its bytes are: memory of the owner, or a dma-buf file
//           the owner holds open (reached through /proc/<pid>/fd).
//   cqs     completion rings, pushed by any process, popped by the owner.
//   srqs    shared receive queues, consumed by senders.
//   arenas  CQE and receive-WQE slots, handed out in chunks of kChunk so a
//           queue's ring is one contiguous slice.
//
// Ownership: an entry is in use while `owner` (a pid) is set and alive;
// an entry whose owner is dead may be taken again. Generations tell a
// reused entry from the one a peer remembered.
//
// Locking: `FabricFile::lock` guards every table, every receive ring and
// the arenas' chunk maps; each CQ has its own lock for its ring. Order:
// process mutex -> FabricFile::lock -> CqEntry::lock. Both are robust,
// process-shared mutexes, so a process dying inside leaves them usable.
//
// Trust: the file is writable by every user process, so every index read
// from it is bounded before use (see RingOk and the *At helpers).
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

// Only the rdma-core entry points leave the .so.
#pragma GCC visibility push(hidden)

namespace verbs_loop {

inline constexpr uint64_t kMagic = 0x4241465f504f4f4cull;  // "LOOP_FAB"
// 2: MrEntry gained kind and fd (dma-buf MRs).
inline constexpr uint32_t kVersion = 2;

inline constexpr uint32_t kMaxHosts = 256;
inline constexpr uint32_t kQpIndexBits = 12;
inline constexpr uint32_t kMaxQps = 1u << kQpIndexBits;
inline constexpr uint32_t kMrIndexBits = 14;
inline constexpr uint32_t kMaxMrs = 1u << kMrIndexBits;
inline constexpr uint32_t kMaxCqs = 1024;
inline constexpr uint32_t kMaxSrqs = 256;
inline constexpr uint32_t kMaxSge = 8;
inline constexpr uint32_t kMaxInline = 256;
inline constexpr uint32_t kMaxCqe = 262144;
inline constexpr uint32_t kMaxWr = 16384;
inline constexpr uint32_t kChunk = 64;
inline constexpr uint32_t kCqeSlots = 1u << 20;
inline constexpr uint32_t kWqeSlots = 1u << 18;
inline constexpr uint32_t kCqeChunks = kCqeSlots / kChunk;
inline constexpr uint32_t kWqeChunks = kWqeSlots / kChunk;
inline constexpr uint32_t kHostNameMax = 64;
inline constexpr uint32_t kNone = 0xffffffffu;

struct Sge {
  uint64_t addr;
  uint32_t length;
  uint32_t lkey;
};

struct RecvWqe {
  uint64_t wr_id;
  uint32_t num_sge;
  uint32_t pad;
  Sge sge[kMaxSge];
};
static_assert(sizeof(RecvWqe) == 144);

// Flags of Cqe::flags.
inline constexpr uint8_t kCqeSend = 1;     // retires send-queue slots
inline constexpr uint8_t kCqeWithImm = 2;  // imm is valid

// One completion as stored in a CQ ring; PollCq turns it into ibv_wc.
struct Cqe {
  uint64_t wr_id;
  uint64_t sq_seq;  // kCqeSend: the WR's send-queue sequence number
  uint32_t byte_len;
  uint32_t imm;  // network order, as posted
  uint32_t qp_num;
  uint32_t src_qp;
  uint32_t qp_slot;  // kCqeSend: the sender QP's table index and gen
  uint32_t qp_gen;
  uint16_t slid;
  uint8_t status;  // ibv_wc_status
  uint8_t opcode;  // ibv_wc_opcode
  uint8_t flags;
  uint8_t pad[3];
};
static_assert(sizeof(Cqe) == 48);

// A ring over `cap` arena slots starting at `base`; head and tail are
// free-running (tail - head = occupancy).
struct Ring {
  uint32_t base;
  uint32_t cap;
  uint32_t head;
  uint32_t tail;
};

struct HostEntry {
  int32_t last_pid;  // recycling hint only (see RegisterHost)
  uint32_t used;
  char name[kHostNameMax];
};

// Kinds of MrEntry::kind.
inline constexpr uint32_t kMrMemory = 0;  // ibv_reg_mr: memory of the owner
inline constexpr uint32_t kMrDmabuf = 1;  // ibv_reg_dmabuf_mr: a file

struct MrEntry {
  int32_t owner;
  uint32_t lkey;
  uint32_t rkey;
  uint32_t access;
  uint32_t pd_id;
  uint32_t kind;
  int32_t fd;  // kMrDmabuf: the owner's own dup of the dma-buf fd; else -1
  uint32_t pad;
  // Where the byte `iova` is: an address in the owner (kMrMemory), or an
  // offset in the file of the owner's `fd` (kMrDmabuf).
  uint64_t addr;
  uint64_t iova;  // what WRs call that byte
  uint64_t length;
};
static_assert(sizeof(MrEntry) == 56 && offsetof(MrEntry, addr) == 32);

struct CqEntry {
  pthread_mutex_t lock;
  int32_t owner;
  uint32_t gen;
  uint32_t overflow;  // set once; the CQ is unusable after
  uint32_t pad;
  Ring ring;  // tail: pushers (release), head: owner
};

struct SrqEntry {
  int32_t owner;
  uint32_t gen;
  uint32_t pd_id;
  uint32_t max_sge;
  Ring ring;
};

struct QpEntry {
  int32_t owner;
  uint32_t gen;
  uint32_t qpn;
  uint32_t state;  // ibv_qp_state
  uint32_t pd_id;
  uint32_t host;
  uint32_t dest_qpn;  // 0 until RTR
  uint32_t access;    // responder's IBV_ACCESS_REMOTE_* gate
  uint32_t send_cq;
  uint32_t send_cq_gen;
  uint32_t recv_cq;
  uint32_t recv_cq_gen;
  uint32_t srq;  // kNone without
  uint32_t srq_gen;
  uint32_t max_recv_sge;
  uint32_t pad;
  Ring rq;  // cap 0 with an SRQ or max_recv_wr 0
};

struct FabricFile {
  uint64_t magic;  // written last at init (release)
  uint32_t version;
  uint32_t pad;
  uint64_t size;
  pthread_mutex_t lock;
  uint32_t next_pd_id;
  uint32_t pad2;
  HostEntry hosts[kMaxHosts];
  QpEntry qps[kMaxQps];
  MrEntry mrs[kMaxMrs];
  CqEntry cqs[kMaxCqs];
  SrqEntry srqs[kMaxSrqs];
  uint16_t cqe_chunk_owner[kCqeChunks];  // 0 free, else CQ index + 1
  uint16_t wqe_chunk_owner[kWqeChunks];  // 0 free, else WqeTag()
  Cqe cqe[kCqeSlots];
  RecvWqe wqe[kWqeSlots];
};

// Tags of the receive-WQE arena's chunks: QPs, then SRQs.
inline uint16_t QpWqeTag(uint32_t qp) { return uint16_t(1 + qp); }
inline uint16_t SrqWqeTag(uint32_t srq) { return uint16_t(1 + kMaxQps + srq); }
static_assert(kMaxQps + kMaxSrqs < 0xffff && kMaxCqs < 0xffff);

// Maps the fabric file, creating and initialising it under flock() when
// it is new. Returns 0 or an errno value; *out is valid only on 0.
int MapFabric(FabricFile** out);
void UnmapFabric(FabricFile* f);

// Robust process-shared mutex helpers: a dead holder is forgiven.
void LockShared(pthread_mutex_t* m);
void UnlockShared(pthread_mutex_t* m);

class SharedGuard {
 public:
  explicit SharedGuard(pthread_mutex_t* m) : m_(m) { LockShared(m_); }
  ~SharedGuard() { UnlockShared(m_); }
  SharedGuard(const SharedGuard&) = delete;
  SharedGuard& operator=(const SharedGuard&) = delete;

 private:
  pthread_mutex_t* m_;
};

// True if `pid` names a live process (EPERM counts as alive).
bool Alive(int32_t pid);
uint64_t NowNs();

// All of the following need FabricFile::lock held.

// Index of the host entry for `name` (registering it), or kNone if the
// table is full of hosts with live processes.
uint32_t RegisterHost(FabricFile* f, const char* name, int32_t pid);

// A free entry (owner 0 or dead, whose leftovers are released), or kNone.
uint32_t TakeQp(FabricFile* f);
uint32_t TakeMr(FabricFile* f);
uint32_t TakeCq(FabricFile* f);
uint32_t TakeSrq(FabricFile* f);

// Contiguous arena slices of at least `slots` slots; kNone when the arena
// has no room even after reclaiming dead owners' chunks.
uint32_t AllocCqeSlots(FabricFile* f, uint32_t slots, uint32_t cq);
uint32_t AllocWqeSlots(FabricFile* f, uint32_t slots, uint16_t tag);
void FreeCqeSlots(FabricFile* f, uint32_t cq);
void FreeWqeSlots(FabricFile* f, uint16_t tag);

bool RingOk(const Ring& r, uint32_t arena_slots);

// The live QP numbered `qpn`, or nullptr.
QpEntry* FindQp(FabricFile* f, uint32_t qpn);
// The MR entry whose lkey (or rkey) is `key`, owned by `owner`; nullptr
// if none (also for a deregistered or reused entry).
MrEntry* FindMrByLkey(FabricFile* f, uint32_t key, int32_t owner);
MrEntry* FindMrByRkey(FabricFile* f, uint32_t key, int32_t owner);
// Translates [iova, iova+len) of `mr` to where its bytes are (see
// MrEntry::addr); false if the range is not inside the MR.
bool MrRange(const MrEntry& mr, uint64_t iova, uint64_t len, uint64_t* addr);

// Pops the oldest receive WQE of the QP's RQ or SRQ into *out. False if
// there is none (RNR).
bool PopRecv(FabricFile* f, QpEntry* qp, RecvWqe* out, uint32_t* pd_id);

// Moves QP `slot` to ERR and flushes its own RQ into its recv CQ; QPs of
// any CQ that overflows on the way go to ERR too.
void SetErrLocked(FabricFile* f, uint32_t slot);
// A CQ just overflowed: its QPs go to ERR.
void CqOverflowedLocked(FabricFile* f, uint32_t cq);

// Needs only the CQ's lock (taken inside): callers may or may not hold
// FabricFile::lock. kOverflowed is returned once per CQ, to the push that
// found it full; the caller must then call CqOverflowedLocked.
enum class Push { kPushed, kDropped, kOverflowed };
Push PushCqe(FabricFile* f, uint32_t cq, uint32_t gen, const Cqe& c);

}  // namespace verbs_loop

#pragma GCC visibility pop

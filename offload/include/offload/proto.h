// The control protocol between a host library and the firmware_sim daemon
// (the emulated DPU), over a unix stream socket (emu), or over TCP to a
// daemon on another computer (dpu mode; see "Over a network" below).
// Collectives never use it: they go through the channel (submission ring and
// completion words in a memfd the host passes in kHello). It carries what the
// inline engine's team control calls carry, plus registrations and status
// queries.
//
// Every message is a MsgHeader followed by `len` bytes of body; each
// request gets exactly one reply of type (request type | kReply) with the
// same `seq`, whose body starts with an int32 status (off::Status). Bodies
// are fixed-size PODs, except kTeamConnect (a TeamConnect followed by
// `size` TeamAddr records). Both sides treat everything they receive as
// untrusted: unknown types, wrong lengths and out-of-range values are
// answered with kInvalidParam (or end the connection when the framing
// itself is broken).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <type_traits>

#include "offload/caps.h"
#include "offload/engine_config.h"
#include "offload/team_addr.h"

namespace ucc::off::proto {

inline constexpr uint32_t kMagic = 0x55434350u;  // "UCCP"
inline constexpr uint16_t kVersion = 7;
// Over a network (dpu mode, docs/dpu.md). A network has no peer
// credentials, so both ends prove that they hold the deployment's secret
// K without sending it, and every later message carries a tag:
//   daemon -> host  kChallenge (seq 0, unasked, as soon as it accepts):
//                   AuthChallenge {nonce_e}
//   host -> daemon  kAuth: AuthProof {nonce_h, MAC(K, "host", e, h)}
//   daemon -> host  AuthReply {status, MAC(K, "engine", h, e)}; the host
//                   checks it before it sends anything else.
// Both then hold the session key S = MAC(K, "session", e, h), fresh for
// each connection. From then on every message, both ways, ends with
// kTagBytes of MAC(S, direction, header, body), counted in the header's
// len; requests' seq must grow. A replayed hello fails its nonce, a
// replayed or injected message its tag or its seq, and a message of one
// connection is worth nothing on another (control_auth.h).
inline constexpr size_t kTagBytes = 16;
inline constexpr size_t kNonceBytes = 32;

// Largest body accepted: a kTeamConnect for 65536 ranks, and a tag.
inline constexpr uint32_t kMaxBody = 16 + 65536u * sizeof(TeamAddr) + 16;

// Where a daemon listens unless told otherwise (one per user and node),
// in a directory only its user can use (plat::sock::private_socket_path).
inline constexpr const char* kDefaultSocketName = "firmware-sim.sock";

enum Type : uint16_t {
  kHello = 1,      // Hello (+ the channel memfd as SCM_RIGHTS) -> HelloReply,
                   // which carries the engine's capability record
  kTeamOpen,       // TeamOpen -> TeamOpenReply
  kTeamConnect,    // TeamConnect + TeamAddr[size] -> Reply
  kTeamSeal,       // TeamIdx -> Reply
  kTeamClose,      // TeamIdx -> Reply
  kRegister,       // Register -> RegisterReply; the range must be mapped in
                   // the host (else kInvalidParam)
  kDeregister,     // Deregister -> Reply
  kStats,          // (empty) -> StatsReply
  kShutdown,       // (empty) -> Reply; the daemon exits once idle
  kDoorbell,       // (empty), no reply: wakes a sleeping daemon
  kRdmaConnect,    // RdmaConnect -> RdmaConnectReply: the engine reaches the
                   // host's memory by RDMA from now on (kNotSupported from a
                   // daemon without verbs); registrations must carry rkeys
  kAuth,           // AuthProof -> AuthReply: TCP only, the first request
  kHelloRemote,    // HelloRemote -> HelloReply: dpu mode's kHello, after
                   // kAuth and kRdmaConnect: the channel stays in host
                   // memory, which the engine reaches by RDMA only
  kChallenge,      // AuthChallenge, daemon -> host, unasked (TCP only)
  kBye,            // (empty) -> Reply: the host leaves; once answered, the
                   // engine touches none of its memory again (dpu mode: the
                   // host then deregisters it)
  kTcpMemConnect,  // (empty) -> TcpMemConnectReply: dpu mode's TCP
                   // fallback (UCC_DPU_MEM=tcp) instead of kRdmaConnect:
                   // the engine will reach the host's memory over a
                   // connection of its own, which the host opens next
  kTcpMemAttach,   // TcpMemAttach -> Reply, on that new connection, after
                   // its own kAuth: it becomes the memory channel of the
                   // client holding the token (platform/mem/tcp_mem.h)
                   // and carries nothing else from then on
  kReply = 0x8000,
};

struct MsgHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t type;
  uint32_t len;  // body bytes
  uint32_t seq;
};
static_assert(sizeof(MsgHeader) == 16);

// kHello: the channel's geometry and what the host asks of the engine
// (checked with engine_config_ok before use).
struct Hello {
  uint16_t desc_version;  // kDescVersion of the host
  uint16_t pad;
  uint32_t sq_capacity;  // channel geometry (Channel::init arguments)
  uint32_t ncomp;
  uint32_t nres;           // completion slots with a result area: 0 or ncomp
  uint64_t channel_bytes;  // size of the memfd
  EngineConfig engine;
};

// dpu mode: the channel block (Channel::layout) at host address
// `channel_addr`, registered with the host's RDMA port under `rkey`.
// `flags`: kPushDescriptors asks the engine for an inbox the host writes
// its descriptors into (docs/dpu.md, "How the engine learns of
// descriptors"); without it the engine reads the host's ring.
struct HelloRemote {
  Hello hello;
  uint64_t channel_addr;
  uint32_t rkey;
  uint32_t flags;
};
inline constexpr uint32_t kPushDescriptors = 1;

struct AuthChallenge {
  uint32_t version;  // kVersion
  uint32_t pad;
  uint8_t nonce[kNonceBytes];
};
struct AuthProof {
  uint8_t nonce[kNonceBytes];
  uint8_t mac[32];
};
struct AuthReply {
  int32_t status;
  uint32_t pad;
  uint8_t mac[32];
};

struct Reply {
  int32_t status;
  uint32_t pad;
};

struct HelloReply {
  int32_t status;
  int32_t daemon_pid;
  EngineCaps caps;  // the engine's, when status is kOk
  // kHelloRemote with kPushDescriptors, granted: the engine's inbox
  // (off::InboxLayout for the hello's sq_capacity) at `inbox_addr` in the
  // engine's memory, writable by RDMA over the host's queue pair under
  // `inbox_rkey`. Not granted (flags 0): the engine reads the ring.
  uint64_t inbox_addr;
  uint32_t inbox_rkey;
  uint32_t flags;
};

struct TeamOpen {
  uint32_t size;
  uint32_t rank;
};

struct TeamOpenReply {
  int32_t status;
  uint32_t idx;
  TeamAddr addr;
};

struct TeamIdx {
  uint32_t idx;
  uint32_t pad;
};

struct TeamConnect {
  uint32_t idx;
  uint32_t size;  // TeamAddr records that follow
};

struct Register {
  uint64_t addr;
  uint64_t len;
  uint32_t rkey;   // after kRdmaConnect: the host's key of the range
  uint32_t flags;  // kRegGpu; other bits must be 0
};

// Register.flags: GPU memory registered with the host's RDMA port
// (GPUDirect RDMA). The driver maps it PROT_NONE in the host's address
// space, so /proc/<pid>/maps cannot vouch for it; only with a key, and
// then every access is checked by the host's port against that key.
inline constexpr uint32_t kRegGpu = 1u;

// The host's end of a verbs channel (platform/verbs/verbs_channel.h),
// and the engine's in the reply; each side checks the other's.
struct RdmaAddr {
  uint32_t qpn;
  uint32_t psn;
  uint16_t lid;
  uint8_t mtu;
  uint8_t pad;
  uint8_t gid[16];
};
static_assert(sizeof(RdmaAddr) == 28);

struct RdmaConnectReply {
  int32_t status;
  RdmaAddr addr;
};

// kTcpMemConnect's answer: a fresh random token naming the client, which
// the host's second connection presents (kTcpMemAttach) once it has
// proved the key itself; the token alone opens nothing (it crosses the
// wire in clear).
struct TcpMemConnectReply {
  int32_t status;
  uint32_t pad;
  uint8_t token[32];
};
struct TcpMemAttach {
  uint8_t token[32];
};

struct RegisterReply {
  int32_t status;
  uint32_t key;
};

struct Deregister {
  uint32_t key;
  uint32_t pad;
};

// May grow at its end: a reader accepts a shorter reply (an older
// daemon's) and takes the fields it lacks as 0.
struct StatsReply {
  int32_t status;
  uint32_t clients;
  uint64_t descriptors;  // taken from all channels so far
  uint64_t pushed;       // of which found in inboxes (dpu mode, pushed)
  uint64_t teams;        // open now
  uint64_t uptime_ms;
  uint64_t registered;     // kRegister requests granted so far
  uint64_t registrations;  // held now, all clients together
  // The wire between nodes (0 without one): frames, data payload bytes,
  // data frames sent again, frames refused (checksum, header), data
  // frames that had already arrived, and faults injected (all kinds).
  uint64_t wire_tx_frames;
  uint64_t wire_rx_frames;
  uint64_t wire_tx_bytes;
  uint64_t wire_retransmits;
  uint64_t wire_bad_frames;
  uint64_t wire_dup_rx;
  uint64_t wire_injected;
  // Calls of the daemon's into another process by the kernel (cross-
  // memory attach, /proc/<pid>, another process's fds) so far: 0 for a
  // daemon that served only dpu hosts (platform/os/proc_id.h).
  uint64_t foreign_reaches;
  // dpu clients whose memory the engine reaches over TCP (the fallback,
  // UCC_DPU_MEM=tcp) now, and memory requests they answered so far.
  uint64_t tcp_mem_clients;
  uint64_t tcp_mem_requests;
  // The engines' transfers to their hosts' memory (RDMA or the TCP
  // fallback) by step, in platform/mem/remote_mem.h's MemStep order
  // (ring head, descriptors, ring tail, completion words, idle flag,
  // buffer reads, buffer writes): how many, bytes, and nanoseconds from
  // each call to its completion.
  uint64_t step_n[7];
  uint64_t step_bytes[7];
  uint64_t step_ns[7];
  // Of foreign_reaches, the copies of another process's memory (cross-
  // memory attach); the rest are looks at /proc/<pid>, some by the clock.
  uint64_t foreign_copies;
};

static_assert(std::is_trivially_copyable_v<Hello>);
// Every reply is a fixed-size POD; the largest, with its tag, fits this.
inline constexpr size_t kMaxReply = 2048;
static_assert(sizeof(HelloReply) + kTagBytes <= kMaxReply);
static_assert(sizeof(StatsReply) + kTagBytes <= kMaxReply);
static_assert(sizeof(TeamOpenReply) + kTagBytes <= kMaxReply);
static_assert(sizeof(HelloRemote) == sizeof(Hello) + 16);

}  // namespace ucc::off::proto

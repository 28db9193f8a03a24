// The table of every configuration knob: name, default, scope and the
// documentation line ucc_*_config_print and docs/configuration.md show.
// Its order is the order of the Knob enum (config.h).
#include "host/config/config.h"

namespace ucc::host {

const KnobInfo kKnobTable[kNumKnobs] = {
    {"LOG_LEVEL", "warn", Scope::kLib,
     "Log level: error, warn, info, debug, trace"},
    {"OFFLOAD", "inline", Scope::kContext,
     "Where the collective engine runs: inline (in this process, "
     "progressed by ucc_context_progress), emu (in this node's "
     "firmware_sim daemon, the emulated DPU; started if none runs) or dpu "
     "(in a firmware_sim on another computer, this host's DPU, at "
     "UCC_DPU_ADDR: authenticated by UCC_DPU_KEY_FILE, this process's "
     "memory reached by RDMA only; docs/dpu.md)"},
    {"OFFLOAD_MEM", "cma", Scope::kContext,
     "emu: how the engine reaches this process's buffers: cma (cross-memory "
     "attach) or verbs (RDMA with the keys of this process's registrations; "
     "needs an RDMA port here and a firmware_sim started with --verbs)"},
    {"OFFLOAD_INLINE", "32", Scope::kContext,
     "emu: allreduce vectors of up to this many bytes (0..32) travel in the "
     "descriptor, and their result comes back beside the completion word, "
     "so the daemon makes no access to this process's memory for them; 0 "
     "turns it off. Not in dpu mode (docs/offload.md, \"Inline data\")"},
    {"FIRMWARE_SOCKET", "", Scope::kContext,
     "emu: the daemon's unix socket; empty: firmware-sim.sock in "
     "$XDG_RUNTIME_DIR, else in /tmp/ucc-<uid> (either must be this "
     "user's alone, mode 0700). A comma-separated list spreads contexts "
     "over several daemons (emulated nodes): OOB rank r takes entry r mod "
     "n. The daemon there must run as this user or root"},
    {"FIRMWARE_SIM", "auto", Scope::kContext,
     "emu: the firmware_sim binary to start when no daemon listens; auto: "
     "the build tree's or the installed one; none: never start one"},
    {"FIRMWARE_TIMEOUT", "10s", Scope::kContext,
     "emu: how long to wait for the daemon to start and for each of its "
     "answers (a number with ms or s; s if none)"},
    {"DPU_ADDR", "auto", Scope::kContext,
     "dpu: the daemon's host:port; auto: the first line of /etc/ucc/dpu.addr "
     "where that file exists, else 192.168.100.2:18700 (the address a "
     "BlueField host reaches its DPU's Arm cores at, over tmfifo_net0)"},
    {"DPU_MEM", "verbs", Scope::kContext,
     "dpu: how the engine reaches this process's memory: verbs (RDMA, "
     "through this host's RDMA port) or tcp (a development fallback for "
     "machines without RDMA: a second authenticated connection to the "
     "daemon, served by a thread of this process; slower, never chosen "
     "unless asked for; docs/dpu.md)"},
    {"DPU_RING", "push", Scope::kContext,
     "dpu: how the engine learns of this process's descriptors: push (each "
     "post writes its descriptors into the engine's inbox by RDMA WRITE; "
     "the engine reads this process's ring only before it naps) or read "
     "(the engine polls this process's ring by RDMA READ). The TCP "
     "fallback always reads (docs/dpu.md)"},
    {"MAX_TEAMS", "auto", Scope::kContext,
     "Teams a context can hold at once (1..65536); auto: 16384, fewer when "
     "UCC_TEAM_MAX_COLLS is above 1024 (at most 16 Mi completion words per "
     "context). Memory is taken per team as teams are created"},
    {"TEAM_MAX_COLLS", "128", Scope::kContext,
     "Collective requests preallocated per team (rounded up to a power "
     "of two); bounds outstanding collectives"},
    {"TEAM_CREATE_TIMEOUT", "60s", Scope::kContext,
     "How long creating a team over an ep_map waits for all members before "
     "it fails with UCC_ERR_TIMED_OUT (a number with ms or s; s if none)"},
    {"SHM_SEG_SIZE", "64K", Scope::kContext,
     "Bytes per shared-memory message slot (multiple of 64)"},
    {"SHM_NSEGS", "8", Scope::kContext,
     "Message slots per peer inbox (power of two, 2..64)"},
    {"TEAM_INFLIGHT", "8", Scope::kContext,
     "Collectives of one team the engine runs at once (1..64); later ones "
     "wait, in posting order"},
    {"UNEXPECTED_SLOTS", "16", Scope::kContext,
     "Messages (of UCC_SHM_SEG_SIZE bytes each) the engine can set aside "
     "when inboxes are full of messages it cannot consume yet (0..4096)"},
    {"MEM_MAP_HANDLES", "64", Scope::kContext,
     "Handles ucc_mem_map can hand out per context at once (0..4096), each "
     "of up to 16 segments; taken at context creation. emu: every segment "
     "is a registration the daemon holds until ucc_mem_unmap"},
    {"GPU_DIRECT", "auto", Scope::kContext,
     "GPU buffers of a team whose ranks share one host: auto reads and "
     "writes the peers' GPU buffers directly (CUDA IPC, copy engines, "
     "reduction kernels) where the driver, the datatype and the collective "
     "allow; no stages every GPU buffer through pinned host memory "
     "(docs/gpu.md)"},
    {"GPU_IPC_CACHE", "128", Scope::kContext,
     "Peers' GPU allocations a context keeps open (CUDA IPC), and its own "
     "allocations' IPC handles it keeps (8..4096); the least recently "
     "used one not in use is closed to make room"},
    {"GPU_RDMA", "auto", Scope::kContext,
     "GPU buffers where the engine reaches memory by RDMA "
     "(UCC_OFFLOAD_MEM=verbs, UCC_OFFLOAD=dpu): auto registers them with "
     "the device (GPUDirect RDMA: by dma-buf, else by pointer) so the "
     "engine reads and writes them in place, staging only where the device "
     "takes neither; no stages them (docs/gpu.md)"},
    {"POLL_SPIN", "auto", Scope::kContext,
     "Idle ucc_context_progress calls before each further idle call "
     "yields the CPU; auto: 2 when a team has more ranks on this machine "
     "than it has CPUs (UCC_HOST_CPUS; ranks of other hosts on the same "
     "kernel, namespaces or containers, count, and so does the kernel's "
     "network work between them), or with UCC_OFFLOAD=emu; 128 "
     "otherwise"},
    {"HOST_CPUS", "auto", Scope::kContext,
     "The CPUs this host's ranks run on (1..65535); auto: the CPUs online. "
     "A team with more ranks on this host than this is crowded: "
     "UCC_POLL_SPIN=auto yields sooner, and a linear team (UCC_LINEAR_RANKS) "
     "runs the linear barrier instead of dissemination; so every rank of "
     "a team must see the same value (in emu too: the daemon takes the "
     "host's)"},
    {"HOST_ID", "", Scope::kContext,
     "The host this process counts as on: ranks with the same host share "
     "memory, the others use the network. Empty: the kernel's boot id and "
     "the hostname (so network namespaces with their own hostnames are "
     "hosts of their own)"},
    {"NET", "auto", Scope::kContext,
     "How ranks reach ranks on other hosts: tcp (context creation fails "
     "without it), verbs (RDMA over InfiniBand or RoCE, connections set up "
     "over TCP; context creation fails without an active port), none "
     "(teams must then sit on one host), auto (tcp where a socket can "
     "listen, else none with a warning), sim (SimGrid's simulated "
     "network, only inside a simulation: docs/scale.md)"},
    {"NET_IF", "", Scope::kContext,
     "The interface (name, or its IPv4 address) TCP listens on and "
     "advertises; empty: the first one up that is not loopback, else "
     "loopback"},
    {"NET_PEER_TIMEOUT", "30s", Scope::kContext,
     "A rank on another host that closes, dies or stays silent this long "
     "while a collective waits for it fails that collective, and every "
     "later one on the team (a number with ms or s; s if none). Peers that "
     "do not call ucc_context_progress for longer look silent"},
    {"NET_CHECKSUM", "0", Scope::kContext,
     "1: TCP frames carry a CRC32C of their payload as well as of their "
     "header (always), checked before a message is used; a mismatch fails "
     "the collectives on both ends, naming the peer. Set it alike on every "
     "rank. Its cost: docs/performance.md"},
    {"NET_FAULTS", "", Scope::kContext,
     "Tests only: faults TCP injects, comma-separated: split=N (write at "
     "most 1..N bytes per call), delay=US (hold every frame US "
     "microseconds), drop=P (break the connection after a message with "
     "probability P; it is made again), corrupt=P (flip a byte of a "
     "message's payload after its checksum, with probability P), rekey=N "
     "(move the N-th message sent to another collective's key), seed=S"},
    {"NET_DEVICES", "", Scope::kContext,
     "UCC_NET=verbs: the RDMA device and port, as mlx5_0:1 or mlx5_0 "
     "(its first active port); empty: the first active port of any device"},
    {"NET_GID_INDEX", "auto", Scope::kContext,
     "UCC_NET=verbs: the GID table entry to route by (RoCE); auto: 0 on "
     "InfiniBand; on RoCE a RoCE v2 GID over IPv4, else any RoCE v2, else "
     "an IPv4-mapped one, else the first set"},
    {"NET_ZCOPY_MIN", "256K", Scope::kContext,
     "UCC_NET=verbs: blocks of at least this many bytes that a collective "
     "copies whole to a rank on another host (alltoall(v), allgatherv, "
     "gather(v), scatter(v); never reductions or exchanges in place) go "
     "one-sided, read by RDMA from the sender's registered user buffer "
     "straight into the receiver's, without slots; 0: never. The ends of "
     "a link use the larger of their two values"},
    {"NET_TCP_ZCOPY_MIN", "256K", Scope::kContext,
     "UCC_NET=tcp: the same for TCP, whose one-sided reads are emulated "
     "(the owner's progress writes the bytes from its buffer, the reader "
     "receives them into its own); 0: never, where the kernel copies cold "
     "memory much slower than user space does (docs/network.md)"},
    {"NET_MAX_PEERS", "4096", Scope::kContext,
     "TCP (and verbs' connection setup): connections to other engines held "
     "at once, a fixed pool reserved at context creation (about 17 KiB "
     "each, touched only when used). Connections are made on demand, to "
     "the engines a member talks to; a member that needs one more than "
     "this fails its team with an error naming this knob (1-65536)"},
    {"VERBS_LIB", "", Scope::kContext,
     "UCC_NET=verbs: the libibverbs to load; empty: libibverbs.so.1. Tests "
     "name tests/verbs_loop's provider here"},
    {"ALLREDUCE_RING_MIN", "64K", Scope::kContext,
     "Allreduce vectors of at least this many bytes use the ring "
     "algorithm, smaller ones recursive doubling"},
    {"CMA", "no", Scope::kContext,
     "Single-copy transfers of large messages between ranks (inline "
     "engine): a rank reads its peer's buffer with cross-memory attach "
     "(process_vm_readv) instead of both copying through shared memory. "
     "no (default: measured slower here, docs/performance.md); auto: where "
     "the kernel allows it (Yama ptrace_scope 0 or 1; with 1 each process "
     "lets processes of its user attach)"},
    {"CMA_MIN", "64K", Scope::kContext,
     "Blocks of at least this many bytes (the bcast vector, one rank's "
     "allgather or alltoall block) move by single copy when UCC_CMA "
     "allows it"},
    {"LINEAR_RANKS", "8", Scope::kContext,
     "Teams with all their ranks on one host, 4 to this many of them "
     "(at most 255; 0: never), run bcast and reduce below UCC_LINEAR_MAX "
     "bytes over flat trees, and allgather(v) and reduce_scatter(v) below "
     "it, alltoall below UCC_ALLTOALL_LINEAR_MAX (alltoallv at every "
     "size) by sending to every rank at once (the linear algorithms); "
     "barrier too where the team is crowded (UCC_HOST_CPUS)"},
    {"LINEAR_MAX", "64K", Scope::kContext,
     "Bcast and reduce vectors, and allgather and reduce_scatter blocks "
     "(allgatherv and reduce_scatterv: the largest block), of fewer bytes "
     "use the linear algorithm where UCC_LINEAR_RANKS allows it; larger "
     "ones the binomial tree, the ring or (allgatherv) the pairwise "
     "exchange"},
    {"ALLTOALL_LINEAR_MAX", "1M", Scope::kContext,
     "Alltoall blocks of fewer bytes use the linear exchange where "
     "UCC_LINEAR_RANKS allows it, larger ones the pairwise exchange (0: "
     "never the linear one)"},
    {"WIDE_RANKS", "16", Scope::kContext,
     "Teams of at least this many ranks (at most 65535; 0: never) gather "
     "allgather blocks below UCC_WIDE_MAX bytes, and on teams without "
     "several ranks on some of several hosts below UCC_LINEAR_MAX, in "
     "ceil(log2 n) rounds (Bruck's algorithm) instead of the rings' n - 1 "
     "steps; every rank of a team must see the same value (docs/scale.md)"},
    {"WIDE_MAX", "512", Scope::kContext,
     "Allgather and alltoall blocks of fewer bytes (at most 4G) go by "
     "Bruck's algorithms, reduce_scatter blocks by recursive halving where "
     "they fit UCC_WIDE_SCRATCH, on every team of UCC_WIDE_RANKS ranks or "
     "more, before the node-aware rings and the pairwise exchange (0: "
     "only on teams without the node-aware shape); on such teams without "
     "the node-aware shape, allreduce vectors of fewer bytes go by the "
     "recursive exchange of radix 4 (knomial)"},
    {"ALLTOALL_BRUCK_MAX", "1K", Scope::kContext,
     "On teams of UCC_WIDE_RANKS ranks or more without several ranks on "
     "some of several hosts, alltoall blocks of fewer bytes (at most 4G; "
     "0: only below UCC_WIDE_MAX) go by Bruck's algorithm, ceil(log2 n) "
     "rounds of about n / 2 blocks, instead of the pairwise exchange's "
     "n - 1 steps (docs/scale.md)"},
    {"KNOMIAL_MAX", "16K", Scope::kContext,
     "On teams of UCC_WIDE_RANKS ranks or more, bcast and reduce vectors "
     "of fewer bytes (at most 4G; 0: never) go down and up a 4-nomial "
     "tree (knomial: depth log4 n, up to three sends per digit place) "
     "instead of the binomial or node-aware trees (docs/scale.md)"},
    {"ALLTOALL_HIER_MAX", "256K", Scope::kContext,
     "On teams with several ranks on some of several hosts, alltoall "
     "blocks of fewer bytes (at most 4G; 0: never) go by the node-aware "
     "exchange: the blocks for each host packed into one message to its "
     "rank of our place, then handed on within the host, instead of the "
     "pairwise exchange's n - 1 steps (docs/perf/hosts.md)"},
    {"ALLGATHER_HIER_MAX", "1M", Scope::kContext,
     "On teams of fewer than UCC_WIDE_RANKS ranks with several ranks on "
     "some of several hosts, allgather "
     "blocks of fewer bytes (at most 4G; 0: never) go by the node-aware "
     "packed exchange (our block to each host's rank of our place, then "
     "the hosts' blocks exchanged within the host) instead of the "
     "node-aware ring's n - 1 steps (docs/perf/hosts.md)"},
    {"ALLGATHER_HIER_BRUCK_MAX", "8K", Scope::kContext,
     "On teams of UCC_WIDE_RANKS ranks or more with several ranks on some "
     "of several hosts, allgather blocks of fewer bytes (at most 4G; 0: "
     "never) go by Bruck's algorithm among each place's ranks of the hosts, "
     "then the hosts' blocks exchanged within the host (hier_bruck), "
     "instead of flat Bruck's or the node-aware ring (docs/scale.md)"},
    {"WIDE_SCRATCH", "1M", Scope::kContext,
     "Engine memory for each running collective (UCC_TEAM_INFLIGHT) of "
     "teams of UCC_WIDE_RANKS ranks or more, taken at team creation and "
     "touched only by the algorithms that keep partial results in it: "
     "reduce_scatter by recursive halving runs where the team's whole "
     "vector fits (a multiple of 1K, at most 16M; 0: never)"},
    {"ALLREDUCE_RING_PER_RANK", "24K", Scope::kContext,
     "On teams of a power of two ranks, UCC_WIDE_RANKS or more, without "
     "several ranks on some of several hosts, allreduce runs "
     "Rabenseifner's algorithm from UCC_ALLREDUCE_RABENSEIFNER_MIN up to "
     "this many bytes per team rank before the ring, whose 2 (n - 1) "
     "steps are latency-bound below it (at most 4G; 0: the ring from "
     "UCC_ALLREDUCE_RING_MIN)"},
    {"ALLREDUCE_RING_PER_RANK_FOLD", "3K", Scope::kContext,
     "The same bound on such teams of other sizes, where Rabenseifner's "
     "algorithm folds the ranks beyond the power of two in and out, two "
     "more whole-vector transfers (at most 4G; 0: the ring from "
     "UCC_ALLREDUCE_RING_MIN)"},
    {"ALLREDUCE_RABENSEIFNER_MIN", "8K", Scope::kContext,
     "On the teams UCC_ALLREDUCE_RING_PER_RANK(_FOLD) names, allreduce "
     "vectors of at least this many bytes (at most 4G) go by "
     "Rabenseifner's algorithm (reduce-scatter by recursive halving, "
     "allgather by recursive doubling), smaller ones by recursive "
     "doubling; on hierarchical teams the hosts' leaders do the same "
     "below UCC_ALLREDUCE_RING_MIN (hier_rabenseifner)"},
    {"BARRIER_ALG", "auto", Scope::kContext,
     "Barrier algorithm: auto, dissemination, kdissemination, rd, hier, "
     "linear (kdissemination: of radix 4, the default on teams of "
     "UCC_WIDE_RANKS ranks or more; hier: node-aware, the default where a "
     "narrower team spans hosts and some host has several of its ranks; "
     "linear: fan-in to rank 0 and fan-out, see "
     "UCC_LINEAR_RANKS and UCC_HOST_CPUS)"},
    {"BCAST_ALG", "auto", Scope::kContext,
     "Bcast algorithm: auto, binomial, cma, hier, knomial, linear (cma: "
     "single copy, where UCC_CMA allows it; elsewhere the default; hier: "
     "node-aware; knomial: 4-nomial tree, see UCC_KNOMIAL_MAX; linear: flat "
     "tree, see UCC_LINEAR_RANKS)"},
    {"REDUCE_ALG", "auto", Scope::kContext,
     "Reduce algorithm: auto, binomial, hier, knomial, linear (hier: "
     "node-aware; knomial: 4-nomial tree, as for bcast; linear: flat tree, "
     "see UCC_LINEAR_RANKS)"},
    {"ALLREDUCE_ALG", "auto", Scope::kContext,
     "Allreduce algorithm: auto, rd (recursive doubling), knomial "
     "(recursive exchange of radix 4, the default below UCC_WIDE_MAX on "
     "wide teams without the node-aware shape), ring, hier, "
     "hier_ring (node-aware: leaders, or the ring host by host), "
     "rabenseifner (reduce-scatter by recursive halving, allgather by "
     "recursive doubling), hier_rabenseifner (node-aware, Rabenseifner's "
     "among 4 hosts' leaders or more)"},
    {"ALLGATHER_ALG", "auto", Scope::kContext,
     "Allgather algorithm: auto, ring, cma, hier, linear, bruck (cma: "
     "single copy, where UCC_CMA allows it; elsewhere the default; hier: "
     "node-aware ring; linear: to every rank at once; bruck: ceil(log2 n) "
     "rounds)"},
    {"ALLTOALL_ALG", "auto", Scope::kContext,
     "Alltoall algorithm: auto, pairwise, cma, linear, bruck (cma: single "
     "copy, where UCC_CMA allows it; elsewhere the default; linear: every "
     "block to its rank at once; bruck: Bruck's log2 n rounds, not in "
     "place, where the pairwise exchange runs)"},
    {"REDUCE_SCATTER_ALG", "auto", Scope::kContext,
     "Reduce-scatter algorithm: auto, ring, hier (node-aware: the "
     "node-aware allreduce up to 32 KiB vectors, then the ring host by "
     "host), "
     "linear (every rank sends each block to its rank at once), halving "
     "(recursive halving, where the vector fits UCC_WIDE_SCRATCH; "
     "elsewhere the choice without it)"},
    {"GATHER_ALG", "auto", Scope::kContext, "Gather algorithm: auto, linear"},
    {"GATHERV_ALG", "auto", Scope::kContext, "Gatherv algorithm: auto, linear"},
    {"SCATTER_ALG", "auto", Scope::kContext, "Scatter algorithm: auto, linear"},
    {"SCATTERV_ALG", "auto", Scope::kContext,
     "Scatterv algorithm: auto, linear"},
    {"ALLGATHERV_ALG", "auto", Scope::kContext,
     "Allgatherv algorithm: auto, pairwise, hier (node-aware ring), linear "
     "(to every rank at once)"},
    {"ALLTOALLV_ALG", "auto", Scope::kContext,
     "Alltoallv algorithm: auto, pairwise, linear (every block to its rank "
     "at once; auto: at every size where UCC_LINEAR_RANKS allows it, as "
     "each rank's counts are its own)"},
    {"REDUCE_SCATTERV_ALG", "auto", Scope::kContext,
     "Reduce-scatterv algorithm: auto, ring, hier (node-aware ring), "
     "linear (every rank sends each block to its rank at once)"},
    {"FANIN_ALG", "auto", Scope::kContext, "Fanin algorithm: auto, binomial"},
    {"FANOUT_ALG", "auto", Scope::kContext, "Fanout algorithm: auto, binomial"},
    // The standard names of UCC 1.x's library and context configuration
    // that runtimes set (Open MPI's coll/ucc, MPICH, PyTorch, UCC's own
    // perftest). Accepted, checked as UCC checks them, and documented in
    // docs/configuration.md: what each does here, or that it is ignored.
    {"CLS", "basic", Scope::kLib,
     "UCC's list of collective layers (basic, hier, all, ...): accepted and "
     "ignored; this library has one implementation of every collective"},
    {"ESTIMATED_NUM_EPS", "0", Scope::kContext,
     "UCC's hint of the job's size in eps: accepted and ignored (teams size "
     "their resources when they are created)"},
    {"ESTIMATED_NUM_PPN", "0", Scope::kContext,
     "UCC's hint of the eps per node: accepted and ignored (UCC_POLL_SPIN=auto "
     "counts each team's ranks on this host itself)"},
    {"NODE_LOCAL_ID", "0", Scope::kContext,
     "UCC's node-local rank hint: accepted and ignored (the host is told by "
     "UCC_HOST_ID or the kernel's boot id and hostname)"},
    {"LOCK_FREE_PROGRESS_Q", "0", Scope::kContext,
     "UCC's progress-queue option (0 or 1): accepted and ignored"},
    {"TEAM_IDS_POOL_SIZE", "32", Scope::kContext,
     "UCC's pool of internal team ids: accepted and ignored (teams need no "
     "id here)"},
    {"INTERNAL_OOB", "1", Scope::kContext,
     "UCC's internal OOB for team creation (0, 1 or 2): accepted and "
     "ignored; teams over an ep_map always use the context's mailbox"},
    {"THROTTLE_PROGRESS", "1000", Scope::kContext,
     "UCC's progress throttling: accepted and ignored (idle progress backs "
     "off by UCC_POLL_SPIN)"},
    {"COLL_TIMEOUT", "0", Scope::kContext,
     "A timeout for every collective that sets none itself "
     "(UCC_COLL_ARGS_FLAG_TIMEOUT): after it the collective ends with "
     "UCC_ERR_TIMED_OUT on this rank, so a peer that stopped (SIGSTOP, a "
     "debugger) or never posts cannot hold it forever (a number with ms or "
     "s; s if none); 0: none, as in UCC"},
    {"COLL_ERROR_TYPE", "ignore", Scope::kContext,
     "What a collective's error_type decides, a field without a mask bit "
     "that runtimes leave unset (PyTorch): ignore: not read, each member "
     "reports its own status, as in UCC; args: read, GLOBAL makes the "
     "members agree on the status (every member must pass the same value, "
     "like the root); global: every collective agrees"},
};

}  // namespace ucc::host

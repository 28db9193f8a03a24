// Stream sockets for the control protocol (offload/proto.h): unix
// sockets (emu) and TCP (the remote DPU, dpu mode): listen, connect, and
// whole framed messages, optionally carrying one file descriptor
// (SCM_RIGHTS, unix only). Reads wait at most a given time, so a peer that
// stops half-way through a message cannot stall the reader for good.
#pragma once

#include <cstddef>
#include <cstdint>

struct sockaddr_in;

namespace ucc::plat::sock {

// A listening socket bound to `path` (a stale socket file left by a dead
// daemon is replaced; a live one is not: -EADDRINUSE), readable and
// writable by its owner only whatever the umask, or by every user with
// `any_user` (set before listen(), so no client can connect while the
// mode is still the private one). Negative errno on failure.
int listen_at(const char* path, bool any_user = false);
// `name` in a directory only this user can use: $XDG_RUNTIME_DIR when set
// (it must be ours, mode 0700), else /tmp/ucc-<uid> (made 0700 if
// missing; refused, with a log line, when it is a link, someone else's,
// or open to others: another user squatting it could answer in our
// daemon's place). 0, or negative errno.
int private_socket_path(char* buf, size_t n, const char* name);
// A connected socket, or negative errno.
int connect_to(const char* path);

// TCP, for a daemon across a network (IPv4; `addr` is "host:port", host
// a dotted address or a name, port 1..65535).
// "host:port" into an IPv4 address (a name is resolved); false when it
// is not one.
bool parse_tcp(const char* addr, sockaddr_in* out);
// A listening socket on addr (host 0.0.0.0: every interface), non-blocking
// and close-on-exec; negative errno (-EINVAL: not host:port).
int tcp_listen(const char* addr);
// A connected socket within timeout_ms, or negative errno.
int tcp_connect(const char* addr, int timeout_ms);
// Low latency (no Nagle) and a bound on silence: a peer that vanishes
// (power, cable, a crashed kernel) fails the socket's calls within about
// timeout_ms (keepalive probes and TCP_USER_TIMEOUT), not hours later.
void tcp_tune(int s, uint32_t timeout_ms);

// Sends all of [hdr, hdr + hlen) and [body, body + blen) as one message;
// with fd >= 0, passes it along. false on error (the peer is gone).
bool send_all(int s, const void* hdr, size_t hlen, const void* body,
              size_t blen, int fd = -1);
// Receives exactly `len` bytes within timeout_ms (-1: no limit). A file
// descriptor that arrives with them goes to *fd (if fd != nullptr; else it
// is closed). Returns 1 on success, 0 when the peer closed the connection
// before the first byte, -1 on error or timeout.
int recv_all(int s, void* buf, size_t len, int timeout_ms, int* fd = nullptr);

// The process id of the peer of a connected unix socket, or -1.
int peer_pid(int s);
// The peer's process id and user id as the kernel recorded them when the
// connection was made (SO_PEERCRED); false when unknown.
bool peer_cred(int s, int* pid, int64_t* uid);

}  // namespace ucc::plat::sock

// One client's side of the control socket, as the daemon sees it: never
// blocking. Requests are assembled from whatever the socket has whenever
// it is readable, replies go out as far as the socket takes them and wait
// in a fixed buffer for the rest. A client that leaves a request
// half-sent, or its replies unread, for longer than the daemon's limit is
// dropped by the daemon (overdue()); one that queues more replies than
// the buffer holds is dropped at once (send() false). No client can make
// the daemon wait for it, whatever it sends or fails to read.
//
// Threads: the daemon's one thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "offload/proto.h"

namespace ucc::fw {

// One request: header, a descriptor passed with it (or -1; the handler
// owns it and must close it or keep it) and the body (h.len bytes, valid
// until the next read()).
struct Msg {
  off::proto::MsgHeader h{};
  int fd = -1;
  unsigned char* body = nullptr;
  bool fixed(size_t want) const { return h.len == want; }
};

class ClientIo {
 public:
  ClientIo() = default;
  ClientIo(const ClientIo&) = delete;
  ClientIo& operator=(const ClientIo&) = delete;
  ~ClientIo() { fini(); }

  void init(int fd);  // a connected, non-blocking socket; now ours
  void fini();        // closes the socket and what it held
  // Hands the socket over (nothing queued may be left: see wants_out())
  // and forgets it; -1 when there is none.
  int release();

  int fd() const { return fd_; }

  enum class In : uint8_t {
    kMessage,  // *m holds a whole request
    kMore,     // nothing complete yet: the socket has no more now
    kBroken,   // closed, an error, or framing no honest client sends
  };
  In read(Msg* m, uint64_t now_ms);

  // Queues one reply and sends what the socket takes now; false when it
  // does not fit what is still unread (the client must go).
  bool send(const void* hdr, size_t hlen, const void* body, size_t blen,
            uint64_t now_ms);
  // Sends queued bytes (the socket became writable); false on error.
  bool flush();
  bool wants_out() const { return olen_ != 0; }
  // A request half in, or replies unread, for more than limit_ms.
  bool overdue(uint64_t now_ms, uint64_t limit_ms) const;

 private:
  static constexpr size_t kSmall = 256;
  static constexpr size_t kOutCap = 64 * 1024;

  int fd_ = -1;
  // The request being read.
  off::proto::MsgHeader h_{};
  size_t hgot_ = 0, bgot_ = 0;
  unsigned char* body_ = nullptr;  // small_ or a heap block of h_.len
  alignas(8) unsigned char small_[kSmall];
  int pass_fd_ = -1;      // a descriptor that came with it
  uint64_t in_since_ = 0;  // its first byte
  // Replies not yet taken by the socket.
  unsigned char out_[kOutCap];
  size_t ohead_ = 0, olen_ = 0;
  uint64_t out_since_ = 0;

  void reset_in();
  ssize_t recv_some(void* buf, size_t len);
};

}  // namespace ucc::fw

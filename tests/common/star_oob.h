// StarOob: the built-in out-of-band allgather of forked test ranks.
//
// Words used below:
//   star     - rank 0 holds one unix stream socket to every other rank; the
//              other ranks hold one socket, to rank 0. The sockets are made
//              with socketpair() before fork.
//   message  - a 24-byte WireHeader {magic, seq, len} followed by len bytes.
//   sequence - allgathers are numbered 0, 1, 2, ... per process in the order
//              allgather() is called; every rank must start them in the same
//              order, and the n-th allgather of one rank matches the n-th of
//              every other rank (the header's seq checks that).
//
// One allgather: every rank r != 0 sends its contribution to rank 0; rank 0,
// once it holds all of them, sends the whole n * len result back to each
// rank. Several allgathers may be outstanding; each stream carries their
// messages in sequence order, so they never mix.
//
// Nothing blocks: allgather() only queues, and every req_test() moves as many
// bytes as the sockets take right now (MSG_DONTWAIT) on all outstanding
// allgathers, then reports on its own. A dead peer shows up as EOF or a
// socket error; from then on every request of this rank fails with
// UCC_ERR_NO_MESSAGE, and this rank shuts its sockets so that the failure
// reaches the other ranks too instead of leaving them waiting.
//
// Threads: one StarOob per process, used from one thread at a time.
#pragma once

#include <ucc/api/ucc.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace ucct {

class StarOob {
 public:
  // fds: on rank 0, fds[p] is the socket to rank p (fds[0] unused, -1); on
  // any other rank, fds[0] is the socket to rank 0. Takes ownership.
  StarOob(int rank, int size, std::vector<int> fds);
  ~StarOob();
  StarOob(const StarOob&) = delete;
  StarOob& operator=(const StarOob&) = delete;

  // The C table to plug into ucc_context_params_t / ucc_team_params_t
  // (coll_info points at this object; n_oob_eps = size, oob_ep = rank).
  ucc_oob_coll_t coll();

  // Starts allgather number `seq_`: copies len bytes of src now (src may be
  // reused at once); dst receives size * len bytes, rank i's at i * len,
  // when test() first returns UCC_OK. Returns UCC_OK and *req, or
  // UCC_ERR_NO_MESSAGE once the OOB has failed, UCC_ERR_INVALID_PARAM on
  // null arguments.
  ucc_status_t allgather(const void* src, void* dst, size_t len, void** req);
  // Progresses all outstanding allgathers. Returns UCC_INPROGRESS, UCC_OK
  // (dst is complete; stays OK on later calls) or UCC_ERR_NO_MESSAGE.
  ucc_status_t test(void* req);
  // Releases req. Allowed before completion: the transfer then finishes
  // into private memory (the other ranks still need it) and dst is left alone.
  ucc_status_t free(void* req);

  bool failed() const { return failed_; }

 private:
  struct WireHeader {
    uint32_t magic;
    uint32_t pad;
    uint64_t seq;
    uint64_t len;
  };
  static_assert(sizeof(WireHeader) == 24, "wire header is 24 bytes");

  struct Req {
    StarOob* owner = nullptr;  // the C callbacks get only the request
    uint64_t seq = 0;
    size_t len = 0;  // bytes per rank
    void* user_dst = nullptr;
    bool complete = false;  // all bytes moved
    bool done = false;      // complete and copied to user_dst: test() says OK
    bool freed = false;
    std::vector<char> result;  // size * len bytes, copied to user_dst when done
    std::vector<char> contrib;  // non-root: our len bytes to send
    // Non-root: bytes of our message sent / of rank 0's message received.
    size_t sent = 0;
    size_t recvd = 0;
    WireHeader hdr_in{};
    // Rank 0, per peer: bytes received from it / sent to it.
    std::vector<size_t> peer_recvd;
    std::vector<size_t> peer_sent;
    std::vector<WireHeader> peer_hdr;
    int gathered = 0;  // peers whose contribution is complete
  };

  // Result of moving bytes of one message.
  enum class Io { kDone, kWouldBlock, kError };

  Io send_message(int fd, uint64_t seq, const char* payload, size_t len,
                  size_t* off);
  Io recv_message(int fd, int from, uint64_t seq, WireHeader* hdr,
                  char* payload, size_t len, size_t* off);
  void progress();
  bool progress_root();
  bool progress_leaf();
  void retire_done();
  void fail(const char* what, int peer);

  static ucc_status_t c_allgather(void* src, void* dst, size_t len, void* info,
                                  void** req);
  static ucc_status_t c_req_test(void* req);
  static ucc_status_t c_req_free(void* req);

  int rank_;
  int size_;
  std::vector<int> fds_;
  uint64_t next_seq_ = 0;
  bool failed_ = false;
  std::deque<Req*> active_;  // unfinished requests, in sequence order
};

}  // namespace ucct

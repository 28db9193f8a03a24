// OobStar: a non-blocking out-of-band allgather (ucc_oob_coll_t) over
// connected stream sockets in a star: rank 0 holds one socket to every
// other rank, each other rank one socket to rank 0. The TCP rendezvous of
// ucc_ext.h (host/boot/oob_tcp.cc) makes the sockets; the test harness makes
// them with socketpair() before fork.
//
// Words used below:
//   message   a 24-byte header {magic, seq, len} and len bytes.
//   sequence  allgathers are numbered 0, 1, 2, ... in the order a rank
//             calls allgather(); the n-th of one rank matches the n-th of
//             every other (the header's seq and len must agree).
//
// One allgather: every rank but 0 sends its contribution to rank 0; rank
// 0, once it holds all of them, sends the whole size * len result to each.
// Several may be outstanding; each socket carries their messages in
// sequence order. Nothing blocks: allgather() queues and every test()
// moves what the sockets take now on all outstanding allgathers. A peer
// that closes, a socket error or a header that does not match fails the
// OOB: from then on every request fails with UCC_ERR_NO_MESSAGE, and the
// sockets are shut so that the other ranks see it too.
//
// Memory: each allgather allocates its result (bootstrap only: contexts
// and teams being made). Threads: one at a time.
#pragma once

#include <ucc/api/ucc.h>

#include <cstddef>
#include <cstdint>

namespace ucc::host {

class OobStar {
 public:
  // fds: on rank 0, fds[p] is the socket to rank p (fds[0] unused); on
  // another rank fds[0] is the socket to rank 0. Takes the sockets (and
  // closes them, also when create fails). nullptr: no memory.
  static OobStar* create(uint32_t rank, uint32_t size, const int* fds);
  ~OobStar();
  OobStar(const OobStar&) = delete;
  OobStar& operator=(const OobStar&) = delete;

  // The table for ucc_context_params_t / ucc_team_params_t (coll_info
  // points at this object).
  ucc_oob_coll_t coll();
  // The OobStar behind a table coll() made, or nullptr.
  static OobStar* from(const ucc_oob_coll_t& c);

  // Starts the next allgather: copies len bytes of src now; dst receives
  // size * len bytes, rank i's at i * len, when test() first says UCC_OK.
  // UCC_ERR_NO_MESSAGE once the OOB has failed; UCC_ERR_INVALID_PARAM,
  // UCC_ERR_NO_MEMORY.
  ucc_status_t allgather(const void* src, void* dst, size_t len, void** req);
  // UCC_INPROGRESS, UCC_OK (dst complete) or UCC_ERR_NO_MESSAGE.
  ucc_status_t test(void* req);
  // Releases req, also before it completes: the transfer then finishes
  // into its own memory (the other ranks need it) and dst is left alone.
  ucc_status_t free(void* req);

  bool failed() const { return failed_; }

 private:
  struct Req;
  enum class Io { kDone, kWouldBlock, kError };

  OobStar() = default;
  Io send_message(int fd, uint32_t peer, uint64_t seq, const char* payload,
                  size_t len, size_t* off);
  Io recv_message(int fd, uint32_t peer, uint64_t seq, char* hdr, char* payload,
                  size_t len, size_t* off);
  void progress();
  bool progress_root();
  bool progress_leaf();
  void retire_done();
  void fail(const char* what, uint32_t peer);

  static ucc_status_t c_allgather(void* src, void* dst, size_t len, void* info,
                                  void** req);
  static ucc_status_t c_req_test(void* req);
  static ucc_status_t c_req_free(void* req);

  uint32_t rank_ = 0;
  uint32_t size_ = 0;
  int* fds_ = nullptr;
  uint64_t next_seq_ = 0;
  bool failed_ = false;
  Req* head_ = nullptr;  // unfinished requests, in sequence order
  Req* tail_ = nullptr;
};

}  // namespace ucc::host

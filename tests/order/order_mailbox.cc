// The context mailbox (host/boot/mailbox.h) between two eps of one
// process, each on a thread of its own: ep 1 leaves numbered messages
// for ep 0's open request, ep 0 takes them (in any order: the writer
// fills whichever cell is empty) and checks every byte of each, and that
// each number comes once (pairs kMboxHandoff and kMboxReuse: a cell's
// message before its full state, the owner's reads before its empty
// state).
//
// The segments are this file's (it stands in for platform/os/segment.cc):
// a peer's "mapping" is the owner's own, so that both threads touch a
// cell at the same address, which is what ThreadSanitizer tracks (a
// second mapping of the memfd, as the library makes, would hide every
// race from it).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "host/boot/mailbox.h"
#include "platform/os/segment.h"
#include "tests/order/order_check.h"

namespace ucc::plat {

namespace {
struct Made {
  int fd;
  void* mem;
};
Made g_made[4];
int g_nmade;
}  // namespace

Status seg_create(const char*, size_t bytes, int* fd, void** mem) {
  *fd = memfd_create("order-mailbox", MFD_CLOEXEC);
  if (*fd < 0 || ftruncate(*fd, static_cast<off_t>(bytes)) != 0 || g_nmade == 4)
    return Status::kNoMemory;
  *mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
  if (*mem == MAP_FAILED) return Status::kNoMemory;
  g_made[g_nmade++] = Made{*fd, *mem};
  return Status::kOk;
}

Status seg_open_peer(int pid, int peer_fd, size_t, int64_t, const char*,
                     void** mem) {
  for (int i = 0; i < g_nmade && pid == getpid(); ++i)
    if (g_made[i].fd == peer_fd) {
      *mem = g_made[i].mem;
      return Status::kOk;
    }
  return Status::kError;
}

}  // namespace ucc::plat

namespace {

constexpr uint32_t kN = 20000;
constexpr uint32_t kTag = 7;

// Message i: its number, then bytes derived from it.
uint32_t fill(uint32_t i, unsigned char* p) {
  const uint32_t len = 8 + i % (ucc::host::kMboxPayload - 8);
  std::memcpy(p, &i, 4);
  for (uint32_t k = 4; k < len; ++k)
    p[k] = static_cast<unsigned char>(i * 31 + k);
  return len;
}

}  // namespace

int main() {
  using ucc::host::Mailbox;
  using ucc::host::MailboxAddr;
  Mailbox ep[2];
  MailboxAddr addr[2];
  for (uint32_t e = 0; e < 2; ++e)
    if (ep[e].open(2, e, &addr[e]) != ucc::base::Status::kOk)
      ucct_order::fail("open", e);
  for (uint32_t e = 0; e < 2; ++e)
    if (ep[e].attach(addr) != ucc::base::Status::kOk)
      ucct_order::fail("attach", e);
  const ucc::host::MboxKey key{42, 43};
  uint32_t slot = 0;
  uint64_t nonce = 0;
  if (ep[0].request_open(key, &slot, &nonce) != ucc::base::Status::kOk)
    ucct_order::fail("request_open", 0);
  std::thread writer([&] {
    ucct_order::Spin spin;
    uint64_t n = 0;
    while ((n = ep[1].request_find(0, key, 1)) == 0) spin.pause();
    unsigned char msg[ucc::host::kMboxPayload];
    for (uint32_t i = 0; i < kN; ++i) {
      const uint32_t len = fill(i, msg);
      while (ep[1].send(0, n, kTag, msg, len) != ucc::base::Status::kOk)
        spin.pause();
    }
  });
  std::vector<bool> seen(kN);
  unsigned char got[ucc::host::kMboxPayload], want[ucc::host::kMboxPayload];
  ucct_order::Spin spin;
  for (uint32_t taken = 0; taken < kN; ++taken) {
    uint32_t len = 0;
    while (!ep[0].recv(1, nonce, kTag, got, &len)) spin.pause();
    uint32_t i = 0;
    std::memcpy(&i, got, 4);
    if (i >= kN || seen[i])
      ucct_order::fail("a number twice or out of range", i);
    seen[i] = true;
    if (len != fill(i, want) || std::memcmp(got, want, len) != 0)
      ucct_order::fail("a message read before it was written", i);
  }
  writer.join();
  ep[0].request_close(slot);
  return 0;
}

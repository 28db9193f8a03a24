// Fuzz target for the host's end of dpu mode's TCP fallback
// (platform/mem/tcp_mem.h: TcpMemServer, the thread that answers the
// engine's memory requests): everything a hostile or broken engine can
// send on that connection. Standalone driver, deterministic:
//
//   fuzz_tcp_mem_driver [-n INPUTS] [-t SECONDS] [-s SEED] [-o CRASH_FILE]
//   fuzz_tcp_mem_driver FILE...            replay inputs (e.g. a crash)
//
// Each input is a program run against a fresh server on a socket pair:
// requests with a correct tag (reads and writes of any address, key and
// length: inside the one registered window, across its edges, or
// anywhere), requests with a flipped tag, replays, and raw bytes. The
// host's memory is an arena between inaccessible guard pages with one
// window of it registered.
//
// Properties checked (a violation aborts, and the input is saved):
//   - no crash, no access outside the arena (guard pages; ASan build);
//   - bytes of the arena outside the window never change;
//   - a valid request is answered with a valid tag, a read inside the
//     window with exactly the window's bytes, anything outside it with
//     EFAULT, and a write inside it lands exactly;
//   - after anything invalid the server closes the connection (within
//     2 s), and no descriptor is left behind.
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "platform/mem/tcp_mem.h"
#include "platform/os/crypto.h"
#include "platform/os/log.h"
#include "platform/os/sock.h"
#include "tests/fuzz/fuzz_program.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using ucc::plat::kTcpMemMagic;
using ucc::plat::kTcpMemTagBytes;
using ucc::plat::TcpMemFrame;
using ucc::plat::TcpMemServer;

constexpr uint8_t kKey[32] = {7, 7, 7, 1, 2, 3};
constexpr size_t kArena = 64 * 1024, kWin = 40000, kWinOff = 8192;

[[noreturn]] void violated(const char* what) {
  fprintf(stderr, "fuzz_tcp_mem: property violated: %s\n", what);
  abort();
}

struct Arena {
  uint8_t* base = nullptr;  // kArena bytes between guard pages
  long pg = sysconf(_SC_PAGESIZE);
  Arena() {
    auto* m = static_cast<uint8_t*>(mmap(nullptr, kArena + 2 * pg, PROT_NONE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (m == MAP_FAILED) violated("no memory");
    base = m + pg;
    mprotect(base, kArena, PROT_READ | PROT_WRITE);
  }
  uint8_t* win() const { return base + kWinOff; }
};

uint64_t g_inputs = 0, g_answered = 0, g_refused = 0, g_closed = 0;

bool recv_answer(int s, const TcpMemFrame& q, std::vector<uint8_t>* data,
                 int32_t* status) {
  TcpMemFrame a;
  if (ucc::plat::sock::recv_all(s, &a, sizeof(a), 2000) != 1) return false;
  if (a.magic != kTcpMemMagic || a.from != 'H' ||
      a.op != ucc::plat::kTcpMemAnswer || a.seq != q.seq ||
      a.len > ucc::plat::kTcpMemMaxOp)
    violated("a malformed answer");
  std::vector<uint8_t> b(sizeof(a) + a.len + kTcpMemTagBytes);
  memcpy(b.data(), &a, sizeof(a));
  if (ucc::plat::sock::recv_all(s, b.data() + sizeof(a),
                                a.len + kTcpMemTagBytes, 2000) != 1)
    violated("an answer cut short");
  uint8_t full[32];
  ucc::plat::mac(kKey, 32, b.data(), sizeof(a) + a.len, full);
  if (memcmp(full, b.data() + sizeof(a) + a.len, kTcpMemTagBytes) != 0)
    violated("an answer without the session's tag");
  data->assign(b.begin() + sizeof(a), b.begin() + sizeof(a) + a.len);
  *status = a.status;
  return true;
}

int one(const uint8_t* data, size_t size) {
  static Arena arena;
  ++g_inputs;
  for (size_t i = 0; i < kArena; ++i)
    arena.base[i] = static_cast<uint8_t>(i * 31 + 7);
  const int fd0 = ucc::fuzz::lowest_free_fd();
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    violated("no socket pair");
  std::vector<uint8_t> outside(arena.base, arena.base + kArena);
  {
    TcpMemServer srv;
    std::vector<uint64_t> stable(8);
    uint32_t rkey = 0, slot = 0;
    if (srv.open(4, reinterpret_cast<uintptr_t>(stable.data()), 64) !=
            ucc::base::Status::kOk ||
        srv.reg(reinterpret_cast<uintptr_t>(arena.win()), kWin, &rkey, &slot) !=
            ucc::base::Status::kOk ||
        srv.start(sv[0], kKey, 2000) != ucc::base::Status::kOk)
      violated("the server does not start");
    ucc::fuzz::Input in{data, size};
    uint64_t seq = 0;
    bool invalid = false;
    std::vector<uint8_t> last;
    while (!in.empty() && !invalid) {
      const uint8_t op = in.u8() % 5;
      if (op == 4) {  // raw bytes
        std::vector<uint8_t> raw(1 + in.u8() % 64);
        in.bytes(raw.data(), raw.size());
        ucc::plat::sock::send_all(sv[1], raw.data(), raw.size(), nullptr, 0);
        shutdown(sv[1], SHUT_WR);  // and nothing more (a half frame ends)
        invalid = true;            // cannot be tagged
        break;
      }
      // A request: where, how long, under which key.
      TcpMemFrame f{
          kTcpMemMagic,
          'E',
          static_cast<uint8_t>(in.u8() % 2 == 0 ? ucc::plat::kTcpMemRead
                                                : ucc::plat::kTcpMemWrite),
          0,
          0,
          0,
          ++seq,
          0,
          rkey,
          0};
      const uint8_t where = in.u8() % 4;
      const int64_t off = static_cast<int16_t>(in.u16());
      f.addr = where == 3
                   ? in.u64()
                   : reinterpret_cast<uintptr_t>(arena.win()) +
                         static_cast<uint64_t>(
                             where == 0 ? off & 0x7fff
                                        : (where == 1 ? off : kWin + off));
      f.count = in.u16() % 9000;
      if (in.u8() % 8 == 0) f.rkey = in.u32();
      if (f.op == ucc::plat::kTcpMemWrite) f.len = f.count;
      std::vector<uint8_t> b(sizeof(f) + f.len + kTcpMemTagBytes);
      memcpy(b.data(), &f, sizeof(f));
      for (size_t i = 0; i < f.len; ++i)
        b[sizeof(f) + i] = static_cast<uint8_t>(seq + i * 3);
      uint8_t full[32];
      ucc::plat::mac(kKey, 32, b.data(), sizeof(f) + f.len, full);
      memcpy(b.data() + sizeof(f) + f.len, full, kTcpMemTagBytes);
      if (op == 2) {  // a forged tag
        b[b.size() - 1 - in.u8() % kTcpMemTagBytes] ^= 1 + in.u8() % 255;
        invalid = true;
      } else if (op == 3 && !last.empty()) {  // the previous one again
        b = last;
        invalid = true;
      }
      last = b;
      ucc::plat::sock::send_all(sv[1], b.data(), b.size(), nullptr, 0);
      if (invalid) break;
      std::vector<uint8_t> got;
      int32_t st = 0;
      if (!recv_answer(sv[1], f, &got, &st))
        violated("a valid request unanswered");
      ++g_answered;
      const uint64_t lo = reinterpret_cast<uintptr_t>(arena.win());
      const bool inside = f.rkey == rkey && f.addr >= lo &&
                          f.addr + f.count >= f.addr &&
                          f.addr + f.count <= lo + kWin;
      if (inside != (st == 0)) violated("a range judged wrongly");
      if (st != 0) {
        ++g_refused;
        continue;
      }
      uint8_t* at = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(f.addr));
      if (f.op == ucc::plat::kTcpMemRead) {
        if (got.size() != f.count || memcmp(got.data(), at, f.count) != 0)
          violated("a read returned other bytes");
      } else {
        if (memcmp(at, b.data() + sizeof(f), f.count) != 0)
          violated("a write did not land");
        memcpy(outside.data() + (at - arena.base), at, f.count);
      }
    }
    if (invalid) {
      uint8_t c;
      // Whatever answers it still owed, then the end of the connection.
      const auto t0 = std::chrono::steady_clock::now();
      int r;
      while ((r = ucc::plat::sock::recv_all(sv[1], &c, 1, 2000)) == 1 &&
             std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2)) {
      }
      if (r != 0)
        violated("the server kept a connection that broke the protocol");
      ++g_closed;
    }
    close(sv[1]);
  }  // the server stops its thread and closes its end
  if (memcmp(outside.data(), arena.base, kArena) != 0)
    violated("bytes outside what was written changed");
  if (ucc::fuzz::lowest_free_fd() != fd0) violated("a descriptor was left");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t inputs = 5000, seed = 1;
  double seconds = 0;
  const char* crash_file = "fuzz_tcp_mem_crash.bin";
  std::vector<const char*> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool v = i + 1 < argc;
    if (a == "-n" && v) {
      inputs = strtoull(argv[++i], nullptr, 10);
    } else if (a == "-t" && v) {
      seconds = strtod(argv[++i], nullptr);
    } else if (a == "-s" && v) {
      seed = strtoull(argv[++i], nullptr, 10);
    } else if (a == "-o" && v) {
      crash_file = argv[++i];
    } else if (a[0] == '-') {
      fprintf(stderr,
              "usage: fuzz_tcp_mem_driver [-n N] [-t S] [-s SEED] [-o FILE] | "
              "FILE...\n");
      return 2;
    } else {
      files.push_back(argv[i]);
    }
  }
  if (!ucc::plat::crypto_available()) {
    printf("SKIP: needs libcrypto (libssl3)\n");
    return 77;
  }
  ucc::plat::log_set_level(ucc::plat::LogLevel::kOff);  // each refusal logs
  ucc::fuzz::install_crash_saver(crash_file);
  for (const char* path : files) {
    std::vector<uint8_t> in;
    if (!ucc::fuzz::read_file(path, &in)) return 1;
    ucc::fuzz::set_current(in.data(), in.size());
    one(in.data(), in.size());
  }
  if (!files.empty()) return 0;
  ucc::fuzz::Rng r{seed * 2654435761u + 1};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<uint8_t> in;
  uint64_t done = 0;
  for (; done < inputs; ++done) {
    if (seconds > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                .count() > seconds)
      break;
    in.resize(8 + r.below(400));
    for (auto& b : in) b = static_cast<uint8_t>(r.next());
    // Most requests honest, so programs go on past their first one.
    for (size_t i = 0; i < in.size(); i += 24)
      if (r.below(4) != 0) in[i] = static_cast<uint8_t>(r.below(2));
    ucc::fuzz::set_current(in.data(), in.size());
    one(in.data(), in.size());
  }
  printf(
      "fuzz_tcp_mem: seed %llu, %llu inputs: %llu requests answered (%llu "
      "refused), %llu connections closed for a broken protocol\n",
      static_cast<unsigned long long>(seed),
      static_cast<unsigned long long>(done),
      static_cast<unsigned long long>(g_answered),
      static_cast<unsigned long long>(g_refused),
      static_cast<unsigned long long>(g_closed));
  return 0;
}

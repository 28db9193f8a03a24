// The TCP rendezvous of ucc_ext.h (host/boot/oob_tcp.cc) and the star
// allgather behind it (host/boot/oob_star.cc), eps as threads of one process
// on loopback: results byte by byte over many rounds, several
// allgathers outstanding, zero-length ones; strangers, a wrong key and a
// taken ep refused without harm to the job; a missing ep times out;
// an ep that goes away fails the others' allgathers instead of hanging
// them.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <ucc/api/ucc.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "platform/os/clock.h"
#include "tests/unit/free_port.h"

namespace {

std::string free_server() {
  return "127.0.0.1:" + std::to_string(ucct::free_loopback_port());
}

// (server must outlive the parameters)
ucc_ext_oob_tcp_params_t params(const std::string& server, uint32_t n,
                                uint32_t ep, uint64_t key = 7,
                                double timeout = 10) {
  ucc_ext_oob_tcp_params_t p{};
  p.server = server.c_str();
  p.n_oob_eps = n;
  p.oob_ep = ep;
  p.key = key;
  p.timeout = timeout;
  return p;
}

ucc_status_t wait(ucc_oob_coll_t& o, void* req, double secs = 10) {
  const uint64_t end =
      ucc::plat::now_ns() + static_cast<uint64_t>(secs * 1e9);
  ucc_status_t st;
  while ((st = o.req_test(req)) == UCC_INPROGRESS) {
    if (ucc::plat::now_ns() > end) return UCC_ERR_TIMED_OUT;
    std::this_thread::yield();
  }
  return st;
}

uint8_t byte_of(uint32_t round, uint32_t ep, size_t i) {
  return static_cast<uint8_t>(round * 37 + ep * 11 + i * 3 + (i >> 9));
}

TEST(OobTcp, AllgathersArriveWholeInOrder) {
  const uint32_t n = 5;
  const std::string server = free_server();
  std::atomic<int> bad{0};
  std::vector<std::thread> t;
  for (uint32_t ep = 0; ep < n; ++ep) {
    t.emplace_back([&, ep] {
      ucc_oob_coll_t o{};
      auto p = params(server, n, ep);
      if (ucc_ext_oob_tcp_create(&p, &o) != UCC_OK) {
        ++bad;
        return;
      }
      EXPECT_EQ(o.n_oob_eps, n);
      EXPECT_EQ(o.oob_ep, ep);
      // Rounds of 0 B to 300 KB; three outstanding at a time.
      const size_t sizes[] = {0, 1, 24, 4096, 300000, 13};
      for (uint32_t round = 0; round < 6; round += 3) {
        std::vector<std::vector<uint8_t>> src(3), dst(3);
        void* req[3];
        for (uint32_t k = 0; k < 3; ++k) {
          const size_t len = sizes[round + k];
          src[k].resize(len + 1);
          for (size_t i = 0; i < len; ++i) src[k][i] = byte_of(round + k, ep, i);
          dst[k].assign(len * n + 1, 0xA5);
          ASSERT_EQ(o.allgather(src[k].data(), dst[k].data(), len, o.coll_info,
                                &req[k]),
                    UCC_OK);
          src[k].assign(len + 1, 0);  // copied at the call
        }
        for (uint32_t k = 0; k < 3; ++k) {
          ASSERT_EQ(wait(o, req[k]), UCC_OK);
          o.req_free(req[k]);
          const size_t len = sizes[round + k];
          for (uint32_t e = 0; e < n; ++e)
            for (size_t i = 0; i < len; ++i)
              if (dst[k][e * len + i] != byte_of(round + k, e, i)) ++bad;
          EXPECT_EQ(dst[k][len * n], 0xA5);  // nothing past the end
        }
      }
      EXPECT_EQ(ucc_ext_oob_tcp_destroy(&o), UCC_OK);
    });
  }
  for (auto& x : t) x.join();
  EXPECT_EQ(bad.load(), 0);
}

// A stranger that connects and says nothing or junk, an ep with the
// wrong key and a second ep 1 are refused; the real job forms anyway.
TEST(OobTcp, StrangersAreRefusedTheJobForms) {
  const std::string server = free_server();
  std::atomic<int> real_done{0};
  std::thread root([&] {
    ucc_oob_coll_t o{};
    auto p = params(server, 2, 0);
    ASSERT_EQ(ucc_ext_oob_tcp_create(&p, &o), UCC_OK);
    uint32_t v = 100, all[2] = {0, 0};
    void* req = nullptr;
    ASSERT_EQ(o.allgather(&v, all, sizeof(v), o.coll_info, &req), UCC_OK);
    EXPECT_EQ(wait(o, req), UCC_OK);
    o.req_free(req);
    EXPECT_EQ(all[0], 100u);
    EXPECT_EQ(all[1], 101u);
    ucc_ext_oob_tcp_destroy(&o);
    ++real_done;
  });
  usleep(100000);
  // Silent and junk connections.
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(server.substr(10))));
  const int silent = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(silent, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const int junk = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(junk, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const char garbage[64] = "GET / HTTP/1.0\r\n\r\n";
  send(junk, garbage, sizeof(garbage), MSG_NOSIGNAL);
  // The wrong key.
  {
    ucc_oob_coll_t o{};
    auto p = params(server, 2, 1, /*key=*/8, 2);
    EXPECT_EQ(ucc_ext_oob_tcp_create(&p, &o), UCC_ERR_NO_MESSAGE);
  }
  // The real ep 1, then a second ep 1 (the job is formed: nobody listens).
  {
    ucc_oob_coll_t o{};
    auto p = params(server, 2, 1);
    ASSERT_EQ(ucc_ext_oob_tcp_create(&p, &o), UCC_OK);
    uint32_t v = 101, all[2] = {0, 0};
    void* req = nullptr;
    ASSERT_EQ(o.allgather(&v, all, sizeof(v), o.coll_info, &req), UCC_OK);
    EXPECT_EQ(wait(o, req), UCC_OK);
    o.req_free(req);
    EXPECT_EQ(all[0], 100u);
    ucc_ext_oob_tcp_destroy(&o);
  }
  root.join();
  EXPECT_EQ(real_done.load(), 1);
  close(silent);
  close(junk);
}

TEST(OobTcp, MissingEpTimesOut) {
  const std::string server = free_server();
  std::thread leaf([&] {
    ucc_oob_coll_t o{};
    auto p = params(server, 3, 1, 7, 0.5);
    EXPECT_EQ(ucc_ext_oob_tcp_create(&p, &o), UCC_ERR_TIMED_OUT);
  });
  ucc_oob_coll_t o{};
  auto p = params(server, 3, 0, 7, 0.5);
  const uint64_t t0 = ucc::plat::now_ns();
  EXPECT_EQ(ucc_ext_oob_tcp_create(&p, &o), UCC_ERR_TIMED_OUT);
  EXPECT_LT(ucc::plat::now_ns() - t0, 3000000000ull);
  leaf.join();
}

TEST(OobTcp, EpThatLeavesFailsTheOthers) {
  const std::string server = free_server();
  std::thread leaf([&] {
    ucc_oob_coll_t o{};
    auto p = params(server, 3, 2);
    ASSERT_EQ(ucc_ext_oob_tcp_create(&p, &o), UCC_OK);
    ucc_ext_oob_tcp_destroy(&o);  // gone before the first allgather
  });
  std::thread other([&] {
    ucc_oob_coll_t o{};
    auto p = params(server, 3, 1);
    ASSERT_EQ(ucc_ext_oob_tcp_create(&p, &o), UCC_OK);
    uint64_t v = 1, all[3];
    void* req = nullptr;
    ASSERT_EQ(o.allgather(&v, all, sizeof(v), o.coll_info, &req), UCC_OK);
    EXPECT_EQ(wait(o, req), UCC_ERR_NO_MESSAGE);
    o.req_free(req);
    ucc_ext_oob_tcp_destroy(&o);
  });
  ucc_oob_coll_t o{};
  auto p = params(server, 3, 0);
  ASSERT_EQ(ucc_ext_oob_tcp_create(&p, &o), UCC_OK);
  uint64_t v = 0, all[3];
  void* req = nullptr;
  ASSERT_EQ(o.allgather(&v, all, sizeof(v), o.coll_info, &req), UCC_OK);
  EXPECT_EQ(wait(o, req), UCC_ERR_NO_MESSAGE);
  o.req_free(req);
  ucc_ext_oob_tcp_destroy(&o);
  leaf.join();
  other.join();
}

TEST(OobTcp, BadParameters) {
  ucc_oob_coll_t o{};
  for (const std::string s :
       {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:70000",
        ":5000", "no.such.host.invalid:5000", "127.0.0.1:12x"}) {
    auto p = params(s, 2, 0);
    EXPECT_EQ(ucc_ext_oob_tcp_create(&p, &o), UCC_ERR_INVALID_PARAM) << s;
  }
  const std::string any = "127.0.0.1:5000";
  auto p = params(any, 2, 2);
  EXPECT_EQ(ucc_ext_oob_tcp_create(&p, &o), UCC_ERR_INVALID_PARAM);
  EXPECT_EQ(ucc_ext_oob_tcp_create(nullptr, &o), UCC_ERR_INVALID_PARAM);
  EXPECT_EQ(ucc_ext_oob_tcp_destroy(&o), UCC_ERR_INVALID_PARAM);
  // One ep alone: no sockets, its own allgather.
  auto one = params(any, 1, 0);
  ASSERT_EQ(ucc_ext_oob_tcp_create(&one, &o), UCC_OK);
  uint32_t v = 42, r = 0;
  void* req = nullptr;
  ASSERT_EQ(o.allgather(&v, &r, sizeof(v), o.coll_info, &req), UCC_OK);
  EXPECT_EQ(wait(o, req), UCC_OK);
  EXPECT_EQ(r, 42u);
  o.req_free(req);
  EXPECT_EQ(ucc_ext_oob_tcp_destroy(&o), UCC_OK);
}

}  // namespace

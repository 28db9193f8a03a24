// Engines (one TcpNet each) on loopback in one process, a team over
// them, and an exchange that checks every message (test_tcp.cc,
// test_tcp_auth.cc).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "platform/os/clock.h"
#include "platform/tcp/tcp_fabric.h"
#include "platform/tcp/tcp_net.h"
#include "tests/unit/fabric_exchange.h"

namespace ucct {

using ucc::base::Status;
namespace plat = ucc::plat;
namespace tcp = ucc::plat::tcp;

inline plat::TcpConfig quick() {
  plat::TcpConfig c;
  c.iface = "127.0.0.1";
  c.peer_timeout_ms = 2000;
  c.keepalive_ms = 100;
  c.spin = 1000000;  // never wait: several engines share this thread
  return c;
}

struct Engines {
  std::vector<std::unique_ptr<tcp::TcpNet>> nets;
  Engines(uint32_t n, const plat::TcpConfig& cfg) {
    for (uint32_t i = 0; i < n; ++i) {
      nets.push_back(std::make_unique<tcp::TcpNet>());
      plat::TcpConfig c = cfg;
      c.fault_seed = cfg.fault_seed + i;
      EXPECT_EQ(nets[i]->init(c), Status::kOk);
    }
  }
  void progress() {
    for (auto& n : nets) n->progress();
  }
  // Progress until no engine has a closed endpoint waiting for answers to
  // its goodbyes; false when that takes `secs`.
  bool settle(double secs) {
    const uint64_t end = plat::now_ns() + static_cast<uint64_t>(secs * 1e9);
    for (;;) {
      uint32_t n = 0;
      for (auto& net : nets) n += net != nullptr ? net->lingering() : 0;
      if (n == 0) return true;
      if (plat::now_ns() > end) return false;
      for (auto& net : nets)
        if (net != nullptr) net->progress();
    }
  }
  // Engines are processes of their own: they close at once, each
  // waiting for the others to read its last bytes.
  ~Engines() {
    std::vector<std::thread> t;
    for (auto& n : nets) t.emplace_back([&n] { n.reset(); });
    for (auto& x : t) x.join();
  }
};

// A team of `ranks` ranks, rank r in engine r mod n, every rank reaching
// the ranks of other engines over TCP (ranks of one engine would share a
// host, hence memory). `rma`: the members' memory may be registered
// for one-sided operations (FabricConfig::rma).
struct Team {
  Engines* e = nullptr;
  std::vector<plat::Fabric*> fab;
  std::vector<plat::FabricAddr> addrs;
  bool open(Engines& en, uint32_t ranks, uint32_t slot, uint32_t nslots,
            bool rma = false) {
    e = &en;
    addrs.resize(ranks);
    const uint32_t n = static_cast<uint32_t>(en.nets.size());
    for (uint32_t r = 0; r < ranks; ++r) {
      fab.push_back(en.nets[r % n]->open(
          plat::FabricConfig{ranks, r, slot, nslots, rma}, &addrs[r]));
      if (fab[r] == nullptr) return false;
    }
    for (uint32_t r = 0; r < ranks; ++r) {
      std::vector<char> mine(ranks, 0);
      for (uint32_t q = 0; q < ranks; ++q) mine[q] = q % n != r % n;
      if (fab[r]->connect(addrs.data(), reinterpret_cast<const bool*>(
                                            mine.data())) != Status::kOk)
        return false;
    }
    return true;
  }
  void close(uint32_t r, bool lost) {
    e->nets[r % e->nets.size()]->close(fab[r], lost);
    fab[r] = nullptr;
  }
  ~Team() {
    for (uint32_t r = 0; r < fab.size(); ++r)
      if (fab[r] != nullptr) close(r, false);
    if (e != nullptr) EXPECT_TRUE(e->settle(10));
  }
};

// Runs `progress` until done() or `secs` pass: the seconds it took.
inline double until(const std::function<bool()>& done,
                    const std::function<void()>& progress, double secs) {
  const uint64_t t0 = plat::now_ns();
  const uint64_t end = t0 + static_cast<uint64_t>(secs * 1e9);
  while (!done() && plat::now_ns() < end) progress();
  return static_cast<double>(plat::now_ns() - t0) * 1e-9;
}

// Every rank sends `msgs` messages to every rank of another engine.
inline bool exchange(Engines& e, Team& t, uint32_t msgs, uint32_t slot,
                     double secs) {
  const uint32_t ne = static_cast<uint32_t>(e.nets.size());
  return ucct::exchange_messages(
      [&e] { e.progress(); }, t.fab,
      [ne](uint32_t s, uint32_t d) { return s % ne != d % ne; }, msgs, slot,
      secs);
}

// One message s -> d (its bytes from msg_byte) once a slot is free;
// false after 5 s.
inline bool send_one(Engines& e, Team& t, uint32_t s, uint32_t d, uint32_t m) {
  void* p = nullptr;
  ucct::until([&] { return (p = t.fab[s]->tx_reserve(d)) != nullptr; },
              [&e] { e.progress(); }, 5);
  if (p == nullptr) return false;
  auto* b = static_cast<uint8_t*>(p);
  for (uint32_t i = 0; i < 64; ++i) b[i] = ucct::msg_byte(s, d, m, i);
  t.fab[s]->tx_commit(d, 64, plat::MsgKey{{s, d, m}}, 0);
  return true;
}

// Message m s -> d received, checked and released; false after 5 s or
// on a wrong byte.
inline bool take_one(Engines& e, Team& t, uint32_t s, uint32_t d, uint32_t m) {
  ucct::until([&] { return t.fab[d]->rx_poll(s) != 0; }, [&e] { e.progress(); },
              5);
  const plat::MsgHdr* h = t.fab[d]->rx_hdr(s, 0);
  if (h == nullptr || h->len != 64 || !(h->key == plat::MsgKey{{s, d, m}}))
    return false;
  const auto* b = static_cast<const uint8_t*>(t.fab[d]->rx_payload(s, 0));
  for (uint32_t i = 0; i < 64; ++i)
    if (b[i] != ucct::msg_byte(s, d, m, i)) return false;
  t.fab[d]->rx_release(s, 0);
  return true;
}

}  // namespace ucct

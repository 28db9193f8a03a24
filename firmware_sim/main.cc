// firmware_sim: the emulated SmartNIC/DPU of one node (see server.h).
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "firmware_sim/crash_report.h"
#include "firmware_sim/server.h"
#include "firmware_sim/verbs_opts.h"
#include "firmware_sim/wire_opts.h"
#include "offload/proto.h"
#include "platform/mem/remote_mem.h"
#include "platform/os/host_id.h"
#include "platform/os/log.h"
#include "platform/os/sock.h"

namespace {

ucc::fw::Server* g_server = nullptr;

void on_signal(int) {
  if (g_server != nullptr) g_server->stop();
}

void usage(FILE* f) {
  fprintf(
      f,
      "Usage: firmware_sim [options]\n"
      "The emulated DPU of this node: runs the collective engines of the\n"
      "host processes that use UCC_OFFLOAD=emu and connect to its socket.\n"
      "\n"
      "  --socket <path>    unix socket to listen on (default: "
      "UCC_FIRMWARE_SOCKET,\n"
      "                     else firmware-sim.sock in $XDG_RUNTIME_DIR "
      "or\n"
      "                     /tmp/ucc-<uid>, a directory of this user's "
      "alone)\n"
      "  --allow-users      serve clients of every user (default: only "
      "this\n"
      "                     daemon's own user's); the socket file is "
      "then\n"
      "                     mode 0666, in a --socket directory they can "
      "enter;\n"
      "                     only this user and root may --shutdown it\n"
      "  --exit-idle <s>    exit after s seconds without clients "
      "(default: never)\n"
      "  --spin <n>         idle passes before sleeping (default 256)\n"
      "  --sleep-ms <ms>    longest sleep while clients exist (default 5)\n"
      "  --log-level <l>    error, warn, info, debug, trace (default "
      "UCC_LOG_LEVEL)\n"
      "  --stats            ask the daemon on the socket for its "
      "statistics, print\n"
      "                     them and exit\n"
      "  --shutdown         ask the daemon on the socket to exit once it "
      "has no\n"
      "                     clients, and exit\n"
      "  --node <name>      the node this daemon emulates: its engines "
      "share memory\n"
      "                     with those of daemons of the same node and "
      "use the\n"
      "                     wire to the others (default: with a wire, "
      "this daemon\n"
      "                     alone; without, the machine)\n"
      "  --listen <h:port>  dpu mode (docs/dpu.md): also serve hosts on "
      "other\n"
      "                     computers over TCP here (0.0.0.0: every "
      "interface);\n"
      "                     with --verbs their memory by RDMA; without, only "
      "the\n                     TCP fallback (UCC_DPU_MEM=tcp); needs "
      "a key\n"
      "  --key-file <path>  the deployment's secret for --listen (a file "
      "of this\n"
      "                     user's, mode 0600; default "
      "UCC_DPU_KEY_FILE, else\n"
      "                     UCC_DPU_KEY)\n"
      "  --inbox-budget <bytes>  pinned memory for dpu clients' "
      "inboxes (pushed\n"
      "                     descriptors, 192 KiB each), all together; "
      "past it a\n"
      "                     client's engine reads its ring (default "
      "64 MiB)\n"
      "  --has-wire         exit 0 when built with the DPDK wire, else 1\n"
      "  --help             this text\n"
      "\n%s%s",
      ucc::fw::wire_usage(), ucc::fw::verbs_usage());
}

// One request to a running daemon (--stats, --shutdown).
int query(const char* path, uint16_t type) {
  namespace proto = ucc::off::proto;
  int s = ucc::plat::sock::connect_to(path);
  if (s < 0) {
    fprintf(stderr, "firmware_sim: no daemon on %s: %s\n", path, strerror(-s));
    return 1;
  }
  proto::MsgHeader h{proto::kMagic, proto::kVersion, type, 0, 1};
  proto::MsgHeader rh{};
  proto::StatsReply sr{};
  bool ok = ucc::plat::sock::send_all(s, &h, sizeof(h), nullptr, 0) &&
            ucc::plat::sock::recv_all(s, &rh, sizeof(rh), 5000) == 1 &&
            rh.len <= sizeof(sr) &&
            ucc::plat::sock::recv_all(s, &sr, rh.len, 5000) == 1;
  close(s);
  if (!ok) {
    fprintf(stderr, "firmware_sim: no answer from %s\n", path);
    return 1;
  }
  if (type == proto::kStats) {
    printf(
        "clients %u\nteams %llu\ndescriptors %llu\npushed %llu\n"
        "uptime_ms %llu\n"
        "registered %llu\nregistrations %llu\n"
        "wire_tx_frames %llu\nwire_rx_frames %llu\nwire_tx_bytes %llu\n"
        "wire_retransmits %llu\nwire_bad_frames %llu\nwire_dup_rx %llu\n"
        "wire_injected %llu\nforeign_reaches %llu\nforeign_copies %llu\n"
        "tcp_mem_clients %llu\ntcp_mem_requests %llu\n",
        sr.clients, static_cast<unsigned long long>(sr.teams),
        static_cast<unsigned long long>(sr.descriptors),
        static_cast<unsigned long long>(sr.pushed),
        static_cast<unsigned long long>(sr.uptime_ms),
        static_cast<unsigned long long>(sr.registered),
        static_cast<unsigned long long>(sr.registrations),
        static_cast<unsigned long long>(sr.wire_tx_frames),
        static_cast<unsigned long long>(sr.wire_rx_frames),
        static_cast<unsigned long long>(sr.wire_tx_bytes),
        static_cast<unsigned long long>(sr.wire_retransmits),
        static_cast<unsigned long long>(sr.wire_bad_frames),
        static_cast<unsigned long long>(sr.wire_dup_rx),
        static_cast<unsigned long long>(sr.wire_injected),
        static_cast<unsigned long long>(sr.foreign_reaches),
        static_cast<unsigned long long>(sr.foreign_copies),
        static_cast<unsigned long long>(sr.tcp_mem_clients),
        static_cast<unsigned long long>(sr.tcp_mem_requests));
    // Transfers to hosts' memory by step: count, bytes, total ns.
    static_assert(sizeof(sr.step_n) / sizeof(sr.step_n[0]) ==
                  ucc::plat::kMemSteps);
    for (uint32_t i = 0; i < ucc::plat::kMemSteps; ++i)
      printf("step_%s %llu %llu %llu\n", ucc::plat::kMemStepNames[i],
             static_cast<unsigned long long>(sr.step_n[i]),
             static_cast<unsigned long long>(sr.step_bytes[i]),
             static_cast<unsigned long long>(sr.step_ns[i]));
  }
  return sr.status == 0 ? 0 : 1;
}

}  // namespace

namespace {

int serve(const ucc::fw::ServerConfig& cfg, const char* path) {
  ucc::fw::Server server;
  ucc::off::Status st = server.start(cfg);
  if (st == ucc::off::Status::kNoResource) {
    UCC_INFO("firmware_sim: a daemon already serves %s", path);
    return 3;
  }
  if (ucc::off::failed(st)) return 1;
  g_server = &server;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  UCC_INFO("firmware_sim: serving %s (pid %d)", path, getpid());
  server.run();
  g_server = nullptr;
  UCC_INFO("firmware_sim: exiting");
  return 0;
}

// The node this daemon emulates: with a network of its own (a wire, or
// verbs), a node apart from the other daemons of this machine (named by
// --node, else by its socket); without, the machine, whose daemons share
// memory.
void set_node(const char* node, const char* path, ucc::fw::ServerConfig* cfg) {
  char name[512];  // a host name (255) and a socket path (255)
  if (node == nullptr && (cfg->wire != nullptr || cfg->net != nullptr)) {
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    snprintf(name, sizeof(name), "%s:%s", host, path);
    node = name;
  }
  ucc::plat::host_identity(node, cfg->node);
}

}  // namespace

int main(int argc, char** argv) {
  ucc::fw::install_crash_report();
  char path[256];
  const char* env = getenv("UCC_FIRMWARE_SOCKET");
  bool default_path = false;
  if (env != nullptr && *env != 0) {
    snprintf(path, sizeof(path), "%s", env);
  } else {
    default_path = true;
    path[0] = '\0';
  }
  ucc::fw::ServerConfig cfg;
  ucc::fw::WireOptions wopt;
  ucc::fw::VerbsOptions vopt;
  const char* node = nullptr;
  int ask = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto need = [&]() {
      if (v == nullptr) {
        fprintf(stderr, "firmware_sim: %s needs a value\n", a);
        exit(2);
      }
      ++i;
      return v;
    };
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--socket") == 0) {
      snprintf(path, sizeof(path), "%s", need());
      default_path = false;
    } else if (strcmp(a, "--allow-users") == 0) {
      cfg.any_user = true;
    } else if (strcmp(a, "--exit-idle") == 0) {
      cfg.exit_idle_ms = static_cast<int>(atof(need()) * 1000);
    } else if (strcmp(a, "--spin") == 0) {
      cfg.spin = static_cast<uint32_t>(atoi(need()));
    } else if (strcmp(a, "--sleep-ms") == 0) {
      cfg.sleep_ms = atoi(need());
    } else if (strcmp(a, "--log-level") == 0) {
      ucc::plat::LogLevel l;
      if (!ucc::plat::log_parse_level(need(), &l)) {
        fprintf(stderr, "firmware_sim: bad log level\n");
        return 2;
      }
      ucc::plat::log_set_level(l);
    } else if (strcmp(a, "--node") == 0) {
      node = need();
    } else if (strcmp(a, "--listen") == 0) {
      cfg.listen_addr = need();
    } else if (strcmp(a, "--inbox-budget") == 0) {
      cfg.inbox_budget = strtoull(need(), nullptr, 0);
    } else if (strcmp(a, "--key-file") == 0) {
      setenv("UCC_DPU_KEY_FILE", need(), 1);
    } else if (strcmp(a, "--has-wire") == 0) {
      return UCC_HAVE_DPDK ? 0 : 1;
    } else if (strcmp(a, "--has-verbs") == 0) {
      return ucc::fw::verbs_built() ? 0 : 1;
    } else if (strcmp(a, "--stats") == 0) {
      ask = ucc::off::proto::kStats;
    } else if (strcmp(a, "--tcp-net") == 0) {
      vopt.tcp = true;
    } else if (strcmp(a, "--shutdown") == 0) {
      ask = ucc::off::proto::kShutdown;
    } else if (int w = ucc::fw::wire_option(a, v, &wopt);
               w != 0 || (w = ucc::fw::verbs_option(a, v, &vopt)) != 0) {
      if (w < 0) {
        fprintf(stderr, "firmware_sim: bad value for %s\n", a);
        return 2;
      }
      ++i;
    } else {
      fprintf(stderr, "firmware_sim: unknown option %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (default_path &&
      ucc::plat::sock::private_socket_path(
          path, sizeof(path), ucc::off::proto::kDefaultSocketName) != 0)
    return 1;  // logged: no directory of this user's to use
  if (ask != 0) return query(path, static_cast<uint16_t>(ask));
  cfg.socket_path = path;
  if (cfg.listen_addr != nullptr &&
      (!ucc::plat::load_secret("dpu", "UCC_DPU_KEY_FILE", "UCC_DPU_KEY", 0,
                               &cfg.key) ||
       cfg.key.len == 0)) {
    fprintf(stderr,
            "firmware_sim: --listen needs a key: --key-file, "
            "UCC_DPU_KEY_FILE or UCC_DPU_KEY (docs/dpu.md)\n");
    return 2;
  }
  if (wopt.nvdev != 0 && (vopt.device != nullptr || vopt.tcp)) {
    fprintf(stderr,
            "firmware_sim: --verbs or --tcp-net and a wire exclude each "
            "other\n");
    return 2;
  }
  ucc::plat::wire::Wire wire;
  if (wopt.nvdev != 0) {
    if (ucc::off::failed(ucc::fw::wire_start(&wopt, &wire))) {
      wire.fini();
      ucc::fw::wire_stop();
      return 1;
    }
    cfg.wire = &wire;
  }
  ucc::fw::VerbsNode* vnode = nullptr;
  if (ucc::off::failed(ucc::fw::verbs_start(vopt, &vnode, &cfg.net))) return 1;
  cfg.hostmem = ucc::fw::verbs_host_mem(vnode);
  set_node(node, path, &cfg);
  int rc = serve(cfg, path);
  // The server (and the fabrics of its engines) are gone: now the
  // networks, then the wire's ports.
  ucc::fw::verbs_stop(vnode);
  wire.fini();
  ucc::fw::wire_stop();
  return rc;
}

// A loopback port nobody listens on now (the kernel's pick; another
// process could take it before us, which these tests do not expect on
// this machine). test_oob_tcp.cc, test_oob_auth.cc.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace ucct {

inline uint16_t free_loopback_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t l = sizeof(a);
  bind(s, reinterpret_cast<sockaddr*>(&a), l);
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &l);
  close(s);
  return ntohs(a.sin_port);
}

}  // namespace ucct

// The "emu." ctest variant of this suite sets UCC_OFFLOAD=emu alone:
// gtest_discover_tests splits an ENVIRONMENT value at every ';', so it
// cannot carry a second variable. The daemon those cases share is this
// build tree's own: its socket is set here, before any test reads the
// configuration, unless the environment names one (tests/sanitize.sh).
#include <cstdlib>
#include <cstring>

namespace {

struct EmuSocket {
  EmuSocket() {
    const char* m = std::getenv("UCC_OFFLOAD");
    if (m != nullptr && std::strcmp(m, "emu") == 0)
      setenv("UCC_FIRMWARE_SOCKET", UCC_TEST_FIRMWARE_SOCKET, 0);
  }
};
const EmuSocket kEmuSocket;

}  // namespace

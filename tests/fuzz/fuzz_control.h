// The firmware_sim daemon's control socket and channel as a fuzz target
// (fuzz_control.cc): what its standalone driver (fuzz_control_driver.cc)
// and libFuzzer share.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ucc::fuzz {

// How deep the inputs went so far (the driver reports it, and checks
// that random programs reach the engine at all).
struct ControlStats {
  uint64_t inputs = 0;
  uint64_t replies = 0;    // well-framed replies read back
  uint64_t hellos_ok = 0;  // clients the daemon took
  uint64_t teams_opened = 0;
  uint64_t teams_connected = 0;
  uint64_t registrations = 0;  // granted
  uint64_t descriptors = 0;    // submitted on the channel
  uint64_t completed = 0;      // ... and completed kOk by the engine
  uint64_t dropped = 0;        // clients the daemon dropped before hang-up
  uint64_t tcp_mem = 0;        // remote: TCP fallbacks granted (a token)
  uint64_t pushed = 0;         // remote: descriptors taken from inboxes
};
const ControlStats& control_stats();

// One input: one hostile client's program (fuzz_control.cc). Aborts when
// a property is violated.
int control_one(const uint8_t* data, size_t size);

// The same for a client across the network (dpu mode, fuzz_remote.cc),
// with its own daemon and counts.
int remote_one(const uint8_t* data, size_t size);
const ControlStats& remote_stats();

}  // namespace ucc::fuzz

// The simulated network (UCC_NET=sim): the production engine's fabric
// (platform/fabric/fabric.h) carried by SimGrid (Debian libsimgrid-dev)
// instead of a wire, so that thousands of ranks, each an S4U actor of one
// process running the real host library and inline engine, talk through a
// simulated cluster and are timed in simulated time (docs/scale.md).
//
// Built only where SimGrid is found, as a library of its own (ucc_sim):
// libucc never links SimGrid. The simulation's driver (tests/sim) calls
// install() before any context is created; UCC_NET=sim then opens a SimNet
// per context, in the actor that creates it, on that actor's host.
//
// What is modelled, and what not (docs/scale.md, "The model"):
//   - a message is one S4U communication from the sender's host to the
//     receiver's, of its payload plus kWireHeader bytes, sent into the
//     receiving member's mailbox, which that member's actor receives
//     (SimGrid's permanent receiver: transfers start at once and run
//     side by side, as on a NIC). A member takes its messages in the
//     order they were sent into its mailbox, from all peers;
//   - the engine's per-byte work is charged in simulated time at the
//     rates given by set_costs(): the sender's copy into the slot when
//     it commits, the receiver's copy or reduction out of it when it
//     releases; so is a cost per message at each end, where given;
//   - a slot is the sender's again the moment the receiver releases it
//     while the sender has others free; once it has none, the credit
//     travels back as a message of its own (a trip across the network,
//     which wakes the sender). Nothing is lost or reordered;
//   - ranks of one simulated host talk through it too, over that host's
//     loopback (Net::carries_local): a simulated host's memory is not
//     shared by its actors' engines as this machine's would be;
//   - an idle member waits on its mailboxes (wait_any) in simulated time
//     instead of spinning, so that a run of thousands of actors ends; a
//     pass that found nothing asks SimGrid again only once the clock has
//     moved.
//
// Threads: SimGrid runs the actors one at a time on one thread; nothing
// here is shared with another thread.
#pragma once

#include <cstdint>

#include "platform/base/status.h"

namespace ucc::plat::sim {

// Bytes each message adds on the simulated wire (TCP's frame header).
inline constexpr uint32_t kWireHeader = 40;

struct Costs {
  // Seconds of simulated time per byte of the engine's copy into a slot
  // and out of it (a reduction costs what a copy costs here; measured on
  // this machine: ucc_simperf --calibrate).
  double send_s_per_byte = 0;
  double recv_s_per_byte = 0;
  // Seconds per message, whatever its length: the engine's (and its
  // NIC's) work to post one message and to take one in, charged to the
  // sender at commit and to the receiver at release, so that a member's
  // messages leave and are taken one after the other. 0 by default (a
  // model of bytes alone).
  double send_s_per_msg = 0;
  double recv_s_per_msg = 0;
  // An idle member's longest wait for a message, in simulated seconds: it
  // then passes through the engine once more (a timer, a control
  // message) and waits again.
  double wait_s = 1e-3;
  // Quiet engine passes before a member waits.
  uint32_t spin = 2;
};
void set_costs(const Costs& c);

// Makes UCC_NET=sim open SimNets (platform/net/net.h).
void install();

// What the simulated nets did, over all of them so far, for the driver's
// report.
struct Counters {
  uint64_t nets;       // contexts opened
  uint64_t fabrics;    // team members opened
  uint64_t connected;  // peers named at connect, over all members
  uint64_t touched;    // peers a member sent to or received from
  uint64_t messages;   // messages sent
  uint64_t credits;    // credit messages (to senders out of slots)
  uint64_t bytes;      // payload bytes sent
  uint64_t waits;      // idle waits
  uint64_t timeouts;   // of those, ended by wait_s without a message
};
Counters counters();

}  // namespace ucc::plat::sim

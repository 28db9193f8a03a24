#!/usr/bin/env bash
# Runs a command with UCC_OFFLOAD=emu over NODES firmware_sim daemons joined
# by a full mesh of DPDK memif links (one emulated NIC per daemon), then
# checks the daemons are still alive and prints their wire statistics.
#
#   tests/wire/run_mesh.sh BUILD NODES [--af-packet | --verbs LIB] \
#     [firmware_sim options] -- CMD...
#
# --af-packet: instead of memif, each daemon runs in a network namespace of
# its own (ucc-wn<N>-<pid>) with one veth port, the veths joined by a
# bridge in one more namespace; the daemons use DPDK's net_af_packet on
# them with 1514-byte frames. A lossy wire: the kernel drops frames when
# a socket's ring is full. Exit 77 (skip) where namespaces cannot be made.
#
# --verbs LIB: no wire; the daemons' engines reach each other over verbs
# RDMA (firmware_sim --verbs), loading LIB as libibverbs (the tests:
# tests/verbs_loop's provider), each daemon a node of its own.
#
# Contexts spread over the daemons by OOB rank (UCC_FIRMWARE_SOCKET list).
# Exit: the command's status; 1 when a daemon died; 77 (skip) when the
# build has no DPDK wire.
set -u
build=$1 nodes=$2
shift 2
fw_args=()
afp=0
verbs=
if [ "${1:-}" = "--af-packet" ]; then afp=1; shift; fi
if [ "${1:-}" = "--verbs" ]; then verbs=$2; shift 2; fi
while [ $# -gt 0 ] && [ "$1" != "--" ]; do fw_args+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
fw="$build/firmware_sim/firmware_sim"
if [ -n "$verbs" ]; then
  if ! "$fw" --has-verbs; then
    echo "SKIP: firmware_sim built without verbs (install libibverbs-dev)"
    exit 77
  fi
elif ! "$fw" --has-wire; then
  echo "SKIP: firmware_sim built without DPDK (install libdpdk-dev)"
  exit 77
fi
dir=$(mktemp -d /tmp/ucc-mesh.XXXXXX)
pids=()
socks=()
tag="ucc-w$$"
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [ $afp = 1 ]; then
    for ((n = 0; n <= nodes; n++)); do ip netns del "$tag-$n" 2>/dev/null; done
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
if [ $afp = 1 ]; then
  # Namespace $tag-NODES holds the bridge; node n's veth ucc-v<n> sits in
  # namespace $tag-n, its other end (ucc-b<n>) on the bridge.
  br="$tag-$nodes"
  if ! ip netns add "$br" 2>/dev/null; then
    echo "SKIP: cannot create network namespaces here (needs root and ip)"
    exit 77
  fi
  ip -n "$br" link add ucc-br type bridge && ip -n "$br" link set ucc-br up ||
    { echo "cannot create a bridge"; exit 1; }
  for ((n = 0; n < nodes; n++)); do
    ip netns add "$tag-$n" &&
      ip -n "$br" link add ucc-b$n type veth peer name ucc-v$n netns "$tag-$n" &&
      ip -n "$br" link set ucc-b$n master ucc-br up &&
      ip -n "$tag-$n" link set ucc-v$n up ||
      { echo "cannot set up the veth of node $n"; exit 1; }
  done
fi
# Highest node first: it is a memif client of every lower node, so each
# run checks that a client which comes before its server connects later.
for ((n = nodes - 1; n >= 0; n--)); do
  if [ -n "$verbs" ]; then
    "$fw" --socket "$dir/node$n.sock" --verbs auto --verbs-lib "$verbs" \
      --node "$tag-node$n" --sleep-ms 1 "${fw_args[@]}" >"$dir/node$n.log" 2>&1 &
  elif [ $afp = 1 ]; then
    ip netns exec "$tag-$n" "$fw" --socket "$dir/node$n.sock" \
      --wire-port "net_af_packet0,iface=ucc-v$n" --wire-frame 1514 \
      --sleep-ms 1 "${fw_args[@]}" >"$dir/node$n.log" 2>&1 &
  else
    "$fw" --socket "$dir/node$n.sock" --wire-mesh "$dir:$n:$nodes" \
      --sleep-ms 1 "${fw_args[@]}" >"$dir/node$n.log" 2>&1 &
  fi
  pids[$n]=$!
  socks[$n]="$dir/node$n.sock"
done
for ((n = 0; n < nodes; n++)); do
  for _ in $(seq 3000); do
    [ -S "${socks[$n]}" ] && break
    kill -0 "${pids[$n]}" 2>/dev/null || break
    sleep 0.01
  done
  if [ ! -S "${socks[$n]}" ]; then
    echo "firmware_sim node $n did not come up:"; cat "$dir/node$n.log"; exit 1
  fi
done
# A daemon that dies mid-run has its log printed at once, beside the first
# test it failed, not after the hundreds of failures that follow it.
watch_daemons() {
  local seen=()
  while sleep 0.2 && kill -0 $$ 2>/dev/null; do
    for ((n = 0; n < nodes; n++)); do
      [ -n "${seen[$n]:-}" ] && continue
      kill -0 "${pids[$n]}" 2>/dev/null && continue
      seen[$n]=1
      echo "firmware_sim node $n died during the run; its log:"
      cat "$dir/node$n.log"
      : >"$dir/node$n.shown"
    done
  done
}
watch_daemons &
watcher=$!
list=$(IFS=,; echo "${socks[*]}")
UCC_OFFLOAD=emu UCC_FIRMWARE_SIM=none UCC_FIRMWARE_SOCKET="$list" "$@"
rc=$?
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
for ((n = 0; n < nodes; n++)); do
  if ! kill -0 "${pids[$n]}" 2>/dev/null; then
    wait "${pids[$n]}"
    st=$?
    [ $st -gt 128 ] && st="$st (signal $((st - 128)))"
    if [ -e "$dir/node$n.shown" ]; then
      echo "firmware_sim node $n died, exit status $st (its log is above)"
    else
      echo "firmware_sim node $n died, exit status $st; its log:"
      cat "$dir/node$n.log"
    fi
    rc=1
    continue
  fi
  [ -n "$verbs" ] && continue
  echo "node $n: $("$fw" --socket "${socks[$n]}" --stats | grep wire_ | tr '\n' ' ')"
done
exit $rc

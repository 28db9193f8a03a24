#!/usr/bin/env bash
# Runs a command with UCC_OFFLOAD=emu over NODES firmware_sim daemons joined
# by a full mesh of DPDK memif links (one emulated NIC per daemon), then
# checks the daemons are still alive and prints their wire statistics.
#
#   tests/wire/run_mesh.sh BUILD NODES [firmware_sim wire options] -- CMD...
#
# Contexts spread over the daemons by OOB rank (UCC_FIRMWARE_SOCKET list).
# Exit: the command's status; 1 when a daemon died; 77 (skip) when the
# build has no DPDK wire.
set -u
build=$1 nodes=$2
shift 2
fw_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do fw_args+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
fw="$build/firmware_sim/firmware_sim"
if ! "$fw" --has-wire; then
  echo "SKIP: firmware_sim built without DPDK (install libdpdk-dev)"
  exit 77
fi
dir=$(mktemp -d /tmp/ucc-mesh.XXXXXX)
pids=()
socks=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
for ((n = 0; n < nodes; n++)); do
  "$fw" --socket "$dir/node$n.sock" --wire-mesh "$dir:$n:$nodes" \
    --sleep-ms 1 "${fw_args[@]}" >"$dir/node$n.log" 2>&1 &
  pids+=($!)
  socks+=("$dir/node$n.sock")
done
for s in "${socks[@]}"; do
  for _ in $(seq 500); do [ -S "$s" ] && break; sleep 0.01; done
done
list=$(IFS=,; echo "${socks[*]}")
UCC_OFFLOAD=emu UCC_FIRMWARE_SIM=none UCC_FIRMWARE_SOCKET="$list" "$@"
rc=$?
for ((n = 0; n < nodes; n++)); do
  if ! kill -0 "${pids[$n]}" 2>/dev/null; then
    echo "firmware_sim node $n died:"; cat "$dir/node$n.log"; rc=1
    continue
  fi
  echo "node $n: $("$fw" --socket "${socks[$n]}" --stats | grep wire_ | tr '\n' ' ')"
done
exit $rc

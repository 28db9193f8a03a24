#!/usr/bin/env bash
# The cost of UCC_NET_CHECKSUM=1 (CRC32C over TCP payloads; headers are
# always checked): an allreduce between two "hosts" on loopback (one
# ucc_perftest per host, UCC_HOST_ID apart, meeting at a TCP rendezvous),
# run alternately with the knob off and on, ROUNDS times each; prints
# the median of the per-round averages at 8 B, 64 KiB and 1 MiB and
# their ratio (docs/performance.md).
#
#   tests/perf/checksum_cost.sh [BUILD] [ROUNDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
perftest="$build/tests/perf/ucc_perftest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() {  # $1: 0|1 -> prints "bytes avg_us" lines
  local port=$(( 20000 + RANDOM % 20000 ))
  local args=(-N 1 --nodes 2 -c allreduce -d uint8 -b 8 -e 1M -f 2 -n 100
              --bootstrap "127.0.0.1:$port")
  UCC_NET_CHECKSUM=$1 UCC_HOST_ID=cs-b "$perftest" "${args[@]}" \
    --node-rank 1 >/dev/null &
  UCC_NET_CHECKSUM=$1 UCC_HOST_ID=cs-a "$perftest" "${args[@]}" \
    --node-rank 0 | awk '$1 ~ /^[0-9]+$/ && ($2 == 8 || $2 == 65536 || $2 == 1048576) {print $2, $3}'
  wait
}

for r in $(seq "$rounds"); do
  for k in 0 1; do run "$k" | sed "s/^/$k /" >> "$tmp/all"; done
done
echo "# allreduce uint8, 2 hosts x 1 rank on loopback, $rounds rounds, median avg(us)"
printf '%10s %12s %12s %8s\n' bytes "checksum=0" "checksum=1" ratio
for b in 8 65536 1048576; do
  off=$(awk -v b=$b '$1 == 0 && $2 == b {print $3}' "$tmp/all" | sort -g |
        awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  on=$(awk -v b=$b '$1 == 1 && $2 == b {print $3}' "$tmp/all" | sort -g |
       awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '%10s %12s %12s %8.3f\n' "$b" "$off" "$on" "$(echo "$on / $off" | bc -l)"
done

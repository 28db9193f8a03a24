#!/usr/bin/env bash
# Host instructions on the two halves of a small collective's latency at 2
# ranks, inline, 8 B of float32 (tests/perf/path_probe.cc): the sender's
# whole post until its test says done ("send"), and the receiver's
# completion from the poll that finds the message already there until its
# test says done ("complete"). Callgrind counts only inside the probe's
# functions (--toggle-collect), so the numbers are per call and exact:
# no poll waits in either.
#
# Usage: tests/perf/path_instructions.sh [build dir] [coll...]
# (coll: bcast reduce barrier; default all three). Needs valgrind. With
# UCCT_RANKS_PER_HOST=1 the two ranks are two hosts (tests/common/harness.cc):
# the message crosses TCP on loopback.
set -euo pipefail
build=${1:-build}
shift || true
colls=${*:-bcast reduce barrier}
probe=$build/tests/perf/ucc_path_probe
reps=200
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf "%-8s %10s %10s\n" coll send complete
for coll in $colls; do
  dir=$work/$coll
  mkdir -p "$dir"
  UCC_OFFLOAD=inline valgrind --tool=callgrind \
    --callgrind-out-file="$dir/cg.%p" --toggle-collect='probe_*' \
    "$probe" "$reps" "$coll" >/dev/null 2>&1
  # Each rank's file holds one of the two functions; the launcher's none.
  send=0 complete=0
  for f in "$dir"/cg.*; do
    ir=$(awk '/^summary:/ {print $2}' "$f")
    if grep -q 'probe_send' "$f"; then send=$((ir / reps)); fi
    if grep -q 'probe_complete' "$f"; then complete=$((ir / reps)); fi
  done
  printf "%-8s %10s %10s\n" "$coll" "$send" "$complete"
done

#!/usr/bin/env bash
# Emu small collectives with the daemon on a core of its own
# (docs/perf/small_teams.md): one firmware_sim pinned to CORE, the ranks
# on cores 0..N-1 (ucc_perftest pins them), an 8 B allreduce with inline
# data (UCC_OFFLOAD_INLINE=32) and without (0) in turn, and a barrier,
# RUNS times. After each run, the daemon's share: its context switches
# (voluntary + involuntary) and CPU time per collective, from
# /proc/<pid>/status and /proc/<pid>/stat, so the time the ranks wait can
# be told apart from the time the daemon works.
#
# Usage: tests/perf/emu_pinned.sh [build dir] [runs]
# Env: RANKS (default "2 4"), ITERS (timed iterations, default 20000),
#      CORE (the daemon's core; default the last one), SWEEP=1 (then
#      also 8 B to 2 MiB allreduce at 2 ranks, emu against inline mode).
set -euo pipefail
build=${1:-build}
runs=${2:-3}
ranks=${RANKS:-2 4}
iters=${ITERS:-20000}
core=${CORE:-$(($(nproc) - 1))}
fw=$build/firmware_sim/firmware_sim
pt=$build/tests/perf/ucc_perftest
work=$(mktemp -d)
trap 'pkill -f "$work/d.sock" 2>/dev/null; rm -rf "$work"' EXIT
tck=$(getconf CLK_TCK)

ctxt() {  # voluntary + involuntary context switches of pid $1
  awk '/ctxt_switches/ {s += $2} END {print s}' "/proc/$1/status"
}
cpu() {  # utime + stime of pid $1, in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}

# One measurement: prints "label n avg_us ctxt/coll cpu_us/coll".
one() {
  local label=$1 n=$2 inline=$3 coll=$4
  taskset -c "$core" "$fw" --socket "$work/d.sock" >"$work/d.log" 2>&1 &
  local d=$!
  for _ in $(seq 200); do [ -S "$work/d.sock" ] && break; sleep 0.01; done
  local c0 t0 line c1 t1
  c0=$(ctxt $d)
  t0=$(cpu $d)
  line=$(UCC_OFFLOAD=emu UCC_FIRMWARE_SOCKET="$work/d.sock" \
    UCC_FIRMWARE_SIM=none UCC_OFFLOAD_INLINE=$inline \
    "$pt" -N "$n" -c "$coll" -b 2 -e 2 -n "$iters" | grep -E '^ *[0-9]' |
    tail -1)
  c1=$(ctxt $d)
  t1=$(cpu $d)
  kill $d
  wait $d 2>/dev/null || true
  rm -f "$work/d.sock"
  # Warm-up iterations: ucc_perftest's default, 10.
  awk -v l="$label" -v n="$n" -v line="$line" -v c="$((c1 - c0))" \
    -v t="$((t1 - t0))" -v it="$((iters + 10))" -v tck="$tck" 'BEGIN {
      split(line, f, " ");
      printf "%-22s ranks %d  avg %8.2f us  daemon: %.3f ctxt, %.2f us cpu per collective\n",
        l, n, f[3], c / it, t * 1e6 / tck / it }'
}

echo "daemon on core $core of $(nproc); $iters iterations; $(uname -r)"
for r in $(seq "$runs"); do
  for n in $ranks; do
    one "run $r allreduce inline" "$n" 32 allreduce
    one "run $r allreduce off" "$n" 0 allreduce
    one "run $r barrier" "$n" 32 barrier
  done
done
if [ "${SWEEP:-0}" = 1 ]; then
  taskset -c "$core" "$fw" --socket "$work/d.sock" >"$work/d.log" 2>&1 &
  d=$!
  for _ in $(seq 200); do [ -S "$work/d.sock" ] && break; sleep 0.01; done
  for mode in emu inline emu inline; do
    echo "== sweep, UCC_OFFLOAD=$mode"
    UCC_OFFLOAD=$mode UCC_FIRMWARE_SOCKET="$work/d.sock" UCC_FIRMWARE_SIM=none \
      "$pt" -N 2 -c allreduce -b 2 -e 512K -f 8 -n 1000 | grep -E '^ *[0-9]'
  done
  kill $d
fi

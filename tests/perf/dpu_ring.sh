#!/usr/bin/env bash
# dpu mode's two ways for the engine to learn of descriptors
# (UCC_DPU_RING=push and read, docs/dpu.md), side by side: one firmware_sim
# on a loopback port reaching two ranks' memory on tests/verbs_loop's
# provider, ucc_perftest run in each mode in turn, RUNS times, then the
# daemon's counts of pushed descriptors and of ring reads (cumulative).
#
# Usage: tests/perf/dpu_ring.sh [build dir] [runs] [perftest args...]
# Default perftest args: -c allreduce -b 2 -e 262144 -f 32 -n 200.
set -euo pipefail
build=${1:-build}
runs=${2:-2}
shift $(($# < 2 ? $# : 2))
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(-c allreduce -b 2 -e 262144 -f 32 -n 200)
fw=$build/firmware_sim/firmware_sim
lib=$build/tests/libverbs_loop.so
if [ ! -e "$lib" ] || ! "$fw" --has-verbs; then
  echo "dpu_ring.sh: needs firmware_sim with verbs and $lib" >&2
  exit 1
fi
work=$(mktemp -d)
export VERBS_LOOP_FABRIC=$work/loop.fabric UCC_VERBS_LIB=$lib
(umask 077 && echo "dpu_ring.sh's key" >"$work/key")
export UCC_OFFLOAD=dpu UCC_DPU_KEY_FILE=$work/key
export UCC_DPU_ADDR=127.0.0.1:$((20000 + $$ % 20000))
"$fw" --socket "$work/d.sock" --verbs auto --verbs-lib "$lib" \
  --listen "$UCC_DPU_ADDR" --key-file "$work/key" >"$work/d.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -S "$work/d.sock" ] && break; sleep 0.05; done
for r in $(seq "$runs"); do
  for mode in push read; do
    echo "== UCC_DPU_RING=$mode, run $r"
    UCC_DPU_RING=$mode "$build/tests/perf/ucc_perftest" -N 2 "${args[@]}" |
      grep -E '^ *[0-9]'
    "$fw" --socket "$work/d.sock" --stats |
      grep -E '^(pushed|step_ring_head|step_descriptors) '
  done
done

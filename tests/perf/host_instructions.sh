#!/usr/bin/env bash
# Host-side instructions per collective, inline vs emu vs dpu, with
# callgrind:
# each rank process's instruction count (Ir) for N1 and N2 timed
# iterations of one size; (Ir(N2) - Ir(N1)) / (N2 - N1) is the cost of
# one iteration (perftest runs a barrier before each collective, so an
# iteration is barrier + collective). The firmware_sim daemon runs
# natively, outside valgrind: in emu mode only the host is counted, which
# is the point. dpu mode (docs/dpu.md) runs where the build has
# tests/verbs_loop's provider: a daemon on a loopback port serving over
# TCP, reaching the ranks' memory by RDMA on the provider.
#
# Usage: tests/perf/host_instructions.sh [build dir] [ranks] [coll]
# Needs valgrind. Prints one line per (mode, size): Ir per iteration,
# averaged over the ranks.
set -euo pipefail
build=${1:-build}
ranks=${2:-2}
coll=${3:-allreduce}
n1=50
n2=250
perftest=$build/tests/perf/ucc_perftest
fw=$build/firmware_sim/firmware_sim
work=$(mktemp -d)
sock=$work/fw.sock
trap '"$fw" --socket "$sock" --shutdown >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

"$fw" --socket "$sock" >/dev/null 2>&1 &
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
modes="inline emu"
lib=$build/tests/libverbs_loop.so
if [ -e "$lib" ] && "$fw" --has-verbs; then
  modes="inline emu dpu"
  export VERBS_LOOP_FABRIC=$work/loop.fabric UCC_VERBS_LIB=$lib
  (umask 077 && echo "host_instructions.sh's key" >"$work/key")
  export UCC_DPU_KEY_FILE=$work/key UCC_DPU_ADDR=127.0.0.1:$((20000 + $$ % 20000))
  "$fw" --socket "$work/dpu.sock" --verbs auto --verbs-lib "$lib" \
    --listen "$UCC_DPU_ADDR" --key-file "$work/key" >/dev/null 2>&1 &
  dpu=$!
  trap '"$fw" --socket "$sock" --shutdown >/dev/null 2>&1 || true;
        kill $dpu 2>/dev/null; rm -rf "$work"' EXIT
  for _ in $(seq 100); do [ -S "$work/dpu.sock" ] && break; sleep 0.05; done
fi

# Total Ir of the rank processes of one run, averaged over ranks.
ir_per_rank() {  # mode count iters
  local dir=$work/$1-$2-$3
  mkdir -p "$dir"
  UCC_OFFLOAD=$1 UCC_FIRMWARE_SOCKET=$sock UCC_FIRMWARE_SIM=none \
    valgrind --tool=callgrind --callgrind-out-file="$dir/cg.%p" \
    "$perftest" -N "$ranks" -c "$coll" -b "$2" -e "$2" -n "$3" -w 0 \
    --bind none >/dev/null 2>&1
  # The launcher is the file with the smallest pid; the ranks are the rest.
  local files
  files=$(ls "$dir"/cg.* | sort -t. -k2 -n | tail -n +2)
  local sum=0 k=0
  for f in $files; do
    local ir
    ir=$(awk '/^summary:/ {print $2}' "$f")
    sum=$((sum + ir))
    k=$((k + 1))
  done
  echo $((sum / k))
}

printf "%-7s %10s %16s\n" mode bytes "Ir/iteration"
for count in 2 16384 262144; do
  for mode in $modes; do
    a=$(ir_per_rank $mode $count $n1)
    b=$(ir_per_rank $mode $count $n2)
    printf "%-7s %10s %16s\n" $mode $((count * 4)) $(((b - a) / (n2 - n1)))
  done
done

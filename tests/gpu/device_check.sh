#!/bin/bash
# The GPU check (docs/gpu.md, "Verified on a GPU"): one run on a machine
# with a CUDA GPU and 16 cores, within 8 minutes. Builds (Release), runs
# every GPU test, then times allreduce, allgather and alltoall on GPU
# buffers (direct and staged) against host memory and the copy engines.
#
#   tests/gpu/device_check.sh [OUT]      (OUT: where logs go; default $OUT)
#
# Where the machine has no libgtest-dev, GoogleTest is built from
# $GTEST_SOURCE (default .devcarry/googletest: a copy of
# /usr/src/googletest carried with the tree); where it has no rdma-core
# headers, from $VERBS_HEADERS (default .devcarry/include: copies of
# /usr/include/infiniband and /usr/include/rdma), so that the verbs
# transport and tests/verbs_loop are built and GpuRdma.* runs with real
# CUDA memory. The summary comes last.
# MATRIX_S, MATRIX_EMU_S, MATRIX_STAGED_S bound the matrix steps (seconds;
# 0 skips the staged one). GPU_CHECK_QUICK=1 runs a few cases of each step and the small sizes
# (a dry run, e.g. against tests/cuda_loop on LD_LIBRARY_PATH).
# GPU_CHECK_STEPS picks steps after the build (default: all of
# "own rdma perf staged reduce matrix").
set -u
DEST=${1:-${OUT:-/tmp/ucc_gpu_check}}
# Logs gather in OUT and are packed into DEST/logs.tgz after each step
# (the device tool brings back only a few files, even after a timeout).
OUT=$(mktemp -d /tmp/ucc_gpu_logs.XXXXXX)
mkdir -p "$DEST"
pack() { tar czf "$DEST/logs.tgz" -C "$OUT" . 2>/dev/null; cp "$SUMMARY" "$DEST/"; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${GPU_CHECK_BUILD:-/tmp/ucc_gpu_build}
T0=$(date +%s)
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
say() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$SUMMARY"; }

say "$(nvidia-smi -L 2>&1 | head -1); $(nproc) cores; $(gcc --version | head -1)"
GT=${GTEST_SOURCE:-$ROOT/.devcarry/googletest}
VH=${VERBS_HEADERS:-$ROOT/.devcarry/include}
vflags=()
if [ ! -f /usr/include/infiniband/verbs.h ] && [ -f "$VH/infiniband/verbs.h" ]; then
  vflags=(-DCMAKE_INCLUDE_PATH="$VH" -DCMAKE_CXX_FLAGS="-isystem $VH")
fi
cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DUCC_GTEST_SOURCE="$GT" "${vflags[@]}" > "$OUT/cmake.log" 2>&1 || {
  say "cmake failed"; tail -30 "$OUT/cmake.log"; exit 1; }
targets=(ucc_mp_tests ucc_perftest firmware_sim)
grep -q "verbs transport: 1" "$OUT/cmake.log" && targets+=(verbs_loop)
ninja -C "$B" "${targets[@]}" > "$OUT/build.log" 2>&1 || {
  say "build failed"; grep -m20 -B2 -A8 "error" "$OUT/build.log"; exit 1; }
say "built: ${targets[*]}"
pack
MP=$B/tests/ucc_mp_tests
PT=$B/tests/perf/ucc_perftest
export UCC_FIRMWARE_SIM=$B/firmware_sim/firmware_sim

# gtest shards in parallel; prints "<name>: N passed, M failed/unfinished".
QUICK=${GPU_CHECK_QUICK:-0}
shards() {  # name timeout_s nshards env... -- filter
  local name=$1 to=$2 n=$3; shift 3
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local filter=$1
  if [ "$QUICK" = 1 ]; then
    filter=${filter%%:*}
    case $filter in Mp/*) filter=Mp/Collectives.Matrix/allreduce_default_n2 ;; esac
  fi
  local pids=()
  for i in $(seq 0 $((n - 1))); do
    env "${envs[@]}" GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$i \
      timeout "$to" "$MP" --gtest_filter="$filter" \
      > "$OUT/$name.$i.log" 2>&1 &
    pids+=($!)
  done
  local bad=0
  for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
  local pass fail
  pass=$(cat "$OUT/$name".*.log | grep -c "^\[       OK \]")
  fail=$(cat "$OUT/$name".*.log | grep -E "^\[  FAILED  \] [A-Z]" | sed 's/ (.*//' | sort -u | grep -vc "listed below")
  say "$name: $pass passed, $fail failed, $bad shards not clean"
  cat "$OUT/$name".*.log | grep -E "^\[  FAILED  \] [A-Z]|rank [0-9]+: .*(wrong|status|expected)" | sort -u | head -8 | tee -a "$SUMMARY"
  pack
}

STEPS=" ${GPU_CHECK_STEPS:-own rdma perf staged reduce matrix} "
want() { [[ $STEPS == *" $1 "* ]]; }
# 1. The GPU tests: the direct path's own, stream engines, UNKNOWN memory.
if want own; then
  shards gpu_own 60 2 UCCT_MEM=cuda -- 'GpuDirect.*:Gpu.*:Ranks/GpuStream.*'
  shards gpu_own_emu 60 2 UCCT_MEM=cuda UCC_OFFLOAD=emu -- 'GpuDirect.*:Gpu.*:Ranks/GpuStream.*'
fi
# GPUDirect RDMA where the engine reaches memory by RDMA (emu over
# tests/verbs_loop): a real CUDA dma-buf is not a file the provider can
# read, so each registration falls back, logged at info level.
if want rdma && [ -f "$B/tests/libverbs_loop.so" ]; then
  VL=$B/tests/libverbs_loop.so
  UCC_LOG_LEVEL=info UCCT_MEM=cuda UCC_GPU_DIRECT=no UCC_OFFLOAD_MEM=verbs \
    UCC_VERBS_LIB=$VL VERBS_LOOP_FABRIC=/tmp/ucc_gpu_rdma.fabric \
    timeout 90 "$ROOT/tests/wire/run_mesh.sh" "$B" 2 --verbs "$VL" -- "$MP" \
    --gtest_filter='GpuRdma.*:Mp/Collectives.Matrix/allreduce_default_n3' \
    > "$OUT/gpu_rdma.log" 2>&1
  say "gpu_rdma (emu, verbs_loop): exit $?, $(grep -c '^\[       OK \]' "$OUT/gpu_rdma.log") passed"
  grep -E "^\[  FAILED  \] [A-Z]|dma-buf|ibv_reg|stag" "$OUT/gpu_rdma.log" | sort | uniq -c | sort -rn | head -6 | tee -a "$SUMMARY"
  pack
fi
# 2. Timings: float32, ranks bound to a core each.
perf() {  # name timeout args...
  local name=$1 to=$2; shift 2
  [ "$QUICK" = 1 ] && set -- "$@" -e 1K
  timeout "$to" "$PT" "$@" > "$OUT/perf_$name.txt" 2>&1 || say "perf $name: exit $?"
  pack
}
if want perf; then
  perf ar2_direct 30 -N 2 -c allreduce -m cuda -b 2 -e 64M -f 2
  UCC_GPU_DIRECT=no perf ar2_staged 30 -N 2 -c allreduce -m cuda -b 2 -e 4M -f 4
  UCC_GPU_DIRECT=no perf red2_staged 30 -N 2 -c reduce -m cuda -b 2 -e 4M -f 4
  perf ar2_host 30 -N 2 -c allreduce -m host -b 2 -e 1M -f 4
  perf ar8_direct 30 -N 8 -c allreduce -m cuda -b 2 -e 64M -f 8
  perf ag2_direct 30 -N 2 -c allgather -m cuda -b 2 -e 32M -f 8
  perf a2a2_direct 30 -N 2 -c alltoall -m cuda -b 2 -e 32M -f 8
  say "timings done"
fi
# 2b. Staged collectives at small sizes: one process against two sharing
# the GPU, with and without MPS (two processes' CUDA contexts on one GPU
# are time-sliced; under MPS they share one).
if want staged; then
  UCC_GPU_DIRECT=no perf st_ar1 30 -N 1 -c allreduce -m cuda -b 2 -e 64K -f 4 -F
  UCC_GPU_DIRECT=no perf st_ar2 30 -N 2 -c allreduce -m cuda -b 2 -e 64K -f 2 -F
  UCC_GPU_DIRECT=no perf st_bc2 30 -N 2 -c bcast -m cuda -b 2 -e 64K -f 4 -F
  UCC_GPU_DIRECT=no perf st_red2 30 -N 2 -c reduce -m cuda -b 2 -e 64K -f 2 -F
  if command -v nvidia-cuda-mps-control > /dev/null; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/ucc_mps CUDA_MPS_LOG_DIRECTORY=/tmp/ucc_mps_log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
      UCC_GPU_DIRECT=no perf st_ar2_mps 30 -N 2 -c allreduce -m cuda -b 2 -e 64K -f 2 -F
      perf st_ar2_direct_mps 30 -N 2 -c allreduce -m cuda -b 2 -e 64K -f 8 -F
      echo quit | nvidia-cuda-mps-control
      sleep 1
    else
      say "MPS did not start"
    fi
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  else
    say "no MPS here"
  fi
  for f in "$OUT"/perf_st_*.txt; do
    echo "== $(basename "$f" .txt)" >> "$SUMMARY"
    grep -E "^ +[0-9]" "$f" >> "$SUMMARY"
  done
  say "staged probe done"
  pack
fi
# 2c. Reduce and reduce_scatter on the direct path: timings, and the
# matrix's reduce* cases (every datatype and op, in place and not, 1-8
# ranks).
D=Mp/Collectives.Matrix
if want reduce; then
  perf red2_direct 30 -N 2 -c reduce -m cuda -b 2 -e 64M -f 8
  perf red8_direct 30 -N 8 -c reduce -m cuda -b 2 -e 64M -f 8
  perf rs2_direct 30 -N 2 -c reduce_scatter -m cuda -b 2 -e 32M -f 8
  perf rs8_direct 30 -N 8 -c reduce_scatter -m cuda -b 2 -e 8M -f 8
  shards matrix_reduce "${MATRIX_REDUCE_S:-90}" 8 UCCT_MEM=cuda -- "$D/reduce_*"
fi
# 3. The collectives matrix on GPU buffers (every collective, datatype and
# op, in place and not, 1-8 ranks): direct where it applies, staged else.
want matrix && shards matrix "${MATRIX_S:-90}" 8 UCCT_MEM=cuda -- "$D/allreduce_*:$D/allgather_*:$D/alltoall_*:$D/bcast_*:$D/inflight_*:$D/persistent_*:$D/*_default_n3:Mp/CollectivesV.Matrix/*_default_n3"
want matrix && shards matrix_emu "${MATRIX_EMU_S:-35}" 4 UCCT_MEM=cuda UCC_OFFLOAD=emu -- 'Mp/Collectives.Matrix/*_default_n3:Mp/Collectives.Matrix/allreduce_default_n8'
want matrix && [ "${MATRIX_STAGED_S:-35}" != 0 ] && shards matrix_staged "${MATRIX_STAGED_S:-35}" 4 UCCT_MEM=cuda UCC_GPU_DIRECT=no -- 'Mp/Collectives.Matrix/allreduce_default_n2:Mp/Collectives.Matrix/reduce_default_n3:Mp/Collectives.Matrix/alltoall_default_n3'

# The summary: the copy engines, then 8 B and the largest sizes of each.
grep -sh "copy engines" "$OUT"/perf_*.txt | head -1 | tee -a "$SUMMARY"
for f in $(ls "$OUT"/perf_*.txt 2>/dev/null | grep -v perf_st_); do
  echo "== $(basename "$f" .txt)" | tee -a "$SUMMARY"
  grep -E "^ +[0-9]" "$f" | awk '$2 == 8 || $2 == 65536 || $2 == 1048576 || $2 >= 16777216' | tee -a "$SUMMARY"
done
pack

#!/usr/bin/env bash
# The scale sweeps of docs/scale.md: ucc_simperf for six collectives at 64
# to 4,096 simulated ranks, 1 and 8 per host, 8 B to 16 MiB where memory
# and time allow; tests/sim/report.sh then makes the tables and plots.
#
#   tests/sim/sweep.sh BUILD OUTDIR [PLATFORM]
#
# One run per (collective, ranks, ranks per host), into
# OUTDIR/<coll>_n<ranks>_ppn<k>.txt. Sizes go up by 8x from 8 B; a run is
# cut at SWEEP_TIMEOUT seconds (default 300) and keeps the sizes it
# finished. The largest size is capped so that all ranks' buffers stay
# under SWEEP_MEM_MB (default 4000) together: the ranks share this
# machine's memory. SWEEP_RANKS and SWEEP_COLLS narrow the sweep. The
# engine's rates are fixed (--copy-gbs 40 --reduce-gbs 17, measured on the
# development VM) so that runs repeat, and each size runs its checked
# iteration and one timed one (SWEEP_ITERS, "-n 1 -w 0"): simulated time
# repeats itself, and the real time is what bounds a sweep. Each message
# costs its sender and its receiver SWEEP_MSG_US us of engine work
# (default 0.2, docs/scale.md "The model"; 0: the network alone). From about
# 11,000 ranks one process maps more regions than Linux's default
# vm.max_map_count (65,530; 5.8 per member): raise it first
# (sysctl -w vm.max_map_count=262144; docs/scale.md, "16,384 ranks").
set -euo pipefail
build=${1:?usage: sweep.sh BUILD OUTDIR [PLATFORM]}
out=${2:?usage: sweep.sh BUILD OUTDIR [PLATFORM]}
here=$(cd "$(dirname "$0")" && pwd)
platform=${3:-$here/platforms/fat_tree_hdr.xml}
sim=$build/tests/sim/ucc_simperf
[ -x "$sim" ] || { echo "sweep.sh: no $sim (SimGrid missing?)" >&2; exit 1; }
mkdir -p "$out"
limit=${SWEEP_TIMEOUT:-300}
mem_mb=${SWEEP_MEM_MB:-4000}
ranks=${SWEEP_RANKS:-64 256 1024 4096}
colls=${SWEEP_COLLS:-allreduce bcast barrier allgather alltoall reduce_scatter}
msg_us=${SWEEP_MSG_US:-0.2}
read -r -a iters <<< "${SWEEP_ITERS:--n 1 -w 0}"
for coll in $colls; do
  for n in $ranks; do
    for ppn in 1 8; do
      # float32 elements per rank's largest buffer: the count for
      # allreduce and bcast, n times it for the others.
      case $coll in
        allreduce|bcast|barrier) per=1 ;;
        *) per=$n ;;
      esac
      max=$(( mem_mb * 1024 * 1024 / (8 * n * per) ))
      [ $max -gt 4194304 ] && max=4194304
      [ $max -lt 2 ] && continue
      f=$out/${coll}_n${n}_ppn${ppn}.txt
      echo "== $(date +%T) $coll n=$n ppn=$ppn up to $max elements"
      timeout "$limit" "$sim" --platform "$platform" -N "$n" --ppn "$ppn" \
        --copy-gbs 40 --reduce-gbs 17 --msg-us "$msg_us" "${iters[@]}" -c "$coll" -b 2 -e "$max" -f 8 \
        > "$f" 2> "$f.err" || echo "   stopped ($?): $(grep -c '^ ' "$f") sizes"
    done
  done
done

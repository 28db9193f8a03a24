#!/usr/bin/env bash
# Side by side with MPI: every collective ucc_perftest knows, ours and MPI's
# alternating on the same buffers (ucc_perftest --compare mpi), one table per
# collective and rank count.
#
#   tests/perf/compare.sh BUILD_DIR [--full] [--ranks "2 4"] [--out DIR]
#
# Default (CI): 2 ranks, 8 B .. 32 KiB, 5 iterations; a few seconds.
# --full: 2, 4 and 8 ranks (or --ranks), 8 B .. 16 MiB in steps of 2x, the
# perftest's default iterations; tens of minutes on 2 cores.
# --out DIR keeps each table as DIR/<coll>_n<ranks>.txt (what plot.sh
# reads); without it the tables go to stdout only.
# Exit status: nonzero when any run fails or any result is wrong.
set -euo pipefail

build=${1:?usage: compare.sh BUILD_DIR [--full] [--ranks LIST] [--out DIR]}
shift
full=0
ranks=""
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --full) full=1 ;;
    --ranks) ranks=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "compare.sh: unknown argument $1" >&2; exit 1 ;;
  esac
  shift
done

perftest="$build/tests/perf/ucc_perftest"
# grep reads the whole help: with -q it could leave at the first match,
# and the perftest's next write would die of SIGPIPE, which pipefail
# takes for "no --compare".
if ! "$perftest" -h | grep -- "--compare" >/dev/null; then
  echo "compare.sh: $perftest has no --compare" >&2
  exit 1
fi
if [ $full = 1 ]; then
  ranks=${ranks:-"2 4 8"}
  sizes=(-b 2 -e 4M -f 2)
else
  ranks=${ranks:-"2"}
  sizes=(-b 2 -e 8K -f 8 -n 5 -w 1)
fi
[ -n "$out" ] && mkdir -p "$out"

rc=0
for n in $ranks; do
  for coll in allreduce bcast reduce allgather alltoall reduce_scatter barrier \
    allgatherv alltoallv reduce_scatterv; do
    args=(-N "$n" -c "$coll" "${sizes[@]}" --compare mpi)
    echo "## ucc_perftest ${args[*]}"
    if [ -n "$out" ]; then
      "$perftest" "${args[@]}" | tee "$out/${coll}_n$n.txt" || rc=1
    else
      "$perftest" "${args[@]}" || rc=1
    fi
    if [ -n "$out" ] && grep -q WARNING "$out/${coll}_n$n.txt"; then rc=1; fi
  done
done
exit $rc

#!/usr/bin/env bash
# Node-aware against flat algorithms at 4 emulated hosts x 2 ranks, under
# mpirun (docs/perf/hosts.md, "Node-aware against flat"): for each
# placement (round-robin, host by host) and each collective and size,
# three pairs of ucc_perftest runs, the default (node-aware) selection and
# the flat algorithm forced by UCC_<COLL>_ALG, alternating. Prints the avg
# us of each pair. Needs root (namespaces), mpirun and a build in BUILD
# (default ./build). Takes about 2 minutes on 2 cores.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-./build}
export OMPI_MCA_mpi_yield_when_idle=1
one() {  # env assignments...: prints the avg us of the one size
  env "$@" UCCT_MAP_BY="$map" timeout 300 "$here/hosts.sh" 4 \
    "$here/mpirun_hosts.sh" 2 "$build/tests/perf/ucc_perftest" \
    -c "$coll" -b "$count" -e "$count" -n "$iters" -w 3 2>&1 |
    awk '/^ +[0-9]/ {print $3}'
}
for map in node slot; do
  for spec in "allreduce 2 200 UCC_ALLREDUCE_ALG=rd" \
              "allreduce 2M 10 UCC_ALLREDUCE_ALG=ring" \
              "allgather 2 200 UCC_ALLGATHER_ALG=ring" \
              "allgather 512K 10 UCC_ALLGATHER_ALG=ring" \
              "bcast 2 200 UCC_BCAST_ALG=binomial" \
              "bcast 2M 10 UCC_BCAST_ALG=binomial"; do
    read -r coll count iters flat <<< "$spec"
    pairs=""
    for _ in 1 2 3; do
      a=$(one UCCT_NODE_AWARE=1)
      b=$(one "$flat")
      pairs+=" $a/$b"
    done
    echo "map-by $map, $coll count $count (node-aware/flat us):$pairs"
  done
done

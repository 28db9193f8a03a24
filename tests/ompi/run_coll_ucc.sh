#!/usr/bin/env bash
# Runs an MPI program under mpirun with Open MPI's coll/ucc component
# (built by build_coll_ucc.sh against this build's libucc.so) forced on,
# and proves the collectives went through UCC: coll/ucc prints "running
# ucc X" before it hands X to UCC and "running fallback X" when it gives
# up and runs Open MPI's own instead (coll_ucc_verbose 3).
#
#   tests/ompi/run_coll_ucc.sh BUILD_DIR NP inline|emu [--expect "X Y ..."]
#       [--same-as-native] -- PROGRAM ARGS...
#
# PROGRAM "mpi_check" means tests/ompi/mpi_check.c, built here. Passes
# when the program exits 0, no collective fell back, the library logged
# no error or warning, and (with NP >= 2) every collective named by
# --expect ran through UCC at least once. With --same-as-native the
# program first runs without coll/ucc, and its last line saying
# "passed" must be the same both times (the pass counts).
# Exit 77 (skipped) where coll/ucc cannot be built (see
# build_coll_ucc.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
np=$2
mode=$3
shift 3
expect=""
native=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    --expect) expect=$2; shift 2 ;;
    --same-as-native) native=1; shift ;;
    *) echo "run_coll_ucc.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ "${1:-}" = "--" ] && shift

comp=$("$here/build_coll_ucc.sh" "$build") || exit $?
work="$build/ompi"
prog=("$@")
if [ "${prog[0]}" = "mpi4py_check" ]; then
  py=""
  for p in /usr/bin/python3 python3; do
    if "$p" -c "import mpi4py" 2>/dev/null; then py=$p; break; fi
  done
  [ -n "$py" ] || { echo "coll/ucc: SKIPPED: no python3 with mpi4py (apt-get install python3-mpi4py)" >&2; exit 77; }
  prog=("$py" "$here/mpi4py_check.py" "${prog[@]:1}")
fi
if [ "${prog[0]}" = "mpi_check" ]; then
  if [ ! -x "$work/mpi_check" ] || [ "$here/mpi_check.c" -nt "$work/mpi_check" ]; then
    mpicc -O2 -g -Wall -o "$work/mpi_check" "$here/mpi_check.c" -lpthread
  fi
  prog[0]="$work/mpi_check"
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's own component directory, then ours.
sys=$(dirname "$(find /usr/lib -path '*openmpi*' -name mca_coll_basic.so 2>/dev/null | head -n1)")
env_args=()
if [ "$mode" = "emu" ]; then
  env_args=(-x UCC_OFFLOAD=emu -x "UCC_FIRMWARE_SOCKET=$work/firmware_sim.sock")
fi
# The program's stdout goes to its own file: coll/ucc's verbose lines
# arrive on stderr through the same mpirun and can land in the middle of
# a stdout line when both share one file.
log="$work/run-$mode-np$np-$$.log"
out="$work/run-$mode-np$np-$$.out"
native_line=""
if [ $native -eq 1 ]; then
  timeout 900 mpirun -np "$np" --oversubscribe --bind-to none --mca btl self,vader \
    "${prog[@]}" >"$out" 2>"$log" || { tail -n 40 "$out" "$log"; echo "native run failed" >&2; exit 1; }
  native_line=$(grep "passed" "$out" | tail -n1)
  echo "native Open MPI: $native_line"
fi
set +e
timeout 900 mpirun -np "$np" --oversubscribe --bind-to none \
  --mca btl self,vader \
  --mca mca_base_component_path "$sys:$comp" \
  --mca coll_ucc_enable 1 --mca coll_ucc_priority 100 --mca coll_ucc_verbose 3 \
  "${env_args[@]}" "${prog[@]}" >"$out" 2>"$log"
rc=$?
set -e
tail -n 40 "$out"
{ grep -v "running ucc\|running fallback\|coll_ucc_module.c" "$log" || true; } | tail -n 40
if [ $rc -ne 0 ]; then
  echo "coll/ucc: ${prog[*]} failed (exit $rc), np $np, $mode; log: $log" >&2
  exit 1
fi

ucc_runs=$(grep -c "running ucc" "$log" || true)
fallbacks=$(grep "running fallback" "$log" | sed 's/.*running fallback //' | sort | uniq -c || true)
echo "coll/ucc np $np $mode: $ucc_runs collectives handed to UCC"
{ grep "running ucc" "$log" || true; } | sed 's/.*running ucc //' | sort | uniq -c | sed 's/^/  ucc /'
if grep -q "ucc\[[0-9]*\] \(error\|warn\)" "$log"; then
  echo "coll/ucc: the library logged errors or warnings:" >&2
  grep "ucc\[[0-9]*\] \(error\|warn\)" "$log" | head -n 20 >&2
  exit 1
fi
if [ -n "$fallbacks" ]; then
  echo "coll/ucc: collectives fell back to Open MPI's own:" >&2
  echo "$fallbacks" >&2
  exit 1
fi
if [ "$np" -ge 2 ]; then
  for c in $expect; do
    if ! grep -q "running ucc $c\$" "$log"; then
      echo "coll/ucc: no $c went through UCC" >&2
      exit 1
    fi
  done
fi
if [ $native -eq 1 ]; then
  ucc_line=$(grep "passed" "$out" | tail -n1)
  echo "through coll/ucc: $ucc_line"
  if [ "$ucc_line" != "$native_line" ]; then
    echo "coll/ucc: '$ucc_line' differs from native '$native_line'" >&2
    exit 1
  fi
fi
rm -f "$log" "$out"

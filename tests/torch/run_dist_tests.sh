#!/usr/bin/env bash
# Runs PyTorch's own distributed test suite (test_distributed_spawn.py,
# which drives torch/testing/_internal/distributed/distributed_test.py) on
# one backend, the way PyTorch's run_test.py sets it up: TEMP_DIR with its
# barrier/ and test_dir/, env:// rendezvous on a free port, one spawned
# process per rank.
#
#   tests/torch/run_dist_tests.sh BUILD_DIR BACKEND WORLD_SIZE [unittest args]
#
# BACKEND ucc runs through this library (BUILD_DIR/torch, made by
# build_pg_ucc.sh); gloo is the reference. The arguments select tests
# (-k all_reduce -k broadcast ...: names containing any of them). Prints
# one line per test ("name ok|FAIL|ERROR|skipped reason", dist_suite.py)
# and a last line "BACKEND WORLD_SIZE: passed P failed F skipped S errors
# E"; exits non-zero when a test failed or errored, with the failures'
# part of the ranks' log on stderr (all of it in $UCCT_TORCH_LOG if set). UCC_OFFLOAD=emu in the
# environment runs the ucc ranks' collectives in firmware_sim.
set -uo pipefail
build=$(cd "$1" && pwd)
backend=$2
world=$3
shift 3
work="$build/torch"
src=$(ls -d "$work"/pytorch-*/test/distributed 2>/dev/null | head -n1)
[ -n "$src" ] || { echo "torch: run tests/torch/build_pg_ucc.sh $1 first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/barrier" "$tmp/test_dir"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log="$tmp/log"
results="$tmp/results"
here=$(cd "$(dirname "$0")" && pwd)
(cd "$src" &&
 BACKEND=$backend WORLD_SIZE=$world TEMP_DIR=$tmp INIT_METHOD=env:// \
 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
 PYTHONPATH="$work/py:$work/testpy${PYTHONPATH:+:$PYTHONPATH}" \
 /usr/bin/python3 "$here/dist_suite.py" "$src" "$results" "$@") >"$log" 2>&1
rc=$?
cat "$results"
count() { grep -cE "^[^ ]+ $1" "$results"; }
p=$(count ok)
f=$(count FAIL)
e=$(count ERROR)
s=$(count skipped)
if [ "$rc" -ne 0 ]; then
  grep -E -A40 '^(FAIL|ERROR): ' "$log" | head -n 300 >&2
  [ -n "${UCCT_TORCH_LOG:-}" ] && cp "$log" "$UCCT_TORCH_LOG"
fi
echo "$backend $world: passed $p failed $f skipped $s errors $e"
exit "$rc"

#!/usr/bin/env bash
# The ctest entry point for PyTorch (label torch): builds PyTorch's
# ProcessGroupUCC against this build (build_pg_ucc.sh; exit 77, skipped,
# where torch is not installed), then runs one check.
#
#   tests/torch/run_torch.sh BUILD_DIR inline|emu cpp
#   tests/torch/run_torch.sh BUILD_DIR inline|emu dist WORLD_SIZE [-k PATTERN]...
#   tests/torch/run_torch.sh BUILD_DIR inline|emu ddp WORLD_SIZE STEPS
#
# cpp: PyTorch's C++ test of the process group (ProcessGroupUCCTest).
# dist: PyTorch's distributed suite on the ucc backend (run_dist_tests.sh).
# ddp: ddp_check.py, ucc against gloo. emu runs every ucc collective in
# this build's firmware_sim (the library starts it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
mode=$2
what=$3
shift 3
work=$("$here/build_pg_ucc.sh" "$build")
if [ "$mode" = emu ]; then
  export UCC_OFFLOAD=emu
  export UCC_FIRMWARE_SOCKET="$build/torch/firmware_sim.sock"
fi
export GLOG_minloglevel=1  # ProcessGroupUCC's INFO lines
case "$what" in
  cpp) exec "$work/ProcessGroupUCCTest" --gtest_brief=1 ;;
  dist) exec "$here/run_dist_tests.sh" "$build" ucc "$@" ;;
  ddp)
    export PYTHONPATH="$work/py${PYTHONPATH:+:$PYTHONPATH}"
    exec /usr/bin/python3 "$here/ddp_check.py" --world "$1" --steps "$2" ;;
  *) echo "usage: $0 BUILD_DIR inline|emu cpp|dist|ddp ..." >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# CI's aarch64 stage (docs/testing.md, "aarch64"): Debian's cross
# toolchain and the arm64 libraries, a cross build of libucc.a and
# libucc.so, the unit and multi-process tests, firmware_sim and the DPU
# service image, and the tests run under qemu-user (tests/arm64/qemu.sh):
#   - the unit tests, all but one that counts frames sent within a time
#     window (Tcp.CreditsComeAloneWhenNothingGoesBack: emulated, the
#     window has passed before the test looks); those of cross-memory
#     attach skip, qemu-user has none;
#   - a subset of the collectives matrix with aarch64 ranks (inline
#     engines over shared memory; every datatype and op for allreduce at
#     2 ranks, one datatype per element size for the rest at 3; the
#     arithmetic of every datatype and op is the unit tests').
# The image's daemon serving x86-64 hosts is ctest dpu_arm64_tcp of the
# x86-64 build, which takes this build when it is ./build-arm64.
# Usage: tests/arm64/ci.sh [BUILD_DIR]   (default build-arm64)
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-build-arm64}
stamp() { echo "== $(date +%T) arm64 $*"; }

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  dpkg --add-architecture arm64
fi
need=()
for pkg in crossbuild-essential-arm64 qemu-user libssl3:arm64 \
    libibverbs-dev:arm64 ibverbs-providers:arm64; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}"
fi

stamp build
cmake -S . -B "$dir" -G Ninja \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake >/dev/null
targets=(ucc ucc_static ucc_unit_tests ucc_mp_tests firmware_sim)
# The image where umoci is (the x86-64 build's list installs it). grep
# reads all of ninja's list: with -q it would stop at the match, and the
# pipe's SIGPIPE to ninja would fail the test under pipefail.
if ninja -C "$dir" -t targets all | grep '^dpu_image:' >/dev/null; then
  targets+=(dpu_image)
fi
cmake --build "$dir" -j2 --target "${targets[@]}"

q=tests/arm64/qemu.sh
stamp unit tests
$q "$dir/tests/ucc_unit_tests" --gtest_brief=1 \
  --gtest_filter=-Tcp.CreditsComeAloneWhenNothingGoesBack
stamp multi-process tests
$q "$dir/tests/ucc_mp_tests" --gtest_brief=1 \
  --gtest_filter=Mp/Collectives.Matrix/allreduce_default_n2
UCCT_DTYPES=transport $q "$dir/tests/ucc_mp_tests" --gtest_brief=1 \
  --gtest_filter="$(printf 'Mp/Collectives.Matrix/%s_default_n3:' \
    allreduce bcast reduce allgather alltoall reduce_scatter barrier)$(printf \
    'Mp/Collectives.Matrix/%s_default_n4:' allreduce alltoall)Mp/CollectivesV.Matrix/*_default_n3"
stamp done

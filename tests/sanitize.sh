#!/usr/bin/env bash
# The sanitizer stage of CI (.ci/run), runnable alone from any checkout:
#
#   tests/sanitize.sh          # both stages below
#   tests/sanitize.sh thread   # ThreadSanitizer only
#   tests/sanitize.sh address  # ASan+UBSan only
#
# thread:  ThreadSanitizer (build-tsan) on the thread-multiple tests, 10
#          runs in a row.
# address: AddressSanitizer, LeakSanitizer and UBSan (build-asan) on the
#          unit tests, on the multi-process suite with the engine inline
#          (the collectives matrices up to 3 ranks, at 4 their default
#          and small-slot configurations), on the GPU cases against
#          tests/cuda_loop, on the suite again
#          with UCC_OFFLOAD=emu (so the firmware_sim daemon the library
#          starts is the ASan build too; of the matrices only the default
#          configuration up to 4 ranks), on the verbs transport over tests/verbs_loop's
#          provider (its fault cases and a matrix, where rdma-core's header
#          is installed) and GPUDirect RDMA over it (GpuRdma.*), and on
#          short runs of both fuzz drivers.
#
# Every sanitized process, forked ranks and the daemon included, writes its
# reports to $UCCT_SAN_LOGS (default build-asan/sanitizer-logs) instead of
# a stderr the harness may not show; the stage fails if any report file
# appears, and prints them. UBSan halts on its first finding.
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${1:-all}
jobs=${UCCT_JOBS:-2}

tsan_stage() {
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DUCC_SANITIZE=thread >/dev/null
  cmake --build build-tsan -j"$jobs" --target ucc_thread_tests
  TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp halt_on_error=1 history_size=7" \
    ./build-tsan/tests/ucc_thread_tests --gtest_filter='*ThreadMultiple*:TcpMem.*' \
    --gtest_repeat=10 --gtest_brief=1
}

# Fails when any sanitized process left a report in $logs.
check_logs() {
  local found
  found=$(find "$logs" -type f | sort)
  if [ -n "$found" ]; then
    echo "sanitizer reports after $1:"
    for f in $found; do echo "== $f"; head -c 20000 "$f"; done
    return 1
  fi
  echo "sanitizers: no report after $1"
}

asan_stage() {
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DUCC_SANITIZE=address >/dev/null
  cmake --build build-asan -j"$jobs" --target ucc_unit_tests ucc_mp_tests \
    firmware_sim fuzz_engine_driver fuzz_control_driver fuzz_tcp_mem_driver
  logs=${UCCT_SAN_LOGS:-$PWD/build-asan/sanitizer-logs}
  rm -rf "$logs"
  mkdir -p "$logs"
  export ASAN_OPTIONS="detect_leaks=1:log_path=$logs/asan"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
  local t=./build-asan/tests
  $t/ucc_unit_tests --gtest_brief=1
  check_logs "the unit tests"

  # The collectives matrices up to 3 ranks: every algorithm, datatype, op
  # and count shape, 3 ranks the team that is no power of two; at 4 ranks
  # the default and small-slot configurations; the rest run in the plain
  # ctest, where a memory error would show as wrong results, not as a
  # report.
  local t0=$SECONDS
  $t/ucc_mp_tests --gtest_brief=1 \
    --gtest_filter='-Mp/Collectives*.Matrix/*_n8:Mp/Collectives*.Matrix/*_n5:Mp/Collectives*.Matrix/*_n4'
  $t/ucc_mp_tests --gtest_brief=1 \
    --gtest_filter='Mp/Collectives*.Matrix/*_default_n4:Mp/Collectives*.Matrix/*_smallseg_n4'
  check_logs "the multi-process suite, inline ($((SECONDS - t0)) s)"
  # GPU buffers on tests/cuda_loop's driver: the direct path (IPC cache,
  # kernel launches, flag pages) and the staged one.
  t0=$SECONDS
  UCCT_MEM=cuda LD_LIBRARY_PATH=$PWD/build-asan/tests/cuda_loop \
    $t/ucc_mp_tests --gtest_brief=1 --gtest_filter="GpuDirect.*:GpuHostile.*:Gpu.StagedPostNeverWaits:$(printf \
    'Mp/Collectives.Matrix/%s_default_n3:' allreduce allgather alltoall bcast reduce reduce_scatter)$(printf \
    'Mp/CollectivesV.Matrix/%s_default_n3:' gather scatter)"
  check_logs "the GPU cases on tests/cuda_loop ($((SECONDS - t0)) s)"

  # The suite again with every collective run by an ASan firmware_sim:
  # the library starts it from the build tree on first use; it must exit
  # (and run its leak check) before the logs are read. Of the collectives
  # matrices only the default configuration up to 4 ranks: the others
  # choose among the engine's algorithms and slot sizes, code the same as
  # inline, checked above; what emu adds (the daemon's channel, its
  # registrations, its reach into user memory) every case takes.
  local sock=$PWD/build-asan/sanitize-fw.sock
  t0=$SECONDS
  UCC_OFFLOAD=emu UCC_FIRMWARE_SOCKET=$sock $t/ucc_mp_tests --gtest_brief=1 \
    --gtest_filter='-Mp/Collectives*.Matrix/*:Dpu*'
  UCC_OFFLOAD=emu UCC_FIRMWARE_SOCKET=$sock $t/ucc_mp_tests --gtest_brief=1 \
    --gtest_filter="$(printf 'Mp/Collectives*.Matrix/*_default_n%d:' 1 2 3 4)"
  ./build-asan/firmware_sim/firmware_sim --socket "$sock" --shutdown \
    >/dev/null 2>&1 || true
  for _ in $(seq 100); do
    pgrep -f -- "--socket $sock" >/dev/null || break
    sleep 0.2
  done
  if pgrep -f -- "--socket $sock" >/dev/null; then
    echo "the emu suite's firmware_sim did not exit"
    return 1
  fi
  check_logs "the multi-process suite, emu ($((SECONDS - t0)) s)"

  if grep -q '^UCC_VERBS_INCLUDE:PATH=/' build-asan/CMakeCache.txt; then
    cmake --build build-asan -j"$jobs" --target verbs_loop verbs_loop_tests
    $t/verbs_loop_tests --gtest_brief=1
    t0=$SECONDS
    VERBS_LOOP_FABRIC=$PWD/build-asan/sanitize-verbs.fabric UCC_NET=verbs \
      UCC_VERBS_LIB=$PWD/$t/libverbs_loop.so UCCT_RANKS_PER_HOST=2 \
      $t/ucc_mp_tests --gtest_brief=1 \
      --gtest_filter='Verbs.*:Mp/Collectives.*default_n4:Mp/CollectivesV.*default_n4'
    check_logs "the verbs transport ($((SECONDS - t0)) s)"
    # GPUDirect RDMA: tests/cuda_loop's device memory registered by
    # dma-buf, the (ASan) daemons' engines reading and writing it.
    t0=$SECONDS
    VERBS_LOOP_FABRIC=$PWD/build-asan/sanitize-gpu-rdma.fabric \
      UCC_OFFLOAD_MEM=verbs UCC_VERBS_LIB=$PWD/$t/libverbs_loop.so \
      UCC_GPU_DIRECT=no UCCT_MEM=cuda \
      LD_LIBRARY_PATH=$PWD/build-asan/tests/cuda_loop \
      tests/wire/run_mesh.sh ./build-asan 2 --verbs "$PWD/$t/libverbs_loop.so" \
      -- $t/ucc_mp_tests --gtest_brief=1 \
      --gtest_filter='GpuRdma.*:Mp/Collectives.Matrix/allreduce_default_n3'
    check_logs "GPUDirect RDMA on the providers ($((SECONDS - t0)) s)"
  fi

  $t/fuzz_engine_driver -n 1000000 -t 20 -s 11 \
    -o ./build-asan/fuzz_engine_crash.bin
  $t/fuzz_control_driver -n 1000000 -t 20 -s 11 \
    -o ./build-asan/fuzz_control_crash.bin
  $t/fuzz_control_driver -r -n 1000000 -t 5 -s 11 \
    -o ./build-asan/fuzz_remote_crash.bin
  $t/fuzz_tcp_mem_driver -n 1000000 -t 5 -s 11 \
    -o ./build-asan/fuzz_tcp_mem_crash.bin
  check_logs "the fuzz drivers"
}

stamp() { echo "== $(date +%T) $*"; }

case "$stage" in
  thread) tsan_stage ;;
  address) asan_stage ;;
  all) stamp tsan; tsan_stage; stamp asan; asan_stage; stamp done ;;
  *) echo "usage: $0 [thread|address|all]" >&2; exit 2 ;;
esac

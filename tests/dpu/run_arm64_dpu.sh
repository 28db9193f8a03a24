#!/usr/bin/env bash
# Runs a command in dpu mode against an aarch64 firmware_sim, the DPU's
# own architecture, under Debian's qemu-user, serving this machine's
# x86-64 ranks:
#
#   tests/dpu/run_arm64_dpu.sh BUILD ARM64_BUILD -- CMD...
#
# ARM64_BUILD is a cross build (docs/testing.md, "aarch64") with its
# firmware_sim built. qemu-user has no cross-memory attach and the arm64
# tree no RDMA provider, so the daemon serves the TCP fallback
# (UCC_DPU_MEM=tcp, docs/dpu.md) on a loopback port: control, and the
# hosts' memory over its authenticated connection. It needs the arm64
# libcrypto.so.3 for the handshake: UCCT_ARM64_LIBS names a directory
# holding it (Debian: `apt-get download libssl3:arm64` and `dpkg -x` it;
# its usr/lib/aarch64-linux-gnu). Afterwards this build's firmware_sim
# asks the arm64 one for its counts over the unix socket (the control
# protocol across the two ABIs), and it must have served memory
# requests and reached into no host process.
#
# Exit: CMD's status; 77 (skipped) without qemu-aarch64, the arm64
# build or its libcrypto; 1 when the daemon died or never listened.
set -u
build=$(cd "$1" && pwd) arm=$2
shift 2
[ "${1:-}" = "--" ] && shift
fw="$build/firmware_sim/firmware_sim"
afw="$arm/firmware_sim/firmware_sim"
sysroot=${UCCT_ARM64_SYSROOT:-/usr/aarch64-linux-gnu}
libs=${UCCT_ARM64_LIBS:-}
if ! command -v qemu-aarch64 >/dev/null; then
  echo "SKIP: no qemu-aarch64 (Debian: qemu-user)"
  exit 77
fi
if [ ! -x "$afw" ] || [ ! -d "$sysroot" ]; then
  echo "SKIP: no aarch64 firmware_sim in $arm or no sysroot $sysroot"
  exit 77
fi
if [ -z "$libs" ] || [ ! -e "$libs/libcrypto.so.3" ]; then
  echo "SKIP: UCCT_ARM64_LIBS must name a directory with the arm64 libcrypto.so.3"
  exit 77
fi
dir=$(mktemp -d /tmp/ucc-arm64dpu.XXXXXX)
daemon=
cleanup() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
key="$dir/key"
(umask 077 && head -c 32 /dev/urandom | base64 >"$key")
port=$((20000 + RANDOM % 20000))
QEMU_LD_PREFIX=$sysroot LD_LIBRARY_PATH=$libs qemu-aarch64 "$afw" \
  --socket "$dir/fw.sock" --listen "127.0.0.1:$port" --key-file "$key" \
  --sleep-ms 1 >"$dir/daemon.log" 2>&1 &
daemon=$!
up=0
for ((i = 0; i < 1000; i++)); do
  if bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
    up=1
    break
  fi
  sleep 0.02
done
if [ $up = 0 ]; then
  echo "run_arm64_dpu.sh: the aarch64 daemon does not listen" >&2
  cat "$dir/daemon.log" >&2
  exit 1
fi
export UCC_OFFLOAD=dpu UCC_DPU_ADDR="127.0.0.1:$port" UCC_DPU_KEY_FILE="$key"
export UCC_DPU_MEM=tcp
"$@"
rc=$?
if ! kill -0 "$daemon" 2>/dev/null; then
  echo "run_arm64_dpu.sh: the aarch64 daemon died" >&2
  rc=1
else
  stats=$("$fw" --socket "$dir/fw.sock" --stats)
  reach=$(awk '$1 == "foreign_reaches" {print $2}' <<<"$stats")
  req=$(awk '$1 == "tcp_mem_requests" {print $2}' <<<"$stats")
  echo "run_arm64_dpu.sh: the aarch64 DPU served ${req:-?} memory requests, ${reach:-?} reaches into host processes"
  if [ "${reach:-x}" != 0 ] || [ "${req:-0}" = 0 ]; then
    echo "run_arm64_dpu.sh: the aarch64 DPU's counts are wrong" >&2
    rc=1
  fi
fi
[ $rc = 0 ] || tail -n 20 "$dir/daemon.log" >&2
exit $rc

#!/usr/bin/env bash
# Runs a command in dpu mode against the DPU service image
# (firmware_sim/image/build_image.sh): the image is unpacked with umoci,
# and the daemon started from the unpacked root filesystem alone, with the
# image's own entrypoint and arguments (the key where its pod mounts the
# secret), only the listening address and the unix socket changed. An
# aarch64 image runs under qemu-user (`qemu-aarch64 -L ROOTFS`), an image
# of this machine's architecture in a chroot of its root filesystem. The
# daemon serves this build's ranks over the TCP fallback (UCC_DPU_MEM=tcp:
# the tree has no RDMA provider for aarch64, and a chroot has none), then
# this build's firmware_sim asks it for its counts over the unix socket:
# it must have served memory requests and reached into no host process.
#
#   tests/dpu/run_image_dpu.sh BUILD IMAGE_DIR[:TAG] -- CMD...
#
# Exit: CMD's status; 77 (skipped) without umoci, the image, qemu-aarch64
# for an aarch64 one, or root for a chroot; 1 when the daemon died or
# never listened.
set -u
build=$(cd "$1" && pwd) image=$2
shift 2
[ "${1:-}" = "--" ] && shift
[[ $image == *:* ]] || image=$image:latest
fw="$build/firmware_sim/firmware_sim"
if ! command -v umoci >/dev/null; then
  echo "SKIP: no umoci (Debian: umoci)"
  exit 77
fi
if [ ! -e "${image%:*}/index.json" ]; then
  echo "SKIP: no image at ${image%:*} (the dpu_image target builds it)"
  exit 77
fi
dir=$(mktemp -d /tmp/ucc-imagedpu.XXXXXX)
daemon=
cleanup() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
umoci unpack --rootless --image "$image" "$dir/bundle" >/dev/null || exit 1
rootfs=$dir/bundle/rootfs
# The image's command line, from its runtime config.
mapfile -t args < <(python3 -c '
import json, sys
for a in json.load(open(sys.argv[1]))["process"]["args"]:
    print(a)' "$dir/bundle/config.json")
mapfile -t envs < <(python3 -c '
import json, sys
for e in json.load(open(sys.argv[1]))["process"]["env"]:
    print(e)' "$dir/bundle/config.json")
if [ ${#args[@]} = 0 ]; then
  echo "run_image_dpu.sh: no command in the image's config" >&2
  exit 1
fi
# The pod spec shipped beside the image must agree with it: its key mount
# and readiness probe's socket are where the image's command looks.
pod=$(dirname "$0")/../../firmware_sim/image/firmware_sim-pod.yaml
if ! python3 -c 'import yaml' 2>/dev/null; then
  echo "run_image_dpu.sh: no PyYAML (Debian: python3-yaml): the pod spec is not checked"
else
  if ! python3 - "$pod" "${args[@]}" <<'PY'; then
import sys, yaml
pod = yaml.safe_load(open(sys.argv[1]))
cmd = sys.argv[2:]
opt = lambda a, k: a[a.index(k) + 1]
c = pod["spec"]["containers"][0]
full = c["command"] + c["args"]
probe = c["readinessProbe"]["exec"]["command"]
mounts = {m["mountPath"] for m in c["volumeMounts"]}
ok = (full[0] == cmd[0] and opt(full, "--key-file") == opt(cmd, "--key-file")
      and opt(cmd, "--key-file") in mounts
      and opt(probe, "--socket") == opt(cmd, "--socket") == opt(full, "--socket"))
sys.exit(0 if ok else 1)
PY
    echo "run_image_dpu.sh: $pod does not match the image's command" >&2
    exit 1
  fi
fi
port=$((20000 + RANDOM % 20000))
sock=$dir/fw.sock
for ((i = 1; i < ${#args[@]}; i++)); do
  case ${args[i - 1]} in
    --listen) args[i]=127.0.0.1:$port ;;
    --socket) args[i]=$sock ;;
    --key-file) keyfile=${args[i]} ;;
  esac
done
if [ -z "${keyfile:-}" ]; then
  echo "run_image_dpu.sh: the image's command names no --key-file" >&2
  exit 1
fi
# The pod's secret, where the image expects it.
mkdir -p "$rootfs$(dirname "$keyfile")"
(umask 077 && head -c 32 /dev/urandom | base64 >"$rootfs$keyfile")
cp "$rootfs$keyfile" "$dir/key"
machine=$(od -An -t u2 -j 18 -N 2 "$rootfs${args[0]}" | tr -d ' ')
case $(uname -m) in
  x86_64) own=62 ;;
  aarch64) own=183 ;;
  *) own=0 ;;
esac
if [ "$machine" != "$own" ]; then
  if [ "$machine" != 183 ] || ! command -v qemu-aarch64 >/dev/null; then
    echo "SKIP: an image for ELF machine $machine, and no qemu-user for it here"
    exit 77
  fi
  qemu_env=()
  for e in "${envs[@]}"; do qemu_env+=(-E "$e"); done
  qemu-aarch64 -L "$rootfs" "${qemu_env[@]}" \
    "$rootfs${args[0]}" "${args[@]:1}" --sleep-ms 1 >"$dir/daemon.log" 2>&1 &
else
  if [ "$(id -u)" != 0 ] || ! unshare --mount true 2>/dev/null; then
    echo "SKIP: the image's daemon runs in a chroot of its own mount namespace, which needs root"
    exit 77
  fi
  # The socket lies outside the chroot: bind it inside and reach it
  # through the root filesystem.
  sock_in=/run/ucc/test.sock
  for ((i = 1; i < ${#args[@]}; i++)); do
    [ "${args[i - 1]}" = --socket ] && args[i]=$sock_in
  done
  sock=$rootfs$sock_in
  # A mount namespace of its own with /proc, as a container has (the
  # daemon maps its own segments through /proc/self).
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "${envs[@]}" \
    unshare --mount --propagation private sh -c \
    'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' \
    "$rootfs" "${args[@]}" --sleep-ms 1 >"$dir/daemon.log" 2>&1 &
fi
daemon=$!
up=0
for ((i = 0; i < 1000; i++)); do
  if bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
    up=1
    break
  fi
  kill -0 "$daemon" 2>/dev/null || break
  sleep 0.02
done
if [ $up = 0 ]; then
  echo "run_image_dpu.sh: the image's daemon does not listen" >&2
  cat "$dir/daemon.log" >&2
  exit 1
fi
export UCC_OFFLOAD=dpu UCC_DPU_ADDR="127.0.0.1:$port" UCC_DPU_KEY_FILE="$dir/key"
export UCC_DPU_MEM=tcp
"$@"
rc=$?
if ! kill -0 "$daemon" 2>/dev/null; then
  echo "run_image_dpu.sh: the image's daemon died" >&2
  rc=1
else
  stats=$("$fw" --socket "$sock" --stats)
  reach=$(awk '$1 == "foreign_reaches" {print $2}' <<<"$stats")
  req=$(awk '$1 == "tcp_mem_requests" {print $2}' <<<"$stats")
  echo "run_image_dpu.sh: the image's daemon (ELF machine $machine) served ${req:-?} memory requests, ${reach:-?} reaches into host processes"
  if [ "${reach:-x}" != 0 ] || [ "${req:-0}" = 0 ]; then
    echo "run_image_dpu.sh: the image's daemon's counts are wrong" >&2
    rc=1
  fi
fi
[ $rc = 0 ] || tail -n 20 "$dir/daemon.log" >&2
exit $rc

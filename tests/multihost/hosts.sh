#!/usr/bin/env bash
# Runs a command with H emulated hosts on this machine:
#
#   tests/multihost/hosts.sh H [--] COMMAND [ARGS...]
#
# Each host is a set of namespaces held by one sleeping process: its own
# network (one interface, eth0, address 10.77.0.<i+1>/24), hostname
# (ucc-host-<i>) and mount namespace with a private /dev/shm. The hosts
# are joined by veths to a bridge in a namespace of its own (10.77.0.254),
# so nothing of this machine's own network changes and concurrent runs do
# not meet. COMMAND runs in the calling namespaces with
#   UCCT_HOST_PIDS   the holders' pids, comma-separated, host 0 first (the
#                    test harness's ranks join them: tests/common/harness.cc)
#   UCCT_HOST_ADDRS  the hosts' addresses, in the same order
#   UCCT_BRIDGE_PID  the bridge namespace's holder (a launcher such as
#                    mpirun may run there: it reaches every host)
# Everything is removed when COMMAND ends (the namespaces go with their
# holders). Exits 77, with the reason, where namespaces cannot be made
# (not root, no unshare); otherwise with COMMAND's status.
set -u

hosts=${1:-}
shift || true
[ "${1:-}" = "--" ] && shift
if ! [[ "$hosts" =~ ^[0-9]+$ ]] || [ "$hosts" -lt 1 ] || [ "$hosts" -gt 200 ] ||
   [ $# -eq 0 ]; then
  echo "usage: $0 HOSTS(1-200) [--] COMMAND [ARGS...]" >&2
  exit 2
fi
for tool in unshare nsenter ip; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "hosts.sh: skipped: $tool is missing (util-linux, iproute2)" >&2
    exit 77
  fi
done
if ! unshare --net --mount --uts true 2>/dev/null; then
  echo "hosts.sh: skipped: cannot make network/mount/UTS namespaces here" \
       "(needs root or CAP_SYS_ADMIN)" >&2
  exit 77
fi

holders=()
cleanup() {
  for p in "${holders[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in "${holders[@]}"; do wait "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "hosts.sh: $*" >&2
  exit 1
}

# Waits until holder $1 is in namespaces of its own (its network
# namespace differs from ours) and, for a host, has taken its hostname $2.
wait_ready() {
  local pid=$1 want=${2:-} i
  for ((i = 0; i < 500; ++i)); do
    if [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" != "$(readlink /proc/self/ns/net)" ] &&
       { [ -z "$want" ] || [ "$(nsenter -t "$pid" -u hostname 2>/dev/null)" = "$want" ]; }; then
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.01
  done
  return 1
}

unshare --net sleep infinity &
bridge=$!
holders+=("$bridge")
wait_ready "$bridge" || fail "the bridge namespace did not start"
nsenter -t "$bridge" -n sh -e -c '
  ip link set lo up
  ip link add br0 type bridge
  ip addr add 10.77.0.254/24 dev br0
  ip link set br0 up' || fail "cannot make the bridge"

pids=""
addrs=""
for ((i = 0; i < hosts; ++i)); do
  name="ucc-host-$i"
  unshare --net --mount --uts --propagation private sh -c \
    "mount -t tmpfs -o mode=1777,size=4g ucc-shm /dev/shm && hostname $name && exec sleep infinity" &
  pid=$!
  holders+=("$pid")
  wait_ready "$pid" "$name" || fail "host $i did not start"
  addr="10.77.0.$((i + 1))"
  nsenter -t "$bridge" -n sh -e -c "
    ip link add vb$i type veth peer name eth0 netns $pid
    ip link set vb$i master br0
    ip link set vb$i up" || fail "cannot connect host $i"
  nsenter -t "$pid" -n sh -e -c "
    ip link set lo up
    ip addr add $addr/24 dev eth0
    ip link set eth0 up" || fail "cannot give host $i its address"
  pids+="${pids:+,}$pid"
  addrs+="${addrs:+,}$addr"
done

export UCCT_HOST_PIDS="$pids" UCCT_HOST_ADDRS="$addrs" UCCT_BRIDGE_PID="$bridge"
"$@"
rc=$?
exit "$rc"

#!/usr/bin/env bash
# Runs a command in dpu mode with each emulated host's DPU a computer of
# its own, the way a BlueField-class card is one:
#
#   tests/multihost/hosts.sh $((2*H)) tests/dpu/run_dpu.sh BUILD H -- CMD...
#
# hosts.sh makes 2*H hosts (network, UTS and mount namespaces of their
# own, private /dev/shm, joined by a bridge on 10.77.0.0/24). The first H
# are hosts; host h's DPU is namespace H+h. Each host-DPU pair gets a
# private link of its own, named and addressed as on BlueField
# (tmfifo_net0: the host 192.168.100.1, the DPU 192.168.100.2), and the
# DPU's firmware_sim serves it there (--listen 192.168.100.2:18700, the
# address UCC_DPU_ADDR=auto picks) with a fresh key, its engines reaching
# the other DPUs' over verbs (connection setup on the bridge) and its
# hosts' memory over verbs only. The daemon's unix socket sits in the
# DPU's private /dev/shm: nothing on a host can reach it. CMD's ranks
# join the H host namespaces (UCCT_HOST_PIDS is cut to them).
#
# Each daemon also runs in a pid namespace of its own, where no host
# process exists to be named: the kernel refuses it any reach into a
# host. Over verbs, the test provider's bytes are moved by its "NIC", a
# process of its own started here in the root pid namespace
# (tests/verbs_loop/verbs_loop_nic.h, VERBS_LOOP_NIC), for the hosts and
# the daemons alike; what the namespaces still share is /tmp, where the
# provider's fabric file (the NIC's state) and the NIC's socket live.
# Afterwards each daemon must report no reach of its own into a host
# process (--stats: foreign_reaches), and the NIC must have moved bytes.
#
# With UCCT_DPU_MEM=tcp, the TCP fallback instead (UCC_DPU_MEM=tcp): no
# RDMA anywhere, the DPUs' engines joined over TCP (--tcp-net); each must
# have served its hosts' memory over TCP.
#
# Needs UCC_VERBS_LIB (tests/verbs_loop's provider, or a real one), but
# for the fallback.
# Exit: CMD's status; 1 when a daemon died or never listened.
set -u
build=$(cd "$1" && pwd) n=$2
shift 2
[ "${1:-}" = "--" ] && shift
fw="$build/firmware_sim/firmware_sim"
mem=${UCCT_DPU_MEM:-verbs}
apart=(unshare --pid --kill-child --mount-proc)
if [ "$mem" = tcp ]; then
  net=(--tcp-net --net-if eth0)
else
  : "${UCC_VERBS_LIB:?run_dpu.sh needs UCC_VERBS_LIB}"
  if ! "$fw" --has-verbs; then
    echo "SKIP: firmware_sim built without verbs (install libibverbs-dev)"
    exit 77
  fi
  net=(--verbs auto --verbs-lib "$UCC_VERBS_LIB" --net-if eth0)
fi
IFS=, read -ra pids <<<"${UCCT_HOST_PIDS:?run under tests/multihost/hosts.sh}"
IFS=, read -ra addrs <<<"$UCCT_HOST_ADDRS"
if [ "${#pids[@]}" -ne $((2 * n)) ]; then
  echo "run_dpu.sh: needs hosts.sh $((2 * n)) for $n hosts" >&2
  exit 2
fi
dir=$(mktemp -d /tmp/ucc-dpu.XXXXXX)
daemons=()
cleanup() {
  # unshare --fork ignores SIGTERM itself: its child, the daemon, first.
  for p in "${daemons[@]}"; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
  [ -n "${nic:-}" ] && kill "$nic" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
nic=""
if [ "$mem" != tcp ] && [ -x "$build/tests/verbs_loop_nic" ] &&
  [[ "$UCC_VERBS_LIB" == *libverbs_loop.so ]]; then
  "$build/tests/verbs_loop_nic" --socket "$dir/nic.sock" >"$dir/nic.log" 2>&1 &
  nic=$!
  for ((i = 0; i < 500; i++)); do
    [ -S "$dir/nic.sock" ] && break
    sleep 0.01
  done
  export VERBS_LOOP_NIC="$dir/nic.sock"
fi
key="$dir/key"
(umask 077 && head -c 32 /dev/urandom | base64 >"$key")
for ((h = 0; h < n; h++)); do
  hp=${pids[h]} dp=${pids[n + h]}
  ip link add "ucc-dh$h-$$" type veth peer name "ucc-dd$h-$$" &&
    ip link set "ucc-dh$h-$$" netns "$hp" name tmfifo_net0 &&
    ip link set "ucc-dd$h-$$" netns "$dp" name tmfifo_net0 &&
    nsenter -t "$hp" -n ip addr add 192.168.100.1/30 dev tmfifo_net0 &&
    nsenter -t "$hp" -n ip link set tmfifo_net0 up &&
    nsenter -t "$dp" -n ip addr add 192.168.100.2/30 dev tmfifo_net0 &&
    nsenter -t "$dp" -n ip link set tmfifo_net0 up ||
    { echo "run_dpu.sh: cannot link host $h to its DPU" >&2; exit 1; }
  nsenter -t "$dp" -n -m -u "${apart[@]}" "$fw" \
    --socket /dev/shm/firmware-sim.sock "${net[@]}" \
    --listen 192.168.100.2:18700 --key-file "$key" --node "dpu$h" \
    --sleep-ms 1 >"$dir/dpu$h.log" 2>&1 &
  daemons+=($!)
done
for ((h = 0; h < n; h++)); do
  up=0
  for ((i = 0; i < 500; i++)); do
    if nsenter -t "${pids[h]}" -n bash -c \
      'exec 3<>/dev/tcp/192.168.100.2/18700' 2>/dev/null; then
      up=1
      break
    fi
    sleep 0.01
  done
  if [ $up = 0 ]; then
    echo "run_dpu.sh: the DPU of host $h does not listen" >&2
    cat "$dir/dpu$h.log" >&2
    exit 1
  fi
done
UCCT_HOST_PIDS=$(IFS=,; echo "${pids[*]:0:n}")
UCCT_HOST_ADDRS=$(IFS=,; echo "${addrs[*]:0:n}")
export UCCT_HOST_PIDS UCCT_HOST_ADDRS UCC_OFFLOAD=dpu UCC_DPU_KEY_FILE="$key"
export UCC_DPU_MEM=$mem
# The default address is the point; a site file on this machine would
# change it.
[ -e /etc/ucc/dpu.addr ] && export UCC_DPU_ADDR=192.168.100.2:18700
"$@"
rc=$?
# The daemons' pid namespaces: their own, holding none of the hosts.
me=$(readlink /proc/self/ns/pid)
for ((h = 0; h < n; h++)); do
  d=$(pgrep -P "${daemons[h]}" | head -n 1)
  ns=$(readlink "/proc/${d:-0}/ns/pid" 2>/dev/null)
  if [ -z "$ns" ] || [ "$ns" = "$me" ]; then
    echo "run_dpu.sh: the DPU of host $h is not in a pid namespace of its own" >&2
    rc=1
  fi
done
for ((h = 0; h < n; h++)); do
  if ! kill -0 "${daemons[h]}" 2>/dev/null; then
    echo "run_dpu.sh: the DPU of host $h died" >&2
    cat "$dir/dpu$h.log" >&2
    rc=1
    continue
  fi
  # The daemon served, and never reached into a host process itself: only
  # the NIC moved host bytes (docs/dpu.md).
  stats=$(nsenter -t "${pids[n + h]}" -n -m -u "$fw" \
    --socket /dev/shm/firmware-sim.sock --stats)
  reg=$(awk '$1 == "registered" {print $2}' <<<"$stats")
  reach=$(awk '$1 == "foreign_reaches" {print $2}' <<<"$stats")
  tcpreq=$(awk '$1 == "tcp_mem_requests" {print $2}' <<<"$stats")
  pushed=$(awk '$1 == "pushed" {print $2}' <<<"$stats")
  echo "run_dpu.sh: DPU $h: $reg registrations served, $reach reaches into host processes, ${tcpreq:-?} memory requests over TCP, ${pushed:-?} descriptors pushed"
  if [ "${reach:-x}" != 0 ]; then
    echo "run_dpu.sh: the DPU of host $h reached into a host process" >&2
    rc=1
  fi
  if [ "$mem" = tcp ] && [ "${tcpreq:-0}" = 0 ]; then
    echo "run_dpu.sh: the DPU of host $h served no memory over TCP" >&2
    rc=1
  fi
  # Over verbs the hosts push their descriptors (UCC_DPU_RING=push).
  if [ "$mem" != tcp ] && [ "${UCC_DPU_RING:-push}" = push ] &&
    [ "${pushed:-0}" = 0 ]; then
    echo "run_dpu.sh: no descriptor was pushed to the DPU of host $h" >&2
    rc=1
  fi
done
if [ -n "$nic" ]; then
  kill "$nic" && wait "$nic"
  cat "$dir/nic.log"
  if ! grep -q "[1-9][0-9]* copies" "$dir/nic.log"; then
    echo "run_dpu.sh: the NIC moved nothing" >&2
    rc=1
  fi
fi
[ $rc = 0 ] || tail -n 20 "$dir"/dpu*.log >&2
exit $rc

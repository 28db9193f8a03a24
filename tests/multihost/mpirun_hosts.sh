#!/usr/bin/env bash
# Runs ucc_perftest under Open MPI's mpirun with its ranks on the emulated
# hosts of hosts.sh (run this under it):
#   mpirun_hosts.sh RANKS_PER_HOST PERFTEST [PERFTEST ARGS...]
# Every UCC_* variable of the caller's environment goes to the ranks
# (e.g. UCC_ALLREDUCE_ALG=rd for the flat algorithm). UCCT_MAP_BY=node
# places the ranks round-robin over the hosts (mpirun --map-by node)
# instead of host by host. Rank r is bound to core r where the ranks fit
# the CPUs, else none is bound.
# mpirun runs in the bridge namespace, from where it reaches every host;
# it starts its daemons on the hosts through ns_rsh.sh, as it would
# through ssh. Exits 77 where mpirun is missing or ucc_perftest was built
# without MPI; else with mpirun's status, after checking that the
# benchmark saw all ranks on all hosts.
set -u
here=$(cd "$(dirname "$0")" && pwd)
per=${1:?usage: mpirun_hosts.sh RANKS_PER_HOST PERFTEST [ARGS...]}
shift
perftest=${1:?usage: mpirun_hosts.sh RANKS_PER_HOST PERFTEST [ARGS...]}
shift
if ! command -v mpirun >/dev/null 2>&1; then
  echo "mpirun_hosts.sh: skipped: no mpirun (apt-get install openmpi-bin)" >&2
  exit 77
fi
: "${UCCT_BRIDGE_PID:?run under tests/multihost/hosts.sh}"
IFS=, read -r -a addrs <<< "$UCCT_HOST_ADDRS"
hostlist=""
for a in "${addrs[@]}"; do hostlist+="${hostlist:+,}$a:$per"; done
n=$((per * ${#addrs[@]}))
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
pass=()
for v in $(compgen -e | grep '^UCC_'); do pass+=(-x "$v"); done
out=$(mktemp)
rankfile=$(mktemp)
trap 'rm -f "$out" "$rankfile"' EXIT
# Cores: every emulated host's mpirun daemon binds its own ranks from core
# 0 up (Open MPI binds to cores up to 2 ranks, to the socket above), so at
# 2 hosts x 1 rank both ranks shared core 0 while core 1 idled. Where the
# job's ranks fit the CPUs, a rankfile gives rank r core r, as separate
# hosts would give each its own; with more ranks than CPUs none is bound
# and the scheduler spreads them.
if [ "$n" -le "$(nproc)" ]; then
  for ((r = 0; r < n; r++)); do
    if [ "${UCCT_MAP_BY:-}" = node ]; then h=$((r % ${#addrs[@]})); else h=$((r / per)); fi
    echo "rank $r=${addrs[h]} slot=$r" >> "$rankfile"
  done
  pass+=(--rankfile "$rankfile")
else
  [ -n "${UCCT_MAP_BY:-}" ] && pass+=(--map-by "$UCCT_MAP_BY")
  pass+=(--bind-to none)
fi
nsenter -t "$UCCT_BRIDGE_PID" -n -- \
  mpirun "${root[@]}" -np "$n" --host "$hostlist" \
    --mca plm_rsh_agent "$here/ns_rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl tcp,self,vader --mca btl_tcp_if_include 10.77.0.0/24 \
    --mca oob_tcp_if_include 10.77.0.0/24 \
    "${pass[@]}" \
    "$perftest" "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || exit "$rc"
if grep -q "without MPI" "$out"; then
  echo "mpirun_hosts.sh: skipped: ucc_perftest was built without MPI" >&2
  exit 77
fi
# The benchmark's header names each rank's host: all of them must show.
want="${#addrs[@]} (ucc-host-0: $per"
if ! grep -q "^# Hosts: *$want" "$out"; then
  echo "mpirun_hosts.sh: the ranks were not placed on ${#addrs[@]} hosts," \
       "$per each" >&2
  exit 1
fi

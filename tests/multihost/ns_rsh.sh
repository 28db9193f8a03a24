#!/usr/bin/env bash
# Open MPI's remote-shell agent for the hosts of hosts.sh:
#   ns_rsh.sh [OPTIONS] HOST COMMAND...
# runs COMMAND in the namespaces (network, UTS, mount) of the emulated host
# whose address is HOST (UCCT_HOST_ADDRS / UCCT_HOST_PIDS, set by
# hosts.sh), as ssh would run it on a real host. Options an ssh would
# take (Open MPI passes none by default) are skipped.
set -u
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
host=${1:?usage: ns_rsh.sh HOST COMMAND...}
shift
IFS=, read -r -a addrs <<< "${UCCT_HOST_ADDRS:?not under hosts.sh}"
IFS=, read -r -a pids <<< "${UCCT_HOST_PIDS:?not under hosts.sh}"
for i in "${!addrs[@]}"; do
  if [ "${addrs[$i]}" = "$host" ]; then
    exec nsenter -t "${pids[$i]}" -n -u -m -- /bin/sh -c "$*"
  fi
done
echo "ns_rsh.sh: no emulated host $host" >&2
exit 255

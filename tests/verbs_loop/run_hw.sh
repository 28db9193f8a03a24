#!/usr/bin/env bash
# The verbs ctests over real RDMA hardware instead of tests/verbs_loop's
# provider: the hosts matrices and Verbs.* (the fault cases skip: they
# need the provider's injection), ranks 2 per emulated host (UCC_HOST_ID),
# so cross-host steps go through the device (a loopback through the NIC).
#
#   tests/verbs_loop/run_hw.sh BUILD [gtest filter]
#
# Exit 77 (skipped) with a message where no active port exists, or the
# build has no verbs transport. UCC_NET_DEVICES / UCC_NET_GID_INDEX pick
# the port and GID as for any run.
set -u
build=$1
filter=${2:-"Mp/Collectives.*default*:Mp/CollectivesV.*default*:Verbs.*"}
if ! grep -q '^UCC_VERBS_INCLUDE:PATH=/' "$build/CMakeCache.txt"; then
  echo "SKIP: built without the verbs transport (install libibverbs-dev)"
  exit 77
fi
if ! command -v ibv_devinfo >/dev/null 2>&1; then
  echo "SKIP: no ibv_devinfo (ibverbs-utils): cannot tell whether an RDMA port is up"
  exit 77
fi
if ! ibv_devinfo 2>/dev/null | grep -q "PORT_ACTIVE"; then
  echo "SKIP: no active RDMA port (ibv_devinfo lists none)"
  exit 77
fi
ibv_devinfo | grep -E "hca_id|port:|state|link_layer" | sed 's/^/  /'
unset UCC_VERBS_LIB VERBS_LOOP_FAULTS
exec env UCC_NET=verbs UCCT_RANKS_PER_HOST=2 \
  "$build/tests/ucc_mp_tests" "--gtest_filter=$filter" --gtest_brief=1

#!/usr/bin/env bash
# The provider's own tests with its "NIC" moving every byte
# (verbs_loop_nic.h), and the NIC's (test_verbs_loop_nic.cc): the NIC in this pid namespace, the tests in a pid
# namespace of their own, where they could not name each other's
# processes to the kernel at all (their pids there are not the NIC's).
#
#   tests/verbs_loop/run_nic.sh BUILD
#
# Exit 77 (skipped) where a pid namespace cannot be made (not root).
set -u
build=$(cd "$1" && pwd)
if ! unshare --pid --fork --mount-proc true 2>/dev/null; then
  echo "SKIP: cannot make a pid namespace here (unshare needs root)"
  exit 77
fi
dir=$(mktemp -d /tmp/verbs_loop_nic.XXXXXX)
"$build/tests/verbs_loop_nic" --socket "$dir/nic.sock" >"$dir/nic.log" 2>&1 &
nic=$!
trap 'kill $nic 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
for ((i = 0; i < 500; i++)); do
  [ -S "$dir/nic.sock" ] && break
  sleep 0.01
done
export VERBS_LOOP_NIC="$dir/nic.sock" VERBS_LOOP_FABRIC="$dir/fabric"
unshare --pid --fork --mount-proc "$build/tests/verbs_loop_tests" --gtest_brief=1
rc=$?
# The NIC's own protocol: copies, liveness, refusals.
unshare --pid --fork --mount-proc "$build/tests/verbs_loop_nic_tests" \
  --gtest_brief=1 || rc=1
kill "$nic" && wait "$nic"
cat "$dir/nic.log"
# Every RDMA and SEND test moved its bytes through the NIC, dma-buf ones
# through the files it opened.
if ! grep -qE "[1-9][0-9]* copies, .* [1-9][0-9]* files opened" "$dir/nic.log"; then
  echo "run_nic.sh: the NIC did not move the tests' bytes" >&2
  rc=1
fi
exit $rc

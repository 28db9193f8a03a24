#!/usr/bin/env bash
# The library and firmware_sim reach into another process by the kernel
# only in the functions that count it (platform/os/proc_id.h,
# note_foreign_reach, note_foreign_copy): cross-memory attach in
# platform/mem/cma.cc, /proc of
# another pid in platform/os/proc_id.cc and platform/mem/proc_maps.cc,
# another process's fds in platform/os/segment.cc. Any other source file
# of api/ host/ device/ offload/ platform/ firmware_sim/ that names
# process_vm_readv/writev or builds a /proc/<pid> path fails this check,
# so dpu mode's "the daemon never reached a host" (Dpu.OnlyTheNicReachesHostMemory)
# cannot be bypassed by a call the counter does not see.
#
#   tests/tools/check_host_reach.sh [REPO]     (ctest: host_reach_counted)
set -uo pipefail
repo="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
cd "$repo" || exit 2
allowed='^(platform/mem/cma\.cc|platform/os/proc_id\.cc|platform/mem/proc_maps\.cc|platform/os/segment\.cc)$'
bad=0
while IFS= read -r f; do
  [[ "$f" =~ $allowed ]] && continue
  # Code, not comments: drop // comments before looking (read whole into a
  # variable: a grep -q in a pipe leaves at its first match, and sed's
  # SIGPIPE would fail the pipeline under pipefail, hiding the match).
  code=$(sed 's|//.*||' "$f")
  if grep -qE 'process_vm_(readv|writev) *\(|SYS_process_vm|"/proc/%d|"/proc/" *<<|/proc/%s' <<<"$code"; then
    echo "$f reaches another process outside the counted functions"
    bad=1
  fi
done < <(git ls-files api host device offload platform firmware_sim 2>/dev/null |
         grep -E '\.(cc|h|c)$')
# And the counted functions do count (cross-memory attach as a copy,
# note_foreign_copy, which counts the reach too).
for f in platform/os/proc_id.cc platform/mem/proc_maps.cc platform/os/segment.cc; do
  grep -q 'note_foreign_reach(' "$f" || { echo "$f does not count"; bad=1; }
done
grep -q 'note_foreign_copy(' platform/mem/cma.cc ||
  { echo "platform/mem/cma.cc does not count"; bad=1; }
[ $bad = 0 ] && echo "host reach: only in the counted functions"
exit $bad

#!/usr/bin/env bash
# PyTorch's distributed suite through this library beside gloo, and DDP
# training against gloo, at several world sizes, inline and emu: the
# table docs/runtimes.md gives. Long (the whole suite takes the better
# part of an hour per backend on a 2-core machine); CI runs a subset
# (ctest -L torch).
#
#   tests/torch/run_all.sh BUILD_DIR [-k PATTERN]...
#
# Env: WORLDS (default "2 3"), DDP_WORLDS ("2 4"), DDP_STEPS (300),
# OUT (a directory for every run's per-test results; default a temporary
# one, printed). Prints one table row per run:
#   | mode | backend | world | passed | failed | skipped | errors | time |
# then the DDP lines, and lists the tests that fail with ucc but pass
# with gloo. Exit 0 even when tests fail: the table is the result.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
shift
"$here/build_pg_ucc.sh" "$build" >/dev/null || exit $?
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
echo "results in $out"
echo "| mode | backend | world | passed | failed | skipped | errors | time |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for w in ${WORLDS:-2 3}; do
  for run in "inline ucc" "emu ucc" "inline gloo"; do
    read -r mode backend <<<"$run"
    log="$out/$mode-$backend-$w"
    t0=$SECONDS
    if [ "$backend" = ucc ]; then
      "$here/run_torch.sh" "$build" "$mode" dist "$w" "$@" >"$log.txt" 2>"$log.err"
    else
      "$here/run_dist_tests.sh" "$build" "$backend" "$w" "$@" >"$log.txt" 2>"$log.err"
    fi
    read -r p f s e < <(tail -n1 "$log.txt" |
      sed -E 's/.*passed ([0-9]+) failed ([0-9]+) skipped ([0-9]+) errors ([0-9]+).*/\1 \2 \3 \4/')
    echo "| $mode | $backend | $w | $p | $f | $s | $e | $((SECONDS - t0)) s |"
  done
  for mode in inline emu; do
    bad=$(join <(grep -E ' (FAIL|ERROR)' "$out/$mode-ucc-$w.txt" | awk '{print $1}' | sort) \
               <(grep -E ' ok$' "$out/inline-gloo-$w.txt" | awk '{print $1}' | sort))
    [ -n "$bad" ] && echo "ucc $mode world $w fails, gloo passes: $(echo $bad)"
  done
done
for w in ${DDP_WORLDS:-2 4}; do
  for mode in inline emu; do
    "$here/run_torch.sh" "$build" "$mode" ddp "$w" "${DDP_STEPS:-300}" 2>/dev/null |
      sed "s/^/$mode: /"
  done
done

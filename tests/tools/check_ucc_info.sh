#!/usr/bin/env bash
# ucc_info -c lists every knob of docs/configuration.md (which
# tests/unit/test_config.cc keeps equal to the library's table), each once,
# and -f documents each; -v, -b, -A and -s answer; no option is usage and
# a failure, as in UCC's tool.
set -euo pipefail
info=$1
doc=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The knob tables only: not the variables read from the environment alone
# (their section), which no configuration shows.
awk '/^## The environment only/ {skip = 1; next} /^## / {skip = 0} !skip' "$doc" |
  grep -o '^| `UCC_[A-Z0-9_]*`' | sed 's/^| `//; s/`$//' | sort >"$scratch/doc"
env -i PATH="$PATH" "$info" -c | sed -n 's/^\(UCC_[A-Z0-9_]*\)=.*/\1/p' | sort >"$scratch/info"
if ! diff -u "$scratch/doc" "$scratch/info"; then
  echo "ucc_info -c and docs/configuration.md list different knobs" >&2
  exit 1
fi
[ -z "$(uniq -d "$scratch/info")" ] || { echo "a knob listed twice" >&2; exit 1; }
n=$(wc -l <"$scratch/doc")
[ "$n" -gt 40 ] || { echo "only $n knobs in $doc" >&2; exit 1; }
# -f: a doc line before every knob.
docs=$(env -i PATH="$PATH" "$info" -f | grep -c '^# [A-Za-z]' || true)
[ "$docs" -ge "$n" ] || { echo "-f documents $docs of $n knobs" >&2; exit 1; }
# Each output is read whole before it is searched: grep -q leaves at its
# first match, and a tool still writing (-A is more than one stdio buffer)
# would die of SIGPIPE, which pipefail reports as a failure.
has() { # has PATTERN OPTION... : the tool's whole output matches PATTERN
  local pattern=$1 out
  shift
  out=$("$@")
  grep -q -- "$pattern" <<<"$out"
}
# A value from the environment shows.
has '^UCC_SHM_NSEGS=16$' env UCC_SHM_NSEGS=16 "$info" -c
has '^# UCC version=[0-9]' "$info" -v
has '^#define UCC_HAVE_VERBS' "$info" -b
has '^  allreduce$' "$info" -A
has 'No CL or TL components' "$info" -s
has '^Usage: ucc_info' "$info" -h
if "$info" >/dev/null; then echo "no option must fail" >&2; exit 1; fi
if "$info" -x >/dev/null 2>&1; then echo "-x must fail" >&2; exit 1; fi
echo "ucc_info: $n knobs listed, as docs/configuration.md has them"

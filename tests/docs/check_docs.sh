#!/usr/bin/env bash
# The docs name what exists. Every word in backticks in README.md and
# docs/ that looks like a repository path (a/b, a/b.cc, a file name with a
# source extension) must name a file or folder of the repository (or a
# header by its include path: ucc/api/ucc.h, offload/descriptor.h); every
# qualified name (Engine::submit_known, plat::Net) must name something the
# sources define. Prints each stale one with its place; exit 1 if any.
#
#   tests/docs/check_docs.sh [REPO]     (ctest: docs_names_exist)
#
# What no longer exists but the history names (a function removed in a
# commit the text cites) is written without backticks.
# Not checked: what lies outside the repository or is built (../shared,
# /proc/..., build/..., ./build/...), commands with spaces, URLs.
set -uo pipefail
repo="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
cd "$repo" || exit 2

files=$(ls README.md docs/*.md docs/perf/*.md 2>/dev/null)
# Everything the repository holds, and every source word (for names).
tracked=$( (git ls-files && git ls-files --others --exclude-standard) \
           2>/dev/null || find . -type f | sed 's|^\./||')
srcdirs="api host device offload platform firmware_sim tests cmake"
words=$(cat CMakeLists.txt $(printf '%s\n' $tracked |
          grep -E '^('"$(echo $srcdirs | tr ' ' '|')"')/.*\.(h|cc|c|def|cmake|sh|txt|py)$') 2>/dev/null \
        | grep -oE '[A-Za-z_~][A-Za-z0-9_]*' | sort -u)
basenames=$(printf '%s\n' $tracked | sed 's|.*/||' | sort -u)
# Names of other projects that the docs cite (Open MPI's coll/ucc and
# sources, UCC's component kinds, PyTorch's sources and tests): not ours
# to check.
foreign='^(coll/ucc|ompi/|opal/|cl/|tl/|mc/|ec/|test/mpi|src/ucc/|torch/|test/cpp/|test/distributed/)'
foreign_files='^(distributed_c10d|run_test)\.py$'
# Open MPI's parameters (MCA), and the gtest cases of the collectives
# matrix by their generated names (allreduce_default_n8).
foreign_words='^(coll_ucc_[a-z_]+|mpi_[a-z_]+|[a-z_]+_n[0-9]+)$'

exists_path() {  # a path of the repository, or of an include root
  local p="${1%/}"
  for root in "" api/ offload/include/; do
    [ -e "$repo/$root$p" ] && return 0
  done
  # A path inside a folder the text is about (fabric/inbox.h in a
  # paragraph on platform/): the end of one repository path.
  grep -qE "(^|/)${p//./\\.}(/|$)" <<< "$tracked" && return 0
  # A folder named without its last part's extension (tests/perf/ucc_perftest
  # is tests/perf/ucc_perftest.cc's program).
  ls "$repo/$p".* >/dev/null 2>&1 && return 0
  return 1
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
report() { echo "$1: \`$2\` $3"; }

for f in $files; do
  # One backticked word per line, with its line number.
  grep -noE '`[^` ]+`' "$f" | while IFS=: read -r line tok; do
    t="${tok#\`}"; t="${t%\`}"
    case "$t" in
      ../*|/*|~*|build/*|./build*|build-*|'$'*|http*|*://*|-*|*'*'*) continue ;;
    esac
    [[ "$t" == *::* ]] || t="${t%%:*}"  # file.cc:function -> file.cc
    t="${t%,}"
    if [[ "$t" =~ ^[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+<>-]*)+$ ]]; then
      [[ "$t" == *'<'* ]] && continue  # a pattern: <coll>_<name>.cc
      [[ "$t" =~ ^[0-9.]+/ ]] && continue  # a ratio or size: 1/2
      [[ "$t" =~ ^[A-Z_]+= ]] && continue  # an assignment
      [[ "$t" =~ $foreign ]] && continue
      exists_path "$t" || report "$f:$line" "$t" "names no file or folder"
    elif [[ "$t" =~ ^[A-Za-z0-9_+-]+\.(cc|h|c|def|cmake|sh|md|txt|py)$ ]]; then
      [[ "$t" =~ $foreign_files ]] && continue
      grep -qxF "$t" <<< "$basenames" ||
        report "$f:$line" "$t" "names no file of the repository"
    elif [[ "$t" =~ ^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_~][A-Za-z0-9_]*)+(\(\))?$ ||
            "$t" =~ ^[a-z][a-z0-9]*(_[a-z0-9]+)+(\(\))?$ ]]; then
      # A qualified name, or a snake_case one (a function, a member): the
      # last part is a word of the sources.
      name="${t%()}"; name="${name##*::}"
      [[ "$name" =~ $foreign_words ]] && continue
      grep -qxF "$name" <<< "$words" ||
        report "$f:$line" "$t" "names nothing the sources define"
    fi
  done
done > "$out"
n=$(wc -l < "$out")
cat "$out"
if [ "$n" -ne 0 ]; then
  echo "$n stale name(s) in the docs"
  exit 1
fi
echo "docs: every path and name in backticks exists"

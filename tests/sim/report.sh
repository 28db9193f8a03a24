#!/usr/bin/env bash
# The tables and plots of docs/scale.md from the runs sweep.sh keeps:
# rewrites the part of DOC between its "<!-- sweep:begin -->" and
# "<!-- sweep:end -->" lines, and draws PNGs beside it (gnuplot; Debian:
# gnuplot-nox).
#
#   tests/sim/report.sh DATADIR DOC PNGDIR
set -euo pipefail
dir=${1:?usage: report.sh DATADIR DOC PNGDIR}
doc=${2:?usage: report.sh DATADIR DOC PNGDIR}
pngdir=${3:?usage: report.sh DATADIR DOC PNGDIR}
colls="allreduce bcast barrier allgather alltoall reduce_scatter"
ranks=$(ls "$dir" | sed -n 's/^[a-z_]*_n\([0-9]*\)_ppn[0-9]*\.txt$/\1/p' |
  sort -n | uniq)
cols=()
for ppn in 1 8; do
  for n in $ranks; do
    ls "$dir"/*_n${n}_ppn${ppn}.txt >/dev/null 2>&1 && cols+=("$n:$ppn")
  done
done

# One column of a table: avg(us) of run $1 at size $2, or "-".
cell() {
  local f=$1 size=$2
  [ -f "$f" ] || { echo "-"; return; }
  awk -v s="$size" '/^ +[0-9]/ && $2 == s { v = $3 } END { print v == "" ? "-" : v }' "$f"
}
# A header line's value: field after "# Name:".
head_val() {
  sed -n "s/^# $2: *//p" "$1" | head -1
}

tables() {
  echo "Simulated time per collective (us; avg over ranks), by message size"
  echo "and by ranks (n) at 1 and 8 ranks per host; \"-\" where the run"
  echo "stopped first (its time or memory cap, tests/sim/sweep.sh)."
  for coll in $colls; do
    echo
    echo "#### $coll"
    echo
    printf "| size (B) |"
    for c in "${cols[@]}"; do printf " n=%s x%s |" "${c%%:*}" "${c##*:}"; done
    echo
    printf "| ---: |"
    for c in "${cols[@]}"; do printf " ---: |"; done
    echo
    sizes=$(cat "$dir"/${coll}_n*_ppn*.txt 2>/dev/null |
      awk '/^ +[0-9]/ { print $2 }' | sort -n | uniq)
    for s in $sizes; do
      printf "| %s |" "$s"
      for c in "${cols[@]}"; do
        printf " %s |" "$(cell "$dir/${coll}_n${c%%:*}_ppn${c##*:}.txt" "$s")"
      done
      echo
    done
  done
  echo
  echo "#### Team setup, memory and peers (from the allreduce runs)"
  echo
  echo "| ranks | per host | setup (us, simulated) | resident per rank | heap per rank | peers connected | peers exchanged with |"
  echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  for c in "${cols[@]}"; do
    f=$dir/allreduce_n${c%%:*}_ppn${c##*:}.txt
    [ -f "$f" ] || continue
    setup=$(head_val "$f" "Setup" | awk '{print $1}')
    res=$(head_val "$f" "Memory per rank" | awk '{print $1, $2}')
    heap=$(head_val "$f" "Memory per rank" | awk '{print $4, $5}')
    con=$(head_val "$f" "Peers connected" | awk '{print $1}')
    ex=$(head_val "$f" "Peers exchanged with" | awk '{print $1}')
    echo "| ${c%%:*} | ${c##*:} | ${setup:--} | ${res:--} | ${heap:--} | ${con:--} | ${ex:--} |"
  done
}

# The doc: everything outside the markers stays.
tmp=$(mktemp)
awk -v t="$(tables)" '
  /<!-- sweep:begin -->/ { print; print t; skip = 1; next }
  /<!-- sweep:end -->/ { skip = 0 }
  !skip { print }' "$doc" > "$tmp"
mv "$tmp" "$doc"

command -v gnuplot >/dev/null || { echo "report.sh: no gnuplot, no plots" >&2; exit 0; }
mkdir -p "$pngdir"
for what in latency busbw; do
  col=3 ylabel="simulated time per collective (us)" ylog="set logscale y"
  [ $what = busbw ] && col=7 ylabel="bus bandwidth (GB/s)" ylog="unset logscale y"
  {
    echo "set terminal png size 1500,900 noenhanced"
    echo "set output '$pngdir/scale_$what.png'"
    echo "set multiplot layout 2,3 title 'ucc_simperf on $(head_val "$dir/allreduce_n64_ppn1.txt" Platform | xargs basename), 1 rank per host'"
    echo "set logscale x 2; $ylog; set key left top; set grid"
    echo "set format x '%.0s%cB'"
    echo "set xlabel 'message size (B)'; set ylabel '$ylabel'"
    for coll in $colls; do
      [ $coll = barrier ] && continue
      plots=()
      for n in $ranks; do
        f=$dir/${coll}_n${n}_ppn1.txt
        [ -s "$f" ] && grep -q '^ ' "$f" &&
          plots+=("'< grep \"^ \" $f' using 2:$col with linespoints title 'n=$n'")
      done
      echo "set title '$coll'"
      [ ${#plots[@]} -gt 0 ] && (IFS=,; echo "plot ${plots[*]}")
    done
    echo "unset multiplot"
  } | gnuplot
done
echo "report.sh: $doc, $pngdir/scale_latency.png, $pngdir/scale_busbw.png"

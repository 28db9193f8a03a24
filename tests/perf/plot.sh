#!/usr/bin/env bash
# Plots the tables compare.sh keeps (--out DIR): per rank count, one PNG of
# latency and one of bus bandwidth against message size, ours beside MPI's,
# one panel per collective. Needs gnuplot (Debian: gnuplot-nox).
#
#   tests/perf/plot.sh DIR OUTDIR
#
# Writes OUTDIR/latency_n<ranks>.png and OUTDIR/busbw_n<ranks>.png for every
# rank count found in DIR (files <coll>_n<ranks>.txt).
set -euo pipefail

dir=${1:?usage: plot.sh DIR OUTDIR}
outdir=${2:?usage: plot.sh DIR OUTDIR}
command -v gnuplot >/dev/null || { echo "plot.sh: needs gnuplot" >&2; exit 1; }
mkdir -p "$outdir"

colls="allreduce bcast reduce allgather alltoall reduce_scatter"
ranks=$(ls "$dir" | sed -n 's/^allreduce_n\([0-9]*\)\.txt$/\1/p' | sort -n)
[ -n "$ranks" ] || { echo "plot.sh: no allreduce_n*.txt in $dir" >&2; exit 1; }
mpi=$(sed -n 's/^# Compared with: *\([^(]*\).*/\1/p' "$dir"/allreduce_n*.txt | head -1)
mpi=${mpi% }

# Table columns (ucc_perftest --compare mpi): 2 size(B), 3 avg(us),
# 7 busbw(GB/s), 8 mpi(us), 9 mpi_busbw.
for n in $ranks; do
  for what in latency busbw; do
    if [ $what = latency ]; then
      ours=3 theirs=8 ylabel="time per collective (us)" ylog="set logscale y"
    else
      ours=7 theirs=9 ylabel="bus bandwidth (GB/s)" ylog="unset logscale y"
    fi
    {
      echo "set terminal pngcairo size 1400,900 font ',10' noenhanced"
      echo "set output '$outdir/${what}_n$n.png'"
      echo "set multiplot layout 2,3 title '$n ranks, 2-vCPU VM: ucc (inline) vs $mpi, float32, ucc_perftest --compare mpi'"
      echo "set logscale x 2; $ylog; set grid"
      echo "set format x '%.0b%BB'; set xlabel 'message size'; set ylabel '$ylabel'"
      echo "set key top left"
      for c in $colls; do
        f="$dir/${c}_n$n.txt"
        [ -f "$f" ] || continue
        echo "set title '$c'"
        echo "plot '< grep -v WARNING $f' using 2:$ours with linespoints pt 7 ps 0.5 title 'ucc', '' using 2:$theirs with linespoints pt 5 ps 0.5 title '$mpi'"
      done
      echo "unset multiplot"
    } | gnuplot
  done
done
ls "$outdir"

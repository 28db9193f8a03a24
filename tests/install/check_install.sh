#!/usr/bin/env bash
# Installs the build into a scratch prefix and builds a plain-C UCC program
# against it twice: through find_package(ucc) and through pkg-config; then
# runs the TCP-rendezvous example (tcp_job) as a 3-process job, and the
# installed ucc_info and ucc_perftest.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$here/consumer" -B "$tmp/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/consumer/consumer_shared"
"$tmp/consumer/consumer_static"
pc="$tmp/prefix/lib/pkgconfig"
[ -d "$pc" ] || pc=$(dirname "$(find "$tmp/prefix" -name ucc.pc | head -n1)")
cc $(PKG_CONFIG_PATH="$pc" pkg-config --cflags ucc) "$here/consumer/main.c" \
  -o "$tmp/consumer_pc" $(PKG_CONFIG_PATH="$pc" pkg-config --libs --static ucc) \
  -Wl,-rpath,"$(PKG_CONFIG_PATH="$pc" pkg-config --variable=libdir ucc)"
"$tmp/consumer_pc"
# The example of docs/network.md: three processes on three "hosts"
# (UCC_HOST_ID), met through the TCP rendezvous on loopback.
port=$(( 20000 + RANDOM % 20000 ))
pids=()
for r in 0 1 2; do
  UCC_HOST_ID="install-check-$r" "$tmp/consumer/tcp_job" "127.0.0.1:$port" 3 $r &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
# UCC's user tools, run from the installed tree.
# The output read whole first: grep -q would leave at its match.
info=$("$tmp/prefix/bin/ucc_info" -c)
grep -q '^UCC_OFFLOAD=inline$' <<<"$info"
"$tmp/prefix/bin/ucc_perftest" -N 2 -c allreduce -b 8 -e 1K -n 3 -w 1 >/dev/null
echo "install check: find_package(ucc) and pkg-config ucc both work; tcp_job ran on 3 hosts; ucc_info and ucc_perftest run from bin/"

#!/usr/bin/env bash
# Installs the build into a scratch prefix and builds a plain-C UCC program
# against it twice: through find_package(ucc) and through pkg-config.
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
echo "install check: find_package(ucc) and pkg-config ucc both work"

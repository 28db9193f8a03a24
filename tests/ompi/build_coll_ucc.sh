#!/usr/bin/env bash
# Builds Open MPI's own UCC component, coll/ucc (ompi/mca/coll/ucc), out
# of tree against this build's libucc.so: the source comes from Debian's
# openmpi source package of the very version installed (apt-get source,
# with a private deb-src list, so the machine's apt setup is untouched),
# the headers from libopenmpi-dev.
#
#   tests/ompi/build_coll_ucc.sh BUILD_DIR
#
# Leaves BUILD_DIR/ompi/component/mca_coll_ucc.so (rebuilt only when
# missing or older than libucc.so) and prints its directory. Exit 77
# (ctest: skipped) with a message when Open MPI's development files are
# not installed or the source package cannot be fetched.
set -euo pipefail

build=$(cd "$1" && pwd)
work="$build/ompi"
out="$work/component"
lib="$build/libucc.so"
mkdir -p "$work" "$out"

skip() { echo "coll/ucc: SKIPPED: $*" >&2; exit 77; }
. "$(dirname "$0")/../common/deb_source.sh"

command -v mpicc >/dev/null || skip "no mpicc (apt-get install libopenmpi-dev)"
[ -e "$lib" ] || { echo "coll/ucc: $lib not built" >&2; exit 1; }
if [ -e "$out/mca_coll_ucc.so" ] && [ "$out/mca_coll_ucc.so" -nt "$lib" ]; then
  echo "$out"
  exit 0
fi

# The installed Open MPI's source version (binNMU suffix dropped).
ver=$(dpkg-query -W -f '${source:Version}' libopenmpi-dev 2>/dev/null) ||
  skip "libopenmpi-dev is not a Debian package here"
upstream=${ver%%-*}
upstream=${upstream#*:}

src="$work/openmpi-$upstream"
if [ ! -d "$src/ompi/mca/coll/ucc" ]; then
  deb_source "$work" openmpi "$ver" ||
    skip "cannot fetch Debian's openmpi $ver source (see $work/apt.log)"
  tarball=$(ls "$work"/openmpi_"$upstream".orig.tar.* | head -n1)
  tar -xf "$tarball" -C "$work" --wildcards \
    "openmpi-$upstream/ompi/mca/coll/ucc/*" \
    "openmpi-$upstream/ompi/mpi/fortran/base/fint_2_int.h"
fi

# libopenmpi-dev ships Open MPI's internal headers but not
# fint_2_int.h, which ompi/op/op.h includes: take it from the source.
inc=$(mpicc --showme:incdirs)
cflags=()
for d in $inc; do cflags+=("-I$d"); done
# Open MPI's lock-free lists use 16-byte compare-and-swap (opal/sys):
# inline it, as Open MPI's own build does on x86-64.
[ "$(uname -m)" = x86_64 ] && cflags+=(-mcx16)
gcc -O2 -g -shared -fPIC -Wall -o "$out/mca_coll_ucc.so" \
  "$src"/ompi/mca/coll/ucc/*.c -I"$src" "${cflags[@]}" \
  -I"$(cd "$(dirname "$0")/../../api" && pwd)" -L"$build" -Wl,-rpath,"$build" -lucc
echo "$out"

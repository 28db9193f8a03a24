#!/bin/sh
# Runs a binary of the aarch64 cross build under qemu-user (docs/testing.md,
# "aarch64"): tests/arm64/qemu.sh build-arm64/tests/ucc_unit_tests ...
#
# Two builds of glibc are installed for arm64: the cross toolchain's
# (/usr/aarch64-linux-gnu/lib, libc6-arm64-cross) and, once a multiarch
# :arm64 package is (libssl3:arm64 pulls it in), libc6:arm64 in
# /lib/aarch64-linux-gnu. The binaries name /lib/ld-linux-aarch64.so.1;
# with -L the prefix's loader is taken, but it finds libc.so.6 in the
# multiarch directory first, and a loader and a C library of two builds
# do not work together: a forked child spins in the C library forever
# (qemu-user 7.2, glibc 2.36-9 against 2.36-9+deb12u14). LD_LIBRARY_PATH
# puts the prefix's own libraries first; the multiarch ones (libcrypto,
# libibverbs) are still found after them.
set -eu
prefix=${UCC_ARM64_SYSROOT:-/usr/aarch64-linux-gnu}
exec qemu-aarch64 -L "$prefix" -E "LD_LIBRARY_PATH=$prefix/lib" "$@"

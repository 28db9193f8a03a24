#!/usr/bin/env bash
# Builds the DPU service image: an OCI image layout holding a minimal
# root filesystem with firmware_sim and what it needs at run time, made
# with Debian's umoci from files already on this machine (nothing is
# downloaded). docs/dpu.md, "The service image", says how to load and run
# it on a DPU; firmware_sim/image/firmware_sim-pod.yaml is its pod spec.
#
#   firmware_sim/image/build_image.sh FIRMWARE_SIM OUT_DIR [TAG]
#
# FIRMWARE_SIM is a built firmware_sim (aarch64 from the cross build,
# cmake/toolchains/aarch64-linux-gnu.cmake, or this machine's own); the
# image's architecture is the binary's. Its tree (the C library, and what
# it opens at run time: OpenSSL's libcrypto for the keys, rdma-core's
# libibverbs and its providers for --verbs) comes from the target's
# multiarch directories (for arm64: /usr/aarch64-linux-gnu from
# crossbuild-essential-arm64, and /usr/lib/aarch64-linux-gnu from
# libssl3:arm64 and ibverbs-providers:arm64). libcrypto is required
# (CMake makes the dpu_image target only where it finds it); verbs is
# copied where installed, and the script says whether it was.
# OUT_DIR becomes the image layout (replaced), tagged TAG (default
# "latest"): umoci's and skopeo's "OUT_DIR:TAG", an oci-archive once
# tarred (docs/dpu.md).
set -euo pipefail
fw=$1 out=$2 tag=${3:-latest}
command -v umoci >/dev/null || { echo "build_image.sh: needs umoci (Debian: umoci)" >&2; exit 2; }
# The binary's machine (ELF e_machine, bytes 18-19, little endian).
machine=$(od -An -t u2 -j 18 -N 2 "$fw" | tr -d ' ')
case $machine in
  183) arch=arm64 triple=aarch64-linux-gnu ;;
  62) arch=amd64 triple=x86_64-linux-gnu ;;
  *) echo "build_image.sh: $fw: ELF machine $machine is not aarch64 or x86-64" >&2; exit 2 ;;
esac
# Where the target's libraries lie on this machine: the cross sysroot
# first, then multiarch (for this machine's own architecture only the
# latter two).
dirs=()
[ -d "/usr/$triple/lib" ] && dirs+=("/usr/$triple/lib")
dirs+=("/usr/lib/$triple" "/lib/$triple")
find_lib() {  # name -> path, or nothing
  local d
  for d in "${dirs[@]}"; do
    [ -e "$d/$1" ] && { echo "$d/$1"; return 0; }
  done
  return 0
}
readelf_bin=readelf
command -v "$triple-readelf" >/dev/null && readelf_bin=$triple-readelf
needed() { "$readelf_bin" -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
interp() { "$readelf_bin" -l "$1" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p'; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
libdir=$root/usr/lib/$triple
mkdir -p "$root/usr/bin" "$libdir" "$root/etc/ucc" "$root/run/ucc" \
  "$root/tmp" "$root/dev/shm" "$root/proc" "$root/sys"
chmod 1777 "$root/tmp"
cp "$fw" "$root/usr/bin/firmware_sim"
# Copies a library (following its links) and, once, what it needs.
declare -A copied=()
add_lib() {  # name, required (1) or not (0)
  local name=$1 path
  [ -n "${copied[$name]:-}" ] && return 0
  path=$(find_lib "$name")
  if [ -z "$path" ]; then
    [ "$2" = 1 ] && { echo "build_image.sh: no $name for $arch in ${dirs[*]}" >&2; exit 1; }
    return 1
  fi
  copied[$name]=1
  cp -L "$path" "$libdir/$name"
  local dep
  for dep in $(needed "$path"); do add_lib "$dep" 1; done
}
for dep in $(needed "$fw"); do add_lib "$dep" 1; done
# The loader, where the binary asks for it.
loader=$(interp "$fw")
mkdir -p "$root$(dirname "$loader")"
cp -L "$(find_lib "$(basename "$loader")")" "$root$loader"
# Opened at run time (dlopen): libcrypto always (either name the daemon
# loads), verbs where installed; libgcc_s for backtrace() in the crash
# report (the C++ runtime itself is linked in).
if ! add_lib libcrypto.so.3 0 && ! add_lib libcrypto.so.1.1 0; then
  echo "build_image.sh: no libcrypto for $arch in ${dirs[*]} (Debian: libssl3:$arch)" >&2
  exit 1
fi
add_lib libgcc_s.so.1 0 || true
verbs=no
if add_lib libibverbs.so.1 0; then
  verbs=yes
  if [ -d "/usr/lib/$triple/libibverbs" ]; then
    mkdir -p "$libdir/libibverbs"
    for p in /usr/lib/"$triple"/libibverbs/*.so; do
      [ -e "$p" ] || continue
      cp -L "$p" "$libdir/libibverbs/"
      for dep in $(needed "$p"); do add_lib "$dep" 1; done
    done
  fi
  [ -d /etc/libibverbs.d ] && cp -r /etc/libibverbs.d "$root/etc/"
fi

# The image: an empty one, unpacked, our tree put in, packed again; made
# beside OUT_DIR and moved there whole, so a failed run leaves none.
final=$out
out=$final.new
rm -rf "$out"
umoci init --layout "$out"
umoci new --image "$out:$tag"
umoci unpack --rootless --image "$out:$tag" "$work/bundle" >/dev/null
cp -a "$root/." "$work/bundle/rootfs/"
umoci repack --image "$out:$tag" "$work/bundle"
# Defaults a pod spec overrides (firmware_sim-pod.yaml): listen on every
# interface at the port hosts use by default (UCC_DPU_ADDR's auto), the
# key where the pod mounts its secret, the unix socket for --stats.
# The libraries' directory by LD_LIBRARY_PATH: the tree has no
# ld.so.cache.
umoci config --image "$out:$tag" --architecture "$arch" --os linux \
  --config.env "LD_LIBRARY_PATH=/usr/lib/$triple" \
  --config.entrypoint /usr/bin/firmware_sim \
  --config.cmd --listen --config.cmd 0.0.0.0:18700 \
  --config.cmd --key-file --config.cmd /etc/ucc/key/dpu.key \
  --config.cmd --socket --config.cmd /run/ucc/firmware-sim.sock \
  --config.exposedports 18700/tcp \
  --config.label "org.opencontainers.image.title=ucc-firmware-sim" \
  --config.label "org.opencontainers.image.description=UCC offload engine (firmware_sim) for a DPU"
umoci gc --layout "$out"
rm -rf "$final"
mv "$out" "$final"
echo "build_image.sh: $final:$tag ($arch), $(du -sh "$final" | cut -f1), verbs $verbs"

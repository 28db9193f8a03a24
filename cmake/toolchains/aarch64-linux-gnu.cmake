# aarch64 Linux, the DPUs' and SmartNICs' Arm cores (BlueField-2/3:
# Cortex-A72/A78), with Debian's cross compilers
# (crossbuild-essential-arm64). Libraries come from the target's tree
# (/usr/aarch64-linux-gnu, and multiarch :arm64 packages where one is
# installed), so the optional paths are detected as on x86-64: found
# only where their arm64 packages are. Binaries built for the build
# (tests, discovery) run under qemu-user (Debian's qemu-user), which is
# also what ctest uses in this tree; tests/arm64/ci.sh is CI's run.
#
#   cmake -S . -B build-arm64 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# qemu-aarch64 with the cross toolchain's loader and C library together
# (tests/arm64/qemu.sh says why both).
get_filename_component(_ucc_qemu
  "${CMAKE_CURRENT_LIST_DIR}/../../tests/arm64/qemu.sh" ABSOLUTE)
set(CMAKE_CROSSCOMPILING_EMULATOR ${_ucc_qemu})
# pkg-config (DPDK) looks at the target's .pc files only.
set(ENV{PKG_CONFIG_LIBDIR}
  /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_SYSROOT_DIR} /)

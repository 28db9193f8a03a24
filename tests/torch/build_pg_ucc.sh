#!/usr/bin/env bash
# Builds PyTorch's own UCC process group (torch/csrc/distributed/c10d:
# ProcessGroupUCC.cpp, UCCUtils.cpp, UCCTracing.cpp) out of tree against
# this build's libucc.so, with USE_C10D_UCC, as Debian's torch (built
# without it) would have: the sources come from Debian's pytorch source
# package of the very version installed (tests/common/deb_source.sh), the
# headers from libtorch-dev, which already ships ProcessGroupUCC.hpp and
# the other UCC headers. Also builds PyTorch's C++ test of it
# (test/cpp/c10d/ProcessGroupUCCTest.cpp) and puts PyTorch's distributed
# test drivers beside them.
#
#   tests/torch/build_pg_ucc.sh BUILD_DIR
#
# Leaves in BUILD_DIR/torch/py: _ucc_pg*.so (the process group and its
# Python class, pg_ucc_module.cc), ucc_torch.py and sitecustomize.py (the
# glue: PYTHONPATH=BUILD_DIR/torch/py makes init_process_group("ucc") use
# it); BUILD_DIR/torch/ProcessGroupUCCTest; BUILD_DIR/torch/pytorch-VER
# with the test files and BUILD_DIR/torch/testpy with the expecttest
# stand-in they import. Prints BUILD_DIR/torch. Rebuilds only what is older
# than libucc.so. Exit 77 (ctest: skipped) with a message where torch or
# its development files are not installed or the source cannot be fetched.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
work="$build/torch"
py="$work/py"
lib="$build/libucc.so"
python=/usr/bin/python3  # Debian's, where python3-torch is
mkdir -p "$work" "$py"

skip() { echo "torch: SKIPPED: $*" >&2; exit 77; }
. "$here/../common/deb_source.sh"

[ -e "$lib" ] || { echo "torch: $lib not built" >&2; exit 1; }
ver=$(dpkg-query -W -f '${source:Version}' python3-torch 2>/dev/null) ||
  skip "python3-torch is not installed (apt-get install python3-torch libtorch-dev pybind11-dev)"
[ -e /usr/include/torch/csrc/distributed/c10d/ProcessGroupUCC.hpp ] ||
  skip "no libtorch-dev (apt-get install libtorch-dev)"
[ -e /usr/include/pybind11/pybind11.h ] ||
  skip "no pybind11 headers (apt-get install pybind11-dev)"
upstream=${ver%-*}
upstream=${upstream#*:}
tv=${upstream%%+*}  # 1.13.1
src="$work/pytorch-$tv"
c10d=torch/csrc/distributed/c10d

if [ ! -e "$src/.patched" ]; then
  deb_source "$work" pytorch "$ver" ||
    skip "cannot fetch Debian's pytorch $ver source (see $work/apt.log)"
  rm -rf "$src"
  tar -xf "$work/pytorch_$upstream".orig.tar.* -C "$work" \
    "pytorch-$tv/$c10d/ProcessGroupUCC.cpp" "pytorch-$tv/$c10d/UCCUtils.cpp" \
    "pytorch-$tv/$c10d/UCCTracing.cpp" \
    "pytorch-$tv/test/cpp/c10d/ProcessGroupUCCTest.cpp" \
    "pytorch-$tv/test/distributed/test_distributed_spawn.py" \
    "pytorch-$tv/torch/testing/_internal/distributed/distributed_test.py"
  # Two bugs of PyTorch 1.13's process group itself, which any UCC hits,
  # both fixed in later PyTorch. Patched here, in their code, not ours:
  "$python" - "$src/$c10d/ProcessGroupUCC.cpp" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
# PATCH 1 (PyTorch bug): on CPU tensors collective_post never runs the
# pre-processing step, so reduce_scatter reduces a flat buffer that its
# inputs were never copied into (garbage results). Run it before the
# collective is enqueued, as the CUDA branch does.
old = "      comm->enqueue_collective(std::move(data), work, coll, team);"
assert s.count(old) == 1, "patch 1 anchor"
s = s.replace(old, "      preproc();  // PATCH 1 (build_pg_ucc.sh)\n" + old)
# PATCH 2 (PyTorch bug): scatter on a non-root rank passes inputTensors[0]
# of an empty list (undefined behaviour: a crash). Pass the outputs there.
a = s.index("ProcessGroupUCC::scatter(")
b = s.index('"ucc:scatter")', a)
old = "      inputTensors[0],\n      outputTensors,\n"
assert s.count(old, a, b) == 1, "patch 2 anchor"
s = s[:a] + s[a:b].replace(old,
    "      /* PATCH 2 (build_pg_ucc.sh) */\n"
    "      getRank() == opts.rootRank ? inputTensors[0] : outputTensors,\n"
    "      outputTensors,\n") + s[b:]
open(p, "w").write(s)
PY
  touch "$src/.patched"
fi

# Compiled as torch's own build compiles them: C++17, its C++11 ABI,
# USE_C10D_UCC (the headers' guard); Debian's torch logs with glog.
abi=$("$python" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
flags=(-std=c++17 -O2 -g -fPIC -DUSE_C10D_UCC -D_GLIBCXX_USE_CXX11_ABI="$abi"
       -I"$here/../../api" -I"$(${python} -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
       -I/usr/include/torch/csrc/api/include -w)
libs=(-L"$build" -Wl,-rpath,"$build" -lucc -ltorch -ltorch_cpu -ltorch_python
      -lc10 -lglog)
ext=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
mod="$py/_ucc_pg$ext"
if [ ! -e "$mod" ] || [ "$lib" -nt "$mod" ] || [ "$here/pg_ucc_module.cc" -nt "$mod" ]; then
  # Each of these compiles torch's headers (most of a minute apiece): they
  # run side by side, two cores' worth.
  objs=() jobs=()
  for f in ProcessGroupUCC UCCUtils UCCTracing; do
    o="$work/$f.o"
    if [ ! -e "$o" ] || [ "$src/.patched" -nt "$o" ]; then
      g++ "${flags[@]}" -c "$src/$c10d/$f.cpp" -o "$o" &
      jobs+=($!)
    fi
    objs+=("$o")
  done
  for j in "${jobs[@]}"; do wait "$j" || { echo "compiling torch's c10d sources failed" >&2; exit 1; }; done
  g++ "${flags[@]}" -shared -o "$mod" "$here/pg_ucc_module.cc" "${objs[@]}" "${libs[@]}" &
  m=$!
  g++ "${flags[@]}" -o "$work/ProcessGroupUCCTest" \
    "$src/test/cpp/c10d/ProcessGroupUCCTest.cpp" "$work/UCCUtils.o" \
    "${libs[@]}" -lgtest -lgtest_main -pthread || exit 1
  wait "$m" || { echo "building the module failed" >&2; exit 1; }
fi
cp "$here/ucc_torch.py" "$here/sitecustomize.py" "$py/"
mkdir -p "$work/testpy"
cp "$here/expecttest.py" "$work/testpy/"
echo "$work"

#!/bin/sh
# Builds Galois's Lonestar Delaunay mesh refinement, the peer of `examples/yada`.
#
#   scripts/peers/galois-dmr.sh GALOIS_DIR [BUILD_DIR]
#
# GALOIS_DIR is a checkout of Galois (github.com/IntelligentSoftwareSystems/
# Galois; tested at b67f942, Aug 2023); it is configured out of tree in
# BUILD_DIR (default target/peers/galois-build under the current folder)
# with CMake, Release (-O3, plus the app's own -ffast-math; no -march, as
# skelaff's release build has no target-cpu), and only the target
# delaunayrefinement-cpu is built (lonestar/scientific/cpu/delaunayrefinement),
# so the checkout stays untouched. Idempotent: CMake is run only when
# BUILD_DIR has no CMakeCache.txt, and the build step is skipped when the
# binary is newer than every source file of the app and of Galois's
# libraries (libgalois, libsupport, lonestar/liblonestar).
# Installs nothing: a missing tool or library makes it exit 2 naming the
# Debian packages to install (cmake g++ make llvm-14-dev
# libboost-serialization-dev libboost-iostreams-dev libfmt-dev libnuma-dev).
# Prints the build's output on stderr and, last, the binary's absolute path
# on stdout (scripts/peers/yada-vs-galois.py --galois-bin takes it).
set -eu
src=${1:?usage: galois-dmr.sh GALOIS_DIR [BUILD_DIR]}
build=${2:-target/peers/galois-build}
app=lonestar/scientific/cpu/delaunayrefinement
need="cmake g++ make llvm-14-dev libboost-serialization-dev libboost-iostreams-dev libfmt-dev libnuma-dev"
[ -f "$src/CMakeLists.txt" ] && [ -f "$src/$app/DelaunayRefinement.cpp" ] || {
    echo "galois-dmr.sh: $src is not a Galois checkout (no $app/DelaunayRefinement.cpp)" >&2
    exit 2
}
src=$(cd "$src" && pwd)
missing() {
    echo "galois-dmr.sh: $1 not found (Debian: apt-get install $need)" >&2
    exit 2
}
for tool in cmake g++ make; do
    command -v "$tool" >/dev/null 2>&1 || missing "$tool"
done
# Headers and CMake packages Galois's configure step looks for; checked
# here so a missing one is named instead of failing deep in CMake's log.
[ -f /usr/include/numa.h ] || missing "numa.h (libnuma-dev)"
[ -f /usr/include/boost/serialization/serialization.hpp ] || missing "boost/serialization (libboost-serialization-dev)"
[ -f /usr/include/boost/iostreams/stream.hpp ] || missing "boost/iostreams (libboost-iostreams-dev)"
[ -f /usr/include/fmt/format.h ] || missing "fmt/format.h (libfmt-dev)"
llvm_dir=""
for cfg in llvm-config llvm-config-14 llvm-config-15 llvm-config-16 llvm-config-13; do
    if command -v "$cfg" >/dev/null 2>&1; then
        llvm_dir=$("$cfg" --cmakedir 2>/dev/null || true)
        [ -f "$llvm_dir/LLVMConfig.cmake" ] && break
        llvm_dir=""
    fi
done
if [ -z "$llvm_dir" ]; then
    for d in /usr/lib/llvm-*/lib/cmake/llvm; do
        [ -f "$d/LLVMConfig.cmake" ] && llvm_dir=$d
    done
fi
[ -n "$llvm_dir" ] || missing "LLVM's CMake package (LLVMConfig.cmake, llvm-14-dev)"

mkdir -p "$build"
build=$(cd "$build" && pwd)
bin="$build/$app/delaunayrefinement-cpu"
if [ ! -f "$build/CMakeCache.txt" ]; then
    echo "galois-dmr.sh: configuring $src in $build" >&2
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLLVM_DIR="$llvm_dir" >&2 || {
        rm -f "$build/CMakeCache.txt"
        echo "galois-dmr.sh: cmake failed (see above; Debian packages needed: $need)" >&2
        exit 1
    }
fi
stale=yes
if [ -x "$bin" ]; then
    newer=$(find "$src/$app" "$src/libgalois" "$src/libsupport" "$src/lonestar/liblonestar" \
        "$src/CMakeLists.txt" -newer "$bin" -type f -print 2>/dev/null | head -n 1)
    [ -n "$newer" ] || stale=no
fi
if [ "$stale" = yes ]; then
    echo "galois-dmr.sh: building delaunayrefinement-cpu in $build" >&2
    jobs=$(nproc 2>/dev/null || echo 2)
    cmake --build "$build" --target delaunayrefinement-cpu -j "$jobs" >&2 || {
        echo "galois-dmr.sh: building delaunayrefinement-cpu failed in $build (see above)" >&2
        exit 1
    }
fi
[ -x "$bin" ] || { echo "galois-dmr.sh: $bin was not built" >&2; exit 1; }
echo "$bin"

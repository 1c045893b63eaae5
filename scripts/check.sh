#!/bin/bash
# Build libraid and run the whole test suite, as CI does:
#   1. a normal build (warnings are errors) and make check (C units under
#      Check, shell tests with real programs, loop devices when root);
#   2. the same tests under valgrind (make check-valgrind, smaller workload);
#   3. an ASan+UBSan build and make check;
#   4. make distcheck (the tarball builds and passes on its own).
# Build trees go to build/ and build-asan/ so the source tree stays clean.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
jobs=$(nproc)

step() { printf '\n=== %s\n' "$*"; }

step "autoreconf"
autoreconf -fi

step "build"
mkdir -p build && cd build
"$top/configure" -q --enable-werror
make -j"$jobs"

step "make check"
make -j"$jobs" check || { cat tests/*.log | tail -200; exit 1; }

step "make check-valgrind"
make check-valgrind || { cat tests/*.log | tail -200; exit 1; }

step "make distcheck"
make -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror >/dev/null ||
  { echo "distcheck failed" >&2; exit 1; }

step "ASan + UBSan build, make check"
cd "$top" && mkdir -p build-asan && cd build-asan
"$top/configure" -q --enable-werror --enable-sanitizers CC=gcc
make -j"$jobs"
make -j"$jobs" check || { cat tests/*.log | tail -200; exit 1; }

step "all checks passed"

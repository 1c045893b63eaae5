#!/bin/bash
# Build libraid, raidd and raidctl and run the whole test suite, as CI does:
#   1. a normal build (warnings are errors) and make check: the Check unit
#      programs and the shell tests with real programs (raidd with nbdinfo,
#      qemu-io, nbdcopy, fio, nbdfuse + ext4; raidctl with mdadm and blkid;
#      loop devices; bounded libFuzzer runs);
#   2. make check-valgrind (the units under memcheck, smaller workload);
#   3. an ASan+UBSan build running the units and the raidd/raidctl tests
#      (with test-stress-raidd.sh: several NBD clients writing one array);
#   4. make distcheck (the tarball is complete, builds and passes the units);
#   5. make check-vm (Linux md in a VM and libraid read each other's arrays).
# Build trees go to build/ and build-asan/ so the source tree stays clean.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
jobs=$(nproc)
units="tests/test-header tests/test-xor tests/test-member tests/test-geometry \
  tests/test-io tests/test-degraded tests/test-concurrency tests/test-errors \
  tests/test-superblock tests/test-metadata tests/test-recovery tests/test-stats \
  tests/test-stress"

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }
show_logs() { tail -n 100 tests/*.log 2>/dev/null | tail -n 300; }

step "autoreconf"
autoreconf -fi

step "build"
mkdir -p build && cd build
"$top/configure" -q --enable-werror
make -j"$jobs"

step "make check"
make -j"$jobs" check || { show_logs; exit 1; }

step "make check-valgrind"
make check-valgrind || { show_logs; exit 1; }

step "make distcheck"
make -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror TESTS="$units" \
  > distcheck.log 2>&1 || { tail -n 100 distcheck.log; exit 1; }

step "make check-vm"
make check-vm

step "ASan + UBSan build, make check"
cd "$top" && mkdir -p build-asan && cd build-asan
"$top/configure" -q --enable-werror --enable-sanitizers CC=gcc
make -j"$jobs"
make -j"$jobs" check TESTS="$units tests/test-raidctl.sh tests/test-raidd.sh tests/test-drill.sh \
  tests/test-stress-raidd.sh" ||
  { show_logs; exit 1; }

step "all checks passed"

#!/bin/bash
# Build libraid, raidd and raidctl and run the whole test suite, as CI does:
#   1. a normal build (warnings are errors) and make check: the Check unit
#      programs and the shell tests with real programs (raidd with nbdinfo,
#      qemu-io, nbdcopy, fio, nbdfuse + ext4; raidctl with mdadm and blkid;
#      loop devices; bounded libFuzzer runs; the library and raidd stress
#      tests: many threads and NBD connections on every level, degraded,
#      rebuilding, members coming and going, every byte checked);
#   2. make check-valgrind (the units under memcheck, smaller workload;
#      not the two whose arrays have a write-intent bitmap: tests/Makefile.inc);
#   3. make distcheck (the tarball is complete, builds and passes the units);
#   4. make check-vm (Linux md and the kernel's NBD client in a VM booted by
#      the project's own runner, tests/vm/run);
#   5. an ASan+UBSan build running the units, the raidd/raidctl tests and
#      the stress tests;
#   6. a ThreadSanitizer build running the multi-threaded units and the
#      stress tests (any data race fails them).
# Nothing may be skipped: RAID_TEST_NO_SKIP=1 turns a test's skip into a
# failure, and a make check whose summary counts a skip fails here too.
# Build trees go to build/, build-asan/ and build-tsan/ so the source tree
# stays clean.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
jobs=$(nproc)
export RAID_TEST_NO_SKIP=${RAID_TEST_NO_SKIP:-1}
# The longest first in each list, so the other CPU runs the rest beside it
# rather than waiting at the end for one test (make check -j starts them in
# this order): test-reshape under ThreadSanitizer takes minutes.
units="tests/test-reshape tests/test-reshape-back tests/test-reshape-bitmap tests/test-header tests/test-xor tests/test-raid6 tests/test-member-file tests/test-member-nbd tests/test-member-ram tests/test-member-fault \
  tests/test-geometry tests/test-io tests/test-degraded tests/test-concurrency tests/test-errors \
  tests/test-sb-format tests/test-sb-damage tests/test-sb-mdadm tests/test-metadata \
  tests/test-rebuild tests/test-scrub tests/test-resync tests/test-sync-errors \
  tests/test-io-stats tests/test-raid5-merge \
  tests/test-stress-sync tests/test-stress-degraded tests/test-stress-rebuild tests/test-stress-spares \
  tests/test-sim-cache tests/test-powerloss tests/test-bitmap tests/test-write-behind tests/test-safemode \
  tests/test-events tests/test-grow tests/test-takeover"
raidd_tests="tests/test-raidd-grow.sh tests/test-raidctl-canary.sh tests/test-raidd-stress.sh tests/test-raidd-drill.sh \
  tests/test-raidctl-offline.sh tests/test-raidd-nbd.sh tests/test-raidd-control.sh tests/test-raidctl-busy.sh \
  tests/test-raidd-monitor.sh tests/test-raidd-grow-kill.sh tests/test-raidd-array-size.sh"
tsan_tests="tests/test-reshape tests/test-reshape-back tests/test-reshape-bitmap tests/test-raidd-grow.sh tests/test-raidd-stress.sh tests/test-stress-spares tests/test-takeover \
  tests/test-member-nbd tests/test-concurrency tests/test-io-stats tests/test-raid5-merge tests/test-errors tests/test-bitmap tests/test-write-behind tests/test-safemode \
  tests/test-stress-sync tests/test-stress-degraded tests/test-stress-rebuild \
  tests/test-sim-cache tests/test-powerloss tests/test-raidd-control.sh tests/test-raidctl-busy.sh \
  tests/test-events tests/test-raidd-monitor.sh tests/test-grow"

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }
# run_check MAKE-ARGS...: make check, quietly.  A CI report shows only a
# short window of the output around the first FAIL line, and with -j2 the
# lines after it are other tests' results and the summary: so the console
# gets only the FAIL/ERROR/SKIP lines while the tests run, then, for each
# failed test, why it failed (its own FAIL lines, a Check assertion, a
# sanitizer's summary), then the summary; the whole output of make is in
# make-check.out, and show_logs prints the failed tests' logs after.
run_check() {
  local rc=0
  make "$@" > make-check.out 2>&1 &
  local pid=$!
  tail -n +1 -f --pid="$pid" make-check.out | grep --line-buffered -E '^(FAIL|ERROR|XPASS|SKIP):' || :
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || why_failed
  grep -E '^# (TOTAL|PASS|SKIP|FAIL|ERROR):' make-check.out || tail -n 30 make-check.out
  [ "$rc" = 0 ] || { show_logs; exit 1; }
}
# failed_logs: the log of each test the last make check failed.
failed_logs() {
  local trs
  for trs in tests/*.trs; do
    grep -q '^:test-result: \(FAIL\|ERROR\)' "$trs" 2>/dev/null && echo "${trs%.trs}.log"
  done
  return 0
}
# why_failed: one short block per failed test, its reasons first.
why_failed() {
  local log
  for log in $(failed_logs); do
    echo "--- why ${log%.log} failed:"
    grep -E ': FAIL|:[FE]:|HANG|^SUMMARY: |runtime error:|ERROR: AddressSanitizer|WARNING: ThreadSanitizer' \
      "$log" | head -n 12 || :
    echo "--- the last lines of ${log}:"
    tail -n 12 "$log"
  done
}
# show_logs: for each failed test, its sanitizer reports first (a report
# in the middle of a long log is what a tail would cut), then its end.
show_logs() {
  local log
  for log in $(failed_logs); do
    echo "==> $log (failed) <=="
    grep -n -m 4 -A 70 'WARNING: ThreadSanitizer\|ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:' \
      "$log" | head -n 300 || :      # none found is not an error
    echo "--> end of $log <--"
    tail -n 80 "$log"
  done
}
# no_skips: the last make check in this build tree skipped nothing.
no_skips() {
  local n
  [ -f test-suite.log ] || { echo "check.sh: no test-suite.log in $PWD"; exit 1; }
  n=$(sed -n 's/^# SKIP: *//p' test-suite.log | head -1)
  [ "${n:-?}" = 0 ] || { echo "check.sh: ${n:-?} test(s) skipped:"; grep -l '^SKIP' tests/*.log || :; exit 1; }
}

step "autoreconf"
autoreconf -fi

step "build"
mkdir -p build && cd build
"$top/configure" -q --enable-werror
make -j"$jobs"

step "make check"
run_check -j"$jobs" check
no_skips

step "make check-valgrind"
run_check -j"$jobs" check-valgrind
no_skips

step "make distcheck"
make -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror TESTS="$units" \
  > distcheck.log 2>&1 || { tail -n 100 distcheck.log; exit 1; }

step "make check-vm"
make check-vm

step "ASan + UBSan build, make check"
cd "$top" && mkdir -p build-asan && cd build-asan
"$top/configure" -q --enable-werror --enable-sanitizers=address CC=gcc
make -j"$jobs"
# The two longest first (the lists' first words), then the rest of both.
run_check -j"$jobs" check TESTS="${units%% *} ${raidd_tests%% *} ${units#* } ${raidd_tests#* }"
no_skips

step "ThreadSanitizer build, make check"
cd "$top" && mkdir -p build-tsan && cd build-tsan
"$top/configure" -q --enable-werror --enable-sanitizers=thread CC=gcc
make -j"$jobs"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$top/tests/tsan.supp" \
  run_check -j"$jobs" check TESTS="$tsan_tests"
no_skips

step "all checks passed"

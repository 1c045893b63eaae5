# Shared set-up of the libFuzzer tests (tests/test-lib-fuzz-superblock.sh,
# tests/test-raidd-fuzz-nbd.sh), sourced
# after setting NAME: defaults for top_srcdir, top_builddir, FUZZ_SECONDS
# and CLANG; skip() and fail(); a temporary directory $tmp removed at exit
# (with the fuzzer, $fuzz_pid, stopped); and a probe that skips (77) when
# clang cannot link -fsanitize=fuzzer,address,undefined.
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=.}"
: "${FUZZ_SECONDS:=20}"
CLANG=${CLANG:-clang}

skip() {
    if [ "${RAID_TEST_NO_SKIP:-}" = 1 ]; then
        echo "$NAME: FAIL (RAID_TEST_NO_SKIP=1): test skipped because $*"
        exit 1
    fi
    echo "$NAME: SKIP: $*"
    exit 77
}
fail() { echo "$NAME: FAIL: $*"; exit 1; }

command -v "$CLANG" >/dev/null 2>&1 || skip "$CLANG is not installed"
[ -f "$top_builddir/config.h" ] || skip "no config.h in top_builddir=$top_builddir (run from make check)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/$NAME.XXXXXX") || fail "mktemp"
fuzz_pid=
# shellcheck disable=SC2317  # called from the trap
cleanup() {
  if [ -n "$fuzz_pid" ]; then kill "$fuzz_pid" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

cat > "$tmp/probe.c" <<'PROBE'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }
PROBE
"$CLANG" -fsanitize=fuzzer,address,undefined "$tmp/probe.c" -o "$tmp/probe" \
  > "$tmp/probe.log" 2>&1 ||
  skip "$CLANG cannot link -fsanitize=fuzzer,address,undefined: $(head -n 3 "$tmp/probe.log")"

# run_fuzzer TARGET WHAT [LIBFUZZER OPTIONS...]: run $tmp/TARGET for
# FUZZ_SECONDS over $tmp/seeds (corpus in $tmp/corpus), then pass, or fail
# keeping every crashing input as $top_builddir/tests/TARGET-ARTIFACT.
run_fuzzer() {
  target=$1 what=$2
  shift 2
  echo "$NAME: fuzzing $what for ${FUZZ_SECONDS}s with $(find "$tmp/seeds" -type f | wc -l) seeds"
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  export ASAN_OPTIONS UBSAN_OPTIONS
  "$tmp/$target" -max_total_time="$FUZZ_SECONDS" "$@" -use_value_profile=1 \
    -print_final_stats=1 -error_exitcode=1 -timeout_exitcode=1 \
    -artifact_prefix="$tmp/artifacts/" "$tmp/corpus" "$tmp/seeds" > "$tmp/fuzz.log" 2>&1 &
  fuzz_pid=$!
  wait "$fuzz_pid"
  rc=$?
  fuzz_pid=

  # A slow unit (libFuzzer's -report_slow_units, 10 s) is kept and named
  # but is no failure: on a busy machine an input can take that long with
  # nothing wrong.  A hang is one: -timeout makes it a crash (rc 1).
  for a in "$tmp"/artifacts/slow-unit-*; do
    [ -f "$a" ] || continue
    keep="$top_builddir/tests/$target-$(basename "$a")"
    mv "$a" "$keep" && echo "$NAME: warning: an input took over 10 s (kept in $keep)"
  done
  if [ "$rc" -ne 0 ] || [ -n "$(find "$tmp/artifacts" -type f)" ]; then
    tail -n 60 "$tmp/fuzz.log"
    for a in "$tmp"/artifacts/*; do
      [ -f "$a" ] || continue
      keep="$top_builddir/tests/$target-$(basename "$a")"
      cp "$a" "$keep" && echo "$NAME: input kept in $keep; to reproduce, build" \
        "the target as this script does and run it with that file as its argument"
    done
    fail "libFuzzer exited $rc"
  fi
  grep -E '^(stat::number_of_executed_units|stat::new_units_added|#[0-9]+.*DONE)' "$tmp/fuzz.log"
  echo "$NAME: PASS: $(find "$tmp/corpus" -type f | wc -l) corpus entries, no crash"
}

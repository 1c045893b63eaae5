#!/bin/sh
# Description: fuzz raidd's NBD server (tests/fuzz-nbd.c: the fixed
# newstyle handshake and the transmission phase, fed arbitrary client
# byte streams over a socketpair, serving RAM arrays) with libFuzzer under
# AddressSanitizer and UndefinedBehaviorSanitizer for FUZZ_SECONDS
# (default 20).  Seeds: whole client sessions the target writes itself
# (-DFUZZ_MAKE_SEED): GO with structured replies, EXPORT_NAME with simple
# replies, a read-only export with refused options, ABORT.  Fails on any
# crash, hang, leak, sanitizer report or export reference left behind,
# and keeps the input that did it in the build directory.  Skips (77) when
# clang or libFuzzer is missing.
set -u

NAME=test-fuzz-nbd.sh
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/fuzz-common.sh"

# The libraries libraid needs, as configure found them.
libs=
if [ -f "$top_builddir/Makefile" ]; then
  libs=$(sed -n 's/^\(URING_LIBS\|ISAL_LIBS\) = //p' "$top_builddir/Makefile" | tr '\n' ' ')
fi
[ -n "$libs" ] || libs="-luring -lisal"

cflags="-g -O1 -fno-sanitize-recover=all -I$top_srcdir/include -I$top_srcdir/lib -I$top_srcdir/raidd -I$top_builddir"
srcs="$top_srcdir/tests/fuzz-nbd.c $top_srcdir/raidd/nbd-handshake.c $top_srcdir/raidd/nbd-conn.c $top_srcdir/lib/*.c"

# shellcheck disable=SC2086  # word splitting of the flag lists is wanted
"$CLANG" $cflags -fsanitize=fuzzer,address,undefined $srcs -o "$tmp/fuzz-nbd" $libs -lpthread \
  > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "building the fuzz target"; }
# shellcheck disable=SC2086
"$CLANG" $cflags -DFUZZ_MAKE_SEED "$top_srcdir/tests/fuzz-nbd.c" -o "$tmp/make-seed" ||
  fail "building the seed maker"

mkdir "$tmp/seeds" "$tmp/corpus" "$tmp/artifacts"
"$tmp/make-seed" "$tmp/seeds" || fail "making the seeds"

echo "test-fuzz-nbd.sh: fuzzing the NBD server for ${FUZZ_SECONDS}s with $(find "$tmp/seeds" -type f | wc -l) seeds"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS UBSAN_OPTIONS
"$tmp/fuzz-nbd" -max_total_time="$FUZZ_SECONDS" -timeout=20 -rss_limit_mb=4096 \
  -max_len=65536 -use_value_profile=1 -print_final_stats=1 \
  -error_exitcode=1 -timeout_exitcode=1 \
  -artifact_prefix="$tmp/artifacts/" "$tmp/corpus" "$tmp/seeds" > "$tmp/fuzz.log" 2>&1 &
fuzz_pid=$!
wait "$fuzz_pid"
rc=$?
fuzz_pid=

if [ "$rc" -ne 0 ] || [ -n "$(find "$tmp/artifacts" -type f)" ]; then
  tail -n 60 "$tmp/fuzz.log"
  for a in "$tmp"/artifacts/*; do
    [ -f "$a" ] || continue
    keep="$top_builddir/tests/fuzz-nbd-$(basename "$a")"
    cp "$a" "$keep" && echo "test-fuzz-nbd.sh: input kept in $keep; to reproduce, build" \
      "the target as this script does and run it with that file as its argument"
  done
  fail "libFuzzer exited $rc"
fi
grep -E '^(stat::number_of_executed_units|stat::new_units_added|#[0-9]+.*DONE)' "$tmp/fuzz.log"
echo "test-fuzz-nbd.sh: PASS: $(find "$tmp/corpus" -type f | wc -l) corpus entries, no crash"
exit 0

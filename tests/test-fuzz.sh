#!/bin/sh
# Description: fuzz the md superblock decoder (tests/fuzz-superblock.c)
# with libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer for
# FUZZ_SECONDS (default 20).  Seeds: a valid RAID 5 superblock made by the
# target itself (-DFUZZ_MAKE_SEED), the same with each steering flag, and
# the superblocks mdadm and the kernel wrote in tests/data.  Fails on any
# crash, leak, sanitizer report or broken round trip, and keeps the input
# that did it in the build directory.  Skips (77) when clang or libFuzzer
# is missing.
set -u

NAME=test-fuzz.sh
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/fuzz-common.sh"

cflags="-g -O1 -fno-sanitize-recover=all -I$top_srcdir/include -I$top_srcdir/lib -I$top_builddir"
srcs="$top_srcdir/tests/fuzz-superblock.c $top_srcdir/lib/superblock.c $top_srcdir/lib/error.c"

# shellcheck disable=SC2086  # word splitting of the flag lists is wanted
"$CLANG" $cflags -fsanitize=fuzzer,address,undefined $srcs -o "$tmp/fuzz-superblock" ||
  fail "building the fuzz target"
# shellcheck disable=SC2086
"$CLANG" $cflags -fsanitize=address,undefined -DFUZZ_MAKE_SEED $srcs -o "$tmp/make-seed" ||
  fail "building the seed maker"

mkdir "$tmp/seeds" "$tmp/corpus" "$tmp/artifacts"
"$tmp/make-seed" > "$tmp/seeds/raid5" || fail "making the seed"
[ "$(wc -c < "$tmp/seeds/raid5")" -eq 4096 ] || fail "the seed is not 4096 bytes"
# The same block with each steering byte (see fuzz-superblock.c).
for f in 01 02 04 08 10 19 1d; do
  # shellcheck disable=SC2059  # the format is the octal escape of the byte
  { cat "$tmp/seeds/raid5"; printf "\\$(printf '%03o' "0x$f")"; } > "$tmp/seeds/raid5-flags$f"
done
for sb in "$top_srcdir"/tests/data/*.sb; do
  [ -f "$sb" ] || continue
  dd if="$sb" of="$tmp/seeds/$(basename "$sb" .sb)" bs=4096 skip=1 count=1 status=none ||
    fail "copying seed $sb"
done

echo "test-fuzz.sh: fuzzing raid_superblock_decode for ${FUZZ_SECONDS}s with $(find "$tmp/seeds" -type f | wc -l) seeds"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS UBSAN_OPTIONS
"$tmp/fuzz-superblock" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
  -max_len=4113 -use_value_profile=1 -print_final_stats=1 \
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
    keep="$top_builddir/tests/fuzz-superblock-$(basename "$a")"
    cp "$a" "$keep" && echo "test-fuzz.sh: input kept in $keep; to reproduce, build" \
      "the target as this script does and run it with that file as its argument"
  done
  fail "libFuzzer exited $rc"
fi
grep -E '^(stat::number_of_executed_units|stat::new_units_added|#[0-9]+.*DONE)' "$tmp/fuzz.log"
echo "test-fuzz.sh: PASS: $(find "$tmp/corpus" -type f | wc -l) corpus entries, no crash"
exit 0

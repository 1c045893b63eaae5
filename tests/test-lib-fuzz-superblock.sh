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

NAME=test-lib-fuzz-superblock.sh
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/fuzz-common.sh"

cflags="-g -O1 -fno-sanitize-recover=all -I$top_srcdir/include -I$top_srcdir/lib -I$top_srcdir/common -I$top_builddir"
srcs="$top_srcdir/tests/fuzz-superblock.c $top_srcdir/lib/md/superblock.c $top_srcdir/lib/error.c"

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

run_fuzzer fuzz-superblock "raid_superblock_decode" -timeout=10 -rss_limit_mb=2048 -max_len=4113
exit 0

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

NAME=test-raidd-fuzz-nbd.sh
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/fuzz-common.sh"

[ -x "$top_builddir/raidd/raidd" ] || skip "raidd is not built (./configure --disable-daemon)"

# The libraries libraid needs, as configure found them.
libs=
if [ -f "$top_builddir/Makefile" ]; then
  libs=$(sed -n 's/^\(URING_LIBS\|ISAL_LIBS\|LIBNBD_LIBS\|GNUTLS_LIBS\) = //p' "$top_builddir/Makefile" | tr '\n' ' ')
fi
[ -n "$libs" ] || libs="-luring -lisal -lnbd -lgnutls"

cflags="-g -O1 -fno-sanitize-recover=all -I$top_srcdir/include -I$top_srcdir/lib -I$top_srcdir/common -I$top_srcdir/raidd -I$top_builddir"
srcs="$top_srcdir/tests/fuzz-nbd.c $top_srcdir/raidd/nbd-handshake.c $top_srcdir/raidd/nbd-request.c $top_srcdir/raidd/nbd-conn.c $top_srcdir/raidd/nbd-worker.c $top_srcdir/raidd/nbd-tls.c $top_srcdir/lib/*.c $top_srcdir/lib/*/*.c $top_srcdir/common/sizes.c"

# shellcheck disable=SC2086  # word splitting of the flag lists is wanted
"$CLANG" $cflags -fsanitize=fuzzer,address,undefined $srcs -o "$tmp/fuzz-nbd" $libs -lpthread \
  > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "building the fuzz target"; }
# shellcheck disable=SC2086
"$CLANG" $cflags -DFUZZ_MAKE_SEED "$top_srcdir/tests/fuzz-nbd.c" -o "$tmp/make-seed" ||
  fail "building the seed maker"

mkdir "$tmp/seeds" "$tmp/corpus" "$tmp/artifacts"
"$tmp/make-seed" "$tmp/seeds" || fail "making the seeds"

run_fuzzer fuzz-nbd "the NBD server" -timeout=20 -rss_limit_mb=4096 -max_len=65536
exit 0

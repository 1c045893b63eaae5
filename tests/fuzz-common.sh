# Shared set-up of the libFuzzer tests (tests/test-fuzz*.sh), sourced
# after setting NAME: defaults for top_srcdir, top_builddir, FUZZ_SECONDS
# and CLANG; skip() and fail(); a temporary directory $tmp removed at exit
# (with the fuzzer, $fuzz_pid, stopped); and a probe that skips (77) when
# clang cannot link -fsanitize=fuzzer,address,undefined.
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=.}"
: "${FUZZ_SECONDS:=20}"
CLANG=${CLANG:-clang}

skip() { echo "$NAME: SKIP: $*"; exit 77; }
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

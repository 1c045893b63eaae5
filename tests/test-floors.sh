#!/bin/bash
# Description: no call or include in libraid runs up its floors
# (lib/README.md): the core never calls md/, sync/ or manage.c but through
# an ops table, no personality calls md/, member back-ends call only the
# base, and no file includes an upper floor's header.  Read from the
# built objects' symbols and the sources by tests/floors.sh.
set -euo pipefail
. "$top_srcdir/tests/functions.sh"
requires nm --version

out=$("$top_srcdir/tests/floors.sh" "$top_builddir") || {
  echo "$out"
  fail "a call runs up libraid's floors (above)"
}
echo "$out"
# The doors are used: the core reaches md/ and sync/ through ops tables
# only, and does reach them (a floor map that lost them would be wrong).
grep -q '^  core -> md  *1$' <<< "$out" || fail "the core takes more than md_meta_ops from md/"
grep -q '^  core -> sync  *1$' <<< "$out" || fail "the core takes more than sync_engine_ops from sync/"

# The tool itself: a core that calls md/ directly, and a personality that
# calls md/, are caught; a call through an ops table is not.
requires cc --version
fake=$(mktemp -d)
cleanup_fn rm -rf "$fake"
mkdir -p "$fake/lib/md/.libs" "$fake/lib/raid/.libs" "$fake/lib/.libs"
printf 'lib_libraid_core_la_SOURCES = \\\n\tlib/array.c \\\n\tlib/md/meta.c \\\n\tlib/raid/raid9.c\n' \
  > "$fake/Makefile.am"
cat > "$fake/meta.c" <<'C'
struct ops { int (*f)(void); };
int meta_update(void) { return 1; }
const struct ops md_meta_ops = { meta_update };
C
cat > "$fake/array.c" <<'C'
struct ops { int (*f)(void); };
extern const struct ops md_meta_ops;
int array_go(void) { return md_meta_ops.f(); }
C
cat > "$fake/raid9.c" <<'C'
int array_go(void);
int raid9_go(void) { return array_go(); }
C
cc -c -o "$fake/lib/md/.libs/libraid_core_la-meta.o" "$fake/meta.c"
cc -c -o "$fake/lib/.libs/libraid_core_la-array.o" "$fake/array.c"
cc -c -o "$fake/lib/raid/.libs/libraid_core_la-raid9.o" "$fake/raid9.c"
top_srcdir=$fake "$top_srcdir/tests/floors.sh" "$fake" > "$fake/out" ||
  { cat "$fake/out"; fail "floors.sh refused calls through an ops table and down"; }
cat >> "$fake/array.c" <<'C'
int meta_update(void);
int array_now(void) { return meta_update(); }
C
cat >> "$fake/raid9.c" <<'C'
int meta_update(void);
int raid9_meta(void) { return meta_update(); }
C
cc -c -o "$fake/lib/.libs/libraid_core_la-array.o" "$fake/array.c"
cc -c -o "$fake/lib/raid/.libs/libraid_core_la-raid9.o" "$fake/raid9.c"
if top_srcdir=$fake "$top_srcdir/tests/floors.sh" "$fake" > "$fake/out"; then
  cat "$fake/out"; fail "floors.sh let the core and a personality call md/"
fi
grep -q 'lib/array.c (core) -> lib/md/meta.c (md): meta_update  \[calls up\]' "$fake/out" ||
  { cat "$fake/out"; fail "floors.sh did not name the core's call up"; }
grep -q 'lib/raid/raid9.c (raid) -> lib/md/meta.c (md): meta_update  \[a personality calls md/\]' "$fake/out" ||
  { cat "$fake/out"; fail "floors.sh did not name the personality's call to md/"; }
# The headers: a core source that includes md/'s header and a personality
# that includes md/md.h are caught (their objects are as before).
mkdir -p "$fake/lib/raid"
touch "$fake/lib/md/meta.h" "$fake/lib/md/md.h" "$fake/lib/internal.h"
printf '#include "internal.h"\n#include "md/meta.h"\n' > "$fake/lib/array.c"
printf '#include "internal.h"\n#include "md/md.h"\n' > "$fake/lib/raid/raid9.c"
if top_srcdir=$fake "$top_srcdir/tests/floors.sh" "$fake" > "$fake/out"; then
  cat "$fake/out"; fail "floors.sh let the core include md/'s header"
fi
grep -q 'lib/array.c (core) includes md/meta.h: includes an upper floor' "$fake/out" ||
  { cat "$fake/out"; fail "floors.sh did not name the core's include of md/meta.h"; }
grep -q 'lib/raid/raid9.c (raid) includes md/md.h: a personality includes md/' "$fake/out" ||
  { cat "$fake/out"; fail "floors.sh did not name the personality's include of md/md.h"; }
echo "$0: ok"

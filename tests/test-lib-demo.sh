#!/usr/bin/env bash
# Description: the demo program (examples/raid-demo DIR) builds arrays over
# member files it creates in DIR and exits 0.  A placeholder until the demo
# exists: skipped (77) when it has not been built.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
set -e
set -x

top_builddir=${top_builddir:-.}
demo="$top_builddir/examples/raid-demo"

[ -x "$demo" ] || skip "the demo is not built yet ($demo)"

mktmpdir libraid-demo
"$demo" "$tmpdir"

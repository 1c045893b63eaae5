#!/usr/bin/env bash
# Description: the demo program (raidctl/raid-demo DIR) builds arrays over
# member files it creates in DIR and exits 0.  A placeholder until the demo
# exists: skipped (77) when it has not been built.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
set -e
set -x

top_builddir=${top_builddir:-.}
demo="$top_builddir/raidctl/raid-demo"

if [ ! -x "$demo" ]; then
    echo "$0: test skipped because the demo is not built yet ($demo)"
    exit 77
fi

mktmpdir libraid-demo
"$demo" "$tmpdir"

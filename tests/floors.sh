#!/bin/bash
# floors.sh: the calls between libraid's floors, read from the object
# files' symbols (nm), and whether any runs up.
#
#   tests/floors.sh [BUILDDIR]      (default: the current directory)
#
# BUILDDIR is a configured and built tree (make); the sources are the
# library's own list, lib_libraid_core_la_SOURCES in Makefile.am.  It
# prints, for each pair of floors, how many distinct symbols one takes
# from the other, then every call that breaks the rule of lib/README.md:
#   - a floor calls its own and lower floors only;
#   - up only through an ops table: a reference to a data symbol named
#     *_ops or *_personality (the doors: struct meta_ops, sync_ops,
#     member_ops, personality) is allowed in any direction;
#   - a personality (raid/) never calls md/ (no personality knows a
#     superblock or a bitmap), although md/ lies below it;
#   - the same for the headers, read from the sources: a file includes
#     lib/internal.h (the base, member/, the core and the doors) and the
#     headers of its own and lower floors (md/meta.h and md/md.h are md/'s,
#     sync/engine.h and sync/sync.h sync/'s, raid/*.h raid/'s), never an
#     upper floor's, and no personality includes md/'s.
# Exit status 0 when no call breaks it, 1 when one does, 2 on a usage
# error or when an object is missing (build first).
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
build=${1:-.}
makefile=$top_srcdir/Makefile.am

# The floors, from the bottom up, and which sources each holds.
floor_of() {
  case "$1" in
    lib/error.c|lib/log.c|lib/mem.c|lib/queue.c|lib/stats.c|lib/events.c|\
    lib/range-lock.c|lib/daemon.c)  echo "0 base" ;;
    lib/member/*)                   echo "1 member" ;;
    lib/array.c|lib/request.c|lib/roles.c|lib/stats-array.c|lib/internal.h)
                                    echo "2 core" ;;
    lib/md/*)                       echo "3 md" ;;
    lib/sync/*)                     echo "4 sync" ;;
    lib/raid/*)                     echo "5 raid" ;;
    lib/manage.c|lib/blocking.c|lib/grow.c|lib/takeover.c|lib/top.h)
                                    echo "6 top" ;;
    *)                              echo "? ?" ;;
  esac
}

[ -f "$makefile" ] || { echo "floors.sh: $makefile not found" >&2; exit 2; }
# The sources: the continuation lines after lib_libraid_core_la_SOURCES.
mapfile -t sources < <(awk '
  /^lib_libraid_core_la_SOURCES *=/ { on = 1; next }
  on { for (i = 1; i <= NF; i++) if ($i ~ /\.[ch]$/) print $i; if ($NF != "\\") exit }
' "$makefile")
[ "${#sources[@]}" -gt 0 ] || { echo "floors.sh: no sources in $makefile" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/defs"; : > "$tmp/uses"; : > "$tmp/includes"
for src in "${sources[@]}"; do
  read -r rank name < <(floor_of "$src")
  if [ "$rank" = "?" ]; then
    echo "floors.sh: $src is on no floor: add it to floor_of() and lib/README.md" >&2
    exit 1
  fi
  # The headers it includes, as paths under lib/ (a bare name is in its
  # own folder), for the check of the headers below.
  if [ -f "$top_srcdir/$src" ]; then
    sed -n 's/^#include "\([^"]*\.h\)".*/\1/p' "$top_srcdir/$src" |
      while read -r h; do
        d=$(dirname "${src#lib/}")
        case "$h" in */*) ;; *) [ "$d" = . ] || h=$d/$h ;; esac
        # Only lib/'s own headers (raid/raid.h is the public one).
        [ -f "$top_srcdir/lib/$h" ] && echo "$src $rank $name $h"
        :
      done >> "$tmp/includes"
  fi
  case "$src" in *.h) continue ;; esac   # a header: its includes only
  dir=$(dirname "$src"); base=$(basename "$src" .c)
  obj=
  for o in "$build/$dir/.libs/libraid_core_la-$base.o" "$build/$dir/libraid_core_la-$base.o"; do
    [ -f "$o" ] && { obj=$o; break; }
  done
  [ -n "$obj" ] || { echo "floors.sh: no object for $src under $build (build first)" >&2; exit 2; }
  # Defined globals: symbol, type, file, rank, floor.
  nm --defined-only -g "$obj" | awk -v f="$src" -v r="$rank" -v n="$name" \
    '{ print $3, $2, f, r, n }' >> "$tmp/defs"
  nm -u "$obj" | awk -v f="$src" -v r="$rank" -v n="$name" \
    '{ print f, r, n, $2 }' >> "$tmp/uses"
done

rc=0
awk '
  NR == FNR { type[$1] = $2; file[$1] = $3; rank[$1] = $4; floor[$1] = $5; next }
  !($4 in file) || file[$4] == $1 { next }          # outside the library, or itself
  {
    sym = $4; door = type[sym] ~ /^[DdRrBb]$/ && sym ~ /(_ops|_personality)$/
    pair = $3 " -> " floor[sym]
    if (!seen[pair, sym]++) count[pair]++
    bad = ""
    if (!door && $2 + 0 < rank[sym] + 0) bad = "calls up"
    if (!door && $3 == "raid" && floor[sym] == "md") bad = "a personality calls md/"
    if (bad != "" && !said[$1, sym]++)
      breaks[++nb] = sprintf("  %s (%s) -> %s (%s): %s  [%s]", $1, $3, file[sym], floor[sym], sym, bad)
  }
  END {
    print "calls between floors (distinct symbols taken), from the top floor down:"
    n = split("top raid sync md core member base", order, " ")
    for (i = 1; i <= n; i++)
      for (j = 1; j <= n; j++) {
        p = order[i] " -> " order[j]
        if (i != j && (p in count)) printf "  %-18s %d\n", p, count[p]
      }
    if (nb == 0) { print "no call runs up the floors"; exit 0 }
    print nb " call(s) break the rule:"
    for (i = 1; i <= nb; i++) print breaks[i]
    exit 1
  }
' "$tmp/defs" "$tmp/uses" || rc=1

# The headers: the floor of each of lib/'s folders' headers.
awk '
  BEGIN { hr["md"] = 3; hr["sync"] = 4; hr["raid"] = 5 }
  {
    if ($4 == "top.h" && $2 + 0 < 6) {
      printf "  %s (%s) includes %s: includes an upper floor'"'"'s header\n", $1, $3, $4; n++
    }
    split($4, p, "/"); if (!(p[1] in hr) || p[1] == $4) next
    bad = ""
    if ($2 + 0 < hr[p[1]]) bad = "includes an upper floor'"'"'s header"
    if ($3 == "raid" && p[1] == "md") bad = "a personality includes md/"
    if (bad != "") { printf "  %s (%s) includes %s: %s\n", $1, $3, $4, bad; n++ }
  }
  END {
    if (n) { print n " include(s) break the rule"; exit 1 }
    print "no include runs up the floors"
  }
' "$tmp/includes" || rc=1
exit "$rc"

#!/bin/bash
# Description: the benchmark suite runs (bench/run --smoke): raidd comes
# up, the configurations are built, fio's nbd engine drives them, the
# degraded, rebuilding and file-copy cells run, and results.csv,
# results.md and the PNG charts come out non-empty, and --report renders
# them again from results.csv.  Then bench/bitmap.sh --quick (issue 16,
# about 30 s): crash resync, re-add and 4K random writes with and without
# a write-intent bitmap, each with a figure; and bench/write-behind.sh
# --quick (about 10 s): a mirror with a slow write-mostly member, with and
# without write-behind, each workload with a figure.  A smoke test of the
# suite, not of the figures: no number is judged here.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires fio --enghelp=nbd
requires jq --version
requires gnuplot --version
requires_file "$top_builddir/raidd/raidd" "$top_builddir/raidctl/raidctl"

mktmpdir test-bench-smoke
out=$tmpdir/out
fail () { echo "$0: FAIL: $*" >&2; [ -f "$out/raidd.log" ] && tail -30 "$out/raidd.log" >&2; exit 1; }

"$top_srcdir/bench/run" --smoke --build "$top_builddir" --out "$out" ||
  fail "bench/run --smoke exited $?"

for f in results.csv results.md chart-random-4k.png chart-sequential.png chart-efficiency.png; do
  [ -s "$out/$f" ] || fail "$f missing or empty"
done
head -1 "$out/results.csv" | grep -q '^test,config,level,members,' || fail "results.csv has no header"
# One member alone, RAID 0 over 2 and RAID 5 over 3, each with a figure.
for c in one raid0x2 raid5x3; do
  awk -F, -v c="$c" '$1 == "fio" && $2 == c && $12 > 0 { found = 1 } END { exit !found }' \
    "$out/results.csv" || fail "no fio figure for $c"
done
grep -q ',degraded,' "$out/results.csv" || fail "no degraded cell"
grep -q '^rebuild-idle,' "$out/results.csv" || fail "no idle rebuild row"
grep -q '^## Targets' "$out/results.md" || fail "results.md has no targets table"
if grep -q 'fio failed' "$out/results.csv"; then fail "a cell failed"; fi
head -c 8 "$out/chart-random-4k.png" | od -An -c | grep -q 'P   N   G' || fail "chart is not a PNG"

# --report renders results.md and the charts again from results.csv: the
# measured columns stay as they were, the ideal and efficiency columns
# are there again, and the header of the run is kept.
cp "$out/results.csv" "$tmpdir/before.csv"
rm "$out"/chart-*.png
"$top_srcdir/bench/run" --report "$out" > "$tmpdir/report.out" || fail "bench/run --report exited $?"
cmp <(cut -d, -f1-20,23 "$tmpdir/before.csv") <(cut -d, -f1-20,23 "$out/results.csv") ||
  fail "--report changed measured columns"
cmp <(cut -d, -f21,22 "$tmpdir/before.csv") <(cut -d, -f21,22 "$out/results.csv") ||
  fail "--report changed ideal or efficiency with the same ideal()"
grep -q '^`bench/run --smoke' "$out/results.md" || fail "--report lost the run's header"
grep -q '^Rendered again by `bench/run --report`' "$out/results.md" || fail "--report does not say so"
grep -q '^## Targets' "$out/results.md" || fail "--report: no targets table"
[ -s "$out/chart-efficiency.png" ] || fail "--report drew no charts"
if "$top_srcdir/bench/run" --report "$tmpdir/none" 2> "$tmpdir/err"; then fail "--report on no directory succeeded"; fi
grep -q -- "--report: no directory $tmpdir/none" "$tmpdir/err" || fail "--report error: $(cat "$tmpdir/err")"

# bench/bitmap.sh --quick: every measurement of both levels, with and
# without the bitmap, has its figure.
bout=$tmpdir/bitmap
st=0
"$top_srcdir/bench/bitmap.sh" --quick --build "$top_builddir" --out "$bout" > "$tmpdir/bitmap.out" 2>&1 || st=$?
[ $st = 0 ] || { cat "$tmpdir/bitmap.out" >&2; fail "bench/bitmap.sh --quick exited $st"; }
for t in crash readd randwrite-4k; do
  for l in 1 5; do
    for b in none internal; do
      awk -F, -v t="$t" -v l="$l" -v b="$b" '$1 == t && $2 == l && $4 == b &&
        (t == "randwrite-4k" ? $12 > 0 : $7 > 0 && $8 > 0) { found = 1 } END { exit !found }' \
        "$bout/bitmap.csv" || fail "bench/bitmap.sh: no $t figure for RAID $l, bitmap $b"
    done
  done
done
[ "$(grep -c '^| RAID [15] | [0-9]' "$bout/bitmap.md")" = 6 ] || fail "bitmap.md: $(cat "$bout/bitmap.md")"

# bench/write-behind.sh --quick: each workload on both arrays has figures.
wout=$tmpdir/write-behind
st=0
"$top_srcdir/bench/write-behind.sh" --quick --build "$top_builddir" --out "$wout" \
  > "$tmpdir/write-behind.out" 2>&1 || st=$?
[ $st = 0 ] || { cat "$tmpdir/write-behind.out" >&2; fail "bench/write-behind.sh --quick exited $st"; }
for w in low-rate mixed sequential; do
  for a in none behind; do
    awk -F, -v w="$w" -v a="$a" '$2 == a && $3 == w && $4 > 0 && $5 > 0 { found = 1 }
      END { exit !found }' "$wout/write-behind.csv" ||
      fail "bench/write-behind.sh: no $w figure for $a"
  done
done
[ "$(grep -c '^| [46]' "$wout/write-behind.md")" = 3 ] || fail "write-behind.md: $(cat "$wout/write-behind.md")"
echo "$0: ok ($(($(wc -l < "$out/results.csv") - 1)) rows; bench/bitmap.sh: $(($(wc -l < "$bout/bitmap.csv") - 1)) rows; bench/write-behind.sh: $(($(wc -l < "$wout/write-behind.csv") - 1)) rows)"

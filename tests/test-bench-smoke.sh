#!/bin/bash
# Description: the benchmark suite runs (bench/run --smoke): raidd comes
# up, the configurations are built, fio's nbd engine drives them, the
# degraded, rebuilding and file-copy cells run, and results.csv,
# results.md and the PNG charts come out non-empty.  A smoke test of the
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
echo "$0: ok ($(($(wc -l < "$out/results.csv") - 1)) rows)"

#!/bin/bash
# Description: the benchmark suite runs (bench/run --smoke): raidd comes
# up, the configurations are built, fio's nbd engine drives them, the
# degraded, rebuilding and file-copy cells run, and results.csv,
# results.md and the PNG charts come out non-empty, and --report renders
# them again from results.csv.  The smoke run's cells run on NVMe-class
# simulated drives that keep their data, and each cell's data is checked
# (issue 19); bench/raid-bench verifies every level.  Then bench/bitmap.sh --quick (issue 16,
# about 30 s): crash resync, re-add and 4K random writes with and without
# a write-intent bitmap, each with a figure; and bench/write-behind.sh
# --quick (about 10 s): a mirror with a slow write-mostly member, with and
# without write-behind, each workload with a figure; and bench/remote.sh
# --quick (about 20 s): a mirror with a member behind nbdkit's delay
# filter, each array with a figure.  A smoke test of the
# suite, not of the figures: no number is judged here.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires fio --enghelp=nbd
requires jq --version
requires gnuplot --version
requires nbdkit --version
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

# Issue 19: NVMe-class drives that keep their data, every cell's data
# checked, CPU per I/O in every fio cell, nbdkit's null and memory plugins
# and the RAID path alone (bench/raid-bench) in the CPU section.
grep -q "^\`bench/run --smoke --members sim --sim 'lat=80us,depth=64,bw=3G'\`" "$out/results.md" ||
  fail "the default profile is not the NVMe-class drive: $(sed -n 3p "$out/results.md")"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
  $h["test"] ~ /^(fio|nbdkit)$/ && $h["config"] != "nbdkit-null" {
    n++; if ($h["verified"] != "yes" || !($h["cpu_us_per_io"] > 0) || !($h["lat_p50_us"] > 0)) bad = bad " " $2 "/" $6 "/" $11 }
  END { if (bad != "" || n < 11) { print "cells without a data check, CPU per I/O or p50:" bad " (" n " cells)"; exit 1 } }' \
  "$out/results.csv" >&2 || fail "see above"
[ "$(grep -c '^verify,.*,yes,' "$out/results.csv")" -ge 6 ] || fail "fewer than 6 read-backs passed: $(grep '^verify,' "$out/results.csv")"
for c in nbdkit-null nbdkit-memory raid0x4-ram raid5x4-ram; do
  grep -q "^nbdkit,$c,.*,randread,4k,32," "$out/results.csv" || fail "no CPU cell for $c"
done
for c in raid0x4-ram raid5x4-ram; do
  awk -F, -v c="$c" '$1 == "raidpath" && $2 == c && $12 > 0 && $24 > 0 && $25 == "yes" { f = 1 } END { exit !f }' \
    "$out/results.csv" || fail "no verified RAID-path row for $c"
done
grep -q '^## CPU per I/O: raidd against nbdkit' "$out/results.md" || fail "results.md has no CPU-per-I/O section"
grep -q '^## Data checks' "$out/results.md" || fail "results.md has no data checks"
for f in chart-latency.png chart-cpu.png; do [ -s "$out/$f" ] || fail "$f missing"; done
head -1 "$out/results.csv" | grep -q ',lat_p50_us,cpu_us_per_io,verified,threads,note$' || fail "results.csv columns: $(head -1 "$out/results.csv")"
if "$top_srcdir/bench/run" --threads '1 0' --out "$tmpdir/x" 2> "$tmpdir/err"; then fail "--threads 0 accepted"; fi
grep -q "^bench/run: --threads: '0' is not a worker thread count from 1 to 64" "$tmpdir/err" || fail "--threads error: $(cat "$tmpdir/err")"
if "$top_srcdir/bench/run" --profile ssd --out "$tmpdir/x" 2> "$tmpdir/err"; then fail "--profile ssd accepted"; fi
grep -q "^bench/run: --profile: 'ssd' is neither nvme nor hdd" "$tmpdir/err" || fail "--profile error: $(cat "$tmpdir/err")"

# bench/raid-bench: every level verified after random writes (stamps read
# back, the array's check finds no mismatch); a bad argument is named.
rb=$top_builddir/bench/raid-bench
for l in 0 1 5 10; do
  n=4; [ $l = 1 ] && n=2
  "$rb" --level $l --members $n --member-size 16 --rw randwrite --seconds 0.3 --verify \
    > "$tmpdir/rb.out" 2> "$tmpdir/rb.err" || fail "raid-bench RAID $l --verify: $(cat "$tmpdir/rb.err")"
  grep -q "^raid$l members=$n ram bs=4096 randwrite qd=32 threads=1: [0-9]* IOPS, [0-9.]* MiB/s, [0-9.]* us CPU per I/O, verified$" \
    "$tmpdir/rb.out" || fail "raid-bench RAID $l: $(cat "$tmpdir/rb.out")"
done
mkdir "$tmpdir/rbd"
"$rb" --level 5 --members 3 --member-size 16 --rw randwrite --seconds 0.3 --verify --dir "$tmpdir/rbd" \
  --sim 'lat=80us,depth=64,bw=3G' > "$tmpdir/rb.out" 2>&1 || fail "raid-bench on sim members: $(cat "$tmpdir/rb.out")"
grep -q '^raid5 members=3 sim .*, verified$' "$tmpdir/rb.out" || fail "raid-bench sim: $(cat "$tmpdir/rb.out")"
for a in "--qd x:--qd: 'x' is not a whole number from 1 to 4096" "--rw foo:--rw: 'foo' is not read" \
         "--sim a:--sim needs --dir" "--verify --no-prefill:--verify needs the prefill" "--bs 1000:--bs: 1000 is not a multiple of 512"; do
  # shellcheck disable=SC2086
  if "$rb" ${a%%:*} > /dev/null 2> "$tmpdir/rb.err"; then fail "raid-bench ${a%%:*} accepted"; fi
  grep -q "^raid-bench: ${a#*:}" "$tmpdir/rb.err" || fail "raid-bench ${a%%:*}: $(cat "$tmpdir/rb.err")"
done

# --report renders results.md and the charts again from results.csv: the
# measured columns stay as they were, the ideal and efficiency columns
# are there again, and the header of the run is kept.
cp "$out/results.csv" "$tmpdir/before.csv"
rm "$out"/chart-*.png
"$top_srcdir/bench/run" --report "$out" > "$tmpdir/report.out" || fail "bench/run --report exited $?"
cmp <(cut -d, -f1-20,23- "$tmpdir/before.csv") <(cut -d, -f1-20,23- "$out/results.csv") ||
  fail "--report changed measured columns"
cmp <(cut -d, -f21,22 "$tmpdir/before.csv") <(cut -d, -f21,22 "$out/results.csv") ||
  fail "--report changed ideal or efficiency with the same ideal()"
grep -q '^`bench/run --smoke' "$out/results.md" || fail "--report lost the run's header"
grep -q '^Rendered again by `bench/run --report`' "$out/results.md" || fail "--report does not say so"
grep -q '^## Targets' "$out/results.md" || fail "--report: no targets table"
[ -s "$out/chart-efficiency.png" ] || fail "--report drew no charts"
if "$top_srcdir/bench/run" --report "$tmpdir/none" 2> "$tmpdir/err"; then fail "--report on no directory succeeded"; fi
grep -q -- "--report: no directory $tmpdir/none" "$tmpdir/err" || fail "--report error: $(cat "$tmpdir/err")"

# bench_logs DIR: the end of each log a bench script left in DIR (raidd's
# and raidctl's words on what failed), before the test's directory goes.
bench_logs () {
  local f
  for f in "$1"/*.log; do
    [ -f "$f" ] || continue
    echo "--- the last lines of $f:" >&2
    tail -n 40 "$f" >&2
  done
}

# bench/bitmap.sh --quick: every measurement of both levels, with and
# without the bitmap, has its figure.
bout=$tmpdir/bitmap
st=0
"$top_srcdir/bench/bitmap.sh" --quick --build "$top_builddir" --out "$bout" > "$tmpdir/bitmap.out" 2>&1 || st=$?
[ $st = 0 ] || { cat "$tmpdir/bitmap.out" >&2; bench_logs "$bout"; fail "bench/bitmap.sh --quick exited $st"; }
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
[ $st = 0 ] || { cat "$tmpdir/write-behind.out" >&2; bench_logs "$wout"; fail "bench/write-behind.sh --quick exited $st"; }
for w in low-rate mixed sequential; do
  for a in none behind; do
    awk -F, -v w="$w" -v a="$a" '$2 == a && $3 == w && $4 > 0 && $5 > 0 { found = 1 }
      END { exit !found }' "$wout/write-behind.csv" ||
      fail "bench/write-behind.sh: no $w figure for $a"
  done
done
[ "$(grep -c '^| [46]' "$wout/write-behind.md")" = 3 ] || fail "write-behind.md: $(cat "$wout/write-behind.md")"

# bench/remote.sh --quick: every target has a figure.
rout=$tmpdir/remote
st=0
"$top_srcdir/bench/remote.sh" --quick --build "$top_builddir" --out "$rout" \
  > "$tmpdir/remote.out" 2>&1 || st=$?
[ $st = 0 ] || { cat "$tmpdir/remote.out" >&2; bench_logs "$rout"; fail "bench/remote.sh --quick exited $st"; }
for t in local sync1 behind1 sync2 behind2; do
  awk -F, -v t="$t" '$2 == t && $3 == "lat" && $4 > 0 && $5 > 0 { found = 1 }
    END { exit !found }' "$rout/remote.csv" || fail "bench/remote.sh: no latency figure for $t"
done
for t in raidd direct; do
  for rw in read write; do
    awk -F, -v t="$t" -v rw="$rw" '$2 == t && $3 == rw && $7 > 0 { found = 1 }
      END { exit !found }' "$rout/remote.csv" || fail "bench/remote.sh: no $rw figure for $t"
  done
done
echo "$0: ok ($(($(wc -l < "$out/results.csv") - 1)) rows; bench/bitmap.sh: $(($(wc -l < "$bout/bitmap.csv") - 1)) rows; bench/write-behind.sh: $(($(wc -l < "$wout/write-behind.csv") - 1)) rows; bench/remote.sh: $(($(wc -l < "$rout/remote.csv") - 1)) rows)"

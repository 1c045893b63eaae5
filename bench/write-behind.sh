#!/bin/bash
# bench/write-behind.sh: what md's write-behind buys a mirror with a slow
# write-mostly member, and what it costs (issue 16).
#
#   bench/write-behind.sh [--quick] [--size ARRAY_SIZE] [--fast-sim OPTS]
#                         [--slow-sim OPTS] [--write-behind N] [--rounds N]
#                         [--runtime SECONDS] [--out DIR] [--build BUILD_DIR]
#
# Starts its own raidd and makes two RAID 1 arrays of one fast simulated
# drive (--fast-sim, default an NVMe-class lat=80us,depth=64,bw=3G) and one
# slow write-mostly drive (--slow-sim, default a disk, lat=4ms,depth=4,
# bw=150M), both with an internal bitmap: "none" writes to both before a
# write completes, "behind" has `--write-behind=N` (default 256, mdadm's).
# fio's nbd engine then runs, on the two arrays in turn, ROUNDS rounds
# (default 2) of RUNTIME seconds (default 10) each of:
#   low-rate   4K random writes at queue depth 1, 200 a second (below what
#              the slow drive can do): the latency a light writer sees;
#   mixed      4K random 70/30 reads and writes at queue depth 8, as fast
#              as it goes: beyond the slow drive's rate, the writes behind
#              fill up to N and then wait for it;
#   sequential 64K sequential writes at queue depth 8.
# The table shows the median of the rounds: IOPS, mean and p99 completion
# latency of the writes (and the reads' IOPS for mixed), and the ratios
# behind / none.  Nothing passes or fails on a number; the exit status is
# 1 when a step failed or a tool is missing.
#
# The members keep their data (sim:FILE?OPTS, FILE on /dev/shm): 2 x SIZE
# (default 1G) of RAM per array.
# --quick: 64 MiB arrays, one round of 1 s (tests/test-bench-smoke.sh).
# Outputs in --out DIR (default bench/out): write-behind.md (also printed),
# write-behind.csv (every measurement), write-behind-raidd.log.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")

quick=0
size=1G
fast_opts='lat=80us,depth=64,bw=3G'
slow_opts='lat=4ms,depth=4,bw=150M'
wb=256
rounds=2
runtime=10
out=$top/bench/out
build=$top/build

usage () {
  sed -n '5,7p' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --size) size=$2; shift ;;
    --fast-sim) fast_opts=$2; shift ;;
    --slow-sim) slow_opts=$2; shift ;;
    --write-behind) wb=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --runtime) runtime=$2; shift ;;
    --out) out=$2; shift ;;
    --build) build=$2; shift ;;
    -h|--help) usage 0 ;;
    *) echo "bench/write-behind.sh: unknown option '$1'" >&2; usage 1 >&2 ;;
  esac
  shift
done
if [ $quick = 1 ]; then size=64M rounds=1 runtime=1; fi
case $fast_opts$slow_opts in *discard*) echo "bench/write-behind.sh: the members must keep their data (no discard)" >&2; exit 1 ;; esac

raidd=$build/raidd/raidd
raidctl=$build/raidctl/raidctl
for t in "$raidd" "$raidctl"; do
  [ -x "$t" ] || { echo "bench/write-behind.sh: $t is not built (make, or --build)" >&2; exit 1; }
done
for t in fio python3; do
  command -v $t >/dev/null || { echo "bench/write-behind.sh: $t is missing" >&2; exit 1; }
done
fio --enghelp=nbd >/dev/null 2>&1 || { echo "bench/write-behind.sh: fio has no nbd engine" >&2; exit 1; }

mkdir -p "$out"
work=$(mktemp -d /var/tmp/write-behind.XXXXXX)
shm=$(mktemp -d /dev/shm/write-behind.XXXXXX)
ctl=$work/control.sock
sock=$work/nbd.sock
raidd_pid=
cleanup () {
  if [ -n "$raidd_pid" ]; then
    kill "$raidd_pid" 2>/dev/null || :
    wait "$raidd_pid" 2>/dev/null || :
  fi
  rm -rf "$work" "$shm"
}
trap cleanup EXIT
R () { "$raidctl" --control "$ctl" "$@"; }

"$raidd" --foreground --control "$ctl" --nbd-socket "$sock" --threads 2 \
  > "$out/write-behind-raidd.log" 2>&1 &
raidd_pid=$!
for (( i = 0; i < 100; i++ )); do
  R status >/dev/null 2>&1 && break
  sleep 0.1
done
R status >/dev/null 2>&1 || { echo "bench/write-behind.sh: raidd did not start" >&2; exit 1; }

for a in none behind; do
  truncate -s "$size" "$shm/$a-fast" "$shm/$a-slow"
  extra=()
  [ $a = behind ] && extra=(--write-behind="$wb")
  slow="sim:$shm/$a-slow?$slow_opts"
  R create "$a" --level 1 --assume-clean --bitmap internal "${extra[@]}" \
    --write-mostly "$slow" "sim:$shm/$a-fast?$fast_opts" "$slow" > /dev/null
done

# run ROUND ARRAY WORKLOAD: one fio job; appends CSV rows.
run () {
  local round=$1 a=$2 w=$3 args=()
  case $w in
    low-rate) args=(--rw=randwrite --bs=4k --iodepth=1 --rate_iops=200) ;;
    mixed) args=(--rw=randrw --rwmixread=70 --bs=4k --iodepth=8) ;;
    sequential) args=(--rw=write --bs=64k --iodepth=8) ;;
  esac
  fio --name="$w" --ioengine=nbd --uri="nbd+unix:///$a?socket=$sock" --size="$size" \
    --runtime="$runtime" --time_based "${args[@]}" --output-format=json \
    --output="$work/fio.json" > /dev/null 2>&1 ||
    { echo "bench/write-behind.sh: fio $w on $a failed" >&2; exit 1; }
  python3 - "$work/fio.json" "$round" "$a" "$w" >> "$out/write-behind.csv" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
w, r = j["write"], j["read"]
cl = w["clat_ns"]
print("%s,%s,%s,%.0f,%.0f,%.0f,%.0f" % (sys.argv[2], sys.argv[3], sys.argv[4], w["iops"],
      cl["mean"] / 1000, cl.get("percentile", {}).get("99.000000", 0) / 1000, r["iops"]))
PY
}

echo "round,array,workload,write_iops,write_mean_us,write_p99_us,read_iops" > "$out/write-behind.csv"
for (( round = 1; round <= rounds; round++ )); do
  for w in low-rate mixed sequential; do
    for a in none behind; do
      run "$round" "$a" "$w"
    done
  done
done
R stop none > /dev/null
R stop behind > /dev/null

python3 - "$out/write-behind.csv" "$fast_opts" "$slow_opts" "$wb" "$size" "$rounds" "$runtime" \
  > "$out/write-behind.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
fast, slow, wb, size, rounds, runtime = sys.argv[2:8]
def med(a, w, k):
    v = [float(r[k]) for r in rows if r["array"] == a and r["workload"] == w]
    return statistics.median(v) if v else 0.0
print("RAID 1 of a fast drive (sim %s) and a slow write-mostly one (sim %s), "
      "bitmap internal; behind: --write-behind=%s; %s arrays, median of %s rounds "
      "of %s s, fio nbd engine.\n" % (fast, slow, wb, size, rounds, runtime))
print("| workload | none: write IOPS | none: mean / p99 us | behind: write IOPS "
      "| behind: mean / p99 us | IOPS behind / none | mean latency behind / none |")
print("|---|---|---|---|---|---|---|")
names = {"low-rate": "4K random writes, qd1, 200/s",
         "mixed": "4K random 70/30 read/write, qd8",
         "sequential": "64K sequential writes, qd8"}
for w in ("low-rate", "mixed", "sequential"):
    n, b = med("none", w, "write_iops"), med("behind", w, "write_iops")
    nm, bm = med("none", w, "write_mean_us"), med("behind", w, "write_mean_us")
    print("| %s | %.0f | %.0f / %.0f | %.0f | %.0f / %.0f | %.2f | %.2f |" % (
        names[w], n, nm, med("none", w, "write_p99_us"), b, bm,
        med("behind", w, "write_p99_us"), b / n if n else 0, bm / nm if nm else 0))
n, b = med("none", "mixed", "read_iops"), med("behind", "mixed", "read_iops")
print("\nMixed workload reads: %.0f IOPS without write-behind, %.0f with (%.2f)." %
      (n, b, b / n if n else 0))
PY
cat "$out/write-behind.md"

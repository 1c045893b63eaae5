#!/bin/bash
# bench/remote.sh: what a mirror to another machine costs (issue 30).
#
#   bench/remote.sh [--quick] [--delays "MS ..."] [--size SIZE] [--rounds N]
#                   [--runtime SECONDS] [--out DIR] [--build BUILD_DIR]
#
# Starts its own raidd and, for each delay (default "1 2": milliseconds
# nbdkit's delay filter adds to every read and write; 1.32's filter takes
# whole milliseconds), an nbdkit serving a file on /dev/shm as the remote
# member.  The local disk is a simulated NVMe-class drive
# (sim:FILE?lat=80us,depth=64,bw=3G).  fio's nbd engine, side by side in
# each round, runs 4K random writes at queue depth 1 on:
#   local    an array of the local drive alone (RAID 1 with one member
#            missing): the latency of the disk without a mirror;
#   sync     RAID 1 of the local drive and the remote member, written to
#            both before a write completes;
#   behind   the same with the remote member write-mostly and
#            --write-behind (mdadm's default of 256 writes behind): the
#            local drive sets the latency while fewer than 256 are behind.
# Then 1 MiB sequential reads and writes at queue depth 8 of the remote
# member alone through raidd (RAID 1 of it and "missing") against fio
# straight to the same nbdkit: what raidd's NBD member costs in throughput.
# The table shows medians of ROUNDS rounds (default 3) of RUNTIME seconds
# (default 8).  Nothing passes or fails on a number; the exit status is 1
# when a step failed or a tool is missing.
# --quick: 64 MiB members, one round of 1 s (tests/test-bench-smoke.sh).
# Outputs in --out DIR (default bench/out): remote.md (also printed),
# remote.csv (every measurement), remote-raidd.log.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")

quick=0
delays="1 2"
size=1G
rounds=3
runtime=8
out=$top/bench/out
build=$top/build
fast_opts='lat=80us,depth=64,bw=3G'

usage () {
  sed -n '5,6p' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --delays) delays=$2; shift ;;
    --size) size=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --runtime) runtime=$2; shift ;;
    --out) out=$2; shift ;;
    --build) build=$2; shift ;;
    -h|--help) usage 0 ;;
    *) echo "bench/remote.sh: unknown option '$1'" >&2; usage 1 >&2 ;;
  esac
  shift
done
if [ $quick = 1 ]; then size=64M rounds=1 runtime=1; fi
for x in $delays; do
  case $x in ''|*[!0-9]*) echo "bench/remote.sh: --delays: '$x' is not a whole number of milliseconds" >&2; exit 1 ;; esac
done

raidd=$build/raidd/raidd
raidctl=$build/raidctl/raidctl
for t in "$raidd" "$raidctl"; do
  [ -x "$t" ] || { echo "bench/remote.sh: $t is not built (make, or --build)" >&2; exit 1; }
done
for t in fio python3 nbdkit; do
  command -v $t >/dev/null || { echo "bench/remote.sh: $t is missing" >&2; exit 1; }
done
fio --enghelp=nbd >/dev/null 2>&1 || { echo "bench/remote.sh: fio has no nbd engine" >&2; exit 1; }

mkdir -p "$out"
work=$(mktemp -d /var/tmp/remote-bench.XXXXXX)
shm=$(mktemp -d /dev/shm/remote-bench.XXXXXX)
ctl=$work/control.sock
sock=$work/nbd.sock
raidd_pid=
# The servers' PIDs are in their PID files: server() runs in a command
# substitution, whose variables do not come back.
cleanup () {
  local f
  if [ -n "$raidd_pid" ]; then
    kill "$raidd_pid" 2>/dev/null || :
    wait "$raidd_pid" 2>/dev/null || :
  fi
  for f in "$work"/*.pid; do
    [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || :
  done
  rm -rf "$work" "$shm"
}
trap cleanup EXIT
R () { "$raidctl" --control "$ctl" "$@"; }

"$raidd" --foreground --control "$ctl" --nbd-socket "$sock" --threads 2 \
  > "$out/remote-raidd.log" 2>&1 &
raidd_pid=$!
for (( i = 0; i < 100; i++ )); do
  R status >/dev/null 2>&1 && break
  sleep 0.1
done
R status >/dev/null 2>&1 || { echo "bench/remote.sh: raidd did not start" >&2; exit 1; }

# server NAME DELAY_MS: nbdkit over $shm/NAME on $work/NAME.sock; its URI.
server () {
  local f=$shm/$1 filter=() params=()
  truncate -s "$size" "$f"
  [ "$2" = 0 ] || { filter=(--filter=delay); params=(rdelay="$2ms" wdelay="$2ms"); }
  nbdkit -U "$work/$1.sock" -P "$work/$1.pid" "${filter[@]}" file "$f" "${params[@]}" ||
    { echo "bench/remote.sh: nbdkit for $1 did not start" >&2; exit 1; }
  for (( i = 0; i < 100; i++ )); do [ -s "$work/$1.pid" ] && break; sleep 0.05; done
  echo "nbd+unix:///?socket=$work/$1.sock"
}
local_drive () { truncate -s "$size" "$shm/$1"; echo "sim:$shm/$1?$fast_opts"; }

R create local --level 1 --assume-clean --bitmap internal "$(local_drive local)" missing >/dev/null
for ms in $delays; do
  u=$(server "sync$ms" "$ms")
  R create "sync$ms" --level 1 --assume-clean --bitmap internal \
    "$(local_drive "sync$ms-l")" "$u" >/dev/null
  u=$(server "behind$ms" "$ms")
  R create "behind$ms" --level 1 --assume-clean --bitmap internal --write-behind \
    --write-mostly "$u" "$(local_drive "behind$ms-l")" "$u" >/dev/null
done
solo=$(server solo "${delays%% *}")
R create solo --level 1 --assume-clean --bitmap none "$solo" missing >/dev/null

# lat ROUND NAME URI: 4K random writes, qd1; a CSV row.
lat () {
  fio --name=lat --ioengine=nbd --uri="$3" --size="$size" --runtime="$runtime" \
    --time_based --rw=randwrite --bs=4k --iodepth=1 --output-format=json \
    --output="$work/fio.json" >/dev/null 2>&1 || { echo "bench/remote.sh: fio on $2 failed" >&2; exit 1; }
  python3 - "$work/fio.json" "$1" "$2" >> "$out/remote.csv" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))["jobs"][0]["write"]
p = w["clat_ns"].get("percentile", {})
print("%s,%s,lat,%.0f,%.1f,%.1f,0" % (sys.argv[2], sys.argv[3], w["iops"],
      p.get("50.000000", 0) / 1000, p.get("99.000000", 0) / 1000))
PY
}
# tput ROUND NAME URI RW: 1 MiB sequential RW, qd8; a CSV row (MiB/s).
tput () {
  fio --name=tput --ioengine=nbd --uri="$3" --size="$size" --runtime="$runtime" \
    --time_based --rw="$4" --bs=1M --iodepth=8 --output-format=json \
    --output="$work/fio.json" >/dev/null 2>&1 || { echo "bench/remote.sh: fio on $2 failed" >&2; exit 1; }
  python3 - "$work/fio.json" "$1" "$2" "$4" >> "$out/remote.csv" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
k = "read" if sys.argv[4] == "read" else "write"
print("%s,%s,%s,0,0,0,%.1f" % (sys.argv[2], sys.argv[3], sys.argv[4], j[k]["bw_bytes"] / 2**20))
PY
}

echo "round,target,test,iops,p50_us,p99_us,mib_s" > "$out/remote.csv"
a () { echo "nbd+unix:///$1?socket=$sock"; }
for (( round = 1; round <= rounds; round++ )); do
  lat "$round" local "$(a local)"
  for ms in $delays; do
    lat "$round" "sync$ms" "$(a "sync$ms")"
    lat "$round" "behind$ms" "$(a "behind$ms")"
  done
  for rw in read write; do
    tput "$round" raidd "$(a solo)" $rw
    tput "$round" direct "$solo" $rw
  done
done
R stop --scan >/dev/null

python3 - "$out/remote.csv" "$delays" "$size" "$rounds" "$runtime" "$fast_opts" \
  > "$out/remote.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
delays, size, rounds, runtime, fast = sys.argv[2].split(), *sys.argv[3:7]
def med(t, test, k):
    v = [float(r[k]) for r in rows if r["target"] == t and r["test"] == test]
    return statistics.median(v) if v else 0.0
print("4K random writes at queue depth 1 (fio nbd engine through raidd), median of %s "
      "rounds of %s s, %s members; local drive: sim %s; remote member: nbdkit file "
      "plugin on /dev/shm behind its delay filter (every read and write delayed).\n"
      % (rounds, runtime, size, fast))
print("| array | p50 us | p99 us | IOPS | p50 / local alone |")
print("|---|---|---|---|---|")
base = med("local", "lat", "p50_us")
print("| local drive alone | %.0f | %.0f | %.0f | 1.00 |" % (base, med("local", "lat", "p99_us"),
      med("local", "lat", "iops")))
for ms in delays:
    for kind, label in (("sync", "RAID 1 local + remote (%s ms), no write-behind"),
                        ("behind", "RAID 1 local + remote (%s ms) write-mostly, write-behind")):
        t = kind + ms
        p50 = med(t, "lat", "p50_us")
        print("| %s | %.0f | %.0f | %.0f | %.2f |" % (label % ms, p50, med(t, "lat", "p99_us"),
              med(t, "lat", "iops"), p50 / base if base else 0))
print("\n1 MiB sequential, queue depth 8, the remote member (%s ms) alone: through raidd "
      "(RAID 1 of it and missing) against fio straight to the same nbdkit.\n" % delays[0])
print("| | through raidd MiB/s | straight MiB/s | raidd / straight |")
print("|---|---|---|---|")
for rw in ("read", "write"):
    r, d = med("raidd", rw, "mib_s"), med("direct", rw, "mib_s")
    print("| %s | %.0f | %.0f | %.2f |" % (rw, r, d, r / d if d else 0))
PY
cat "$out/remote.md"

#!/bin/bash
# raidd against nbdkit's memory plugin, same machine, same fio runs:
# RAID 0 over 4 members on tmpfs (RAM) served by raidd, and nbdkit's
# memory plugin of the same size, both on Unix sockets, driven by fio's
# nbd engine (4K random read and write at iodepth 32, 1 MiB sequential
# read and write).  Prints a markdown table with the ratio raidd/nbdkit.
#   bench/nbd-compare.sh [BUILD_DIR] [SECONDS]
# A benchmark, not a test: nothing here passes or fails on a number.
set -euo pipefail
build=${1:-build}
secs=${2:-10}
raidd=$build/raidd/raidd
raidctl=$build/raidctl/raidctl
for t in "$raidd" "$raidctl" fio nbdkit; do
  command -v "$t" >/dev/null || [ -x "$t" ] || { echo "nbd-compare: $t not found" >&2; exit 1; }
done
fio --enghelp=nbd >/dev/null 2>&1 || { echo "nbd-compare: fio has no nbd engine" >&2; exit 1; }

d=$(mktemp -d /dev/shm/nbd-compare.XXXXXX)
pids=()
cleanup () { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$d"; }
trap cleanup EXIT

"$raidd" --foreground --control "$d/c.sock" --nbd-socket "$d/raidd.sock" > "$d/raidd.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do "$raidctl" --control "$d/c.sock" status >/dev/null 2>&1 && break; sleep 0.1; done
for i in 0 1 2 3; do truncate -s 257M "$d/m$i"; done
"$raidctl" --control "$d/c.sock" create r0 --level 0 --assume-clean "$d"/m{0,1,2,3} >/dev/null
size=$(nbdinfo --size "nbd+unix:///r0?socket=$d/raidd.sock")
nbdkit --foreground --unix "$d/nbdkit.sock" memory size="$size" &
pids+=($!)
for _ in $(seq 50); do [ -S "$d/nbdkit.sock" ] && break; sleep 0.1; done

run () {  # run URI RW BS -> "IOPS MiB/s"
  fio --name=b --ioengine=nbd --uri="$1" --rw="$2" --bs="$3" --iodepth=32 \
      --numjobs=1 --time_based --runtime="$secs" --size="$size" \
      --output-format=terse --terse-version=3 2>/dev/null | grep '^3;' |
    awk -F';' -v rw="$2" '{ if (rw ~ /read/) print $8, $7/1024; else print $49, $48/1024 }'
}

echo "| workload | raidd RAID 0 x4 (IOPS, MiB/s) | nbdkit memory (IOPS, MiB/s) | raidd / nbdkit |"
echo "|---|---|---|---|"
for w in "randread 4k" "randwrite 4k" "read 1m" "write 1m"; do
  set -- $w
  a=$(run "nbd+unix:///r0?socket=$d/raidd.sock" "$1" "$2")
  b=$(run "nbd+unix:///?socket=$d/nbdkit.sock" "$1" "$2")
  awk -v w="$1 $2" -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ");
    printf "| %s | %d, %.0f | %d, %.0f | %.2f |\n", w, x[1], x[2], y[1], y[2], (y[1] ? x[1] / y[1] : 0) }'
done

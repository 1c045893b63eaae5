#!/bin/bash
# Rebuild speed against the member's own sequential speed.
#
# On member files in DIR (default /var/tmp, on the machine's disk), with
# O_DIRECT as raidd uses it: fio measures one member file's sequential
# write and read bandwidth (1 MiB, iodepth 8, io_uring); then for RAID 1
# over 2, RAID 5 over 4 and RAID 10 over 4, raidd rebuilds one member of
# an idle array (fail, add a fresh file, raidctl wait) with no speed
# limit, and the rebuild rate (member bytes per second) is set against the
# member's sequential write bandwidth.  Prints a markdown table.
#   bench/rebuild-speed.sh [BUILD_DIR] [DIR] [MEMBER_SIZE]
# A benchmark, not a test: nothing here passes or fails on a number.
set -euo pipefail
build=${1:-build}
dir=${2:-/var/tmp}
msize=${3:-1G}
raidd=$build/raidd/raidd
raidctl=$build/raidctl/raidctl
for t in "$raidd" "$raidctl" fio; do
  command -v "$t" >/dev/null || [ -x "$t" ] || { echo "rebuild-speed: $t not found" >&2; exit 1; }
done

d=$(mktemp -d "$dir/rebuild-speed.XXXXXX")
pid=
cleanup () { [ -z "$pid" ] || { kill "$pid"; wait "$pid" 2>/dev/null; }; rm -rf "$d"; }
trap cleanup EXIT
R () { "$raidctl" --control "$d/c.sock" "$@"; }

seq_bw () {  # seq_bw write|read FILE -> MiB/s
  fio --name=s --ioengine=io_uring --direct=1 --rw="$1" --bs=1M --iodepth=8 \
      --size="$msize" --filename="$2" --output-format=terse --terse-version=3 2>/dev/null |
    grep '^3;' | awk -F';' -v rw="$1" '{ if (rw == "read") print $7/1024; else print $48/1024 }'
}
wbw=$(seq_bw write "$d/probe")
rbw=$(seq_bw read "$d/probe")
rm -f "$d/probe"

"$raidd" --foreground --control "$d/c.sock" --nbd-socket "$d/n.sock" > "$d/raidd.log" 2>&1 &
pid=$!
for _ in $(seq 50); do R status >/dev/null 2>&1 && break; sleep 0.1; done

echo "Members: files in $dir ($(df --output=fstype "$dir" | tail -1)), $msize each, O_DIRECT."
echo "One member alone: sequential write $(printf %.0f "$wbw") MiB/s, read $(printf %.0f "$rbw") MiB/s."
echo
echo "| array | rebuild (MiB/s of the new member) | / member seq. write |"
echo "|---|---|---|"
for cfg in "raid1 1 2" "raid5 5 4" "raid10 10 4"; do
  set -- $cfg
  name=$1 level=$2 n=$3
  m=()
  for i in $(seq 0 $((n - 1))); do
    fallocate -l "$msize" "$d/$name-$i"
    m+=("$d/$name-$i")
  done
  fallocate -l "$msize" "$d/$name-new"
  R create "$name" --level "$level" --assume-clean "${m[@]}" > /dev/null
  R set "$name" rebuild-min=0 rebuild-max=0 > /dev/null
  R fail "$name" "${m[1]}" > /dev/null
  R remove "$name" "${m[1]}" > /dev/null
  t0=$(date +%s.%N)
  R add "$name" "$d/$name-new" > /dev/null
  R wait "$name" > /dev/null
  t1=$(date +%s.%N)
  bytes=$(R --json detail "$name" | python3 -c 'import json,sys; print(json.load(sys.stdin)["member_size"])')
  rate=$(python3 -c "print($bytes / ($t1 - $t0) / 1048576)")
  printf '| %s over %d | %.0f | %.2f |\n' "$name" "$n" "$rate" "$(python3 -c "print($rate / $wbw)")"
  R stop "$name" > /dev/null
  rm -f "${m[@]}" "$d/$name-new"
done

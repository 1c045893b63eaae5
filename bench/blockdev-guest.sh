#!/bin/bash
# Guest half of bench/blockdev.sh: fio on md, on raidd's kernel NBD device
# and (when there) on its ublk device, over the same four loop devices.
# Writes $RES/results.csv (level,workload,target,value,unit), $RES/kver.
set -euo pipefail
cd /tmp
fio () { "$RES/fio" "$@"; }
d=/tmp/bench
mkdir -p "$d"
R () { "$BUILD/raidctl/raidctl" --control "$d/control.sock" "$@"; }
log=$d/raidd.log
fail () { echo "FAIL: $*" >&2; tail -30 "$log" >&2 || :; exit 1; }
uname -r > "$RES/kver"
: > "$RES/results.csv"

"$BUILD/raidd/raidd" --foreground --control "$d/control.sock" --nbd-socket "$d/nbd.sock" \
  --threads 2 >> "$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || :; mdadm --stop /dev/md0 > /dev/null 2>&1 || :' EXIT
for _ in $(seq 100); do R status > /dev/null 2>&1 && break; sleep 0.1; done

loops=()
for i in 0 1 2 3; do
  truncate -s 160M "$d/img$i"
  loops+=("$(losetup --find --show --direct-io=off "$d/img$i")")
done
ublk=
if R ublk --help > /dev/null 2>&1 && modprobe ublk_drv 2> /dev/null && [ -e /dev/ublk-control ]; then
  ublk=1
fi

# run_fio TARGET LEVEL DEV: every workload; results appended.
run_fio ()
{
  local target=$1 level=$2 dev=$3 name rw bs qd extra v unit j
  while read -r name rw bs qd extra; do
    j=$d/$name.json
    # shellcheck disable=SC2086
    fio --name="$name" --filename="$dev" --rw="$rw" --bs="$bs" --iodepth="$qd" \
      --ioengine=libaio --direct=1 --output-format=json --output="$j" \
      --verify_state_save=0 $extra > /dev/null ||
      fail "fio $name on $target ($dev): $(cat "$j" 2>/dev/null | tail -5)"
    case $rw in
      *write) v=$(grep -A12 '"write" *:' "$j" | grep -m1 '"iops" *:' | grep -o '[0-9.]*' | head -1)
              bw=$(grep -A12 '"write" *:' "$j" | grep -m1 '"bw" *:' | grep -o '[0-9]*' | head -1) ;;
      *)      v=$(grep -A12 '"read" *:' "$j" | grep -m1 '"iops" *:' | grep -o '[0-9.]*' | head -1)
              bw=$(grep -A12 '"read" *:' "$j" | grep -m1 '"bw" *:' | grep -o '[0-9]*' | head -1) ;;
    esac
    if [ "$bs" = 1M ]; then
      awk -v l="$level" -v n="$name" -v t="$target" -v b="$bw" \
        'BEGIN { printf "%s,%s,%s,%.1f,MiB/s\n", l, n, t, b / 1024 }' >> "$RES/results.csv"
    else
      printf '%s,%s,%s,%.0f,IOPS\n' "$level" "$name" "$target" "$v" >> "$RES/results.csv"
    fi
    echo "raid$level $target $name: $(tail -1 "$RES/results.csv" | cut -d, -f4-)"
  done <<EOF
1M-seq-write-qd8 write 1M 8 --size=256M --verify=crc32c
1M-seq-read-qd8 read 1M 8 --size=256M --runtime=$RUNTIME --time_based
4K-rand-read-qd1 randread 4k 1 --size=256M --runtime=$RUNTIME --time_based
4K-rand-read-qd32 randread 4k 32 --size=256M --runtime=$RUNTIME --time_based
4K-rand-write-qd1 randwrite 4k 1 --size=256M --io_size=4M --verify=crc32c
4K-rand-write-qd32 randwrite 4k 32 --size=256M --io_size=16M --verify=crc32c
EOF
}

for level in $LEVELS; do
  n=4
  [ "$level" = 1 ] && n=2
  mem=("${loops[@]:0:$n}")
  # md: the kernel's own RAID over the same devices.
  bm=(--bitmap=none)
  [ "$level" = 0 ] && bm=()
  mdadm --create /dev/md0 --run --quiet --level="$level" --raid-devices="$n" --chunk=64 \
    "${bm[@]}" --assume-clean --metadata=1.2 "${mem[@]}" > "$d/mdadm.out" 2>&1 ||
    fail "mdadm --create raid$level: $(cat "$d/mdadm.out")"
  run_fio md "$level" /dev/md0
  mdadm --stop /dev/md0 > /dev/null 2>&1
  mdadm --zero-superblock "${mem[@]}"

  bm=(--bitmap none)
  [ "$level" = 0 ] && bm=()
  R create b --level "$level" --chunk 64K "${bm[@]}" --assume-clean "${mem[@]}" > /dev/null ||
    fail "raidctl create raid$level"
  dev=$(R attach b) || fail "raidctl attach"
  run_fio nbd "$level" "$dev"
  R detach b > /dev/null
  if [ -n "$ublk" ]; then
    dev=$(R ublk b | grep -o '/dev/ublkb[0-9]*' | head -1) || fail "raidctl ublk"
    for _ in $(seq 50); do [ -b "$dev" ] && break; sleep 0.1; done
    run_fio ublk "$level" "$dev"
    R unublk b > /dev/null
  fi
  R stop b > /dev/null
  R zero "${mem[@]}" > /dev/null
done
kill "$pid"
wait "$pid" || :
pid=
for l in "${loops[@]}"; do losetup -d "$l"; done

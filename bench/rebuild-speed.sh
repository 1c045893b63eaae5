#!/bin/bash
# Rebuild speed against the member's own sequential write speed, for one
# or more builds side by side.
#
#   bench/rebuild-speed.sh [--members DIR|sim] [--size SIZE] [--rounds N]
#                          [BUILD_DIR...]
#
# Members: DIR  files in DIR (default /var/tmp, on the machine's disk),
#               O_DIRECT as raidd uses it; the member's sequential write
#               is fio's (1 MiB, iodepth 8, io_uring) on a member file;
#          sim  simulated NVMe-class drives on /dev/shm
#               (sim:FILE?lat=80us,depth=64,bw=3G, as bench/run's default);
#               the member's sequential write is one member behind raidd
#               (a RAID 1 of 2, one member failed and removed) written by
#               fio's nbd engine, 1 MiB at iodepth 32 for 5 s, as bench/run
#               measures it.
# For RAID 1 over 2, RAID 5 over 3 and 4 and RAID 10 over 4, each build's
# raidd rebuilds one member of an idle array (fail, remove, add a fresh
# member, raidctl wait) with no speed limit; the clock starts once add
# has returned (opening a simulated member faults its store in first).
# Builds take turns within each round (BUILD_DIR defaults to build), so
# that their figures share the machine's load; the table has each build's
# median over the rounds, and the rebuild rate against the member's
# sequential write; then a restripe of a RAID 5 from 3 to 4 members and a
# RAID 5 of 4 changed to another layout and chunk (with raidctl's 1 MiB
# data offset and with mdadm's 128 MiB: reshape()) against the
# rebuild of a RAID 5 over 4, a RAID 10 near-2 restriped from 4 to 6
# against a RAID 10 over 4's, a RAID 0 restriped from 3 to 4 and a RAID 5
# reshaped backwards from 4 to 3 against the RAID 5 over 4's too.  A
# benchmark, not a test: nothing here passes or fails on a number.
set -euo pipefail
dir=/var/tmp msize=1G rounds=3
while [ $# -gt 0 ]; do
  case $1 in
    --members) dir=$2; shift 2 ;;
    --size) msize=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --*) echo "rebuild-speed: unknown option $1" >&2; exit 1 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || set -- build
builds=("$@")
for t in fio jq "${builds[@]/%//raidd/raidd}" "${builds[@]/%//raidctl/raidctl}"; do
  command -v "$t" >/dev/null || [ -x "$t" ] || { echo "rebuild-speed: $t not found" >&2; exit 1; }
done
sim=
if [ "$dir" = sim ]; then
  sim="lat=80us,depth=64,bw=3G"
  dir=/dev/shm
fi

d=$(mktemp -d "$dir/rebuild-speed.XXXXXX")
pid=
stop_raidd () { [ -z "$pid" ] || { kill "$pid"; wait "$pid" 2>/dev/null || true; }; pid=; }
trap 'stop_raidd; rm -rf "$d"' EXIT
R () { "$build/raidctl/raidctl" --control "$d/c.sock" "$@"; }
start_raidd () {
  "$build/raidd/raidd" --foreground --control "$d/c.sock" --nbd-socket "$d/n.sock" \
    >> "$d/raidd.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do R status >/dev/null 2>&1 && return; sleep 0.1; done
  echo "rebuild-speed: $build/raidd/raidd did not start (see $d/raidd.log)" >&2
  exit 1
}
spec () { if [ -n "$sim" ]; then echo "sim:$1?$sim"; else echo "$1"; fi; }
median () { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The member's sequential write, MiB/s.
seq_write () {
  if [ -z "$sim" ]; then
    fio --name=s --ioengine=io_uring --direct=1 --rw=write --bs=1M --iodepth=8 \
        --size="$msize" --filename="$d/probe" --output-format=json 2>/dev/null |
      sed -n '/^{/,$p' | jq '.jobs[0].write.bw / 1024'
    rm -f "$d/probe"
    return
  fi
  truncate -s "$msize" "$d/one-0" "$d/one-1"
  R create one --level 1 --assume-clean "$(spec "$d/one-0")" "$(spec "$d/one-1")" > /dev/null
  R fail one "$(spec "$d/one-1")" > /dev/null
  R remove one "$(spec "$d/one-1")" > /dev/null
  fio --name=s --ioengine=nbd --uri="nbd+unix:///one?socket=$d/n.sock" --rw=write \
      --bs=1M --iodepth=32 --time_based --runtime=5 --size="$msize" \
      --output-format=json 2>/dev/null | sed -n '/^{/,$p' | jq '.jobs[0].write.bw / 1024'
  R stop one > /dev/null
  rm -f "$d"/one-*
}

# timed NAME [COMMAND...]: run COMMAND, wait for NAME's sync engine, stop
# NAME and remove its files: "MiB/s CPU_s_per_GB" of each member, raidd's
# CPU and the clock from just before COMMAND to the end of the wait.
timed () {
  local name=$1 c0 c1 t0 t1 bytes
  shift
  c0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  t0=$(date +%s.%N)
  [ $# -eq 0 ] || "$@" > /dev/null
  R wait "$name" > /dev/null
  t1=$(date +%s.%N)
  c1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  bytes=$(R --json detail "$name" | jq -r .member_size)
  R stop "$name" > /dev/null
  rm -f "$d/$name"-*
  awk -v b="$bytes" -v a="$t0" -v z="$t1" -v c="$((c1 - c0))" -v k="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.1f %.3f\n", b / (z - a) / 1048576, c / k / (b / 1e9) }'
}

# One rebuild: LEVEL N -> "MiB/s CPU_s_per_GB"
rebuild () {
  local level=$1 n=$2 name=r$1x$2 i m=()
  for i in $(seq 0 $((n - 1))); do
    truncate -s "$msize" "$d/$name-$i"
    m+=("$(spec "$d/$name-$i")")
  done
  truncate -s "$msize" "$d/$name-new"
  R create "$name" --level "$level" --assume-clean "${m[@]}" > /dev/null
  R set "$name" rebuild-min=0 rebuild-max=0 > /dev/null
  R fail "$name" "${m[1]}" > /dev/null
  R remove "$name" "${m[1]}" > /dev/null
  R add "$name" "$(spec "$d/$name-new")" > /dev/null
  timed "$name"
}

# One reshape of an idle array, no speed limit: KIND restripe, a RAID 5
# from 3 to 4 members (raidctl grow --raid-devices 4), shape, a RAID 5 of
# 4 to left-asymmetric and 128K chunks (--layout --chunk, over as many
# members; shape128 the same with a 128 MiB data offset), r10, a RAID 10 near-2 from 4 to 6 members, or r0, a RAID 0
# from 3 to 4 (--raid-devices 4 --add: a RAID 5 of 4 missing its parity
# restriped to 5, md's way), or back, a RAID 5 from 4 to 3 (md's
# backwards reshape, shown first no larger than three hold, by the
# --array-size the refusal names): "MiB/s
# CPU_s_per_GB", MiB/s of each member as md counts a reshape's speed (the
# new layout's front on each member, its new room included), from grow
# to wait.
reshape () {
  local name=g5 i m=()
  for i in 0 1 2 3 4 5; do
    truncate -s "$msize" "$d/$name-$i"
    m+=("$(spec "$d/$name-$i")")
  done
  if [ "$1" = r0 ]; then
    R create "$name" --level 0 "${m[@]:0:3}" > /dev/null
    R set "$name" rebuild-min=0 rebuild-max=0 > /dev/null
    # The new member is opened by the grow, inside the clock: a simulated
    # one faults its store in then (tmpfs clears each page on its first
    # touch: a second of CPU per GiB here), which the other rows' members
    # did when added before it.  Written first, its pages are there.
    [ -z "$sim" ] || head -c "$msize" /dev/zero > "$d/$name-3"
    timed "$name" R grow "$name" --raid-devices 4 --add "${m[3]}"
  elif [ "$1" = r10 ]; then
    R create "$name" --level 10 --assume-clean "${m[@]:0:4}" > /dev/null
    R add "$name" "${m[4]}" > /dev/null
    R add "$name" "${m[5]}" > /dev/null
    R set "$name" rebuild-min=0 rebuild-max=0 > /dev/null
    timed "$name" R grow "$name" --raid-devices 6
  elif [ "$1" = back ]; then
    R create "$name" --level 5 --assume-clean "${m[@]:0:4}" > /dev/null
    R set "$name" rebuild-min=0 rebuild-max=0 > /dev/null
    R grow "$name" $(R grow "$name" --raid-devices 3 2>&1 |
                       grep -o -- "--array-size [0-9]*K") > /dev/null
    timed "$name" R grow "$name" --raid-devices 3
  elif [ "$1" = restripe ]; then
    R create "$name" --level 5 --assume-clean "${m[@]:0:3}" > /dev/null
    R add "$name" "${m[3]}" > /dev/null
    R set "$name" rebuild-min=0 rebuild-max=0 > /dev/null
    timed "$name" R grow "$name" --raid-devices 4
  else
    # shape128: with mdadm 4.x's room before the data on large members
    # (128 MiB, --data-offset) instead of raidctl's 1 MiB: half of it may
    # move between two checkpoints.
    local off=()
    [ "$1" != shape128 ] || off=(--data-offset 128M)
    R create "$name" --level 5 --chunk 64K --assume-clean "${off[@]}" "${m[@]:0:4}" > /dev/null
    R set "$name" rebuild-min=0 rebuild-max=0 > /dev/null
    timed "$name" R grow "$name" --layout left-asymmetric --chunk 128K
  fi
}

configs="1:2 5:3 5:4 10:4"
for round in $(seq "$rounds"); do
  for b in "${!builds[@]}"; do
    build=${builds[$b]}
    start_raidd
    seq_write > "$d/base.$b.$round"
    for c in $configs; do
      rebuild "${c%:*}" "${c#*:}" > "$d/rb.$b.${c/:/x}.$round"
    done
    reshape restripe > "$d/rs.$b.$round"
    reshape shape > "$d/rl.$b.$round"
    reshape shape128 > "$d/rm.$b.$round"
    reshape r10 > "$d/rt.$b.$round"
    reshape r0 > "$d/rz.$b.$round"
    reshape back > "$d/rb5.$b.$round"
    stop_raidd
  done
done

if [ -n "$sim" ]; then
  echo "Members: simulated drives ($sim) on /dev/shm, $msize each."
else
  echo "Members: files in $dir ($(df --output=fstype "$dir" | tail -1)), $msize each, O_DIRECT."
fi
echo "Median of $rounds rounds; the builds took turns in each round."
echo
echo "| build | array | rebuild (MiB/s) | member seq. write (MiB/s) | ratio | raidd CPU s/GB |"
echo "|---|---|---|---|---|---|"
for b in "${!builds[@]}"; do
  base=$(cat "$d"/base."$b".* | median)
  for c in $configs; do
    rate=$(cut -d' ' -f1 "$d"/rb."$b"."${c/:/x}".* | median)
    cpu=$(cut -d' ' -f2 "$d"/rb."$b"."${c/:/x}".* | median)
    printf '| %s | raid%s over %s | %.0f | %.0f | %.2f | %.2f |\n' "${builds[$b]}" \
      "${c%:*}" "${c#*:}" "$rate" "$base" "$(awk -v r="$rate" -v b="$base" 'BEGIN { print r / b }')" "$cpu"
  done
done
echo
echo "| build | reshape | reshape (MiB/s of each member) | rebuild of the level (MiB/s) | reshape / rebuild | raidd CPU s/GB |"
echo "|---|---|---|---|---|---|"
for b in "${!builds[@]}"; do
  # KIND:REBUILD:WHAT: each against its level's rebuild (raid5 over 4, raid10 over 4).
  for k in "rs:5x4:raid5 3 to 4" "rl:5x4:raid5 of 4 to left-asymmetric, 128K" \
           "rm:5x4:the same, 128 MiB data offset" \
           "rt:10x4:raid10 near-2 4 to 6" "rz:5x4:raid0 3 to 4 (as a raid5 of 4 to 5)" \
           "rb5:5x4:raid5 4 to 3 (backwards)"; do
    kind=${k%%:*} rest=${k#*:}
    rb=$(cut -d' ' -f1 "$d"/rb."$b"."${rest%%:*}".* | median)
    rate=$(cut -d' ' -f1 "$d"/"$kind"."$b".* | median)
    cpu=$(cut -d' ' -f2 "$d"/"$kind"."$b".* | median)
    printf '| %s | %s | %.0f | %.0f | %.2f | %.2f |\n' "${builds[$b]}" "${rest#*:}" "$rate" "$rb" \
      "$(awk -v r="$rate" -v b="$rb" 'BEGIN { print r / b }')" "$cpu"
  done
done

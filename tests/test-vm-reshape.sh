#!/bin/bash
# Description: a RAID 5 restripe (reshape) from 3 to 4 members moves
# between raidd and Linux md in both directions, whole and half done
# (issue 31).  raidd's members are sim: members over files (bw= slows the
# reshape down to seconds, and their data is the files' data, md's
# members in the VM); 32 MiB each, 64 KiB chunks, no bitmap.
#
#  1. raidd restripes a RAID 5 of 3 to 4 (metadata 1.2 and 1.1), filled
#     through NBD before, with 8 MiB written while it runs (raidctl wait
#     for the end).  In the VM mdadm -E must find no reshape (feature map
#     0x0, 4 raid devices), md must assemble it [4/4] [UUUU] at the new
#     size and read the bytes raidd read through NBD, and its check must
#     find mismatch_cnt 0.
#  2. raidd is killed (kill -9) at about a third of the same restripe
#     (metadata 1.2), and once more frozen there (raidctl grow --stop)
#     and stopped cleanly, 1 MiB having been written on each side of the
#     reshape's position at 10%.  In the VM mdadm -E must read each
#     member's reshape fields as raidctl examine reads them (feature map
#     0x44: RESHAPE_ACTIVE | NEW_OFFSET, Raid Devices 4, Data Offset, New
#     Offset, Reshape pos'n, Delta Devices 1 (3->4)); a plain mdadm
#     --assemble must start it and md finish the reshape by itself, the
#     data offset moved to the new one, at the new size; the old size's
#     bytes must be those raidd served, and md's check find mismatch_cnt 0.
#  1b. The same for a RAID 5 of 3 reshaped to left-asymmetric, 128K
#     chunks, and for a mirror of 2 made a RAID 5 of 3 (--level 5
#     --raid-devices 3): md must run them [3/3] with that layout and chunk
#     (mdadm -D), read raidd's bytes, check 0.
#  2b. A layout and chunk change (right-asymmetric, 32K) frozen at a third
#     and stopped: mdadm -E reads the same fields (no Delta Devices), md
#     must finish it by itself, with raidd's bytes, check 0.
#  1d. A RAID 0 of 2 made a RAID 5 of 3 by raidctl grow --level 5 (md's
#     takeover: parity-last, its parity missing) and a member added, which
#     raidd rebuilds as the parity: md must run it [3/3], parity-last,
#     64K, with raidd's bytes, check 0.  Another taken back to a RAID 0 of
#     2 (grow --level 0: the parity member leaves): md must run it as a
#     raid0 of the two with raidd's bytes.
#  1e, 2e. A RAID 5 of 4 reshaped to 3 (md's backwards reshape), shown
#     first no larger than three hold (the --array-size raidctl grow's
#     refusal names): done (mdadm -E must read 3 members, no reshape, md
#     run it [3/3] with the member that left as a spare, raidd's bytes,
#     check 0), and frozen at a third and stopped (mdadm -E reads the
#     fields as raidctl examine: feature map 0x44, no RESHAPE_BACKWARDS,
#     which md writes only over as many members, Delta Devices -1, New
#     Offset after Data Offset; md must finish it by itself from the top
#     down, raidd's bytes).
#  1c, 2c. A RAID 10 near-2 restriped from 4 to 6 members: done (md must
#     run it [6/6] at half as much again, with raidd's bytes, check 0),
#     and killed at a third (mdadm -E reads the fields as raidctl
#     examine; md's raid10 must finish it by itself, raidd's bytes).
#     Both again with a write-intent bitmap, which the reshape keeps (as
#     md keeps its own): done, md must run it with the bitmap, mdadm -X
#     read its Sync Size as the grown array's; killed, mdadm -E must read
#     feature map 0x45 (BITMAP | RESHAPE_ACTIVE | NEW_OFFSET) as raidctl
#     examine does, md finish it, 0x1 after.
#  3. In the VM mdadm creates a RAID 5 of 3 (metadata 1.2) and fills it,
#     adds a 4th member and grows it to 4 (and a RAID 10 near-2 of 4, two
#     added, to 6, and one added, to 5: that one slower, frozen once md has
#     run for more than 10 s at a checkpoint its 10-second timer took
#     (raid10.c reshape_request()) not on raidd's unit of 5 chunks, where
#     raidd's steps go to the unit's end first and end inside rows near
#     the bottom, md's single chunk of room being less than a unit) with
#     no backup file (mdadm moves
#     the data offset earlier, a forward reshape), and a RAID 5 of 4 to 3
#     and a RAID 10 near-2 of 4 to 3 (md moves its data offset by a single
#     chunk, and checkpoints off raidd's unit of whole rows)
#     (--array-size first; mdadm moves the data offset later, into room
#     --size left after the data: backwards; mdadm 4.2 sets the new offset
#     before the members, so md's reshape_direction is set to backwards by
#     hand first), throttled by
#     sync_speed_max and frozen (sync_action frozen: md then blocks reads
#     near its position, so its bytes are read before the grow)
#     at about a third, stopped, and its superblock fields recorded.  On
#     the host raidctl examine must read them as mdadm -E did, raidd must
#     assemble the members, resume md's reshape from its checkpoint and
#     finish it (the data offset moved to md's new one, the new size), the
#     old size's bytes must be md's, and a scrub find mismatch_cnt 0.
#
# Run by "make check-vm"; about 3 minutes under TCG (one boot of about
# a minute; the rest is raidd's throttled restripes on the host).
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"

requires_vm
requires mdadm --version
requires nbdcopy --version
requires nbdinfo --version
requires nbdkit --version
requires qemu-io --version
requires python3 --version
requires_file "$top_builddir/raidd/raidd"

mktmpdir raid-vm-reshape
dir=$tmpdir
mkdir -p "$dir/raidd" "$dir/grown" "$dir/half" "$dir/theirs"
raidd_env "$dir/raidd"
MiB=$((1 << 20))
start_raidd

# ex MEMBER EXPR: a field of raidctl examine's JSON for MEMBER ("e").
ex () {
  R examine --json "$1" | python3 -c "import json,sys; e=json.load(sys.stdin)[0]; print($2)"
}
# fields MEMBER: the superblock fields a reshape lives in, from raidctl
# examine, which prints them as mdadm -E does (tests/vm/md-reshape.sh
# takes the same lines from mdadm -E): "Reshape pos'n=27456" (KiB).
fields () {
  R examine "$1" | sed -n "s/^ *\(Feature Map\|Raid Devices\|Data Offset\|New Offset\|Reshape pos'n\|Delta Devices\) : \([^ ]*\).*/\1=\2/p"
}
# reshape_pct NAME: how far NAME's reshape is, in whole percent, as
# raidctl status shows it ("reshape = 16.9% (...)"); empty when none runs.
reshape_pct () {
  R status "$1" | sed -n 's/.*reshape = *\([0-9]*\)\.[0-9]*%.*/\1/p'
}
# new_raid5 NAME DIR META BW: a RAID 5 of 3 on sim: members over
# DIR/m0.img..m2.img (32 MiB, bw=BW), filled through NBD with random
# bytes, DIR/m3.img added as a spare; $members are the four members' URIs.
# new_raid10 NAME DIR BW: the same for a RAID 10 near-2 of 4 (metadata
# 1.2), DIR/m4.img and m5.img added.
# sim_members DIR N BW: N sim: members over DIR/m0.img... (32 MiB,
# bw=BW) in $members.
sim_members () {
  local i
  members=()
  for (( i = 0; i < $2; i++ )); do
    truncate -s 32M "$1/m$i.img"
    members+=("sim:$1/m$i.img?bw=$3")
  done
}
new_array () {
  local i level=$1 n=$2 total=$3; shift 3
  sim_members "$2" "$total" "$4"
  R create "$1" --level "$level" --chunk 64K --metadata "$3" --bitmap "${bitmap:-none}" --assume-clean \
    "${members[@]:0:n}" > "$d/out" 2>&1 || fail "raidctl create $1: $(cat "$d/out")"
  nbdcopy -- [ nbdkit random size="$(nbdinfo --size "$(uri "$1")")" seed=$RANDOM ] "$(uri "$1")"
  for (( i = n; i < total; i++ )); do
    R add "$1" "${members[$i]}" > "$d/out" 2>&1 || fail "raidctl add $1: $(cat "$d/out")"
  done
}
new_raid5 () { new_array 5 3 4 "$@"; }
# new_stripe NAME DIR BW: a RAID 0 of 2 (metadata 1.2, 64K chunks) over
# DIR/m0.img and m1.img (DIR/m2.img made too, in $members), filled with
# random bytes through NBD.
new_stripe () {
  sim_members "$2" 3 "$3"
  R create "$1" --level 0 --chunk 64K --metadata 1.2 "${members[@]:0:2}" > "$d/out" 2>&1 ||
    fail "raidctl create $1: $(cat "$d/out")"
  nbdcopy -- [ nbdkit random size="$(nbdinfo --size "$(uri "$1")")" seed=$RANDOM ] "$(uri "$1")"
}
# grown_done NAME DIR OLD LEVEL DISKS: NAME's restripe waited for, its
# size half as much again as OLD; what md must find (its bytes' digest,
# size, metadata 1.2, LEVEL, DISKS) recorded in DIR; NAME stopped.
grown_done () {
  timeout 300 "$raidctl" --control "$ctl" wait "$1" > "$d/out" 2>&1 ||
    fail "raidctl wait $1: $(cat "$d/out")"
  size=$(nbdinfo --size "$(uri "$1")")
  [ "$size" = $(($3 / 2 * 3)) ] || fail "$1: $size bytes after the restripe, not $(($3 / 2 * 3))"
  nbdcopy "$(uri "$1")" "$d/back"
  sha256sum < "$d/back" | cut -d' ' -f1 > "$2/sha"
  echo "$size" > "$2/size"
  echo 1.2 > "$2/meta"
  echo "$4" > "$2/level"
  echo "$5" > "$2/disks"
  R stop "$1" > /dev/null
}
new_raid10 () { new_array 10 4 6 "$1" "$2" 1.2 "$3"; }

# 1. raidd's restripe, done, for md.
head -c $((8 * MiB)) /dev/urandom > "$d/during"
for meta in 1.2 1.1; do
  name=grown-v${meta/./}
  ad=$dir/grown/$name
  mkdir -p "$ad"
  new_raid5 "$name" "$ad" "$meta" 8M
  old=$(nbdinfo --size "$(uri "$name")")
  R grow "$name" --raid-devices 4 > "$d/out" 2>&1 || fail "raidctl grow $name: $(cat "$d/out")"
  grep -q "restriping from 3 to 4 members" "$d/out" || fail "raidctl grow $name said: $(cat "$d/out")"
  # 8 MiB/s a member: the reshape takes about 4 s; the write goes in once
  # it has started moving.
  for (( i = 0; i < 30; i++ )); do
    pct=$(reshape_pct "$name")
    [ -n "$pct" ] && [ "$pct" -ge 3 ] && break
    sleep 0.1
  done
  qemu-io -f raw -c "write -s $d/during $((16 * MiB)) $((8 * MiB))" "$(uri "$name")" > /dev/null ||
    fail "$name: write during the reshape"
  timeout 300 "$raidctl" --control "$ctl" wait "$name" > "$d/out" 2>&1 ||
    fail "raidctl wait $name: $(cat "$d/out")"
  size=$(nbdinfo --size "$(uri "$name")")
  [ "$size" = $((old / 2 * 3)) ] || fail "$name: $size bytes after the restripe, not $((old / 2 * 3))"
  nbdcopy "$(uri "$name")" "$d/back"
  cmp -i $((16 * MiB)):0 -n $((8 * MiB)) "$d/back" "$d/during" ||
    fail "$name: the 8 MiB written during the reshape do not read back"
  sha256sum < "$d/back" | cut -d' ' -f1 > "$ad/sha"
  echo "$size" > "$ad/size"
  echo "$meta" > "$ad/meta"
  R stop "$name" > /dev/null
  [ "$(ex "$ad/m0.img" "e['raid_disks'], 'reshape' in e")" = "4 False" ] ||
    fail "$name: m0's superblock does not say 4 members and no reshape"
  echo "ok   $name: raidd restriped it to 4 members ($old to $size bytes), 8 MiB written at ${pct:-?}% of the reshape"
done
# The same RAID 5 of 3 to another layout and chunk (mdadm --grow --layout
# --chunk: over as many members), and a mirror of 2 made a RAID 5 of 3
# (md's takeover, then the restripe: mdadm --grow --level 5
# --raid-devices 3); $ad/disks, layout and chunk say what md must find.
name=shape-v12 ad=$dir/grown/$name
mkdir -p "$ad"
new_raid5 "$name" "$ad" 1.2 16M
R grow "$name" --layout left-asymmetric --chunk 128K > "$d/out" 2>&1 ||
  fail "raidctl grow $name --layout --chunk: $(cat "$d/out")"
name=takeover ad=$dir/grown/$name
mkdir -p "$ad"
sim_members "$ad" 3 16M
R create "$name" --level 1 --metadata 1.2 --bitmap none --assume-clean "${members[@]:0:2}" \
  > "$d/out" 2>&1 || fail "raidctl create $name: $(cat "$d/out")"
nbdcopy -- [ nbdkit random size="$(nbdinfo --size "$(uri "$name")")" seed=$RANDOM ] "$(uri "$name")"
R add "$name" "${members[2]}" > /dev/null
R grow "$name" --level 5 --raid-devices 3 > "$d/out" 2>&1 ||
  fail "raidctl grow $name --level 5 --raid-devices 3: $(cat "$d/out")"
for name in shape-v12 takeover; do
  ad=$dir/grown/$name
  timeout 300 "$raidctl" --control "$ctl" wait "$name" > "$d/out" 2>&1 ||
    fail "raidctl wait $name: $(cat "$d/out")"
  size=$(nbdinfo --size "$(uri "$name")")
  nbdcopy "$(uri "$name")" "$d/back"
  sha256sum < "$d/back" | cut -d' ' -f1 > "$ad/sha"
  echo "$size" > "$ad/size"
  echo 1.2 > "$ad/meta"
  echo 3 > "$ad/disks"
  R detail "$name" | sed -n 's/^ *Layout : //p' > "$ad/layout"
  R detail "$name" | sed -n 's/^ *Chunk Size : //p' > "$ad/chunk"
  R stop "$name" > /dev/null
  echo "ok   $name: raidd made it a RAID 5 of 3, $(cat "$ad/layout"), chunk $(cat "$ad/chunk"), $size bytes"
done
# A RAID 0 of 2 made a RAID 5 of 3 (md's takeover: parity-last, the
# parity role missing), a member added and rebuilt as the parity by
# itself (stripe5); another made a RAID 5 and back to a RAID 0 of 2, its
# parity member leaving (stripe0: the member that left is set aside, as
# an mdadm user would not give it to --assemble).
for name in stripe5 stripe0; do
  ad=$dir/grown/$name
  mkdir -p "$ad"
  new_stripe "$name" "$ad" 1G
  R grow "$name" --level 5 > "$d/out" 2>&1 || fail "raidctl grow $name --level 5: $(cat "$d/out")"
  R add "$name" "${members[2]}" > /dev/null
  timeout 300 "$raidctl" --control "$ctl" wait "$name" > "$d/out" 2>&1 ||
    fail "raidctl wait $name: $(cat "$d/out")"
  R status "$name" | grep -qF "[3/3] [UUU]" || fail "$name: not rebuilt: $(R status "$name")"
  if [ "$name" = stripe0 ]; then
    R grow "$name" --level 0 > "$d/out" 2>&1 || fail "raidctl grow $name --level 0: $(cat "$d/out")"
    echo 0 > "$ad/level"
    echo 2 > "$ad/disks"
  else
    echo 3 > "$ad/disks"
    echo parity-last > "$ad/layout"
    echo 64K > "$ad/chunk"
  fi
  size=$(nbdinfo --size "$(uri "$name")")
  nbdcopy "$(uri "$name")" "$d/back"
  sha256sum < "$d/back" | cut -d' ' -f1 > "$ad/sha"
  echo "$size" > "$ad/size"
  echo 1.2 > "$ad/meta"
  R stop "$name" > /dev/null
  [ "$name" = stripe0 ] && mv "$ad/m2.img" "$ad/left-m2.img"
  echo "ok   $name: raidd made a RAID 0 of 2 a RAID 5 of 3, rebuilt its parity$([ "$name" = stripe0 ] && echo ", and made it a RAID 0 of 2 again"), $size bytes"
done
# A RAID 0 of 2 restriped over 3 with its new member (mdadm --grow
# --raid-devices 3 --add: md's way, as a RAID 5 missing its parity role),
# a RAID 0 of 3 at the end (restripe0).
name=restripe0 ad=$dir/grown/$name
mkdir -p "$ad"
new_stripe "$name" "$ad" 16M
old=$(nbdinfo --size "$(uri "$name")")
R grow "$name" --raid-devices 3 --add "${members[2]}" > "$d/out" 2>&1 ||
  fail "raidctl grow $name --raid-devices 3 --add: $(cat "$d/out")"
grown_done "$name" "$ad" "$old" 0 3
[ "$(ex "$ad/m0.img" "e['level'], e['raid_disks'], 'reshape' in e")" = "raid0 3 False" ] ||
  fail "$name: m0's superblock does not say a RAID 0 of 3 and no reshape"
echo "ok   $name: raidd restriped a RAID 0 of 2 over 3 ($old to $size bytes)"
[ "$(cat "$dir/grown/shape-v12/layout") $(cat "$dir/grown/shape-v12/chunk")" = "left-asymmetric 128K" ] ||
  fail "shape-v12: $(cat "$dir/grown/shape-v12/layout") $(cat "$dir/grown/shape-v12/chunk") after the reshape"
# 1c. A RAID 10 near-2 of 4 restriped to 6 (md reshapes RAID 10 itself).
name=r10-v12 ad=$dir/grown/$name
mkdir -p "$ad"
new_raid10 "$name" "$ad" 16M
old=$(nbdinfo --size "$(uri "$name")")
R grow "$name" --raid-devices 6 > "$d/out" 2>&1 || fail "raidctl grow $name: $(cat "$d/out")"
grown_done "$name" "$ad" "$old" 10 6
echo "ok   $name: raidd restriped a RAID 10 near-2 from 4 to 6 members, $old to $size bytes"
# The same with a write-intent bitmap, which the reshape keeps, as md
# keeps its own: put back over the new size as it starts (md must run it
# with the bitmap, mdadm -X read its Sync Size as the grown array's).
name=r10bm-v12 ad=$dir/grown/$name
mkdir -p "$ad"
bitmap=internal new_raid10 "$name" "$ad" 16M
old=$(nbdinfo --size "$(uri "$name")")
R grow "$name" --raid-devices 6 > "$d/out" 2>&1 || fail "raidctl grow $name: $(cat "$d/out")"
R detail "$name" | grep -q "Intent Bitmap : Internal" || fail "$name: no bitmap during the reshape: $(R detail "$name")"
grown_done "$name" "$ad" "$old" 10 6
echo 0x1 > "$ad/fm"
echo $((size / 1024)) > "$ad/bm-sync"
echo "ok   $name: raidd restriped a RAID 10 near-2 with a bitmap from 4 to 6 members, $old to $size bytes"
# 1e. A RAID 5 of 4 reshaped to 3 members: md's backwards reshape, the
# array shown no larger than three hold first (the --array-size raidctl
# grow's refusal names); the member that left is a spare (md must run the
# three [3/3], the spare beside them).
# shrink_to NAME N: NAME shrunk to what N members hold (the size the
# refusal names), then reshaped to N.
shrink_to () {
  if R grow "$1" --raid-devices "$2" > "$d/out" 2>&1; then
    fail "$1: grow --raid-devices $2 worked while it showed more: $(cat "$d/out")"
  fi
  want=$(grep -o -- "--array-size [0-9]*K" "$d/out") ||
    fail "$1: no --array-size in: $(cat "$d/out")"
  R grow "$1" $want > /dev/null || fail "$1: grow $want"
}
name=shrunk-v12 ad=$dir/grown/$name
mkdir -p "$ad"
new_array 5 4 4 "$name" "$ad" 1.2 16M
shrink_to "$name" 3
old=$(nbdinfo --size "$(uri "$name")")
R grow "$name" --raid-devices 3 > "$d/out" 2>&1 || fail "raidctl grow $name: $(cat "$d/out")"
grep -q "restriping from 4 to 3 members; backwards" "$d/out" ||
  fail "raidctl grow $name said: $(cat "$d/out")"
timeout 300 "$raidctl" --control "$ctl" wait "$name" > "$d/out" 2>&1 ||
  fail "raidctl wait $name: $(cat "$d/out")"
size=$(nbdinfo --size "$(uri "$name")")
[ "$size" = "$old" ] || fail "$name: $size bytes after the reshape, not the $old shown"
nbdcopy "$(uri "$name")" "$d/back"
sha256sum < "$d/back" | cut -d' ' -f1 > "$ad/sha"
echo "$size" > "$ad/size"
echo 1.2 > "$ad/meta"
echo 3 > "$ad/disks"
R stop "$name" > /dev/null
[ "$(ex "$ad/m0.img" "e['raid_disks'], 'reshape' in e")" = "3 False" ] ||
  fail "$name: m0's superblock does not say 3 members and no reshape"
[ "$(ex "$ad/m3.img" "e['role']")" = spare ] || fail "$name: m3 is not a spare: $(R examine "$ad/m3.img")"
echo "ok   $name: raidd reshaped a RAID 5 of 4 to 3 members, backwards, $size bytes; m3 a spare"
rm -f "$d/back"

# 2. raidd's restripe, left at about a third for md to finish: killed
# (half-killed), or frozen (raidctl grow --stop: at a checkpoint, the
# step under way ended) and stopped cleanly (half-stopped).  2 MiB/s a
# member: the reshape takes about 30 s.
# pct_wait NAME PCT: until NAME's reshape is PCT% done (a minute at most).
pct_wait () {
  local i
  for (( i = 0; i < 600; i++ )); do
    pct=$(reshape_pct "$1")
    [ -n "$pct" ] && [ "$pct" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "$1: the reshape never got to $2% ($(R status "$1"))"
}
# r0-stopped: a RAID 0 of 2 restriped over 3 (as a RAID 5 missing its
# parity role, m2 filling the old parity role), stopped cleanly (md will
# not start one stopped dirty without --force: see raidctl(8)); md ends
# the reshape as that RAID 5 and mdadm --grow --level 0 makes it a RAID 0
# of 3 ($ad/then).
for how in killed stopped r10-killed r10bm-killed r0-stopped; do
  name=half-$how ad=$dir/half/half-$how
  mkdir -p "$ad"
  n=4 grow=()
  if [ "$how" = r10-killed ] || [ "$how" = r10bm-killed ]; then
    # r10bm: with a write-intent bitmap (feature map 0x45, md's own
    # for such a reshape; 0x1 once md has finished it).
    with=none
    [ "$how" = r10-killed ] || with=internal
    bitmap=$with new_raid10 "$name" "$ad" 2M
    [ "$with" = none ] || echo 0x1 > "$ad/fm"
    n=6
    echo 6 > "$ad/disks"
    echo 10 > "$ad/level"
  elif [ "$how" = r0-stopped ]; then
    new_stripe "$name" "$ad" 2M
    n=3 grow=(--add "${members[2]}")
    echo 3 > "$ad/disks"
    echo 0 > "$ad/then"
  else
    new_raid5 "$name" "$ad" 1.2 2M
  fi
  old=$(nbdinfo --size "$(uri "$name")")
  nbdcopy "$(uri "$name")" "$ad/want"
  R grow "$name" --raid-devices "$n" "${grow[@]}" > "$d/out" 2>&1 ||
    fail "raidctl grow $name: $(cat "$d/out")"
  # A MiB on each side of the reshape's position at 10%: the first one
  # (the new shape serves it), the last one (the old shape); acknowledged
  # before the kill or the pause at 30%.
  pct_wait "$name" 10
  head -c "$MiB" /dev/urandom > "$d/lo"
  head -c "$MiB" /dev/urandom > "$d/hi"
  qemu-io -f raw -c "write -s $d/lo 0 $MiB" -c "write -s $d/hi $((old - MiB)) $MiB" \
    "$(uri "$name")" > /dev/null || fail "$name: write during the reshape"
  pct_wait "$name" 30
  if [ "${how%-stopped}" = "$how" ] && [ "$how" != stopped ]; then
    kill -9 "$raidd_pid"; wait "$raidd_pid" 2>/dev/null || :; raidd_pid=
  else
    R grow "$name" --stop > "$d/out" 2>&1 || fail "raidctl grow $name --stop: $(cat "$d/out")"
    R stop "$name" > "$d/out" 2>&1 || fail "raidctl stop $name: $(cat "$d/out")"
  fi
  dd if="$d/lo" of="$ad/want" conv=notrunc status=none
  dd if="$d/hi" of="$ad/want" bs="$MiB" seek=$((old / MiB - 1)) conv=notrunc status=none
  sha256sum < "$ad/want" | cut -d' ' -f1 > "$ad/sha"
  rm -f "$ad/want"
  echo "$old" > "$ad/old-size"
  echo $((old / 2 * 3)) > "$ad/size"
  # A RAID 0's m2 fills the old parity role: recovering (0x2) besides.
  for (( i = 0; i < n; i++ )); do
    fields "$ad/m$i.img" > "$ad/fields-m$i"
    grep -q "^Feature Map=0x4$([ -f "$ad/fm" ] && echo 5 || echo '[46]')$" "$ad/fields-m$i" &&
      grep -q "^Reshape pos'n=" "$ad/fields-m$i" ||
      fail "$name: m$i does not record a reshape under way: $(R examine "$ad/m$i.img")"
  done
  pos=$(ex "$ad/m0.img" "e['reshape']['position']")
  (( pos > 0 && pos < old / 2 * 3 )) ||
    fail "$name: $how at $pct%, but the reshape is recorded at byte $pos of $((old / 2 * 3))"
  echo "ok   $name: raidd $how at $pct% of the reshape; its superblocks record it at byte $pos of $((old / 2 * 3)):" \
    $(cat "$ad/fields-m0")
  [ -n "$raidd_pid" ] || start_raidd
done
# The layout and chunk change too, frozen at a third and stopped, for md
# to finish (it takes such a reshape up when the data offset moved by at
# least a chunk, which raidd's always does).
name=half-shape ad=$dir/half/half-shape
mkdir -p "$ad"
new_raid5 "$name" "$ad" 1.2 2M
old=$(nbdinfo --size "$(uri "$name")")
nbdcopy "$(uri "$name")" "$ad/want"
sha256sum < "$ad/want" | cut -d' ' -f1 > "$ad/sha"
rm -f "$ad/want"
R grow "$name" --layout right-asymmetric --chunk 32K > "$d/out" 2>&1 ||
  fail "raidctl grow $name: $(cat "$d/out")"
pct_wait "$name" 30
R grow "$name" --stop > /dev/null
R stop "$name" > /dev/null
echo "$old" > "$ad/old-size"
echo "$old" > "$ad/size"
echo 3 > "$ad/disks"
for i in 0 1 2 3; do fields "$ad/m$i.img" > "$ad/fields-m$i"; done
grep -q "^Feature Map=0x44$" "$ad/fields-m0" && ! grep -q "^Delta Devices" "$ad/fields-m0" ||
  fail "$name: m0 does not record a reshape over as many members: $(R examine "$ad/m0.img")"
R examine "$ad/m0.img" | grep -q "New Layout : right-asymmetric" &&
  R examine "$ad/m0.img" | grep -q "New Chunksize : 32K" ||
  fail "$name: examine: $(R examine "$ad/m0.img")"
echo "ok   $name: raidd stopped at $pct% of a layout and chunk change:" $(cat "$ad/fields-m0")

# And a RAID 5 of 4 reshaped to 3 (backwards), frozen at a third and
# stopped: md must finish it from the top down by itself.
name=half-back ad=$dir/half/half-back
mkdir -p "$ad"
new_array 5 4 4 "$name" "$ad" 1.2 2M
shrink_to "$name" 3
old=$(nbdinfo --size "$(uri "$name")")
nbdcopy "$(uri "$name")" "$ad/want"
sha256sum < "$ad/want" | cut -d' ' -f1 > "$ad/sha"
rm -f "$ad/want"
R grow "$name" --raid-devices 3 > "$d/out" 2>&1 || fail "raidctl grow $name: $(cat "$d/out")"
pct_wait "$name" 30
R grow "$name" --stop > /dev/null
R stop "$name" > /dev/null
echo "$old" > "$ad/old-size"
echo "$old" > "$ad/size"
echo 3 > "$ad/disks"
for i in 0 1 2 3; do fields "$ad/m$i.img" > "$ad/fields-m$i"; done
grep -q "^Feature Map=0x44$" "$ad/fields-m0" && grep -q "^Delta Devices=-1$" "$ad/fields-m0" ||
  fail "$name: m0 does not record a backwards reshape to 3: $(R examine "$ad/m0.img")"
pos=$(ex "$ad/m0.img" "e['reshape']['position']")
(( pos > 0 && pos < old )) || fail "$name: stopped at $pct%, but recorded at byte $pos of $old"
echo "ok   $name: raidd stopped at $pct% of a reshape backwards to 3 members, at byte $pos:" \
  $(cat "$ad/fields-m0")

# 3 is made in the VM: tests/vm/md-reshape.sh writes $dir/theirs/md-half
# (RAID 5 3 to 4), md-half-r10 (RAID 10 near-2 4 to 6), md-half-r10-odd
# (4 to 5, frozen at a checkpoint md's 10-second timer took, not on
# raidd's unit of 5 chunks: raidd's first step goes to the unit's end,
# and its steps end inside rows near the bottom), md-half-back
# (RAID 5 4 to 3, backwards) and md-half-r10-back (RAID 10 near-2 4 to 3,
# backwards: md moves the data offset by a single chunk, and raidd's steps
# end inside rows near the bottom, as md's).  The VM sees
# $dir at the same path.
"$vm" --share "$dir" --env DIR="$dir" --timeout 600 -- "$top_srcdir/tests/vm/md-reshape.sh" ||
  fail "the VM half (tests/vm/md-reshape.sh) failed: exit $?"

# 3. md's reshapes, frozen at about a third, finished by raidd.
for name in md-half md-half-r10 md-half-r10-odd md-half-r10-bm md-half-back md-half-r10-back; do
  ad=$dir/theirs/$name
  disks=$(cat "$ad/disks") files=$(cat "$ad/files")
  m=()
  for (( i = 0; i < files; i++ )); do m+=("$ad/m$i.img"); done
  old=$(cat "$ad/old-size")
  for (( i = 0; i < files; i++ )); do
    fields "${m[$i]}" > "$d/fields"
    diff "$ad/fields-m$i" "$d/fields" > "$d/diff" ||
      fail "$name: raidctl examine reads m$i's superblock otherwise than mdadm -E: $(cat "$d/diff")"
  done
  # RESHAPE_ACTIVE | NEW_OFFSET, and md's bitmap kept (0x1) for -bm.
  bm=0 fm=0x44
  [ "$name" != md-half-r10-bm ] || bm=1 fm=0x45
  grep -q "^Feature Map=$fm$" "$d/fields" ||
    fail "$name: md did not leave feature map $fm (a reshape with a new offset): $(cat "$d/fields")"
  echo "ok   $name: raidctl examine reads md's superblocks as mdadm -E does:" $(cat "$ad/fields-m0")
  new_off=$(sed -n 's/^New Offset=//p' "$ad/fields-m0")
  R assemble "$name" "${m[@]}" > "$d/out" 2>&1 || fail "raidctl assemble $name: $(cat "$d/out")"
  grep -q "$name: a reshape from [0-9]* to $disks members .*is under way" "$d/raidd.log" ||
    fail "$name: raidd's log does not say it resumes the reshape"
  timeout 300 "$raidctl" --control "$ctl" wait "$name" > "$d/out" 2>&1 ||
    fail "raidctl wait $name: $(cat "$d/out")"
  size=$(nbdinfo --size "$(uri "$name")")
  [ "$size" = "$(cat "$ad/size")" ] || fail "$name: $size bytes once finished, not $(cat "$ad/size")"
  # md's bitmap, kept, covers the grown array (a RAID 10's covers the
  # array: raidd sized it so from the start, as md's
  # raid10_start_reshape() resizes it).
  if (( bm )); then
    chunks=$(R --json detail "$name" | python3 -c 'import json,sys; print(json.load(sys.stdin)["bitmap"]["chunks"])')
    [ "$chunks" = $(( (size + 65535) / 65536 )) ] ||
      fail "$name: the bitmap has $chunks chunks of 64 KiB for $size bytes: $(R detail "$name" | grep -i bitmap)"
  fi
  uu=$(printf 'U%.0s' $(seq "$disks"))
  R status "$name" | grep -qF "[$disks/$disks] [$uu]" || fail "$name: not [$disks/$disks]: $(R status "$name")"
  nbdcopy "$(uri "$name")" "$d/back"
  [ "$(head -c "$old" "$d/back" | sha256sum | cut -d' ' -f1)" = "$(cat "$ad/sha")" ] ||
    fail "$name: raidd reads other bytes than md did before its reshape was frozen"
  rm -f "$d/back"
  R scrub "$name" --wait > "$d/out" 2>&1 || fail "raidctl scrub $name: $(cat "$d/out")"
  grep -q "mismatch_cnt 0" "$d/out" || fail "$name: scrub: $(cat "$d/out")"
  R stop "$name" > /dev/null
  for x in "${m[@]}"; do
    fields "$x" > "$d/fields"
    grep -q "^Feature Map=0x$bm$" "$d/fields" && grep -q "^Raid Devices=$disks$" "$d/fields" &&
      grep -q "^Data Offset=$new_off$" "$d/fields" && ! grep -q "^Reshape" "$d/fields" ||
      fail "$name: $x after the reshape: $(cat "$d/fields"), not $disks members at data offset $new_off, no reshape${bm/1/, the bitmap}"
  done
  echo "ok   $name: raidd resumed md's reshape and finished it: $old to $size bytes, data offset $new_off, md's bytes, scrub mismatch_cnt 0"
done

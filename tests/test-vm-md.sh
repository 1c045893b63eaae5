#!/bin/bash
# Description: arrays move between libraid and Linux md in both directions.
# raidctl creates RAID 0/1/5 (all six layouts)/10 arrays on files and
# libraid fills them with random data; inside a VM running Debian's
# kernel, md assembles each (mdadm --assemble) and must read back the same
# bytes, and a RAID 5 also with its second member missing (so md rebuilds
# data from the parity where we put it).  Then mdadm creates the same kinds
# of array in the VM and fills them; back on the host libraid assembles
# each from its superblocks and must read back the bytes md wrote, a RAID 5
# also without its second member.  Metadata 1.0, 1.1 and 1.2 all go both
# ways; the boot pairs (RAID 1, metadata 1.0, second member write-mostly)
# also check that md honours our write-mostly flag, that each member alone
# holds the array's bytes from sector 0, and (the other way) that raidctl
# sees md's write-mostly flag.  Configs named bm-* have md's internal
# write-intent bitmap (each of levels 1, 5, 10 and metadata 1.0, 1.1, 1.2
# once; RAID_VM_MD_ALL=1 for all nine pairs and RAID 5 in every layout): md must
# assemble ours and mdadm -X read our bitmap (magic, version 4, the array's
# UUID, the chunk and bit count we chose, nothing dirty after a clean
# stop); libraid must assemble md's (mdadm --create --bitmap=internal) and
# raidctl examine-bitmap read md's bitmap.  The bitmap mirror with a
# write-mostly member (bm-raid1-v10) also writes behind: md must read our
# limit (mdadm -X "Allow write behind, max 64", bitmap/backlog 64), and
# raidctl examine-bitmap md's (mdadm --create --write-behind=64).
#
# Arrays raidd grew (raidctl grow --size max, md's --grow --size): a RAID
# 5 of 3, a RAID 1 of 2 with an internal bitmap and a RAID 10 near-2 of
# 4 (metadata 1.2), a boot pair (RAID 1 of 2, metadata 1.0, no bitmap)
# and a RAID 5 of 3 with metadata 1.1, made by raidd on 24 MiB members
# and filled through NBD; the members grow to 40 MiB with random bytes
# (out of sync on every level until resynced), raidd takes the room (the
# size worked out from the data offset, for 1.0 up to md's room for a
# bitmap and a bad block log below the superblock's place at the new end,
# where raidd must have moved it), resyncs the new
# region (raidctl wait), and new bytes go to the old end and the last
# MiB.  In the VM md must assemble each at the grown size (blockdev,
# mdadm's Used Dev Size) with its metadata version, find no resync
# pending (resync_start none), read the bytes raidd read through NBD, and
# its check must find mismatch_cnt 0; mdadm -X must read the mirror's
# bitmap over the new size (Sync Size, one bit per 1 MiB, none dirty);
# mdadm -E must find the boot pair's superblocks at the grown members'
# ends, and each of its members alone (a loop device, from sector 0)
# must hold the grown array's bytes, as a boot loader reads it.
#
# Mirrors raidd added and took away (raidctl grow --raid-devices, md's
# --grow --raid-devices), metadata 1.2 with an internal bitmap, 16 MiB
# members: a RAID 1 of 2, filled through NBD, gets a hot spare full of
# random bytes and grows to 3 mirrors (the spare takes role 2 and is
# rebuilt), then 4 MiB are written anew (mirror3); a copy of its members
# loses m0 (role 0: raidctl fail, remove) and goes back to 2 mirrors, m2
# moving down to role 0, then 4 MiB more are written (mirror2).  In the
# VM mdadm -E must read each member's role and the mirror count as raidd
# wrote them and mdadm -X the bitmap clean; md must assemble mirror3 as
# [3/3] [UUU] and mirror2 as [2/2] [UU] (mdadm --detail: Raid, Active and
# Working Devices 3 or 2, none failed or spare), each member in its role
# (sysfs slot), no resync pending, read the bytes raidd read through NBD,
# and its check (over every mirror) must find mismatch_cnt 0.
#
# Dirty hand-overs, with a bitmap, both ways (md's resync after a crash
# trusts the bitmap: a bit left clear is a chunk it will not resync):
#  - raidd is killed (kill -9) while a writer rewrites the first 4 MiB of
#    a RAID 1 and a RAID 5 it serves, after a fill it acknowledged; in the
#    VM md must find the superblocks active and mdadm -X our dirty bits,
#    resync (last_sync_action resync), then a check must find
#    mismatch_cnt 0 and md read the bytes past 4 MiB as raidd
#    acknowledged them (the rewritten ones are not asserted);
#  - md leaves a RAID 1, a RAID 5 and a RAID 1 with a member it failed
#    dirty in the VM (64 KiB bitmap chunks; filled, stopped cleanly,
#    assembled again, safe_mode_delay and the bitmap's --delay raised so
#    nothing marks it clean, three scattered 4 KiB writes, the members
#    copied while md holds it active); raidd must assemble them and
#    resync over md's dirty chunks only: the bytes per member its log
#    says it resynced, and those it read from any member (raidctl stats),
#    at most md's dirty bits (mdadm -X's count, read with raidctl
#    examine-bitmap before the hand-over) times the bitmap chunk, not
#    the whole member; then take md's failed member back with a plain add
#    (a re-add) and rebuild it, scrub with mismatch_cnt 0, clear every
#    bit on a clean stop, and libraid read md's bytes (the rebuilt member
#    alone too).  The test prints md's dirty bits and what raidd resynced
#    and read.
#
# md grows arrays raidctl created (md's own mdadm --grow --size max, which
# md refused with EINVAL while our ctime carried microseconds): RAID 1
# and 5, metadata 1.2 and 1.0, on 24 MiB members, no bitmap, filled by
# libraid, the on-disk ctime checked to be seconds alone.  In the VM md
# assembles each and takes a spare of the members' size (mdadm --add);
# a 1.0 one's data size (data_size) must be what mdadm --create gives the
# same members (and for RAID 5 the size used); the members grow to 40
# MiB under the running array, mdadm --grow --size max must succeed and
# take md's room (1.0: below its bitmap and bad block log room under the
# superblock's new place), md's resync of the new region end, the bytes
# libraid wrote read back and md's check find mismatch_cnt 0.
#
# Run by "make check-vm" (CI runs it).
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"

vm=${RAID_VM_RUN:-$top_srcdir/tests/vm/run}
requires_file "$vm"
requires qemu-system-x86_64 --version
requires mdadm --version
requires nbdcopy --version
requires nbdinfo --version
requires qemu-io --version
requires python3 --version
requires_root
requires_file "$top_builddir/raidd/raidd"

raidio=$top_builddir/tests/raidio
dir=$(mktemp -d /var/tmp/raid-vm-md.XXXXXX)
cleanup_fn rm -rf "$dir"
mkdir -p "$dir/ours" "$dir/theirs" "$dir/ours-dirty" "$dir/theirs-dirty" "$dir/raidd"
# raidd for the dirty hand-overs in $dir/raidd (functions.sh: $d, R,
# start_raidd, stop_raidd, and fail showing the end of raidd's log); $ad
# is each array's folder.
raidd_env "$dir/raidd"
uri () { echo "nbd+unix:///$1?socket=$sock"; }
# dirty_bits MEMBER: the bitmap's dirty bits as raidctl examine-bitmap
# counts them ("Bitmap : 15 bits (chunks), 15 dirty (100.0%)").
dirty_bits () {
  "$raidctl" examine-bitmap "$1" | sed -n 's/.*Bitmap : [0-9]* bits (chunks), \([0-9]*\) dirty.*/\1/p'
}

# name level layout chunk members metadata write-mostly-member
configs="raid0-3 0 - 64K 3 1.2 -
raid1-2 1 - - 2 1.2 -
raid5-ls-4 5 left-symmetric 64K 4 1.2 -
raid5-la-3 5 left-asymmetric 128K 3 1.2 -
raid5-rs-4 5 right-symmetric 32K 4 1.2 -
raid5-ra-5 5 right-asymmetric 64K 5 1.2 -
raid5-pf-4 5 parity-first 64K 4 1.2 -
raid5-pl-3 5 parity-last 32K 3 1.2 -
raid10-n2-4 10 n2 64K 4 1.2 -
raid10-n2-3 10 n2 32K 3 1.2 -
raid10-n3-4 10 n3 64K 4 1.2 -
boot-pair 1 - - 2 1.0 1
raid1-v11-2 1 - - 2 1.1 -
raid5-v10-3 5 left-symmetric 64K 3 1.0 -
raid10-v10-4 10 n2 64K 4 1.0 -"
# Bitmap arrays: each level and each metadata version once (under TCG a
# config costs about 30 s each way); RAID_VM_MD_ALL=1 runs all nine pairs
# and RAID 5's other five layouts with a bitmap.
if [ "${RAID_VM_MD_ALL:-0}" = 1 ]; then
  configs+="
bm-raid1-v12 1 - - 2 1.2 -
bm-raid1-v11 1 - - 3 1.1 -
bm-raid1-v10 1 - - 2 1.0 1
bm-raid5-v12 5 left-symmetric 64K 4 1.2 -
bm-raid5-v11 5 left-symmetric 64K 3 1.1 -
bm-raid5-v10 5 left-symmetric 64K 3 1.0 -
bm-raid10-v12 10 n2 64K 4 1.2 -
bm-raid10-v11 10 n2 64K 4 1.1 -
bm-raid10-v10 10 n2 64K 4 1.0 -
bm-raid5-la 5 left-asymmetric 64K 3 1.2 -
bm-raid5-ra 5 right-asymmetric 64K 3 1.2 -
bm-raid5-rs 5 right-symmetric 64K 3 1.2 -
bm-raid5-pf 5 parity-first 64K 3 1.2 -
bm-raid5-pl 5 parity-last 64K 3 1.2 -"
else
  configs+="
bm-raid1-v10 1 - - 2 1.0 1
bm-raid5-v12 5 left-symmetric 64K 4 1.2 -
bm-raid10-v11 10 n2 64K 4 1.1 -"
fi

while read -r name level layout chunk n meta wm; do
  ad=$dir/ours/$name
  mkdir -p "$ad"
  new_members "$ad" "$n" 16M
  args=(--level "$level" --metadata "$meta")
  [ "$wm" != - ] && args+=(--write-mostly "$ad/m$wm.img")
  [ "$layout" != - ] && args+=(--layout "$layout")
  [ "$chunk" != - ] && args+=(--chunk "$chunk")
  case $name in bm-*) args+=(--bitmap internal --bitmap-chunk 1M) ;; *) args+=(--bitmap none) ;; esac
  # A bitmap mirror with a write-mostly member writes behind: md must
  # read the limit from our bitmap.
  if [[ $name == bm-* ]] && [ "$wm" != - ]; then
    args+=(--write-behind=64)
    echo 64 > "$ad/wb"
  fi
  "$raidctl" create "$name" "${args[@]}" "${members[@]}" >/dev/null 2>&1 ||
    fail "raidctl create $name failed"
  size=$("$raidio" size "${members[@]}")
  head -c "$size" /dev/urandom > "$dir/data"
  "$raidio" write "$dir/data" "${members[@]}"
  sha256sum < "$dir/data" | cut -d' ' -f1 > "$ad/sha"
  echo "$size" > "$ad/size"
  # What mdadm -X must find in the VM: our bit count, nothing dirty.
  if [[ $name == bm-* ]]; then
    "$raidctl" examine-bitmap "${members[0]}" |
      sed -n 's/.*Bitmap : \([0-9]*\) bits.*/\1/p' > "$ad/bits"
    [ -s "$ad/bits" ] || fail "raidctl examine-bitmap $name: no bit count"
  fi
done <<< "$configs"
echo "$configs" > "$dir/theirs.list"
rm -f "$dir/data"

# raidd killed (kill -9) while writing, for md to take over dirty: each
# array is filled and the fill acknowledged; then a writer rewrites its
# first 4 MiB over and over, two contents in turn, and raidd dies with
# those writes in flight.  md must resync; the settled bytes past 4 MiB
# must read back as acknowledged, the first 4 MiB are anyone's.
# name level layout chunk members
dirty_ours="dirty-raid1-2 1 - - 2
dirty-raid5-3 5 left-symmetric 64K 3"
start_raidd
writers=()
stop_writers () { local p; for p in "${writers[@]}"; do kill_pid "$p"; wait "$p" 2>/dev/null || :; done; }
cleanup_fn stop_writers
off=$((4 << 20))
while read -r name level layout chunk n; do
  ad=$dir/ours-dirty/$name
  mkdir -p "$ad"
  new_members "$ad" "$n" 16M
  args=(--level "$level" --bitmap internal --bitmap-chunk 1M --assume-clean)
  [ "$layout" != - ] && args+=(--layout "$layout")
  [ "$chunk" != - ] && args+=(--chunk "$chunk")
  R create "$name" "${args[@]}" "${members[@]}" > "$d/out" 2>&1 ||
    fail "raidctl create $name: $(cat "$d/out")"
  kib=$(R detail "$name" | sed -n 's/^ *Array Size : \([0-9]*\) .*/\1/p')
  size=$((kib * 1024))
  head -c "$size" /dev/urandom > "$ad/data"
  nbdcopy "$ad/data" "$(uri "$name")" || fail "nbdcopy into $name"
  head -c $off /dev/urandom > "$ad/a"
  head -c $off /dev/urandom > "$ad/b"
  tail -c +$((off + 1)) "$ad/data" | sha256sum | cut -d' ' -f1 > "$ad/sha-settled"
  echo "$off" > "$ad/off"
  echo "$size" > "$ad/size"
  rm "$ad/data"
  # Until raidd dies under it (nbdcopy then fails); "passes" counts the
  # rewrites raidd acknowledged.
  ( while nbdcopy "$ad/a" "$(uri "$name")" 2>/dev/null && echo >> "$ad/passes" &&
          nbdcopy "$ad/b" "$(uri "$name")" 2>/dev/null && echo >> "$ad/passes"; do :; done ) &
  writers+=($!)
done <<< "$dirty_ours"
for (( i = 0; i < 300; i++ )); do
  n=0
  while read -r name _; do
    f=$dir/ours-dirty/$name/passes
    [ -f "$f" ] && [ "$(wc -l < "$f")" -ge 2 ] && n=$((n + 1))
  done <<< "$dirty_ours"
  [ $n = 2 ] && break
  sleep 0.1
done
[ "$n" = 2 ] || fail "the rewriting nbdcopy made fewer than 2 passes in 30 s"
kill -9 "$raidd_pid"
wait "$raidd_pid" 2>/dev/null || :
raidd_pid=
for p in "${writers[@]}"; do wait "$p" 2>/dev/null || :; done
writers=()
while read -r name level layout chunk n; do
  ad=$dir/ours-dirty/$name
  rm -f "$ad/a" "$ad/b"
  "$raidctl" examine "$ad/m0.img" | grep -q "State : active$" ||
    fail "$name: raidctl examine does not say active after kill -9"
  dirty=$(dirty_bits "$ad/m0.img")
  [ -n "$dirty" ] && [ "$dirty" -gt 0 ] || fail "$name: no dirty bit in the bitmap after kill -9"
  echo "$dirty" > "$ad/dirty"
  echo "ok   $name: raidd killed (kill -9) while rewriting the first 4 MiB ($(wc -l < "$ad/passes") passes acknowledged): active, $dirty bits dirty"
done <<< "$dirty_ours"
echo "$dirty_ours" > "$dir/ours-dirty.list"

# raidd grows arrays (raidctl grow --size max) for md to read: made on
# 24 MiB members and filled through NBD; the members grow to 40 MiB with
# random bytes (not zeroes, which every level reads as in sync already:
# only a resync makes the new region consistent); raidd takes the room,
# resyncs the new region (raidctl wait), and 4 MiB at the old end and the
# last 1 MiB are written anew.  What raidd reads through NBD then, all of
# it, is what md must read.
# Metadata 1.0 (a boot pair: the data from sector 0, the superblock at
# the end) moves each superblock to its member's new end, where md looks
# for it (md's super_1_rdev_size_change()); its room ends there.
# name level layout chunk members bitmap metadata
grown="grown-raid5-3 5 left-symmetric 64K 3 none 1.2
grown-raid1-2 1 - - 2 internal 1.2
grown-raid10-n2-4 10 n2 64K 4 none 1.2
grown-boot-v10 1 - - 2 none 1.0
grown-raid5-v11-3 5 left-symmetric 64K 3 none 1.1"
MiB=$((1 << 20))
# ex MEMBER EXPR: a field of examine's JSON for MEMBER (python on "e").
ex () {
  "$raidctl" examine --json "$1" | python3 -c "import json,sys; e=json.load(sys.stdin)[0]; print($2)"
}
# qw NAME FILE OFFSET LEN: FILE's first LEN bytes to the array at OFFSET.
qw () {
  qemu-io -f raw -c "write -s $2 $3 $4" -c flush "$(uri "$1")" > "$d/qw.out" 2>&1 ||
    fail "qemu-io: write of $4 bytes at $3 to $1: $(cat "$d/qw.out")"
}
start_raidd
while read -r name level layout chunk n bitmap meta; do
  ad=$dir/ours-grown/$name
  mkdir -p "$ad"
  new_members "$ad" "$n" 24M
  args=(--level "$level" --metadata "$meta" --bitmap "$bitmap" --assume-clean)
  [ "$bitmap" = internal ] && args+=(--bitmap-chunk 1M)
  [ "$layout" != - ] && args+=(--layout "$layout")
  [ "$chunk" != - ] && args+=(--chunk "$chunk")
  R create "$name" "${args[@]}" "${members[@]}" > "$d/out" 2>&1 ||
    fail "raidctl create $name: $(cat "$d/out")"
  old=$(nbdinfo --size "$(uri "$name")")
  head -c "$old" /dev/urandom > "$ad/data"
  nbdcopy "$ad/data" "$(uri "$name")" || fail "nbdcopy into $name"
  # Read before the members grow: a 1.0 superblock is at a member's end,
  # no longer where anyone looks once it grew, until raidd moves it.
  doff=$(ex "${members[0]}" "e['data_offset']")
  for m in "${members[@]}"; do head -c $((16 * MiB)) /dev/urandom >> "$m"; done
  # What --size max must take: the members' room after the data offset
  # (for 1.0: the superblock's new place, 8 KiB before the end rounded
  # down to 4 KiB, as md puts it, less md's room below it for a bitmap and
  # a bad block log, 4 KiB each on members this small, as md's own grow
  # leaves it), in whole chunks (4 KiB for RAID 1).
  if [ "$chunk" = - ]; then unit=4096; else unit=$(( ${chunk%K} * 1024 )); fi
  end=$((40 * MiB)) dend=$((40 * MiB))
  [ "$meta" = 1.0 ] && end=$(( ((40 * MiB / 512 - 16) & ~7) * 512 )) dend=$((end - 8192))
  ms=$(( (dend - doff) / unit * unit ))
  case $level in
    1) want=$ms ;;
    5) want=$((ms * (n - 1))) ;;
    10) want=$((ms / unit * n / 2 * unit)) ;;
  esac
  R grow "$name" --size max > "$d/out" 2>&1 || fail "raidctl grow $name: $(cat "$d/out")"
  grep -q "grown from .*resyncing the new region" "$d/out" || fail "raidctl grow $name said: $(cat "$d/out")"
  size=$(nbdinfo --size "$(uri "$name")")
  [ "$size" = "$want" ] || fail "$name: grown to $size bytes, expected $want"
  timeout 300 "$raidctl" --control "$ctl" wait "$name" > "$d/out" 2>&1 ||
    fail "raidctl wait $name: $(cat "$d/out")"
  grep -q "resync done" "$d/out" || fail "raidctl wait $name said: $(cat "$d/out")"
  head -c $((4 * MiB)) /dev/urandom > "$ad/new"
  head -c $((1 * MiB)) /dev/urandom > "$ad/tail"
  qw "$name" "$ad/new" "$old" $((4 * MiB))
  qw "$name" "$ad/tail" $((size - MiB)) "$MiB"
  nbdcopy "$(uri "$name")" "$ad/back" || fail "nbdcopy from $name"
  cmp -n "$old" "$ad/back" "$ad/data" || fail "$name: the first $old bytes changed in the grow"
  cmp -n $((4 * MiB)) -i "$old:0" "$ad/back" "$ad/new" || fail "$name: the 4 MiB at $old read back otherwise"
  cmp -n "$MiB" -i $((size - MiB)):0 "$ad/back" "$ad/tail" || fail "$name: the last 1 MiB read back otherwise"
  sha256sum < "$ad/back" | cut -d' ' -f1 > "$ad/sha"
  echo "$size" > "$ad/size"
  echo "$ms" > "$ad/member-size"
  rm -f "$ad/data" "$ad/new" "$ad/tail" "$ad/back"
  R stop "$name" > "$d/out" 2>&1 || fail "raidctl stop $name: $(cat "$d/out")"
  for m in "${members[@]}"; do
    [ "$(ex "$m" "e['used_dev_size']")" = "$ms" ] ||
      fail "$name: examine $m after the stop: $(R examine "$m")"
    # 1.0: the superblock at the grown member's end (md's place).
    [ "$meta" != 1.0 ] || [ "$(ex "$m" "e['super_offset']")" = "$end" ] ||
      fail "$name: $m's superblock is not at the grown end ($end): $(R examine "$m")"
  done
  [ "$meta" != 1.0 ] || echo $((end / 512)) > "$ad/super-offset"
  # What mdadm -X must find in the VM: the bitmap over the new size.
  if [ "$bitmap" = internal ]; then
    "$raidctl" examine-bitmap "${members[0]}" |
      sed -n 's/.*Bitmap : \([0-9]*\) bits.*/\1/p' > "$ad/bits"
    [ "$(cat "$ad/bits")" = $(( (ms + MiB - 1) / MiB )) ] ||
      fail "$name: the bitmap after the grow: $("$raidctl" examine-bitmap "${members[0]}")"
  fi
  echo "ok   $name: raidd grew it (metadata $meta) from $old to $size bytes ($ms of each member), resynced the new region"
done <<< "$grown"
echo "$grown" > "$dir/ours-grown.list"

# raidd changes a RAID 1's number of mirrors (raidctl grow --raid-devices,
# md's --grow --raid-devices), metadata 1.2 with an internal bitmap, on
# 16 MiB members: mirror3 is made of two, filled through NBD, a hot spare
# full of random bytes added (so only its rebuild makes it a copy), grown
# to 3 mirrors (the spare takes role 2 by itself and is rebuilt: raidctl
# wait), and 4 MiB written anew; its members are stopped and copied into
# mirror2, where m0 (role 0) is failed and removed and the array grown back
# to 2 mirrors (m2 moves down from role 2 to role 0, as md renumbers), and
# 4 MiB more written.  ours-mirrors/NAME/roles says which role each member
# file must hold (mirror2 has no m0); md must read them so.
# name members-left
mirrors="mirror3 3
mirror2 2"
ad=$dir/ours-mirrors/mirror3
mkdir -p "$ad"
new_members "$ad" 2 16M
R create mirror3 --level 1 --metadata 1.2 --bitmap internal --bitmap-chunk 1M --assume-clean \
  "${members[@]}" > "$d/out" 2>&1 || fail "raidctl create mirror3: $(cat "$d/out")"
size=$(nbdinfo --size "$(uri mirror3)")
head -c "$size" /dev/urandom > "$ad/data"
nbdcopy "$ad/data" "$(uri mirror3)" || fail "nbdcopy into mirror3"
head -c $((16 * MiB)) /dev/urandom > "$ad/m2.img"
R add mirror3 "$ad/m2.img" > "$d/out" 2>&1 || fail "raidctl add mirror3 m2: $(cat "$d/out")"
grep -q "as a hot spare" "$d/out" || fail "raidctl add mirror3 m2 said: $(cat "$d/out")"
R grow mirror3 --raid-devices 3 > "$d/out" 2>&1 || fail "raidctl grow mirror3 --raid-devices 3: $(cat "$d/out")"
grep -q "3 mirrors now (were 2)" "$d/out" || fail "raidctl grow mirror3 --raid-devices 3 said: $(cat "$d/out")"
timeout 300 "$raidctl" --control "$ctl" wait mirror3 > "$d/out" 2>&1 ||
  fail "raidctl wait mirror3: $(cat "$d/out")"
grep -q "recover done" "$d/out" || fail "raidctl wait mirror3 said: $(cat "$d/out")"
R status mirror3 > "$d/out" 2>&1
grep -q "\[3/3\] \[UUU\]" "$d/out" || fail "mirror3 is not [3/3] [UUU] after the spare's rebuild: $(cat "$d/out")"
# mirror_step NAME OFFSET: 4 MiB of new bytes to NAME at OFFSET and into
# $ad/data (what NAME must hold), all of NAME read back through NBD against
# it, its sha and size kept for the VM.
mirror_step () {
  head -c $((4 * MiB)) /dev/urandom > "$ad/new"
  qw "$1" "$ad/new" "$2" $((4 * MiB))
  dd if="$ad/new" of="$ad/data" bs=1M seek=$(($2 / MiB)) conv=notrunc status=none
  nbdcopy "$(uri "$1")" "$ad/back" || fail "nbdcopy from $1"
  cmp "$ad/back" "$ad/data" || fail "$1: reads back other bytes than were written"
  sha256sum < "$ad/back" | cut -d' ' -f1 > "$ad/sha"
  echo "$size" > "$ad/size"
  rm -f "$ad/new" "$ad/back"
}
mirror_step mirror3 $((4 * MiB))
R stop mirror3 > "$d/out" 2>&1 || fail "raidctl stop mirror3: $(cat "$d/out")"
printf '%s\n' "m0.img 0" "m1.img 1" "m2.img 2" > "$ad/roles"
mkdir -p "$dir/ours-mirrors/mirror2"
cp --sparse=always "$ad"/m*.img "$ad/data" "$dir/ours-mirrors/mirror2/" || fail "copying mirror3's members"
rm -f "$ad/data"
ad=$dir/ours-mirrors/mirror2
members=("$ad"/m*.img)
R assemble mirror2 "${members[@]}" > "$d/out" 2>&1 || fail "raidctl assemble mirror2: $(cat "$d/out")"
[ "$(nbdinfo --size "$(uri mirror2)")" = "$size" ] || fail "mirror2: assembled at $(nbdinfo --size "$(uri mirror2)") bytes, not $size"
R fail mirror2 "$ad/m0.img" > "$d/out" 2>&1 || fail "raidctl fail mirror2 m0: $(cat "$d/out")"
R remove mirror2 "$ad/m0.img" > "$d/out" 2>&1 || fail "raidctl remove mirror2 m0: $(cat "$d/out")"
R grow mirror2 --raid-devices 2 > "$d/out" 2>&1 || fail "raidctl grow mirror2 --raid-devices 2: $(cat "$d/out")"
grep -q "2 mirrors now (were 3)" "$d/out" || fail "raidctl grow mirror2 --raid-devices 2 said: $(cat "$d/out")"
R status mirror2 > "$d/out" 2>&1
grep -q "\[2/2\] \[UU\]" "$d/out" || fail "mirror2 is not [2/2] [UU] after the grow: $(cat "$d/out")"
mirror_step mirror2 $((8 * MiB))
R stop mirror2 > "$d/out" 2>&1 || fail "raidctl stop mirror2: $(cat "$d/out")"
rm -f "$ad/data" "$ad/m0.img"
printf '%s\n' "m1.img 1" "m2.img 0" > "$ad/roles"
# What raidd wrote: each member's role and the mirror count, and no bit
# left dirty after a clean stop (so md has nothing to resync).
while read -r name n; do
  ad=$dir/ours-mirrors/$name
  while read -r f role; do
    [ "$(ex "$ad/$f" "e['raid_disks'], e['role']")" = "$n Active device $role" ] ||
      fail "$name: $f's superblock: $("$raidctl" examine "$ad/$f")"
  done < "$ad/roles"
  [ "$(dirty_bits "$ad/m1.img")" = 0 ] ||
    fail "$name: bits dirty after a clean stop: $("$raidctl" examine-bitmap "$ad/m1.img")"
  echo "ok   $name: raidd left $n mirrors ($(sed 's/\.img / role /' "$ad/roles" | paste -sd, | sed 's/,/, /g')), 0 bits dirty"
done <<< "$mirrors"
stop_raidd
echo "$mirrors" > "$dir/ours-mirrors.list"

# md grows arrays raidctl created (mdadm --grow --size max), metadata 1.2
# and 1.0, RAID 1 and 5, made on 24 MiB members, no bitmap, filled by
# libraid.  md's update_array_info() refused every one (EINVAL, "md:
# couldn't update array info. -22") while our ctime kept microseconds
# above its seconds.  In the VM md assembles each, takes a spare of the
# members' size (mdadm --add: a new 1.0 array leaves md's room below the
# superblock, as mdadm's create does), the members grow to 40 MiB and
# mdadm --grow --size max must take the room md's rule gives (for 1.0:
# its bitmap and bad block log room below the superblock's new place,
# meta_grow_end()), keep our bytes and check clean.  For 1.0 the same
# members made by mdadm --create must get the data size ours got.
# name level layout chunk members metadata
mdgrow="mdgrow-raid1-v12 1 - - 2 1.2
mdgrow-raid5-v12 5 left-symmetric 64K 3 1.2
mdgrow-raid1-v10 1 - - 2 1.0
mdgrow-raid5-v10 5 left-symmetric 64K 3 1.0"
while read -r name level layout chunk n meta; do
  ad=$dir/md-grow/$name
  mkdir -p "$ad"
  new_members "$ad" "$n" 24M
  args=(--level "$level" --metadata "$meta" --bitmap none --assume-clean)
  [ "$layout" != - ] && args+=(--layout "$layout")
  [ "$chunk" != - ] && args+=(--chunk "$chunk")
  "$raidctl" create "$name" "${args[@]}" "${members[@]}" > "$d/out" 2>&1 ||
    fail "raidctl create $name: $(cat "$d/out")"
  # Seconds only, as md writes it: md compares it with what
  # GET_ARRAY_INFO returned, 32 bits.
  ct=$(ex "${members[0]}" "e['ctime']")
  at=$(( $(ex "${members[0]}" "e['super_offset']") + 64 ))
  [ "$(od -An -tu8 -j "$at" -N8 "${members[0]}" | tr -d ' ')" = "$ct" ] ||
    fail "$name: ctime on disk is not $ct seconds alone: $(od -An -tx1 -j "$at" -N8 "${members[0]}")"
  size=$("$raidio" size "${members[@]}")
  head -c "$size" /dev/urandom > "$dir/data"
  "$raidio" write "$dir/data" "${members[@]}"
  sha256sum < "$dir/data" | cut -d' ' -f1 > "$ad/sha"
  echo "$size" > "$ad/old-size"
  rm -f "$dir/data"
  # What md's --size max must take on 40 MiB members: the room after the
  # data offset (1.0: up to md's room below the superblock's new place,
  # 8 KiB before the end rounded down to 4 KiB, less 4 KiB for a bitmap
  # and 4 KiB for a bad block log on members this small), in whole
  # chunks (RAID 1: any 4 KiB multiple, which these are).
  doff=$(ex "${members[0]}" "e['data_offset']")
  if [ "$chunk" = - ]; then unit=4096; else unit=$(( ${chunk%K} * 1024 )); fi
  dend=$((40 * MiB))
  [ "$meta" = 1.0 ] && dend=$(( ((40 * MiB / 512 - 16) & ~7) * 512 - 8192 ))
  ms=$(( (dend - doff) / unit * unit ))
  echo "$ms" > "$ad/member-size"
  if [ "$level" = 5 ]; then echo $(( ms * (n - 1) )) > "$ad/size"; else echo "$ms" > "$ad/size"; fi
  echo "ok   $name: raidctl created it (metadata $meta), ctime $ct (seconds alone), $size bytes filled"
done <<< "$mdgrow"
echo "$mdgrow" > "$dir/md-grow.list"

# md leaves these dirty in the VM (tests/vm/md-interop.sh), for raidd.
# name level layout chunk members failed-member
dirty_theirs="dirty-raid1-3 1 - - 3 -
dirty-raid5-3 5 left-symmetric 64K 3 -
dirty-raid1-failed 1 - - 3 2"
echo "$dirty_theirs" > "$dir/theirs-dirty.list"

# The VM (tests/vm/run) sees $dir at the same path; mdadm there is the
# host's.  Under TCG each config takes about 30 s (mdadm's writes over the
# 9p share dominate): 18 configs (32 with RAID_VM_MD_ALL=1) need 10 to
# 15 minutes; the five dirty hand-overs add about 15% to that (md's
# resync and check of our two arrays most of it), the five grown arrays
# about a minute (md's sha and check of 40 MiB members), the two mirrors
# 10 to 20 s, the four arrays md grows about two minutes.
"$vm" --share "$dir" --env DIR="$dir" --timeout 2400 -- "$top_srcdir/tests/vm/md-interop.sh" ||
  fail "the VM half (tests/vm/md-interop.sh) failed: exit $?"

# md's bitmap as mdadm --create --bitmap=internal makes it on our small
# members: version 4, 64 MiB chunks, the array's UUID.
bm_md() {
  local x uuid
  x=$("$raidctl" examine-bitmap "$1") || return 1
  uuid=$("$raidctl" examine "$1" | sed -n 's/.*Array UUID : //p')
  grep -q "Version : 4$" <<< "$x" && grep -q "Chunksize : 64 MB$" <<< "$x" &&
    grep -q "UUID : $uuid$" <<< "$x" && grep -q "Bitmap : 1 bits (chunks)" <<< "$x"
}

echo "== libraid assembles arrays created by mdadm"
bad=0
while read -r name level layout chunk n meta wm; do
  ad=$dir/theirs/$name
  members=("$ad"/m*.img)
  size=$("$raidio" size "${members[@]}")
  got=$("$raidio" read - "${members[@]}" | sha256sum | cut -d' ' -f1)
  if [ "$size" != "$(cat "$ad/size")" ] || [ "$got" != "$(cat "$ad/sha")" ]; then
    echo "FAIL $name: libraid reads size $size sha $got; md wrote size $(cat "$ad/size") sha $(cat "$ad/sha")"
    bad=1
  elif ! "$raidctl" examine "${members[0]}" | grep -q "Version : $meta"; then
    echo "FAIL $name: raidctl examine does not say metadata $meta"
    bad=1
  elif [ "$wm" != - ] && ! "$raidctl" examine "$ad/m$wm.img" | grep -q "Flags : write-mostly"; then
    echo "FAIL $name: raidctl examine does not see md's write-mostly flag on m$wm"
    bad=1
  elif [[ $name == bm-* ]] && ! bm_md "${members[0]}"; then
    echo "FAIL $name: raidctl examine-bitmap does not read md's bitmap:"
    "$raidctl" examine-bitmap "${members[0]}" || true
    bad=1
  elif [[ $name == bm-* ]] && [ "$wm" != - ] &&
       ! "$raidctl" examine-bitmap "${members[0]}" | grep -q "Write Mode : Allow write behind, max 64$"; then
    echo "FAIL $name: raidctl examine-bitmap does not read md's write-behind 64:"
    "$raidctl" examine-bitmap "${members[0]}" || true
    bad=1
  else
    [[ $name == bm-* ]] && echo "ok   $name: raidctl examine-bitmap reads md's bitmap (64 MB chunks, version 4, the array's UUID)"
    echo "ok   $name: libraid assembled it (metadata $meta), $size bytes identical"
    if [ "$level" = 5 ]; then
      # Member 1 holds data in most rows of every layout: read back from
      # md's parity, where libraid expects it.
      got=$("$raidio" read - "${members[0]}" "${members[@]:2}" | sha256sum | cut -d' ' -f1)
      if [ "$got" != "$(cat "$ad/sha")" ]; then
        echo "FAIL $name: libraid reads sha $got without m1; md wrote sha $(cat "$ad/sha")"
        bad=1
      else
        echo "ok   $name: libraid read it degraded (m1 missing), bytes identical"
      fi
    fi
  fi
done <<< "$configs"
[ $bad = 0 ] || fail "some mdadm-created arrays did not read back"

# raidd takes over what md left dirty: it must resync (and, with a member
# md failed, rebuild that member), hold md's bytes, and scrub clean.
echo "== raidd resyncs bitmap arrays md left dirty"
start_raidd
while read -r name level layout chunk n failed; do
  ad=$dir/theirs-dirty/$name
  members=("$ad"/m*.img)
  want=$(cat "$ad/sha")
  "$raidctl" examine "${members[0]}" | grep -q "State : active$" ||
    fail "$name: md did not leave it dirty: $("$raidctl" examine "${members[0]}")"
  # md's bitmap before raidd touches it: bits, dirty bits, chunk bytes.
  read -r bits md_dirty bm_chunk < <("$raidctl" examine-bitmap --json "${members[0]}" |
    python3 -c 'import json, sys; b = json.load(sys.stdin)[0]; print(b["bits"], b["dirty"], b["chunk_size"])') ||
    fail "$name: raidctl examine-bitmap --json: $("$raidctl" examine-bitmap "${members[0]}" 2>&1)"
  [ -n "$md_dirty" ] && [ "$md_dirty" -gt 0 ] ||
    fail "$name: no dirty bit in md's bitmap: $("$raidctl" examine-bitmap "${members[0]}")"
  R assemble "$name" "${members[@]}" > "$d/out" 2>&1 ||
    fail "raidctl assemble $name: $(cat "$d/out")"
  timeout 300 "$raidctl" --control "$ctl" wait "$name" > "$d/out" 2>&1 ||
    fail "raidctl wait $name: $(cat "$d/out")"
  # What raidd resynced: "raid1 NAME: resync done at N of N bytes, S bytes
  # per member resynced (write-intent bitmap: ...)", and what it read from
  # each member since the assembly (the resync's reads and the metadata's,
  # a few KiB).  md's dirty chunks bound both: each is one bitmap chunk of
  # every member (RAID 1 and 5 map member bytes to bits), not the whole
  # member.
  read -r total synced < <(sed -n "s/.* $name: resync done at [0-9]* of \([0-9]*\) bytes, \([0-9]*\) bytes per member resynced.*/\1 \2/p" "$d/raidd.log" | tail -1) ||
    fail "$name: raidd logged no resync"
  rb=$(R stats --json "$name" | python3 -c '
import json, sys
j = json.load(sys.stdin)
j = j[0] if isinstance(j, list) else j
print(max(m["read_bytes"] for m in j["members"]))')
  bound=$(( md_dirty * bm_chunk ))
  [ "$synced" -gt 0 ] && [ "$synced" -le "$bound" ] ||
    fail "$name: raidd resynced $synced bytes per member; md left $md_dirty chunks of $bm_chunk bytes dirty ($bound bytes)"
  [ "$rb" -le $(( bound + (64 << 10) )) ] ||
    fail "$name: raidd read $rb bytes of a member; md left $md_dirty chunks of $bm_chunk bytes dirty ($bound bytes)"
  echo "ok   $name: md left $md_dirty of $bits bits ($bm_chunk-byte chunks) dirty; raidd resynced $synced of $total bytes per member, read at most $rb bytes of a member"
  if [ "$failed" != - ]; then
    stale=$ad/m$failed.img
    grep -qF "$name: member $stale is marked faulty in the array" "$d/raidd.log" ||
      fail "$name: raidd took md's failed member m$failed"
    # The array's own member, only behind: a plain add re-adds it, as
    # mdadm --add would.
    R add "$name" "$stale" > "$d/out" 2>&1 ||
      fail "raidctl add $name m$failed: $(cat "$d/out")"
    grep -q "re-added $stale to $name" "$d/out" ||
      fail "raidctl add $name m$failed was not a re-add: $(cat "$d/out")"
    timeout 300 "$raidctl" --control "$ctl" wait "$name" > "$d/out" 2>&1 ||
      fail "raidctl wait $name: $(cat "$d/out")"
    rec=$(sed -n "s/.* $name: recover done at [0-9]* of [0-9]* bytes, \([0-9]*\) bytes per member rebuilt.*/\1/p" "$d/raidd.log" | tail -1)
    [ -n "$rec" ] || fail "$name: raidd logged no recovery of m$failed"
    echo "ok   $name: md's failed member m$failed added back, raidd rebuilt $rec bytes of it"
  fi
  timeout 300 "$raidctl" --control "$ctl" scrub "$name" --wait > "$d/out" 2>&1 ||
    fail "raidctl scrub $name: $(cat "$d/out")"
  grep -q "check done: mismatch_cnt 0$" "$d/out" ||
    fail "$name: scrub after the resync: $(cat "$d/out")"
  R stop "$name" > "$d/out" 2>&1 || fail "raidctl stop $name: $(cat "$d/out")"
  [ "$(dirty_bits "${members[0]}")" = 0 ] ||
    fail "$name: bits still dirty after a clean stop: $("$raidctl" examine-bitmap "${members[0]}")"
  got=$("$raidio" read - "${members[@]}" | sha256sum | cut -d' ' -f1)
  [ "$got" = "$want" ] || fail "$name: libraid reads sha $got after the resync; md wrote sha $want"
  if [ "$failed" != - ]; then
    # Alone: a mirror that starts degraded (raidio says so on stderr).
    got=$("$raidio" read - "$stale" 2>/dev/null | sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] || fail "$name: m$failed alone reads sha $got after its recovery; md wrote sha $want"
  fi
  echo "ok   $name: scrub: mismatch_cnt 0; md's bytes read back$([ "$failed" = - ] || echo ", from m$failed alone too"); 0 bits dirty after a clean stop"
done <<< "$dirty_theirs"
stop_raidd

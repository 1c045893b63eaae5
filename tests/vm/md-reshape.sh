#!/bin/bash
# Description: the VM half of tests/test-vm-reshape.sh (run by tests/vm/run
# as root, $DIR the host's folder).  md assembles the RAID 5 arrays raidd
# restriped from 3 to 4 members, reshaped to another layout and chunk or
# took over from a mirror or a RAID 0, a RAID 0 taken over as a RAID 5 and
# back, and a RAID 10 restriped from 4 to 6 ($DIR/grown/*;
# level, disks, layout and chunk files say what md must find, a RAID 5 of
# 4 by default) and those whose reshape raidd left a third done
# ($DIR/half/*), which md must finish by itself (a RAID 0's as a RAID 5
# missing its parity role, which mdadm --grow --level 0 then ends);
# then md makes its own reshapes, frozen at about a third, for raidd
# ($DIR/theirs/md-half: RAID 5 3 to 4; md-half-r10: RAID 10 4 to 6;
# md-half-r10-odd: RAID 10 4 to 5, frozen at a checkpoint md took after
# 10 s, not on raidd's unit of 5 chunks; md-half-r10-bm: RAID 10 4 to 6
# with md's internal bitmap of 64 KiB chunks, which md keeps;
# md-half-back: RAID 5 4 to 3, backwards; md-half-r10-back: RAID 10
# near-2 4 to 3, backwards, the data offset moved by a single chunk).
# Each failure says what and goes on; the exit status is 1 if anything
# failed.
set -euo pipefail
cd /tmp
fail=0
modprobe raid456
modprobe raid10
# mdadm --grow and --assemble try systemctl to start their helper
# services (mdadm-grow-continue@); there is no systemd here.
export MDADM_NO_SYSTEMCTL=1

# attach FILE...: copies of the member files in /tmp (RAM: md's I/O over
# the 9p share is slow under TCG), a loop device over each, in order.
attach() {
  local f
  rm -rf /tmp/a; mkdir /tmp/a
  for f in "$@"; do
    cp --sparse=always "$f" /tmp/a/
    losetup --find --show "/tmp/a/$(basename "$f")"
  done
}

# detach LOOP...: the loop devices go, and their files in /tmp.
detach() {
  local l
  for l in "$@"; do losetup -d "$l"; done
  rm -rf /tmp/a
}

# t: seconds since the VM half started, for the log.
t() { echo "[${SECONDS}s]"; }

. "$(dirname "$0")/md-lib.sh"

# fields DEV: the superblock fields a reshape lives in, as mdadm -E prints
# them ("Reshape pos'n=27456", in KiB); the host takes the same lines
# from raidctl examine.
fields() {
  mdadm -E "$1" | sed -n "s/^ *\(Feature Map\|Raid Devices\|Data Offset\|New Offset\|Reshape pos'n\|Delta Devices\) : \([^ ]*\).*/\1=\2/p"
}

# stop_md NAME: mdadm --stop md0; a failure (something holds it) fails
# the whole run, as md0 is needed next.
stop_md() {
  if ! timeout 120 mdadm --stop /dev/md0 > /tmp/stop.log 2>&1; then
    echo "FAIL $1: mdadm --stop:"; cat /tmp/stop.log; ps ax | grep '[m]dadm' || true; exit 1
  fi
}

# md_check NAME: md's check over md0 must find mismatch_cnt 0.
md_check() {
  echo check > /sys/block/md0/md/sync_action
  if ! md_idle; then
    echo "FAIL $1: md's check did not end in 5 minutes"; cat /proc/mdstat; fail=1
  elif [ "$(cat /sys/block/md0/md/mismatch_cnt)" != 0 ]; then
    echo "FAIL $1: md's check: mismatch_cnt $(cat /sys/block/md0/md/mismatch_cnt)"; fail=1
  else
    echo "ok   $1: md's check: mismatch_cnt 0 $(t)"
  fi
}

echo "== md assembles arrays raidd reshaped"
# uuuu N [LEVEL]: "[N/N] [UU...]", as /proc/mdstat shows N members in
# sync (for a RAID 0, none: the empty string).
uuuu() { [ "${2:-}" = 0 ] || printf '[%s/%s] [%s]' "$1" "$1" "$(printf 'U%.0s' $(seq "$1"))"; }

for d in "$DIR"/grown/*; do
  name=$(basename "$d")
  want=$(cat "$d/sha") size=$(cat "$d/size") meta=$(cat "$d/meta")
  disks=$(cat "$d/disks" 2>/dev/null || echo 4)
  level=$(cat "$d/level" 2>/dev/null || echo 5)
  # fm: 0x1 where raidd reshaped it with a write-intent bitmap (kept).
  fm=$(cat "$d/fm" 2>/dev/null || echo 0x0)
  mapfile -t loops < <(attach "$d"/m*.img)
  fields "${loops[0]}" > /tmp/f
  if ! grep -q "^Feature Map=$fm$" /tmp/f || ! grep -q "^Raid Devices=$disks$" /tmp/f || grep -q "^Reshape" /tmp/f; then
    echo "FAIL $name: mdadm -E does not read a RAID $level of $disks with no reshape:"; mdadm -E "${loops[0]}"; fail=1
  elif ! timeout 120 mdadm --assemble /dev/md0 "${loops[@]}" > /tmp/asm.log 2>&1; then
    echo "FAIL $name: mdadm --assemble:"; cat /tmp/asm.log; fail=1
  else
    mdadm -D /dev/md0 > /tmp/detail.log 2>&1 || true
    if ! grep -q "^md0 : active raid$level " /proc/mdstat || ! grep -qF "$(uuuu "$disks" "$level")" /proc/mdstat; then
      echo "FAIL $name: md does not run it as raid$level $(uuuu "$disks" "$level"):"; cat /proc/mdstat; fail=1
    elif [ -f "$d/layout" ] && ! grep -q "Layout : $(cat "$d/layout")$" /tmp/detail.log; then
      echo "FAIL $name: mdadm -D does not say layout $(cat "$d/layout"):"; cat /tmp/detail.log; fail=1
    elif [ -f "$d/chunk" ] && ! grep -q "Chunk Size : $(cat "$d/chunk")$" /tmp/detail.log; then
      echo "FAIL $name: mdadm -D does not say chunk $(cat "$d/chunk"):"; cat /tmp/detail.log; fail=1
    elif ! grep -q "Version : $meta$" /tmp/detail.log; then
      echo "FAIL $name: mdadm -D does not say metadata $meta:"; cat /tmp/detail.log; fail=1
    elif [ "$level" != 0 ] && [ "$(cat /sys/block/md0/md/resync_start)" != none ]; then
      echo "FAIL $name: md would resync from sector $(cat /sys/block/md0/md/resync_start)"; fail=1
    elif [ "$(blockdev --getsize64 /dev/md0)" != "$size" ]; then
      echo "FAIL $name: md's /dev/md0 has $(blockdev --getsize64 /dev/md0) bytes, raidd served $size"; fail=1
    elif [ "$fm" = 0x1 ] && { ! grep -q "bitmap:" /proc/mdstat ||
           ! mdadm -X "${loops[0]}" | grep -q "Sync Size : $(cat "$d/bm-sync") "; }; then
      echo "FAIL $name: md runs it without its bitmap, or the bitmap does not cover $(cat "$d/bm-sync") KiB:"
      cat /proc/mdstat; mdadm -X "${loops[0]}"; fail=1
    elif [ "$(sha256sum < /dev/md0 | cut -d' ' -f1)" != "$want" ]; then
      echo "FAIL $name: md reads other bytes than raidd did through NBD"; fail=1
    else
      echo "ok   $name: md assembled raidd's reshape (metadata $meta) as raid$level $(uuuu "$disks" "$level"), no reshape in mdadm -E, $size bytes identical $(t)"
      [ "$level" = 0 ] || md_check "$name"
    fi
    stop_md "$name"
  fi
  detach "${loops[@]}"
done

echo "== md finishes reshapes raidd left a third done (kill -9, clean stop)"
for d in "$DIR"/half/*; do
  name=$(basename "$d")
  want=$(cat "$d/sha") size=$(cat "$d/size") old=$(cat "$d/old-size")
  disks=$(cat "$d/disks" 2>/dev/null || echo 4)
  # then: a RAID 0 restriped, which md's reshape ends as a RAID 5 of one
  # more missing its parity role; mdadm --grow --level 0 then.
  then=$(cat "$d/then" 2>/dev/null || :) rdisks=$disks
  fm=$(cat "$d/fm" 2>/dev/null || echo 0x0)
  [ -z "$then" ] || rdisks=$((disks + 1))
  mapfile -t loops < <(attach "$d"/m*.img)
  same=1
  for (( i = 0; i < ${#loops[@]}; i++ )); do
    fields "${loops[$i]}" > /tmp/f
    if ! diff "$d/fields-m$i" /tmp/f > /tmp/diff; then
      echo "FAIL $name: mdadm -E reads m$i's reshape otherwise than raidctl examine (< raidctl, > mdadm):"
      cat /tmp/diff; mdadm -E "${loops[$i]}"; fail=1 same=0
    fi
  done
  [ $same = 1 ] && echo "ok   $name: mdadm -E reads raidd's reshape fields on the ${#loops[@]} members:" $(cat /tmp/f)
  new_off=$(sed -n 's/^New Offset=//p' "$d/fields-m0")
  # A plain --assemble: md takes the reshape up from the checkpoint by
  # itself (no --grow --continue, no backup file: the data offset moves).
  if ! timeout 120 mdadm --assemble /dev/md0 "${loops[@]}" > /tmp/asm.log 2>&1; then
    echo "FAIL $name: mdadm --assemble:"; cat /tmp/asm.log; fail=1
  else
    grep -q "reshape = " /proc/mdstat && echo "ok   $name: md resumed the reshape: $(grep -o 'reshape = .*' /proc/mdstat)"
    if [ "$(cat /sys/block/md0/md/sync_action)" = frozen ]; then
      echo "FAIL $name: md assembled it with the reshape frozen"; cat /proc/mdstat; fail=1
    elif ! md_idle; then
      echo "FAIL $name: md's reshape did not end in 5 minutes"; cat /proc/mdstat; fail=1
    elif [ "$(cat /sys/block/md0/md/reshape_position)" != none ] ||
         [ "$(cat /sys/block/md0/md/raid_disks)" != "$rdisks" ]; then
      echo "FAIL $name: md did not finish the reshape: reshape_position $(cat /sys/block/md0/md/reshape_position)," \
        "raid_disks $(cat /sys/block/md0/md/raid_disks), sync_action $(cat /sys/block/md0/md/sync_action)"
      cat /proc/mdstat; fail=1
    elif [ "$(blockdev --getsize64 /dev/md0)" != "$size" ]; then
      echo "FAIL $name: md's /dev/md0 has $(blockdev --getsize64 /dev/md0) bytes once reshaped, not $size"; fail=1
    elif [ -n "$then" ]; then
      if ! grep -qF "[$rdisks/$disks] [$(printf 'U%.0s' $(seq "$disks"))_]" /proc/mdstat; then
        echo "FAIL $name: md does not run it as a RAID 5 of $rdisks missing its parity:"; cat /proc/mdstat; fail=1
      elif ! timeout 120 mdadm --grow /dev/md0 --level "$then" > /tmp/grow.log 2>&1; then
        echo "FAIL $name: mdadm --grow --level $then:"; cat /tmp/grow.log; cat /proc/mdstat; fail=1
      elif ! grep -q "^md0 : active raid$then " /proc/mdstat ||
           [ "$(cat /sys/block/md0/md/raid_disks)" != "$disks" ]; then
        echo "FAIL $name: not a RAID $then of $disks after mdadm --grow --level $then:"; cat /proc/mdstat; fail=1
      elif [ "$(head -c "$old" /dev/md0 | sha256sum | cut -d' ' -f1)" != "$want" ]; then
        echo "FAIL $name: md reads other bytes than raidd served before it was left"; fail=1
      else
        echo "ok   $name: md finished raidd's reshape of a RAID 0 (a RAID 5 of $rdisks missing its parity), and mdadm --grow --level $then made it a RAID $then of $disks, $size bytes, the first $old as raidd served them $(t)"
      fi
    elif ! grep -qF "$(uuuu "$disks")" /proc/mdstat; then
      echo "FAIL $name: md does not run it as $(uuuu "$disks"):"; cat /proc/mdstat; fail=1
    elif [ "$(head -c "$old" /dev/md0 | sha256sum | cut -d' ' -f1)" != "$want" ]; then
      echo "FAIL $name: md reads other bytes than raidd served before it was left"; fail=1
    else
      echo "ok   $name: md finished raidd's reshape: $(uuuu "$disks"), $size bytes, the first $old as raidd served them $(t)"
      md_check "$name"
    fi
    stop_md "$name"
    fields "${loops[0]}" > /tmp/f
    if ! grep -q "^Feature Map=$fm$" /tmp/f || grep -q "^Reshape" /tmp/f || ! grep -q "^Data Offset=$new_off$" /tmp/f; then
      echo "FAIL $name: after md's reshape mdadm -E does not read it done at data offset $new_off:"; cat /tmp/f; fail=1
    fi
  fi
  detach "${loops[@]}"
done

echo "== md's own reshapes, frozen at a third, for raidd"
# md_half NAME LEVEL N TOTAL [UNIT [BITMAP]]: md makes a LEVEL array of N members
# (metadata 1.2, 64K chunks), fills it, adds members up to TOTAL, grows
# it to TOTAL with no backup file (mdadm moves the data offset earlier, a
# forward reshape), throttled by sync_speed_max and frozen (sync_action
# frozen: md then blocks reads near its position, so its bytes are read
# before the grow) at about a third, stops it and leaves it in
# $DIR/theirs/NAME with its superblock fields.  With UNIT (sectors: raidd's
# unit of rows, reshape.c), slower and frozen once md has run for more
# than 10 s and its last checkpoint (reshape_position, which the
# superblocks keep when frozen) is not on a UNIT: md's RAID 10 records
# one every 10 s wherever it is (raid10.c reshape_request()).  With
# BITMAP (a chunk size), an internal write-intent bitmap of that chunk,
# which md keeps through the reshape (feature map 0x45).  Exits on failure
# (md0 is needed next).
md_half() {
  local name=$1 level=$2 n=$3 total=$4 unit=${5:-} bitmap=${6:-none} d=$DIR/theirs/$1 i l
  local old sha dev done_ rpos bm=(--bitmap=none)
  [ "$bitmap" = none ] || bm=(--bitmap=internal --bitmap-chunk="$bitmap")
  local loops=() t0
  local files=$(( n > total ? n : total )) size=()
  mkdir -p "$d"
  # Made in /tmp and copied to the share once md stopped it.
  rm -rf /tmp/a; mkdir /tmp/a
  for (( i = 0; i < files; i++ )); do
    truncate -s 32M "/tmp/a/m$i.img"
    loops+=("$(losetup --find --show "/tmp/a/m$i.img")")
  done
  # To fewer members (backwards): mdadm moves the data offset later, into
  # room after the data, which --size leaves (a member's data area is
  # about 31 MiB).
  (( total >= n )) || size=(--size=28M)
  if ! timeout 120 mdadm --create /dev/md0 --run --level="$level" --raid-devices="$n" --metadata=1.2 \
         --chunk=64 "${bm[@]}" --assume-clean "${size[@]}" "${loops[@]:0:n}" > /tmp/create.log 2>&1; then
    echo "FAIL $name: mdadm --create:"; cat /tmp/create.log; exit 1
  fi
  old=$(blockdev --getsize64 /dev/md0)
  # Backwards, shown no more than TOTAL members hold first (mdadm asks
  # for it): what is read and compared is that much.
  if (( total < n )); then
    if (( level == 5 )); then old=$(( old / (n - 1) * (total - 1) )); else old=$(( old / n * total )); fi
    timeout 120 mdadm --grow /dev/md0 --array-size=$(( old / 1024 )) > /tmp/grow.log 2>&1 ||
      { echo "FAIL $name: mdadm --grow --array-size:"; cat /tmp/grow.log; exit 1; }
    # mdadm 4.2 writes each member's new_offset before raid_disks, and md
    # refuses a later offset while reshape_direction says forwards ("Cannot
    # set new_offset"): the direction first, as its RAID 10 path does.
    echo backwards > /sys/block/md0/md/reshape_direction
  fi
  head -c "$old" /dev/urandom > /tmp/data
  dd if=/tmp/data of=/dev/md0 bs=1M oflag=direct conv=fsync status=none
  # md's bytes, read before the reshape (nothing writes after): a reshape
  # does not change them, and md cannot be read once it is frozen (a read
  # that meets the stripes between its checkpoint and its position waits
  # for the reshape to go on, in raid5_make_request, for ever), and one
  # while it runs follows it at its throttled pace.
  sha=$(sha256sum < /dev/md0 | cut -d' ' -f1)
  for (( i = n; i < total; i++ )); do
    timeout 120 mdadm /dev/md0 --add "${loops[$i]}" > /tmp/add.log 2>&1 ||
      { echo "FAIL $name: mdadm --add:"; cat /tmp/add.log; exit 1; }
  done
  # 2 MiB/s: a third of the 32 MiB members in about 5 s.  No backup file:
  # mdadm moves the data offset (New Offset below Data Offset: forwards;
  # above it to fewer members: backwards).
  if [ -n "$unit" ]; then echo 600; else echo 2000; fi > /sys/block/md0/md/sync_speed_max
  t0=$SECONDS
  if ! timeout 120 mdadm --grow /dev/md0 --raid-devices="$total" > /tmp/grow.log 2>&1; then
    echo "FAIL $name: mdadm --grow --raid-devices=$total:"; cat /tmp/grow.log; exit 1
  fi
  dev=$(( $(cat /sys/block/md0/md/component_size) * 2 ))
  for (( i = 0; i < 1200; i++ )); do
    if [ -n "$unit" ]; then
      rpos=$(cat /sys/block/md0/md/reshape_position)
      [ "$rpos" != none ] && (( SECONDS - t0 > 10 && rpos % unit != 0 )) && break
    else
      done_=$(cut -d' ' -f1 /sys/block/md0/md/sync_completed)
      [ "$done_" != none ] && (( done_ * 3 >= dev )) && break
    fi
    sleep 0.1
  done
  echo frozen > /sys/block/md0/md/sync_action
  rpos=$(cat /sys/block/md0/md/reshape_position)
  if [ "$rpos" = none ] || (( rpos >= old / 512 || rpos == 0 )); then
    echo "FAIL $name: md's reshape is not under way once frozen (reshape_position $rpos)"; cat /proc/mdstat; exit 1
  fi
  if [ "$(blockdev --getsize64 /dev/md0)" != "$old" ] || [ "$sha" != "$(sha256sum < /tmp/data | cut -d' ' -f1)" ]; then
    echo "FAIL $name: md read other bytes than it was given"; fail=1
  fi
  mdadm -D /dev/md0 | grep -E "Raid Devices|Array Size|Delta Devices|Reshape Status" || true
  timeout 120 mdadm --stop /dev/md0 > /tmp/stop.log 2>&1 || { echo "FAIL $name: mdadm --stop:"; cat /tmp/stop.log; exit 1; }
  for (( i = 0; i < files; i++ )); do fields "${loops[$i]}" > "$d/fields-m$i"; done
  mdadm -E "${loops[0]}" | sed 's/^/     | /'
  for l in "${loops[@]}"; do losetup -d "$l"; done
  cp --sparse=always /tmp/a/m*.img "$d/"
  rm -rf /tmp/a
  echo "$sha" > "$d/sha"
  echo "$old" > "$d/old-size"
  if (( total < n )); then
    echo "$old" > "$d/size"
  else
    echo $((old / (level == 5 ? n - 1 : n) * (level == 5 ? total - 1 : total))) > "$d/size"
  fi
  echo "$total" > "$d/disks"
  echo "$files" > "$d/files"
  echo "ok   $name: md's reshape frozen at array sector $rpos of $((old / 512))${unit:+ (${unit}-sector units: $((rpos % unit)) past one)}, stopped $(t):" $(cat "$d/fields-m0")
}
md_half md-half 5 3 4
md_half md-half-r10 10 4 6
md_half md-half-r10-odd 10 4 5 640
md_half md-half-r10-bm 10 4 6 "" 64K
md_half md-half-back 5 4 3
md_half md-half-r10-back 10 4 3
exit $fail

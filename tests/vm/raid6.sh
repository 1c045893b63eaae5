#!/bin/bash
# Description: the VM half of tests/test-vm-raid6.sh (run by tests/vm/run
# as root, $DIR the host's folder).  For each md RAID 6 layout in
# $LAYOUTS, mdadm creates a RAID 6 of 6 members (64K chunks, metadata
# 1.2) over 8 MiB files, md computes P and Q in its initial resync, the
# array is filled with $DIR/pattern (raid6-check's), and the members are
# left in $DIR/LAYOUT/ for the host to check.  Exits 1 on the first
# failure.
set -euo pipefail
cd /tmp
modprobe raid456
export MDADM_NO_SYSTEMCTL=1

. "$(dirname "$0")/md-lib.sh"

# idle_or_fail LAYOUT WHAT: until md0 is idle, or exit 1 saying what kept it busy.
idle_or_fail() {
  md_idle && return 0
  echo "FAIL $1: md still busy 5 minutes after $2: $(cat /proc/mdstat)"
  exit 1
}

for layout in $LAYOUTS; do
  rm -rf /tmp/a; mkdir /tmp/a
  loops=()
  for i in 0 1 2 3 4 5; do
    truncate -s 8M "/tmp/a/m$i.img"
    loops+=("$(losetup --find --show "/tmp/a/m$i.img")")
  done
  if ! mdadm --create /dev/md0 --run --level 6 --raid-devices 6 --layout "$layout" \
       --chunk 64 --metadata 1.2 "${loops[@]}" > /tmp/create.log 2>&1; then
    echo "FAIL $layout: mdadm --create:"; cat /tmp/create.log; exit 1
  fi
  idle_or_fail "$layout" "its initial resync"
  size=$(blockdev --getsize64 /dev/md0)
  dd if="$DIR/pattern" of=/dev/md0 bs=64K count=$((size / 65536)) oflag=direct status=none
  idle_or_fail "$layout" "the fill"
  mdadm --stop /dev/md0 > /dev/null 2>&1
  for l in "${loops[@]}"; do losetup -d "$l"; done
  cp /tmp/a/m*.img "$DIR/$layout/"
  echo "ok   $layout: md made a RAID 6 of 6 ($size bytes) and filled it with the pattern"
done

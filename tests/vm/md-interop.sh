#!/bin/bash
# Guest half of tests/test-vm-md.sh (runs in the VM of tests/vm/run under
# Debian's kernel, with the md driver).  $DIR is the shared folder holding:
#   ours/CONFIG/m*.img + ours/CONFIG/sha   arrays raidctl created and libraid
#                                          filled: md must assemble them and
#                                          read the same bytes, a RAID 5 also
#                                          without its second member (and honour a
#                                          write-mostly flag; a metadata 1.0
#                                          mirror's members alone hold them)
#   ours/bm-CONFIG/bits                    arrays with our internal bitmap:
#                                          mdadm -X must read it (that many
#                                          bits, none dirty)
#   theirs.list                            arrays to create here with mdadm,
#                                          fill with random data, and leave in
#                                          theirs/CONFIG/ with their sha
#   ours-grown.list + ours-grown/CONFIG/   arrays raidd grew (raidctl grow
#                                          --size max) after their members
#                                          grew: md must assemble them at the
#                                          grown size (CONFIG/size), see no
#                                          resync pending, read what raidd read
#                                          (CONFIG/sha) and find no mismatch in
#                                          a check; a bitmap (CONFIG/bits) must
#                                          cover the new size for mdadm -X; a
#                                          1.0 mirror's superblocks must be at
#                                          the grown ends (CONFIG/super-offset)
#                                          and its members alone hold its bytes
#   ours-mirrors.list + ours-mirrors/NAME/ RAID 1 mirrors raidd grew to 3
#                                          and shrank to 2 (raidctl grow
#                                          --raid-devices): md must assemble
#                                          each with every member active in
#                                          the role NAME/roles gives, read
#                                          what raidd read (NAME/sha) and find
#                                          no mismatch in a check
#   md-grow.list + md-grow/CONFIG/         arrays raidctl created, never
#                                          grown: md must take a spare of
#                                          their members' size, grow them
#                                          itself (mdadm --grow --size max)
#                                          to CONFIG/size once the members
#                                          grow, keep the bytes (CONFIG/sha
#                                          of the first CONFIG/old-size) and
#                                          check clean; a 1.0 one must get
#                                          mdadm --create's data size
#   ours-dirty.list + ours-dirty/CONFIG/   bitmap arrays raidd was killed
#                                          (kill -9) while writing: md must
#                                          see them dirty with our dirty bits,
#                                          resync them, find no mismatch in a
#                                          check and read the settled bytes
#                                          (past "off") as raidd wrote them
#   theirs-dirty.list                      bitmap arrays to leave dirty in
#                                          theirs-dirty/CONFIG/: filled, stopped
#                                          cleanly, assembled again and partly
#                                          rewritten (a member failed first if
#                                          the config says so), then the
#                                          members copied while md still has
#                                          the array active and the bits set
set -euo pipefail
# The host's helpers (new_members); the source tree is shared at its path.
. "$(dirname "$0")/../functions.sh"
cd /tmp
fail=0
modprobe -a raid0 raid1 raid10 raid456

# attach FILES... -> prints loop devices.  Direct I/O: the files are on
# the 9p share, where a buffered loop device crawls (2 MB/s under TCG,
# against 40 MB/s).
attach() {
  local f
  for f in "$@"; do losetup --direct-io=on --find --show "$f"; done
}

# md_fill: fill /dev/md0 with random bytes, a copy in /tmp/data; $size
# is its size.
md_fill() {
  size=$(blockdev --getsize64 /dev/md0)
  head -c "$size" /dev/urandom > /tmp/data
  dd if=/tmp/data of=/dev/md0 bs=1M oflag=direct conv=fsync status=none
}

. "$(dirname "$0")/md-lib.sh"

echo "== md assembles arrays created by raidctl"
while read -r name level layout chunk n meta wm; do
  d=$DIR/ours/$name
  mapfile -t loops < <(attach "$d"/m*.img)
  if [[ $name == bm-* ]]; then
    # Our bitmap as we left it, before md touches it.
    mdadm -X "${loops[0]}" > /tmp/x.log 2>&1 || true
    uuid=$(mdadm -E "${loops[0]}" | sed -n 's/.*Array UUID : //p')
    bits=$(cat "$d/bits")
    if grep -q "Magic : 6d746962$" /tmp/x.log && grep -q "Version : 4$" /tmp/x.log &&
       grep -q "UUID : $uuid$" /tmp/x.log && grep -q "Chunksize : 1 MB$" /tmp/x.log &&
       grep -q "State : OK$" /tmp/x.log && grep -q "Daemon : 5s flush period" /tmp/x.log &&
       grep -q "Bitmap : $bits bits (chunks), 0 dirty" /tmp/x.log &&
       mdadm -E "${loops[0]}" | grep -q "Internal Bitmap : " &&
       { [ ! -f "$d/wb" ] || grep -q "Write Mode : Allow write behind, max $(cat "$d/wb")$" /tmp/x.log; }; then
      echo "ok   $name: mdadm -X reads our bitmap: $bits bits of 1 MB, 0 dirty, the array's UUID"
      [ -f "$d/wb" ] && echo "ok   $name: mdadm -X reads our write-behind limit $(cat "$d/wb")"
    else
      echo "FAIL $name: mdadm -X does not read our bitmap as written ($bits bits of 1 MB, UUID $uuid):"
      cat /tmp/x.log; fail=1
    fi
  fi
  if ! mdadm --assemble /dev/md0 "${loops[@]}" >/tmp/asm.log 2>&1; then
    echo "FAIL $name: mdadm --assemble:"; cat /tmp/asm.log; fail=1
  else
    want=$(cat "$d/sha"); wsize=$(cat "$d/size")
    size=$(blockdev --getsize64 /dev/md0)
    got=$(sha256sum < /dev/md0 | cut -d' ' -f1)
    if [ "$size" != "$wsize" ] || [ "$got" != "$want" ]; then
      echo "FAIL $name: md reads size $size sha $got, libraid wrote size $wsize sha $want"
      mdadm --detail /dev/md0 || true
      fail=1
    elif ! mdadm --detail /dev/md0 | grep -q "Version : $meta"; then
      echo "FAIL $name: md does not see metadata $meta"; mdadm --detail /dev/md0; fail=1
    elif [[ $name == bm-* ]] && ! mdadm --detail /dev/md0 | grep -q "Intent Bitmap : Internal"; then
      echo "FAIL $name: md runs it without our bitmap"; mdadm --detail /dev/md0; fail=1
    elif [ "$wm" != - ] && ! grep -q write_mostly /sys/block/md0/md/dev-"$(basename "${loops[$wm]}")"/state; then
      echo "FAIL $name: md does not honour the write-mostly flag of m$wm:"
      grep . /sys/block/md0/md/dev-*/state; fail=1
    elif [ -f "$d/wb" ] && [ "$(cat /sys/block/md0/md/bitmap/backlog)" != "$(cat "$d/wb")" ]; then
      echo "FAIL $name: md's bitmap/backlog is $(cat /sys/block/md0/md/bitmap/backlog), our write-behind $(cat "$d/wb")"
      fail=1
    else
      echo "ok   $name: md assembled it (metadata $meta), $size bytes identical"
      [ "$wm" != - ] && echo "ok   $name: md marks m$wm write_mostly"
      [ -f "$d/wb" ] && echo "ok   $name: md writes behind, up to $(cat "$d/wb") (bitmap/backlog)"
    fi
    mdadm --stop /dev/md0 >/dev/null 2>&1
    # Degraded: md rebuilds member 1's data from the parity we wrote.
    if [ "$level" = 5 ]; then
      if ! mdadm --assemble --run /dev/md0 "${loops[0]}" "${loops[@]:2}" >/tmp/asm.log 2>&1; then
        echo "FAIL $name: mdadm --assemble --run without m1:"; cat /tmp/asm.log; fail=1
      elif [ "$(sha256sum < /dev/md0 | cut -d' ' -f1)" != "$want" ]; then
        echo "FAIL $name: md reads other bytes without m1"; mdadm --detail /dev/md0 || true; fail=1
      else
        echo "ok   $name: md read it degraded (m1 missing), bytes identical"
      fi
      mdadm --stop /dev/md0 >/dev/null 2>&1
    fi
    # A boot loader reads one disk of a 1.0 mirror as a plain disk.
    if [ "$meta" = 1.0 ] && [ "$level" = 1 ]; then
      for l in "${loops[@]}"; do
        if [ "$(head -c "$wsize" "$l" | sha256sum | cut -d' ' -f1)" != "$want" ]; then
          echo "FAIL $name: member $l alone does not hold the array's bytes"; fail=1
        else
          echo "ok   $name: member $l alone holds the array's $wsize bytes"
        fi
      done
    fi
  fi
  for l in "${loops[@]}"; do losetup -d "$l"; done
done < "$DIR/theirs.list"

echo "== md assembles arrays raidd grew (raidctl grow --size max)"
while read -r name level layout chunk n bitmap meta; do
  d=$DIR/ours-grown/$name
  mapfile -t loops < <(attach "$d"/m*.img)
  want=$(cat "$d/sha") wsize=$(cat "$d/size") ms=$(cat "$d/member-size")
  if [ "$meta" = 1.0 ]; then
    # mdadm looks for a 1.0 superblock only near the member's end (8 KiB
    # before it, rounded down to 4 KiB): raidd must have moved it there.
    so=$(cat "$d/super-offset")
    for l in "${loops[@]}"; do
      if mdadm -E "$l" 2>&1 | grep -q "Super Offset : $so sectors$"; then
        echo "ok   $name: mdadm -E finds $l's superblock at the grown end, sector $so"
      else
        echo "FAIL $name: mdadm -E does not find $l's superblock at sector $so:"
        mdadm -E "$l" || true; fail=1
      fi
    done
  fi
  if [ "$bitmap" = internal ]; then
    # The bitmap raidd put back over the new size, before md touches it.
    mdadm -X "${loops[0]}" > /tmp/x.log 2>&1 || true
    bits=$(cat "$d/bits")
    if grep -q "Sync Size : $((ms / 1024)) " /tmp/x.log &&
       grep -q "Bitmap : $bits bits (chunks), 0 dirty" /tmp/x.log &&
       grep -q "Chunksize : 1 MB$" /tmp/x.log; then
      echo "ok   $name: mdadm -X reads the bitmap over the grown size: $((ms / 1024)) KiB, $bits bits of 1 MB, 0 dirty"
    else
      echo "FAIL $name: mdadm -X does not read a bitmap over the grown size ($((ms / 1024)) KiB, $bits bits of 1 MB):"
      cat /tmp/x.log; fail=1
    fi
  fi
  if ! mdadm --assemble /dev/md0 "${loops[@]}" >/tmp/asm.log 2>&1; then
    echo "FAIL $name: mdadm --assemble:"; cat /tmp/asm.log; fail=1
  else
    size=$(blockdev --getsize64 /dev/md0)
    # "none": md finds the resync of the new region complete
    # (resync_offset past the end), nothing to redo.
    rs=$(cat /sys/block/md0/md/resync_start)
    if [ "$size" != "$wsize" ]; then
      echo "FAIL $name: md's /dev/md0 has $size bytes, raidd grew it to $wsize"
      mdadm --detail /dev/md0 || true; fail=1
    elif [ "$rs" != none ]; then
      echo "FAIL $name: md would resync from sector $rs: raidd's resync of the new region not recorded"
      mdadm -E "${loops[0]}" || true; fail=1
    elif ! mdadm --detail /dev/md0 | grep -q "Used Dev Size : $((ms / 1024)) "; then
      echo "FAIL $name: md does not use $((ms / 1024)) KiB of each member"; mdadm --detail /dev/md0; fail=1
    elif ! mdadm --detail /dev/md0 | grep -q "Version : $meta$"; then
      echo "FAIL $name: md does not see metadata $meta"; mdadm --detail /dev/md0; fail=1
    elif [ "$bitmap" = internal ] && ! mdadm --detail /dev/md0 | grep -q "Intent Bitmap : Internal"; then
      echo "FAIL $name: md runs it without the bitmap"; mdadm --detail /dev/md0; fail=1
    elif [ "$(sha256sum < /dev/md0 | cut -d' ' -f1)" != "$want" ]; then
      echo "FAIL $name: md reads other bytes than raidd did through NBD after the grow"; fail=1
    else
      echo "ok   $name: md assembled it (metadata $meta) at the grown size, $size bytes ($((ms / 1024)) KiB of each member), no resync pending, bytes identical"
      echo check > /sys/block/md0/md/sync_action
      if ! md_idle; then
        echo "FAIL $name: md's check did not end in 5 minutes"; cat /proc/mdstat; fail=1
      elif [ "$(cat /sys/block/md0/md/mismatch_cnt)" != 0 ]; then
        echo "FAIL $name: md's check of the grown array: mismatch_cnt $(cat /sys/block/md0/md/mismatch_cnt)"; fail=1
      else
        echo "ok   $name: md's check over the grown size: mismatch_cnt 0"
      fi
    fi
    mdadm --stop /dev/md0 >/dev/null 2>&1 || true
    # A boot loader reads one disk of a 1.0 mirror as a plain disk: the
    # grown array from sector 0, the new region too (direct 1 MiB reads:
    # the loop device's small buffered ones crawl over 9p).
    if [ "$meta" = 1.0 ] && [ "$level" = 1 ]; then
      for l in "${loops[@]}"; do
        if [ "$(dd if="$l" bs=1M iflag=direct status=none | head -c "$wsize" | sha256sum | cut -d' ' -f1)" != "$want" ]; then
          echo "FAIL $name: member $l alone does not hold the grown array's bytes"; fail=1
        else
          echo "ok   $name: member $l alone holds the grown array's $wsize bytes from sector 0"
        fi
      done
    fi
  fi
  for l in "${loops[@]}"; do losetup -d "$l"; done
done < "$DIR/ours-grown.list"

# mdadm -E's "Avail Dev Size" or "Used Dev Size" (FIELD) of LOOP, in sectors.
dev_size() {
  mdadm -E "$1" | sed -n "s/.*$2 : \([0-9]*\) sectors.*/\1/p"
}

# md_synced: wait until md0's resync is done: resync_start "none" (md's
# grow sets it to the old end, and the resync may not have started yet
# when md_idle looks) and nothing running (5 minutes at most).
md_synced() {
  local i
  for (( i = 0; i < 600; i++ )); do
    [ "$(cat /sys/block/md0/md/resync_start)" = none ] && md_idle && return 0
    sleep 0.5
  done
  return 1
}

echo "== md grows arrays raidctl created (mdadm --grow --size max)"
while read -r name level layout chunk n meta; do
  d=$DIR/md-grow/$name
  mapfile -t loops < <(attach "$d"/m*.img)
  want=$(cat "$d/sha") old=$(cat "$d/old-size") wsize=$(cat "$d/size") ms=$(cat "$d/member-size")
  if [ "$meta" = 1.0 ]; then
    # mdadm --create on members of the same size (24 MiB, in /tmp): the
    # same data size (data_size, up to its room below the superblock),
    # and for RAID 5 the same size used (mdadm rounds a mirror's to 64
    # KiB, we to 4 KiB).
    mine=$(dev_size "${loops[0]}" "Avail Dev Size") mine_used=$(dev_size "${loops[0]}" "Used Dev Size")
    mine_used=${mine_used:-$mine}        # mdadm -E leaves it out when all is used
    mloops=()
    for (( i = 0; i < n; i++ )); do
      truncate -s 24M "/tmp/mdc$i.img"
      mloops+=("$(losetup --find --show "/tmp/mdc$i.img")")
    done
    cargs=(--level "$level" --raid-devices "$n" --metadata 1.0 --bitmap none --assume-clean)
    [ "$layout" != - ] && cargs+=(--layout "$layout")
    [ "$chunk" != - ] && cargs+=(--chunk "$chunk")
    mdadm --create /dev/md1 --run "${cargs[@]}" "${mloops[@]}" > /tmp/create.log 2>&1 ||
      { echo "FAIL $name: mdadm --create:"; cat /tmp/create.log; fail=1; }
    theirs=$(dev_size "${mloops[0]}" "Avail Dev Size") their_used=$(dev_size "${mloops[0]}" "Used Dev Size")
    their_used=${their_used:-$theirs}
    mdadm --stop /dev/md1 > /dev/null 2>&1 || true
    for l in "${mloops[@]}"; do losetup -d "$l"; done
    rm -f /tmp/mdc*.img
    if [ -z "$mine" ] || [ "$mine" != "$theirs" ]; then
      echo "FAIL $name: data size $mine sectors on our 24 MiB member, mdadm --create's $theirs"; fail=1
    elif [ "$level" = 5 ] && [ "$mine_used" != "$their_used" ]; then
      echo "FAIL $name: $mine_used sectors used of our 24 MiB member, $their_used of mdadm --create's"; fail=1
    else
      echo "ok   $name: data size $mine sectors on a 24 MiB member, as mdadm --create's ($mine_used used, mdadm's $their_used)"
    fi
  fi
  if ! mdadm --assemble /dev/md0 "${loops[@]}" > /tmp/asm.log 2>&1; then
    echo "FAIL $name: mdadm --assemble:"; cat /tmp/asm.log; fail=1
    for l in "${loops[@]}"; do losetup -d "$l"; done
    continue
  fi
  # A spare the size of our members: mdadm prepares it with its own room.
  truncate -s 24M /tmp/spare.img
  sl=$(losetup --find --show /tmp/spare.img)
  if mdadm /dev/md0 --add "$sl" > /tmp/add.log 2>&1; then
    echo "ok   $name: mdadm --add takes a spare of our members' size"
    mdadm /dev/md0 --remove "$sl" > /dev/null 2>&1 || true
  else
    echo "FAIL $name: mdadm --add refuses a spare of our members' size:"; cat /tmp/add.log; fail=1
  fi
  losetup -d "$sl"; rm -f /tmp/spare.img
  # The members grow under the running array (as a logical volume
  # would); md sees it once the loop devices do.
  for f in "$d"/m*.img; do truncate -s 40M "$f"; done
  for l in "${loops[@]}"; do losetup -c "$l"; done
  if ! mdadm --grow /dev/md0 --size max > /tmp/grow.log 2>&1; then
    echo "FAIL $name: mdadm --grow --size max:"; cat /tmp/grow.log; dmesg | tail -3; fail=1
  elif ! md_synced; then
    echo "FAIL $name: md's resync of the new region did not end in 5 minutes"; cat /proc/mdstat; fail=1
  elif [ "$(cat /sys/block/md0/md/component_size)" != $((ms / 1024)) ] ||
       [ "$(blockdev --getsize64 /dev/md0)" != "$wsize" ]; then
    echo "FAIL $name: md grew it to $(blockdev --getsize64 /dev/md0) bytes, $(cat /sys/block/md0/md/component_size) KiB of each member; expected $wsize, $((ms / 1024)) KiB"
    fail=1
  elif [ "$(head -c "$old" /dev/md0 | sha256sum | cut -d' ' -f1)" != "$want" ]; then
    echo "FAIL $name: after md's grow the first $old bytes are not the ones libraid wrote"; fail=1
  else
    echo "ok   $name: mdadm --grow --size max (metadata $meta) took it from $old to $wsize bytes ($((ms / 1024)) KiB of each member), our bytes kept"
    echo check > /sys/block/md0/md/sync_action
    if ! md_idle; then
      echo "FAIL $name: md's check did not end in 5 minutes"; cat /proc/mdstat; fail=1
    elif [ "$(cat /sys/block/md0/md/mismatch_cnt)" != 0 ]; then
      echo "FAIL $name: md's check after its grow: mismatch_cnt $(cat /sys/block/md0/md/mismatch_cnt)"; fail=1
    else
      echo "ok   $name: md's check over the grown size: mismatch_cnt 0"
    fi
  fi
  mdadm --stop /dev/md0 > /dev/null 2>&1 || true
  for l in "${loops[@]}"; do losetup -d "$l"; done
done < "$DIR/md-grow.list"

echo "== md assembles mirrors raidd grew and shrank (raidctl grow --raid-devices)"
while read -r name n; do
  d=$DIR/ours-mirrors/$name
  want=$(cat "$d/sha") wsize=$(cat "$d/size")
  files=() roles=()
  while read -r f role; do files+=("$d/$f"); roles+=("$role"); done < "$d/roles"
  mapfile -t loops < <(attach "${files[@]}")
  # Each superblock as raidd wrote it: the mirror count and its role.
  for (( i = 0; i < ${#loops[@]}; i++ )); do
    mdadm -E "${loops[$i]}" > /tmp/e.log 2>&1 || true
    if grep -q "Raid Devices : $n$" /tmp/e.log && grep -q "Device Role : Active device ${roles[$i]}$" /tmp/e.log; then
      echo "ok   $name: mdadm -E reads $(basename "${files[$i]}"): $n raid devices, active device ${roles[$i]}"
    else
      echo "FAIL $name: mdadm -E does not read $(basename "${files[$i]}") as active device ${roles[$i]} of $n:"
      cat /tmp/e.log; fail=1
    fi
  done
  mdadm -X "${loops[0]}" > /tmp/x.log 2>&1 || true
  if ! grep -q "Bitmap : [0-9]* bits (chunks), 0 dirty" /tmp/x.log; then
    echo "FAIL $name: mdadm -X does not find our bitmap clean:"; cat /tmp/x.log; fail=1
  fi
  if ! mdadm --assemble /dev/md0 "${loops[@]}" >/tmp/asm.log 2>&1; then
    echo "FAIL $name: mdadm --assemble:"; cat /tmp/asm.log; fail=1
  else
    mdadm --detail /dev/md0 > /tmp/detail.log 2>&1 || true
    u=$(printf 'U%.0s' $(seq "$n"))
    slots=ok
    for (( i = 0; i < ${#loops[@]}; i++ )); do
      slot=$(cat /sys/block/md0/md/dev-"$(basename "${loops[$i]}")"/slot 2>/dev/null || echo none)
      [ "$slot" = "${roles[$i]}" ] || slots="$(basename "${files[$i]}") in slot $slot, not ${roles[$i]}"
    done
    if ! grep -q "^md0 : active raid1 " /proc/mdstat || ! grep -q "\[$n/$n\] \[$u\]" /proc/mdstat; then
      echo "FAIL $name: md does not run it as [$n/$n] [$u]:"; cat /proc/mdstat; fail=1
    elif ! grep -q "Raid Devices : $n$" /tmp/detail.log || ! grep -q "Active Devices : $n$" /tmp/detail.log ||
         ! grep -q "Working Devices : $n$" /tmp/detail.log || ! grep -q "Failed Devices : 0$" /tmp/detail.log ||
         ! grep -q "Spare Devices : 0$" /tmp/detail.log || ! grep -q "Intent Bitmap : Internal" /tmp/detail.log; then
      echo "FAIL $name: mdadm --detail does not say $n raid devices, $n active, none failed or spare, our bitmap:"
      cat /tmp/detail.log; fail=1
    elif [ "$slots" != ok ]; then
      echo "FAIL $name: md put $slots"; grep . /sys/block/md0/md/dev-*/slot; fail=1
    elif [ "$(cat /sys/block/md0/md/resync_start)" != none ]; then
      echo "FAIL $name: md would resync from sector $(cat /sys/block/md0/md/resync_start)"; fail=1
    elif [ "$(blockdev --getsize64 /dev/md0)" != "$wsize" ]; then
      echo "FAIL $name: md's /dev/md0 has $(blockdev --getsize64 /dev/md0) bytes, raidd served $wsize"; fail=1
    elif [ "$(sha256sum < /dev/md0 | cut -d' ' -f1)" != "$want" ]; then
      echo "FAIL $name: md reads other bytes than raidd did through NBD"; fail=1
    else
      echo "ok   $name: md assembled it [$n/$n] [$u] (Raid Devices $n, Active Devices $n), each member in raidd's role, no resync pending, $wsize bytes identical"
      echo check > /sys/block/md0/md/sync_action
      if ! md_idle; then
        echo "FAIL $name: md's check did not end in 5 minutes"; cat /proc/mdstat; fail=1
      elif [ "$(cat /sys/block/md0/md/mismatch_cnt)" != 0 ]; then
        echo "FAIL $name: md's check of the $n mirrors: mismatch_cnt $(cat /sys/block/md0/md/mismatch_cnt)"; fail=1
      else
        echo "ok   $name: md's check of the $n mirrors: mismatch_cnt 0"
      fi
    fi
    mdadm --stop /dev/md0 >/dev/null 2>&1 || true
  fi
  for l in "${loops[@]}"; do losetup -d "$l"; done
done < "$DIR/ours-mirrors.list"

echo "== md resyncs bitmap arrays raidd left dirty (kill -9 while writing)"
while read -r name level layout chunk n; do
  d=$DIR/ours-dirty/$name
  mapfile -t loops < <(attach "$d"/m*.img)
  dirty=$(cat "$d/dirty") off=$(cat "$d/off") size=$(cat "$d/size") want=$(cat "$d/sha-settled")
  mdadm -X "${loops[0]}" > /tmp/x.log 2>&1 || true
  if ! mdadm -E "${loops[0]}" | grep -q "State : active$"; then
    echo "FAIL $name: md does not see the array dirty:"; mdadm -E "${loops[0]}" || true; fail=1
  elif ! grep -q "Bitmap : [0-9]* bits (chunks), $dirty dirty" /tmp/x.log; then
    echo "FAIL $name: mdadm -X does not find the $dirty dirty bits raidd left:"; cat /tmp/x.log; fail=1
  elif ! mdadm --assemble --run /dev/md0 "${loops[@]}" > /tmp/asm.log 2>&1; then
    echo "FAIL $name: mdadm --assemble --run:"; cat /tmp/asm.log; fail=1
  elif ! md_idle; then
    echo "FAIL $name: md's resync did not end in 5 minutes"; cat /proc/mdstat; fail=1
  elif [ "$(cat /sys/block/md0/md/last_sync_action)" != resync ]; then
    echo "FAIL $name: md ran no resync (last_sync_action $(cat /sys/block/md0/md/last_sync_action))"; fail=1
  else
    echo "ok   $name: md saw it dirty, $dirty bits set in our bitmap, and resynced it"
    echo check > /sys/block/md0/md/sync_action
    if ! md_idle; then
      echo "FAIL $name: md's check did not end in 5 minutes"; cat /proc/mdstat; fail=1
    elif [ "$(cat /sys/block/md0/md/mismatch_cnt)" != 0 ]; then
      echo "FAIL $name: md's check after the resync: mismatch_cnt $(cat /sys/block/md0/md/mismatch_cnt)"; fail=1
    elif [ "$(tail -c +$((off + 1)) /dev/md0 | sha256sum | cut -d' ' -f1)" != "$want" ]; then
      echo "FAIL $name: md reads other bytes than raidd acknowledged from $off to $size"; fail=1
    else
      echo "ok   $name: md's check: mismatch_cnt 0; bytes $off to $size as raidd acknowledged them"
    fi
  fi
  mdadm --stop /dev/md0 >/dev/null 2>&1 || true
  for l in "${loops[@]}"; do losetup -d "$l"; done
done < "$DIR/ours-dirty.list"

echo "== mdadm creates arrays for libraid"
while read -r name level layout chunk n meta wm; do
  d="$DIR/theirs/$name"
  mkdir -p "$d"
  new_members "$d" "$n" "${MEMBER_MB:-16}M"
  mapfile -t loops < <(attach "${members[@]}")
  args=(--level="$level" --raid-devices="$n" --metadata="$meta" --assume-clean --run --force)
  case $name in
    bm-*) args+=(--bitmap=internal)
          [ "$wm" != - ] && args+=(--write-behind=64) ;;
    *) [ "$level" != 0 ] && args+=(--bitmap=none) ;;
  esac
  [ "$layout" != - ] && args+=(--layout="$layout")
  [ "$chunk" != - ] && args+=(--chunk="$chunk")
  devs=("${loops[@]}")
  if [ "$wm" != - ]; then            # mdadm: --write-mostly marks the devices after it
    devs=("${loops[@]:0:$wm}" --write-mostly "${loops[@]:$wm}")
  fi
  if ! mdadm --create /dev/md0 "${args[@]}" "${devs[@]}" >/tmp/create.log 2>&1; then
    echo "FAIL $name: mdadm --create:"; cat /tmp/create.log; fail=1
  else
    md_fill
    sha256sum < /tmp/data | cut -d' ' -f1 > "$d/sha"
    echo "$size" > "$d/size"
    mdadm --stop /dev/md0 >/dev/null 2>&1
    echo "ok   $name: created by mdadm, $size bytes written"
  fi
  for l in "${loops[@]}"; do losetup -d "$l"; done
done < "$DIR/theirs.list"

echo "== md leaves bitmap arrays dirty for libraid"
mkdir -p /tmp/dirty
while read -r name level layout chunk n failed; do
  d=$DIR/theirs-dirty/$name
  mkdir -p "$d"
  new_members /tmp/dirty "$n" "${MEMBER_MB:-16}M"
  # Buffered loop devices over files in /tmp (a tmpfs has no O_DIRECT):
  # md's writes are in the files once they complete, so copying the files
  # takes the members as md left them, with no 9p in md's way.
  mapfile -t loops < <(for f in "${members[@]}"; do losetup --find --show "$f"; done)
  # --delay: the bitmap daemon clears the bits of idle chunks every
  # daemon_sleep seconds; 300 keeps them set until the copy.  64 KiB
  # chunks: a few small writes leave a few small dirty chunks, which is
  # all raidd may resync.
  args=(--level="$level" --raid-devices="$n" --metadata=1.2 --bitmap=internal
        --bitmap-chunk=64K --delay=300 --assume-clean --run --force)
  [ "$layout" != - ] && args+=(--layout="$layout")
  [ "$chunk" != - ] && args+=(--chunk="$chunk")
  if ! mdadm --create /dev/md0 "${args[@]}" "${loops[@]}" >/tmp/create.log 2>&1; then
    echo "FAIL $name: mdadm --create:"; cat /tmp/create.log; fail=1
  else
    md_fill
    # A clean stop clears every bit: only the writes below set bits again.
    mdadm --stop /dev/md0 >/dev/null 2>&1
    if ! mdadm --assemble /dev/md0 "${loops[@]}" >/tmp/asm.log 2>&1; then
      echo "FAIL $name: mdadm --assemble after a clean stop:"; cat /tmp/asm.log; exit 1
    fi
    # md marks an array clean safe_mode_delay (200 ms) after its last
    # write: 1000 s keeps it active, as if the machine died now.
    echo 1000 > /sys/block/md0/md/safe_mode_delay
    if [ "$failed" != - ] && ! mdadm /dev/md0 --fail "${loops[$failed]}" >/tmp/fail.log 2>&1; then
      echo "FAIL $name: mdadm --fail m$failed:"; cat /tmp/fail.log; exit 1
    fi
    # Three 4 KiB writes far apart (at KiB 3076, 10244, 11268): three
    # dirty 64 KiB chunks of each member.
    for blk in 769 2561 2817; do
      head -c 4K /dev/urandom > /tmp/chunk
      dd if=/tmp/chunk of=/tmp/data bs=4K seek=$blk conv=notrunc status=none
      dd if=/tmp/chunk of=/dev/md0 bs=4K seek=$blk oflag=direct conv=fsync status=none
    done
    state=$(cat /sys/block/md0/md/array_state)
    if [ "$state" != active ]; then
      echo "FAIL $name: md0 is $state, not active, after the writes"; fail=1
    else
      cp --sparse=always "${members[@]}" "$d/"
      sha256sum < /tmp/data | cut -d' ' -f1 > "$d/sha"
      echo "$size" > "$d/size"
      echo -n "ok   $name: md left it active with three 4 KiB writes after a clean stop"
      [ "$failed" != - ] && echo -n " (m$failed failed before)"
      echo ", members copied"
    fi
    mdadm --stop /dev/md0 >/dev/null 2>&1
  fi
  for l in "${loops[@]}"; do losetup -d "$l"; done
  rm -f "${members[@]}"
done < "$DIR/theirs-dirty.list"
exit $fail

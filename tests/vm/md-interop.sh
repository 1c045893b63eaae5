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
set -euo pipefail
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
       mdadm -E "${loops[0]}" | grep -q "Internal Bitmap : "; then
      echo "ok   $name: mdadm -X reads our bitmap: $bits bits of 1 MB, 0 dirty, the array's UUID"
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
    else
      echo "ok   $name: md assembled it (metadata $meta), $size bytes identical"
      [ "$wm" != - ] && echo "ok   $name: md marks m$wm write_mostly"
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

echo "== mdadm creates arrays for libraid"
while read -r name level layout chunk n meta wm; do
  d="$DIR/theirs/$name"
  mkdir -p "$d"
  files=()
  for i in $(seq 0 $((n - 1))); do
    truncate -s "${MEMBER_MB:-16}M" "$d/m$i.img"
    files+=("$d/m$i.img")
  done
  mapfile -t loops < <(attach "${files[@]}")
  args=(--level="$level" --raid-devices="$n" --metadata="$meta" --assume-clean --run --force)
  case $name in
    bm-*) args+=(--bitmap=internal) ;;
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
    size=$(blockdev --getsize64 /dev/md0)
    head -c "$size" /dev/urandom > /tmp/data
    dd if=/tmp/data of=/dev/md0 bs=1M oflag=direct conv=fsync status=none
    sha256sum < /tmp/data | cut -d' ' -f1 > "$d/sha"
    echo "$size" > "$d/size"
    mdadm --stop /dev/md0 >/dev/null 2>&1
    echo "ok   $name: created by mdadm, $size bytes written"
  fi
  for l in "${loops[@]}"; do losetup -d "$l"; done
done < "$DIR/theirs.list"
exit $fail

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
# once; RAID_VM_MD_ALL=1 for all nine pairs): md must
# assemble ours and mdadm -X read our bitmap (magic, version 4, the array's
# UUID, the chunk and bit count we chose, nothing dirty after a clean
# stop); libraid must assemble md's (mdadm --create --bitmap=internal) and
# raidctl examine-bitmap read md's bitmap.  Run by "make check-vm" (CI
# runs it).
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"

vm=${RAID_VM_RUN:-$top_srcdir/tests/vm/run}
requires_file "$vm"
requires qemu-system-x86_64 --version
requires mdadm --version
requires_root
fail () { echo "$0: FAIL: $*" >&2; exit 1; }

raidctl=$top_builddir/raidctl/raidctl
raidio=$top_builddir/tests/raidio
dir=$(mktemp -d /var/tmp/raid-vm-md.XXXXXX)
cleanup_fn rm -rf "$dir"
mkdir -p "$dir/ours" "$dir/theirs"

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
# config costs about 30 s each way); RAID_VM_MD_ALL=1 runs all nine pairs.
if [ "${RAID_VM_MD_ALL:-0}" = 1 ]; then
  configs+="
bm-raid1-v12 1 - - 2 1.2 -
bm-raid1-v11 1 - - 3 1.1 -
bm-raid1-v10 1 - - 2 1.0 -
bm-raid5-v12 5 left-symmetric 64K 4 1.2 -
bm-raid5-v11 5 left-symmetric 64K 3 1.1 -
bm-raid5-v10 5 left-symmetric 64K 3 1.0 -
bm-raid10-v12 10 n2 64K 4 1.2 -
bm-raid10-v11 10 n2 64K 4 1.1 -
bm-raid10-v10 10 n2 64K 4 1.0 -"
else
  configs+="
bm-raid1-v10 1 - - 2 1.0 -
bm-raid5-v12 5 left-symmetric 64K 4 1.2 -
bm-raid10-v11 10 n2 64K 4 1.1 -"
fi

while read -r name level layout chunk n meta wm; do
  d=$dir/ours/$name
  mkdir -p "$d"
  members=()
  for i in $(seq 0 $((n - 1))); do
    truncate -s 16M "$d/m$i.img"
    members+=("$d/m$i.img")
  done
  args=(--level "$level" --metadata "$meta")
  [ "$wm" != - ] && args+=(--write-mostly "$d/m$wm.img")
  [ "$layout" != - ] && args+=(--layout "$layout")
  [ "$chunk" != - ] && args+=(--chunk "$chunk")
  case $name in bm-*) args+=(--bitmap internal --bitmap-chunk 1M) ;; *) args+=(--bitmap none) ;; esac
  "$raidctl" create "$name" "${args[@]}" "${members[@]}" >/dev/null 2>&1 ||
    fail "raidctl create $name failed"
  size=$("$raidio" size "${members[@]}")
  head -c "$size" /dev/urandom > "$dir/data"
  "$raidio" write "$dir/data" "${members[@]}"
  sha256sum < "$dir/data" | cut -d' ' -f1 > "$d/sha"
  echo "$size" > "$d/size"
  # What mdadm -X must find in the VM: our bit count, nothing dirty.
  if [[ $name == bm-* ]]; then
    "$raidctl" examine-bitmap "${members[0]}" |
      sed -n 's/.*Bitmap : \([0-9]*\) bits.*/\1/p' > "$d/bits"
    [ -s "$d/bits" ] || fail "raidctl examine-bitmap $name: no bit count"
  fi
done <<< "$configs"
echo "$configs" > "$dir/theirs.list"
rm -f "$dir/data"

# The VM (tests/vm/run) sees $dir at the same path; mdadm there is the
# host's.  Under TCG each config takes about 30 s (mdadm's writes over the
# 9p share dominate): 18 configs (27 with RAID_VM_MD_ALL=1) need 10 to
# 15 minutes.
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
  d=$dir/theirs/$name
  members=("$d"/m*.img)
  size=$("$raidio" size "${members[@]}")
  got=$("$raidio" read - "${members[@]}" | sha256sum | cut -d' ' -f1)
  if [ "$size" != "$(cat "$d/size")" ] || [ "$got" != "$(cat "$d/sha")" ]; then
    echo "FAIL $name: libraid reads size $size sha $got; md wrote size $(cat "$d/size") sha $(cat "$d/sha")"
    bad=1
  elif ! "$raidctl" examine "${members[0]}" | grep -q "Version : $meta"; then
    echo "FAIL $name: raidctl examine does not say metadata $meta"
    bad=1
  elif [ "$wm" != - ] && ! "$raidctl" examine "$d/m$wm.img" | grep -q "Flags : write-mostly"; then
    echo "FAIL $name: raidctl examine does not see md's write-mostly flag on m$wm"
    bad=1
  elif [[ $name == bm-* ]] && ! bm_md "${members[0]}"; then
    echo "FAIL $name: raidctl examine-bitmap does not read md's bitmap:"
    "$raidctl" examine-bitmap "${members[0]}" || true
    bad=1
  else
    [[ $name == bm-* ]] && echo "ok   $name: raidctl examine-bitmap reads md's bitmap (64 MB chunks, version 4, the array's UUID)"
    echo "ok   $name: libraid assembled it (metadata $meta), $size bytes identical"
    if [ "$level" = 5 ]; then
      # Member 1 holds data in most rows of every layout: read back from
      # md's parity, where libraid expects it.
      got=$("$raidio" read - "${members[0]}" "${members[@]:2}" | sha256sum | cut -d' ' -f1)
      if [ "$got" != "$(cat "$d/sha")" ]; then
        echo "FAIL $name: libraid reads sha $got without m1; md wrote sha $(cat "$d/sha")"
        bad=1
      else
        echo "ok   $name: libraid read it degraded (m1 missing), bytes identical"
      fi
    fi
  fi
done <<< "$configs"
[ $bad = 0 ] || fail "some mdadm-created arrays did not read back"

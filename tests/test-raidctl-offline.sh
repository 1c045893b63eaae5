#!/bin/bash
# Description: raidctl's offline verbs on real files and loop devices.
#  - create refuses a member holding an ext4 file system, naming it, and
#    leaves it intact; with --force it wipes the old signature;
#  - create writes md v1.2 superblocks that mdadm --examine and blkid -p
#    read as raidctl examine does (level, layout, chunk, UUID, roles, state),
#    also for md's parity-first and parity-last layouts;
#  - usage errors exit 2, failures 1; --json output parses;
#  - examine --scan finds arrays on loop devices, grouped by UUID.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires mkfs.ext4 -V
requires blkid --version
requires python3 --version

raidctl=$top_builddir/raidctl/raidctl
mktmpdir test-raidctl-offline
d=$tmpdir
fail () { echo "$0: FAIL: $*" >&2; exit 1; }
# Offline: never the machine's own raidd (its default control socket).
O () { "$raidctl" --control "$d/nowhere.sock" "$@"; }
expect_status () {  # expect_status N CMD...
  local want=$1 st=0; shift
  "$@" >"$d/out" 2>"$d/err" || st=$?
  [ "$st" = "$want" ] || { cat "$d/out" "$d/err"; fail "'$*' exited $st, expected $want"; }
}

for i in 0 1 2 3; do truncate -s 32M "$d/m$i"; done

# Usage errors.
expect_status 2 O
expect_status 2 O frobnicate
expect_status 2 O create md0 "$d/m0" "$d/m1"          # no --level
expect_status 2 O create md0 --level 7 "$d/m0" "$d/m1"
expect_status 2 O create md0 --level 5 --layout n2 "$d/m0" "$d/m1" "$d/m2"
expect_status 2 O create md0 --level 5 --chunk 12Q "$d/m0" "$d/m1" "$d/m2"
expect_status 1 O create md0 --level 5 --chunk 48K "$d/m0" "$d/m1" "$d/m2"
grep -q "chunk size 49152 is invalid" "$d/err" || fail "bad chunk message: $(cat "$d/err")"
expect_status 1 O create md0 --level 5 "$d/m0"
grep -q "RAID 5 needs at least 2" "$d/err" || fail "too few members message: $(cat "$d/err")"
expect_status 1 O create md0 --level 1 "$d/m0" "$d/nonexistent"
grep -q "$d/nonexistent" "$d/err" || fail "missing member not named: $(cat "$d/err")"

# A member with a file system is refused, named, and left alone.
mkfs.ext4 -q -F "$d/m2"
fsuuid=$(blkid -p -s UUID -o value "$d/m2")
expect_status 1 O create md0 --level 5 --chunk 64K "$d/m0" "$d/m1" "$d/m2" "$d/m3"
grep -q "member $d/m2 contains a file system: ext4" "$d/err" || fail "ext4 not named: $(cat "$d/err")"
grep -q -- "--force" "$d/err" || fail "refusal does not mention --force"
[ "$(blkid -p -s UUID -o value "$d/m2")" = "$fsuuid" ] || fail "the refused member was changed"
for m in m0 m1 m3; do
  blkid -p "$d/$m" >/dev/null 2>&1 && fail "$m was written although create was refused"
done

# With --force it is wiped and the array is created (and resynced).
expect_status 0 O create md0 --level 5 --chunk 64K --force "$d/m0" "$d/m1" "$d/m2" "$d/m3"
grep -q "overwriting it" "$d/err" || fail "--force did not warn"
grep -q "resync 100.0%" "$d/err" || fail "no resync progress: $(cat "$d/err")"
grep -q "created raid5 array md0" "$d/out" || fail "no summary: $(cat "$d/out")"
[ "$(blkid -p -s TYPE -o value "$d/m2")" = linux_raid_member ] || fail "blkid does not see a raid member"

# examine agrees with mdadm --examine and blkid.
expect_status 0 O examine "$d/m2"
uuid=$(awk -F' : ' '/Array UUID/ { print $2 }' "$d/out")
grep -q "Raid Level : raid5" "$d/out" || fail "examine level"
grep -q "Layout : left-symmetric" "$d/out" || fail "examine layout"
grep -q "Chunk Size : 64K" "$d/out" || fail "examine chunk"
grep -q "Device Role : Active device 2" "$d/out" || fail "examine role"
grep -q "Array State : AAAA" "$d/out" || fail "examine array state"
grep -q "State : clean" "$d/out" || fail "examine state"
blkid_uuid=$(blkid -p -s UUID -o value "$d/m2" | tr -d -)
[ "$blkid_uuid" = "$(echo "$uuid" | tr -d :)" ] || fail "blkid UUID $blkid_uuid != $uuid"
if command -v mdadm >/dev/null; then
  mdadm --examine "$d/m2" > "$d/mdadm"
  for want in "Raid Level : raid5" "Raid Devices : 4" "Layout : left-symmetric" \
              "Chunk Size : 64K" "Array UUID : $uuid" "Device Role : Active device 2" \
              "Array State : AAAA" "State : clean" "- correct"; do
    grep -q -- "$want" "$d/mdadm" || { cat "$d/mdadm"; fail "mdadm --examine lacks '$want'"; }
  done
else
  echo "$0: mdadm not installed: skipping the mdadm --examine comparison"
fi

# --json parses and says the same.
expect_status 0 O --json examine "$d/m0" "$d/m3"
python3 - "$d/out" "$uuid" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert len(j) == 2, j
assert all(m["uuid"] == sys.argv[2] for m in j), j
assert [m["role"] for m in j] == ["Active device 0", "Active device 3"], j
assert j[0]["level"] == "raid5" and j[0]["chunk_size"] == 65536 and j[0]["state"] == "clean"
PY

# md's fixed-parity RAID 5 layouts, by mdadm's names, in examine (text,
# --json) and mdadm --examine; mdadm has no short names for them.
for i in 0 1 2; do truncate -s 16M "$d/p$i"; done
expect_status 2 O create pf --level 5 --layout pf "$d/p0" "$d/p1" "$d/p2"
for layout in parity-first parity-last; do
  expect_status 0 O create pl --level 5 --layout "$layout" --assume-clean --force \
    "$d/p0" "$d/p1" "$d/p2"
  expect_status 0 O examine "$d/p1"
  grep -q "Layout : $layout\$" "$d/out" || { cat "$d/out"; fail "examine: layout $layout"; }
  expect_status 0 O --json examine "$d/p1"
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j[0]['layout']==sys.argv[2], j" \
    "$d/out" "$layout" || fail "examine --json: layout $layout"
  if command -v mdadm >/dev/null; then
    mdadm --examine "$d/p1" > "$d/mdadm"
    grep -q "Layout : $layout\$" "$d/mdadm" || { cat "$d/mdadm"; fail "mdadm --examine: $layout"; }
  fi
done

# --data-offset (mdadm's): where the data starts, a bare number in KiB;
# not a multiple of 4K, or with metadata 1.0, a usage error; an offset
# leaving no room for the superblock or the bitmap, or for data, refused
# naming it, nothing written.
for i in 0 1 2; do truncate -s 32M "$d/o$i"; done
o=("$d/o0" "$d/o1" "$d/o2")
expect_status 2 O create do --level 5 --data-offset 6K "${o[@]}"
grep -q -- "--data-offset 6K: must be a multiple of 4K" "$d/err" || fail "6K: $(cat "$d/err")"
expect_status 2 O create do --level 5 --data-offset 1Q "${o[@]}"
expect_status 2 O create do --level 5 --metadata 1.0 --data-offset 8M "${o[@]}"
grep -q "metadata 1.0" "$d/err" || fail "1.0: $(cat "$d/err")"
expect_status 1 O create do --level 5 --data-offset 4K "${o[@]}"
grep -q "overlaps the metadata 1.2 superblock" "$d/err" || fail "4K: $(cat "$d/err")"
expect_status 1 O create do --level 5 --bitmap internal --data-offset 8K "${o[@]}"
grep -q "no room for the write-intent bitmap" "$d/err" || fail "bitmap: $(cat "$d/err")"
expect_status 1 O create do --level 5 --data-offset 32M "${o[@]}"
grep -q "$d/o0" "$d/err" || fail "32M: no member named: $(cat "$d/err")"
for i in 0 1 2; do
  blkid -p "$d/o$i" >/dev/null 2>&1 && fail "o$i was written although create was refused"
done
for off in 8M:16384 2048:4096; do
  expect_status 0 O create do --level 5 --assume-clean --force \
    --data-offset "${off%:*}" "${o[@]}"
  expect_status 0 O examine "$d/o1"
  grep -q "Data Offset : ${off#*:} sectors" "$d/out" || { cat "$d/out"; fail "examine: ${off%:*}"; }
  if command -v mdadm >/dev/null; then
    mdadm --examine "$d/o1" > "$d/mdadm"
    grep -q "Data Offset : ${off#*:} sectors" "$d/mdadm" || { cat "$d/mdadm"; fail "mdadm: ${off%:*}"; }
    # The data from there to the end (32 MiB less the offset, in whole
    # 512K chunks; sectors), two members' worth: md's Array Size (KiB).
    used=$(( (32 * 2048 - ${off#*:}) / 1024 * 1024 ))
    grep -q "Array Size : $used KiB" "$d/mdadm" || { cat "$d/mdadm"; fail "mdadm: size $used"; }
  fi
done

# A member without a superblock: failure naming the reason, status 1.
truncate -s 32M "$d/blank"
expect_status 1 O examine "$d/blank"
grep -q "no md superblock" "$d/err" || fail "blank member message: $(cat "$d/err")"

# examine --scan over loop devices (needs root and loop support).
if [ "$(id -u)" = 0 ] && losetup --version >/dev/null 2>&1; then
  cleanup_fn "$top_srcdir/tests/detach-loops.sh" "$d"
  for i in 0 1 2 3; do losetup --find --show "$d/m$i" >> "$d/loops" ||
    { echo "$0: losetup failed: skipping --scan"; break; }; done
  if [ "$(wc -l < "$d/loops")" = 4 ]; then
    expect_status 0 O examine --scan --verbose
    grep -q "ARRAY /dev/md/md0  metadata=1.2 UUID=$uuid" "$d/out" ||
      { cat "$d/out"; fail "--scan did not find the array"; }
    for l in $(cat "$d/loops"); do
      grep -q "$l" "$d/out" || fail "--scan devices= lacks $l"
    done
    expect_status 0 O --json examine --scan
    python3 -c "import json,sys; a=[x for x in json.load(open('$d/out')) if x['uuid']=='$uuid']; assert len(a)==1 and len(a[0]['devices'])==4, a"
  fi
else
  echo "$0: not root or no losetup: skipping examine --scan"
fi
echo "$0: ok"

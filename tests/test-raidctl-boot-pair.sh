#!/bin/bash
# Description: a boot pair, the way md makes one.
#  - create --metadata 1.0: superblock at the end, data from sector 0;
#    examine, mdadm --examine and blkid -p all say 1.0;
#  - ext4 made through raidd (NBD, nbdfuse + loop) with files on it; then
#    each member alone, attached read-only with no RAID at all, mounts as
#    ext4 with the same files (same checksums), and e2fsck -fn is clean;
#  - --metadata 1.1 (superblock at sector 0) round-trips data over stop
#    and assemble; bad --metadata values are refused by name;
#  - degraded boot on loop devices: with one member's device gone,
#    assemble refuses without --run and starts degraded with it (loudly);
#    when the device comes back (the kernel's "change" uevent of losetup),
#    raidd re-adds it and rebuilds it; scrub then finds 0 mismatches;
#  - a split mirror (each half started alone in turn) is not re-added,
#    and raidctl add takes it back only with --force;
#  - assemble --scan: an array whose member is missing is started degraded
#    once --timeout runs out (md's last-resort timer), and a scan while it
#    runs re-adds the member when it is back.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires_nbd_loop
requires nbdcopy --version
requires qemu-io --version

mktmpdir test-raidctl-boot-pair
raidd_env "$tmpdir"
cleanup_fn "${top_srcdir:-.}/tests/detach-loops.sh" "$d"
start_raidd
# detach LOOP: detach it and wait until it is gone (a detach is deferred
# while anyone, udev or raidd probing it, holds it open).
detach () {
  losetup -d "$1"
  for _ in $(seq 100); do losetup "$1" > /dev/null 2>&1 || return 0; sleep 0.1; done
  fail "$1 is still attached"
}
mkdir "$d/mnt"

# ---- metadata 1.0: where everything is ------------------------------------------
truncate -s 64M "$d/m0" "$d/m1"
R create bp --level 1 --metadata 1.0 "$d/m0" "$d/m1" > "$d/out" || fail "create --metadata 1.0"
grep -q "metadata 1.0" "$d/out" || fail "create does not say metadata 1.0: $(cat "$d/out")"
R examine "$d/m0" > "$d/ex"
grep -q "Version : 1.0" "$d/ex" || fail "examine: not 1.0: $(cat "$d/ex")"
grep -q "Data Offset : 0 sectors" "$d/ex" || fail "examine: data not at sector 0"
# 64 MiB = 131072 sectors: md puts it at (131072 - 16) rounded down to 8.
grep -q "Super Offset : 131056 sectors" "$d/ex" || fail "examine: superblock not at 131056"
R status bp | grep -q "super 1.0" || fail "status does not say super 1.0: $(R status bp)"
if command -v mdadm > /dev/null; then
  mdadm --examine "$d/m1" > "$d/mdex" 2>&1 || fail "mdadm --examine m1: $(cat "$d/mdex")"
  grep -q "Version : 1.0" "$d/mdex" || fail "mdadm --examine: not 1.0"
fi
blkid -p "$d/m1" | grep -q 'VERSION="1.0" TYPE="linux_raid_member"' ||
  fail "blkid -p m1: $(blkid -p "$d/m1")"

# ---- ext4 through raidd; then each member alone is that file system -------------
R wait bp > /dev/null || fail "wait for the initial resync"
nbd_loop_attach "$(uri bp)" "$d/fuse"
mkfs.ext4 -q -L bootfs "$loop"
mount "$loop" "$d/mnt"
cp -r "$top_srcdir/lib" "$d/mnt/"
dd if=/dev/urandom of="$d/mnt/big" bs=1M count=8 status=none
(cd "$d/mnt" && find . -type f ! -name '*.lost+found' -exec sha256sum {} + | sort -k2) > "$d/fs.sha"
umount "$d/mnt"
e2fsck -fn "$loop" > "$d/fsck" 2>&1 || { cat "$d/fsck"; fail "e2fsck over NBD"; }
nbd_loop_detach
R stop bp > /dev/null || fail "stop bp"

for m in m0 m1; do
  l=$(losetup --find --show --read-only "$d/$m")
  blkid -p -u filesystem "$l" | grep -q 'TYPE="ext4"' || fail "$m alone: no ext4: $(blkid -p "$l")"
  mount -t ext4 -o ro,noload "$l" "$d/mnt" || { losetup -d "$l"; fail "$m alone does not mount"; }
  (cd "$d/mnt" && find . -type f ! -name '*.lost+found' -exec sha256sum {} + | sort -k2) > "$d/$m.sha"
  umount "$d/mnt"
  e2fsck -fn "$l" > "$d/fsck" 2>&1 || { cat "$d/fsck"; losetup -d "$l"; fail "e2fsck -fn on $m alone"; }
  losetup -d "$l"
  cmp "$d/fs.sha" "$d/$m.sha" || fail "$m alone holds other files than the array did"
done
# Still an array afterwards: the read-only mounts changed nothing.
R assemble bp "$d/m0" "$d/m1" > /dev/null || fail "assemble bp after the single mounts"
R stop bp > /dev/null

# ---- metadata 1.1, and bad values --------------------------------------------------
truncate -s 32M "$d/s0" "$d/s1"
R create one1 --level 1 --metadata 1.1 --assume-clean "$d/s0" "$d/s1" > /dev/null ||
  fail "create --metadata 1.1"
R examine "$d/s0" | grep -q "Super Offset : 0 sectors" || fail "1.1: superblock not at 0"
R examine "$d/s0" | grep -q "Version : 1.1" || fail "1.1: examine version"
if command -v mdadm > /dev/null; then
  mdadm --examine "$d/s1" 2>&1 | grep -q "Version : 1.1" || fail "mdadm --examine: not 1.1"
fi
blkid -p "$d/s1" | grep -q 'VERSION="1.1" TYPE="linux_raid_member"' ||
  fail "blkid -p s1: $(blkid -p "$d/s1")"
nbdcopy -- [ nbdkit pattern size=16M ] "$(uri one1)" || fail "nbdcopy into one1"
R stop one1 > /dev/null
R assemble one1 "$d/s1" "$d/s0" > /dev/null || fail "assemble one1"
nbdcopy -- [ nbdkit pattern size=16M ] "$d/pattern"
nbdcopy "$(uri one1)" "$d/back"
cmp -n 16M "$d/pattern" "$d/back" || fail "1.1: data differs after stop and assemble"
rm -f "$d/pattern" "$d/back"
R stop one1 > /dev/null
for bad in 0.90 2 1.3; do
  R create x --level 1 --metadata "$bad" "$d/s0" "$d/s1" 2> "$d/err" && fail "--metadata $bad accepted"
  grep -q -- "--metadata.*$bad" "$d/err" || fail "--metadata $bad: $(cat "$d/err")"
done

# ---- degraded boot: one disk gone, then back ------------------------------------------
# Loop devices, so the kernel tells raidd (uevents) when one comes back.
truncate -s 64M "$d/b0" "$d/b1"
l0=$(losetup --find --show "$d/b0")
l1=$(losetup --find --show "$d/b1")
R create pair --level 1 --metadata 1.0 --assume-clean "$l0" "$l1" > /dev/null
nbdcopy -- [ nbdkit pattern size=32M ] "$d/pattern"
nbdcopy "$d/pattern" "$(uri pair)" || fail "data into pair"
R stop pair > /dev/null
detach "$l1"                              # the disk died
R assemble pair "$l0" 2> "$d/err" && fail "started with a member missing, without --run"
grep -q "only 1 of the 2 members that were active are present; refusing to start degraded without --run" "$d/err" ||
  fail "assemble without --run: $(cat "$d/err")"
R assemble pair --run "$l0" > /dev/null || fail "assemble --run with one member"
R status pair > "$d/st"
grep -q "\[2/1\] \[U_\]" "$d/st" && grep -q "degraded" "$d/st" || fail "status not degraded: $(cat "$d/st")"
nbdcopy "$(uri pair)" "$d/back"
cmp -n 32M "$d/pattern" "$d/back" || fail "degraded pair serves other data"
# Written while the other disk is away: it must get this on its return.
head -c 8M /dev/zero | tr '\000' 'z' > "$d/fresh"     # 'z' is 0x7a
qemu-io -f raw "$(uri pair)" -c "write -P 0x7a 40M 8M" > /dev/null || fail "write while degraded"
l1=$(losetup --find --show "$d/b1")     # back: the kernel's "change" uevent
for _ in $(seq 100); do R status pair | grep -q "\[2/2\]" && break; sleep 0.1; done
grep -q "pair: member $l1 is back (events [0-9]*, seen by udev): re-added in role 1" "$d/raidd.log" ||
  fail "the returning member was not re-added"
R wait pair > /dev/null || fail "wait for the rebuild of the returned member"
R status pair | grep -q "\[2/2\] \[UU\]" || fail "not in sync after the return: $(R status pair)"
R scrub pair --wait | grep -q "mismatch_cnt 0" || fail "scrub after the return"
R stop pair > /dev/null
size=$(( $(R examine --json "$l0" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["used_dev_size"])') ))
cmp -n "$size" "$l0" "$l1" || fail "the returned member is not a copy of the other"

# ---- a split mirror is not taken back ------------------------------------------------------
# From one clean state, each half started alone (two machines each
# booting one disk): when the second half comes back to the first, a
# rebuild would lose its writes: raidd refuses, and says why.
truncate -s 32M "$d/x0" "$d/x1"
x0=$(losetup --find --show "$d/x0")
x1=$(losetup --find --show "$d/x1")
R create split --level 1 --metadata 1.0 --assume-clean "$x0" "$x1" > /dev/null
R stop split > /dev/null
detach "$x0"
R assemble split --run "$x1" > /dev/null || fail "split: the other half alone"
qemu-io -f raw "$(uri split)" -c "write -P 0x33 0 1M" > /dev/null
R stop split > /dev/null
detach "$x1"
x0=$(losetup --find --show "$d/x0")
R assemble split --run "$x0" > /dev/null
x1=$(losetup --find --show "$d/x1")
for _ in $(seq 50); do grep -q "split: member $x1 of split was used without" "$d/raidd.log" && break; sleep 0.1; done
grep -q "split: member $x1 of split was used without device 0 (role 0) since it left.*a split mirror" "$d/raidd.log" ||
  fail "the split half was not refused"
R status split | grep -q "\[2/1\]" || fail "the split half was re-added: $(R status split)"
# By hand too, raidctl add takes the split half back only with --force;
# refused, nothing on it changes.
sum=$(sha256sum < "$x1")
R add split "$x1" 2> "$d/err" && fail "add took the split half without --force"
grep -q "member $x1 of split was used on its own since it left (a split mirror" "$d/err" ||
  fail "add of the split half: $(cat "$d/err")"
[ "$(sha256sum < "$x1")" = "$sum" ] || fail "the refused add changed the split half"
R add split "$x1" --force > "$d/out" || fail "add --force of the split half"
R wait split > /dev/null
R status split | grep -q "\[2/2\]" || fail "split: not in sync after add --force: $(R status split)"
R stop split > /dev/null
losetup -d "$x0" "$x1"

# ---- assemble --scan: md's last resort, and taking a member back -------------------------
stop_raidd
start_raidd --no-re-add
detach "$l1"
R assemble --scan pair --timeout 0 --no-degraded 2> "$d/err" && fail "--no-degraded started pair"
grep -q "pair: only 1 of 2 members present; not started (--no-degraded)" "$d/err" ||
  fail "--no-degraded: $(cat "$d/err")"
R assemble --scan pair --timeout 1 > "$d/out" 2> "$d/err" || fail "assemble --scan: $(cat "$d/err")"
grep -q "waiting up to 1 s" "$d/err" && grep -q "starting it DEGRADED (last resort)" "$d/err" ||
  fail "assemble --scan did not say it waited and started degraded: $(cat "$d/err")"
R status pair | grep -q "\[2/1\] \[U_\]" || fail "scan: not degraded: $(R status pair)"
l1=$(losetup --find --show "$d/b1")
sleep 1
R status pair | grep -q "\[2/1\]" || fail "--no-re-add: raidd re-added on its own"
R assemble --scan pair > "$d/out" || fail "assemble --scan with pair running"
grep -q "pair: re-added $l1 in role 1" "$d/out" || fail "scan did not re-add: $(cat "$d/out")"
R wait pair > /dev/null
R scrub pair --wait | grep -q "mismatch_cnt 0" || fail "scrub after the scan's re-add"
R stop pair > /dev/null
R assemble --scan pair --timeout 5 > "$d/out" 2> "$d/err" || fail "assemble --scan, complete"
[ ! -s "$d/err" ] || fail "a complete pair waited or warned: $(cat "$d/err")"
R status pair | grep -q "\[2/2\] \[UU\]" || fail "scan of a complete pair: $(R status pair)"
nbdcopy "$(uri pair)" "$d/back"
cmp -n 32M "$d/pattern" "$d/back" || fail "pair data after everything"
cmp -n 8M -i 40M:0 "$d/back" "$d/fresh" || fail "the degraded write is lost"
R stop pair > /dev/null
losetup -d "$l0" "$l1"

echo "$0: ok"

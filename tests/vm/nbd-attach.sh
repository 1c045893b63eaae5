#!/bin/bash
# Guest half of tests/test-vm-attach.sh: raidctl attach connects the
# kernel's NBD client to arrays by itself (generic netlink, socket pairs:
# no nbd-client, no socket path, no handshake).  raidd and raidctl run
# from the shared build tree ($BUILD), fio from $TOOLS; members are files
# on the guest's tmpfs.
#   - RAID 0, 1, 5 and 10: attach (the kernel loads nbd.ko by itself),
#     the device's size, logical block size, read-only flag and backend
#     name are the array's; mkfs.ext4, mount, fio --verify=crc32c, umount,
#     e2fsck clean; status and detail name the device.
#   - a drill on the mounted RAID 5 while fio writes and verifies: fail a
#     member, remove it, zero it, add it back, rebuild; fio ends with no
#     error, and e2fsck finds the file system clean.
#   - busy: stop and detach are refused while the file system is mounted;
#     once unmounted, stop detaches the device itself (size 0 after).
#   - a chosen device (/dev/nbd5) and --connections 1 (one hardware
#     queue, where the default made two); writes left in the page cache
#     reach the array at detach; a device nbd-client holds, or one attached already, is
#     refused; a read-only array gives a read-only device.
#   - grow: raidctl grow --size max on an attached RAID 5 whose members
#     grew (then --array-size 16M and max: the device shows 16 MiB, then
#     all again, the data kept): /dev/nbdN (sysfs size, blockdev) has the new size at once and
#     the kernel logs the capacity change; direct writes to the last 4 MiB
#     and across the old end read back, before and after the resync of the
#     new region; scrub finds mismatch_cnt 0.  Grown again under a mounted
#     ext4: resize2fs grows it online, fio verifies a file as big as the
#     whole file system was before, e2fsck finds it clean.
#   - restripe: raidctl grow --raid-devices 4 of an attached RAID 5 of 3
#     with a mounted ext4, fio verifying during the reshape: /dev/nbdN
#     takes the new size by itself when the reshape ends, resize2fs grows
#     ext4 online, e2fsck clean, scrub clean.
#   - raidd's exit (SIGTERM) flushes and detaches its devices; after
#     kill -9 the device is left dead, and "raidctl detach /dev/nbdN"
#     under a new raidd frees it (its backend says raidd), so it can be
#     attached again.
#   - an ARRAY line's blockdev=/dev/nbd6 in raidd.conf: the device is
#     attached when raidd starts.
#   - no I/O error in the kernel log, until stop --force on a mounted
#     device, the last step, whose errors are the point.
set -euo pipefail
cd /tmp
fio () { "$TOOLS/fio" "$@"; }    # from a share: not in the initramfs
d=/tmp/raidvm
mkdir -p "$d/mnt"
R () { "$BUILD/raidctl/raidctl" --control "$d/control.sock" "$@"; }
log=$d/raidd.log
pid=
fail () { echo "FAIL: $*" >&2; tail -40 "$log" >&2 || :; exit 1; }
trap '[ -z "$pid" ] || kill -9 $pid 2>/dev/null; umount -l "$d/mnt" 2>/dev/null || :' EXIT

start_raidd ()
{
  "$BUILD/raidd/raidd" --foreground --control "$d/control.sock" \
    --nbd-socket "$d/nbd.sock" --threads 2 "$@" >> "$log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do R status >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "raidd did not come up"
}
stop_raidd ()
{
  kill "$pid"
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || { wait "$pid" || :; pid=; return 0; }; sleep 0.1; done
  fail "raidd did not stop"
}
size_of () { blockdev --getsize64 "$1"; }
fio_verify ()    # FIO-NAME FILE SIZE [extra fio options]
{
  fio --name="$1" --filename="$2" --size="$3" --rw=randwrite --bs=4k --iodepth=8 \
    --ioengine=libaio --direct=1 --verify=crc32c --verify_fatal=1 \
    --verify_state_save=0 --eta=never --output="$d/$1.fio" "${@:4}" ||
    { cat "$d/$1.fio"; fail "fio $1"; }
  grep -q "err= 0" "$d/$1.fio" || { cat "$d/$1.fio"; fail "fio $1 reported errors"; }
}

lsmod | grep -q '^nbd ' && fail "nbd.ko is loaded before the test: cannot see it loaded on demand"
start_raidd

# ---- every level: a file system on the attached device ----------------------
i=0
for spec in "r0 0 4" "r1 1 2" "r5 5 4" "r10 10 4"; do
  set -- $spec
  name=$1 level=$2 n=$3
  mem=()
  for (( k = 0; k < n; k++ )); do truncate -s 40M "$d/$name-$k"; mem+=("$d/$name-$k"); done
  R create "$name" --level "$level" --chunk 64K --assume-clean "${mem[@]}" > /dev/null
  dev=$(R attach "$name") || fail "attach $name"
  [ -b "$dev" ] || fail "attach $name printed '$dev', not a block device"
  want=$(R detail "$name" --json | grep -o '"size": *[0-9]*' | head -1 | grep -o '[0-9]*$')
  [ "$(size_of "$dev")" = "$want" ] || fail "$dev: $(size_of "$dev") bytes, array $want"
  [ "$(blockdev --getss "$dev")" = 512 ] || fail "$dev: logical block $(blockdev --getss "$dev")"
  [ "$(blockdev --getro "$dev")" = 0 ] || fail "$dev is read-only"
  b=$(cat "/sys/block/${dev#/dev/}/backend")
  [ "$b" = "raidd:$name" ] || fail "$dev: backend '$b'"
  # Captured, not piped into grep -q (SIGPIPE under pipefail).
  out=$(R status) && grep -q "block device: $dev (kernel NBD client)" <<< "$out" ||
    fail "status does not name $dev: $out"
  out=$(R detail "$name") && grep -q "Block Device : $dev" <<< "$out" ||
    fail "detail does not name $dev: $out"
  [ "$(ls "/sys/block/${dev#/dev/}/mq" | wc -l)" = 2 ] || fail "$dev: not one queue per raidd worker"
  mkfs.ext4 -q "$dev"
  mount "$dev" "$d/mnt"
  fio_verify "fs-$name" "$d/mnt/f" 12M
  umount "$d/mnt"
  e2fsck -fn "$dev" > "$d/fsck" 2>&1 || { cat "$d/fsck"; fail "e2fsck $dev ($name)"; }
  echo "attach $name (raid$level): $dev, $(size_of "$dev") bytes, ext4 + fio verify + e2fsck clean"
  i=$((i + 1))
done
lsmod | grep -q '^nbd ' || fail "nbd.ko was not loaded"

# ---- a drill under a mounted file system --------------------------------------
dev=$(R detail r5 --json | grep -o '"/dev/nbd[0-9]*"' | tr -d '"')
mount "$dev" "$d/mnt"
fio --name=drill --filename="$d/mnt/drill" --size=16M --rw=randwrite --bs=4k --iodepth=8 \
  --ioengine=libaio --direct=1 --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
  --loops=4 --eta=never --output="$d/drill.fio" &
fio_pid=$!
sleep 2
R fail r5 "$d/r5-2" > /dev/null
R remove r5 "$d/r5-2" > /dev/null
R zero "$d/r5-2" > /dev/null
R add r5 "$d/r5-2" > /dev/null
R wait r5 > /dev/null
wait "$fio_pid" || { cat "$d/drill.fio"; fail "fio during the drill"; }
grep -q "err= 0" "$d/drill.fio" || { cat "$d/drill.fio"; fail "fio during the drill: errors"; }
R detail r5 | grep -q "State : clean\|State : active" || fail "r5 after the drill: $(R detail r5)"
R detail r5 | grep -q "degraded" && fail "r5 still degraded after the rebuild"
umount "$d/mnt"
e2fsck -fn "$dev" > "$d/fsck" 2>&1 || { cat "$d/fsck"; fail "e2fsck after the drill"; }
echo "drill: r5 failed, removed, zeroed, added, rebuilt under fio on $dev: 0 errors, fsck clean"

# ---- busy: refused while mounted; stop detaches an unused device ---------------
dev=$(R detail r1 --json | grep -o '"/dev/nbd[0-9]*"' | tr -d '"')
mount "$dev" "$d/mnt"
R stop r1 > "$d/out" 2>&1 && fail "stop r1 succeeded while $dev was mounted"
grep -q "$dev is in use" "$d/out" || fail "stop r1 while mounted: $(cat "$d/out")"
R detach r1 > "$d/out" 2>&1 && fail "detach r1 succeeded while $dev was mounted"
grep -q "$dev is in use" "$d/out" || fail "detach r1 while mounted: $(cat "$d/out")"
R status r1 > /dev/null || fail "r1 stopped by a refused stop"
cmp -s "$d/mnt/f" "$d/mnt/f" || fail "the file system went away"
umount "$d/mnt"
R stop r1 > /dev/null || fail "stop r1 after umount"
[ "$(size_of "$dev")" = 0 ] || fail "$dev still has $(size_of "$dev") bytes after stop"
grep -q "r1: $dev detached" "$log" || fail "raidd did not log the detach"
echo "busy: stop and detach refused while mounted; stop detached $dev once unmounted"

# ---- chosen device, connections, refusals, read-only ---------------------------
R attach r0 > "$d/out" 2>&1 && fail "a second attach of r0 succeeded"
grep -q "attached as /dev/nbd[0-9]* already" "$d/out" || fail "attach twice: $(cat "$d/out")"
R detach r0 > /dev/null
# One connection: one hardware queue (the default, one per raidd worker,
# gave two; blk-mq caps the queues at the CPUs).
dev=$(R attach r0 /dev/nbd5 --connections 1)
[ "$dev" = /dev/nbd5 ] || fail "attach r0 /dev/nbd5 gave $dev"
[ "$(ls /sys/block/nbd5/mq | wc -l)" = 1 ] || fail "nbd5 has $(ls /sys/block/nbd5/mq | wc -l) queues, not 1"
grep -q "r0: attached as /dev/nbd5 (1 connection)" "$log" || fail "raidd's log: not 1 connection"
dd if=/dev/urandom of="$d/pattern" bs=1M count=8 status=none
dd if="$d/pattern" of=/dev/nbd5 bs=1M oflag=direct status=none
cmp -n 8388608 "$d/pattern" /dev/nbd5 || fail "nbd5 read back differs"
# Written through the page cache and not synced, while another opener
# keeps the device open (else the last close syncs it): detach flushes it.
dd if=/dev/urandom of="$d/pattern2" bs=1M count=8 status=none
exec 7< /dev/nbd5
dd if="$d/pattern2" of=/dev/nbd5 bs=1M status=none
R detach r0 > /dev/null
exec 7<&-
dev=$(R attach r0 /dev/nbd5 --connections 1)
cmp -n 8388608 "$d/pattern2" /dev/nbd5 || fail "cached writes lost at detach"
R attach r10 /dev/nbd5 > "$d/out" 2>&1 && fail "r10 attached to nbd5, which r0 holds"
grep -q "/dev/nbd5 is attached to array r0 already" "$d/out" || fail "attach busy: $(cat "$d/out")"
# nbd-client's own connection (to raidd's NBD socket) is foreign here.
R detach r10 > /dev/null
nbd-client -unix "$d/nbd.sock" -N r10 /dev/nbd7 -b 4096 > /dev/null 2>&1 || fail "nbd-client"
R attach r10 /dev/nbd7 > "$d/out" 2>&1 && fail "r10 attached to nbd7, which nbd-client holds"
grep -q "/dev/nbd7 is already connected" "$d/out" || fail "attach foreign: $(cat "$d/out")"
R detach /dev/nbd7 > "$d/out" 2>&1 && fail "raidctl detached nbd-client's /dev/nbd7"
grep -q "/dev/nbd7 is not attached by raidd" "$d/out" || fail "detach foreign: $(cat "$d/out")"
nbd-client -d /dev/nbd7 > /dev/null 2>&1
R attach r10 /dev/sda > "$d/out" 2>&1 && fail "attach to /dev/sda succeeded"
grep -q 'device "/dev/sda" is not a kernel NBD device' "$d/out" || fail "attach sda: $(cat "$d/out")"
R stop r10 > /dev/null
R assemble r10 --readonly "$d"/r10-{0,1,2,3} > /dev/null
dev=$(R attach r10)
[ "$(blockdev --getro "$dev")" = 1 ] || fail "read-only r10 gave a writable $dev"
dd if=/dev/zero of="$dev" bs=4k count=1 oflag=direct status=none 2>/dev/null &&
  fail "a write to the read-only $dev succeeded"
echo "devices: nbd5 with 1 queue, busy and foreign devices refused, read-only r10 read-only"

# ---- grow: the attached device takes the array's new size at once -------------
# A RAID 5 of 3 on 24 MiB members, attached; the members grow to 40 MiB and
# raidctl grow --size max gives /dev/nbdN the new size (netlink
# NBD_CMD_RECONFIGURE): the kernel must show it at once, and I/O in the
# new region must reach the array.
MiB=$((1 << 20))
mem=()
for k in 0 1 2; do truncate -s 24M "$d/g-$k"; mem+=("$d/g-$k"); done
R create g --level 5 --chunk 64K --assume-clean "${mem[@]}" > /dev/null
dev=$(R attach g) || fail "attach g"
nb=${dev#/dev/}
old=$(size_of "$dev")
head -c $((8 * MiB)) /dev/urandom > "$d/g-old"
dd if="$d/g-old" of="$dev" bs=1M oflag=direct status=none || fail "write to $dev"
truncate -s 40M "${mem[@]}"
R grow g --size max > "$d/out" 2>&1 || fail "grow g: $(cat "$d/out")"
grep -q "^raidctl: g: $dev has the new size$" "$d/out" || fail "grow g said: $(cat "$d/out")"
want=$(R detail g --json | grep -o '"size": *[0-9]*' | head -1 | grep -o '[0-9]*$')
[ "$want" -gt "$old" ] || fail "g did not grow: $old bytes before, $want after"
# Right away: no wait, no reopen.
sys=$(( $(cat "/sys/block/$nb/size") * 512 ))
[ "$sys" = "$want" ] || fail "/sys/block/$nb/size says $sys bytes after the grow, the array $want"
[ "$(size_of "$dev")" = "$want" ] || fail "$dev: $(size_of "$dev") bytes after the grow, the array $want"
klog=$(dmesg)
grep -q "$nb: detected capacity change from $((old / 512)) to $((want / 512))$" <<< "$klog" ||
  fail "the kernel did not log $nb's capacity change: $(grep "$nb" <<< "$klog" | tail -3)"
# The new region, while raidd resyncs it: the last 4 MiB, and 1 MiB across
# the old end; direct I/O both ways, so the bytes come from raidd.
head -c $((4 * MiB)) /dev/urandom > "$d/g-end"
head -c $((1 * MiB)) /dev/urandom > "$d/g-mid"
dd if="$d/g-end" of="$dev" bs=1M oflag=direct,seek_bytes seek=$((want - 4 * MiB)) status=none ||
  fail "write of the last 4 MiB of $dev"
dd if="$d/g-mid" of="$dev" bs=1M oflag=direct,seek_bytes seek=$((old - MiB / 2)) status=none ||
  fail "write across the old end of $dev"
# g_check WHEN: the three regions read back through the device.
g_check () {
  dd if="$dev" bs=1M iflag=direct,count_bytes count=$((8 * MiB)) status=none |
    cmp -s - "$d/g-old" || fail "$dev: the first 8 MiB read back otherwise $1"
  dd if="$dev" bs=1M iflag=direct,skip_bytes,count_bytes skip=$((want - 4 * MiB)) \
    count=$((4 * MiB)) status=none | cmp -s - "$d/g-end" ||
    fail "$dev: the last 4 MiB read back otherwise $1"
  dd if="$dev" bs=1M iflag=direct,skip_bytes,count_bytes skip=$((old - MiB / 2)) \
    count=$MiB status=none | cmp -s - "$d/g-mid" ||
    fail "$dev: the 1 MiB across the old end read back otherwise $1"
}
g_check "before the resync ended"
R wait g > "$d/out" 2>&1 || fail "wait g: $(cat "$d/out")"
grep -q "resync done" "$d/out" || fail "wait g said: $(cat "$d/out")"
g_check "after the resync"
R scrub g --wait > "$d/out" 2>&1 || fail "scrub g: $(cat "$d/out")"
grep -q "check done: mismatch_cnt 0$" "$d/out" || fail "scrub g after the grow: $(cat "$d/out")"
echo "grow: $dev went from $old to $want bytes at once (sysfs, blockdev, the kernel's log); new region written and read back, resynced, scrub clean"
# --array-size (mdadm's): the device shows less at once, and all again with
# max, the bytes past the cut as they were.
R grow g --array-size 16M > "$d/out" 2>&1 || fail "grow g --array-size 16M: $(cat "$d/out")"
grep -q "^raidctl: g: $dev has the new size$" "$d/out" || fail "grow g --array-size said: $(cat "$d/out")"
[ "$(size_of "$dev")" = $((16 * MiB)) ] || fail "$dev: $(size_of "$dev") bytes after --array-size 16M"
R grow g --array-size max > "$d/out" 2>&1 || fail "grow g --array-size max: $(cat "$d/out")"
[ "$(size_of "$dev")" = "$want" ] || fail "$dev: $(size_of "$dev") bytes after --array-size max"
g_check "after --array-size 16M and max"
echo "array-size: $dev showed 16 MiB at once, then all $want bytes again, the data as it was"
# Again under a mounted ext4, which resize2fs grows online into the new room.
mkfs.ext4 -q "$dev"
mount "$dev" "$d/mnt"
head -c $((8 * MiB)) /dev/urandom > "$d/mnt/f"
sync
blocks=$(df --output=size -B1 "$d/mnt" | awk 'END { print $1 }')
truncate -s 56M "${mem[@]}"
R grow g --size max > "$d/out" 2>&1 || fail "grow g mounted: $(cat "$d/out")"
grep -q "^raidctl: g: $dev has the new size$" "$d/out" || fail "grow g mounted said: $(cat "$d/out")"
want2=$(R detail g --json | grep -o '"size": *[0-9]*' | head -1 | grep -o '[0-9]*$')
[ "$want2" -gt "$want" ] && [ "$(size_of "$dev")" = "$want2" ] ||
  fail "mounted $dev: $(size_of "$dev") bytes after the second grow, the array $want2"
resize2fs "$dev" > "$d/resize" 2>&1 || { cat "$d/resize"; fail "resize2fs $dev online"; }
blocks2=$(df --output=size -B1 "$d/mnt" | awk 'END { print $1 }')
[ "$blocks2" -gt "$blocks" ] || fail "ext4 on $dev: $blocks2 bytes after resize2fs, $blocks before"
# A file as big as the whole file system was: it needs the new room.
fio_verify "grown" "$d/mnt/g" $((blocks / MiB * MiB)) --rw=write --bs=1M
R wait g > /dev/null || fail "wait g (second grow)"
umount "$d/mnt"
e2fsck -fn "$dev" > "$d/fsck" 2>&1 || { cat "$d/fsck"; fail "e2fsck $dev after the online resize"; }
R scrub g --wait > "$d/out" 2>&1 || fail "scrub g: $(cat "$d/out")"
grep -q "check done: mismatch_cnt 0$" "$d/out" || fail "scrub g after the second grow: $(cat "$d/out")"
R stop g > /dev/null || fail "stop g"
[ "$(size_of "$dev")" = 0 ] || fail "$dev still has $(size_of "$dev") bytes after stop g"
rm -f "${mem[@]}" "$d/g-old" "$d/g-end" "$d/g-mid"
echo "grow: mounted ext4 on $dev grew again to $want2 bytes, resize2fs online from $blocks to $blocks2, fio verify, e2fsck clean, scrub clean"

# ---- restripe: the attached device takes the new size when the reshape ends ---
# A RAID 5 of 3 on 24 MiB members, attached, ext4 mounted with a file on
# it; a fourth member is added and the array restriped over 4 (raidctl
# grow --raid-devices 4) while fio writes and verifies a file: once the
# reshape is over /dev/nbdN has the array's new size by itself (raidd
# tells the kernel when the reshape ends, NBD_CMD_RECONFIGURE), resize2fs
# grows ext4 online into it, the first file reads back, e2fsck is clean,
# scrub finds mismatch_cnt 0.
mem=()
for k in 0 1 2 3; do truncate -s 24M "$d/h-$k"; mem+=("$d/h-$k"); done
R create h --level 5 --chunk 64K --assume-clean "${mem[@]:0:3}" > /dev/null
dev=$(R attach h) || fail "attach h"
nb=${dev#/dev/}
old=$(size_of "$dev")
mkfs.ext4 -q "$dev"
mount "$dev" "$d/mnt"
head -c $((8 * MiB)) /dev/urandom > "$d/h-file"
cp "$d/h-file" "$d/mnt/first"
sync
blocks=$(df --output=size -B1 "$d/mnt" | awk 'END { print $1 }')
R add h "${mem[3]}" > /dev/null
R set h rebuild-min=4M rebuild-max=4M > /dev/null     # about 6 s: fio runs during it
R grow h --raid-devices 4 > "$d/out" 2>&1 || fail "grow h --raid-devices 4: $(cat "$d/out")"
grep -q "restriping from 3 to 4 members" "$d/out" || fail "grow h said: $(cat "$d/out")"
fio_verify "reshape" "$d/mnt/during" $((8 * MiB))
R set h rebuild-min=0 rebuild-max=0 > /dev/null
R wait h > "$d/out" 2>&1 || fail "wait h: $(cat "$d/out")"
grep -q "reshape done" "$d/out" || fail "wait h said: $(cat "$d/out")"
want=$(R detail h --json | grep -o '"size": *[0-9]*' | head -1 | grep -o '[0-9]*$')
[ "$want" = $((old / 2 * 3)) ] || fail "h: $want bytes after the restripe, not $((old / 2 * 3))"
# The event that resizes the device comes just after the reshape's end.
for _ in $(seq 100); do [ "$(size_of "$dev")" = "$want" ] && break; sleep 0.1; done
[ "$(size_of "$dev")" = "$want" ] || fail "$dev: $(size_of "$dev") bytes after the restripe, the array $want"
grep -q "$nb: detected capacity change from $((old / 512)) to $((want / 512))$" <<< "$(dmesg)" ||
  fail "the kernel did not log $nb's capacity change: $(dmesg | grep "$nb" | tail -3)"
resize2fs "$dev" > "$d/resize" 2>&1 || { cat "$d/resize"; fail "resize2fs $dev after the restripe"; }
blocks2=$(df --output=size -B1 "$d/mnt" | awk 'END { print $1 }')
[ "$blocks2" -gt "$blocks" ] || fail "ext4 on $dev: $blocks2 bytes after resize2fs, $blocks before"
cmp -s "$d/mnt/first" "$d/h-file" || fail "h: the file written before the restripe differs"
umount "$d/mnt"
e2fsck -fn "$dev" > "$d/fsck" 2>&1 || { cat "$d/fsck"; fail "e2fsck $dev after the restripe"; }
R scrub h --wait > "$d/out" 2>&1 || fail "scrub h: $(cat "$d/out")"
grep -q "check done: mismatch_cnt 0$" "$d/out" || fail "scrub h after the restripe: $(cat "$d/out")"
R stop h > /dev/null || fail "stop h"
rm -f "${mem[@]}" "$d/h-file"
echo "restripe: $dev went from $old to $want bytes when the reshape ended; resize2fs online, fio verify during it, e2fsck clean, scrub clean"

# ---- raidd's exit, kill -9 and a stale device ----------------------------------
attached=$(R status --json | grep -o '"/dev/nbd[0-9]*"' | tr -d '"' | sort | tr '\n' ' ')
stop_raidd
for dev in $attached; do
  [ "$(size_of "$dev")" = 0 ] || fail "$dev still connected after raidd stopped"
done
echo "exit: raidd detached $attached"
dmesg | grep -i "I/O error\|blk_update_request\|Buffer I/O" && fail "I/O errors in the kernel log"

start_raidd
R assemble r5 "$d"/r5-{0,1,2,3} > /dev/null
dev=$(R attach r5 /dev/nbd2)
kill -9 "$pid"; wait "$pid" 2>/dev/null || :; pid=
start_raidd
R assemble r5 "$d"/r5-{0,1,2,3} > /dev/null
R attach r5 /dev/nbd2 > "$d/out" 2>&1 && fail "attach to the dead /dev/nbd2 succeeded"
grep -q "/dev/nbd2 is already connected" "$d/out" || fail "attach dead: $(cat "$d/out")"
R detach /dev/nbd2 > /dev/null || fail "detach of the stale /dev/nbd2"
dev=$(R attach r5 /dev/nbd2) || fail "attach after freeing the stale device"
e2fsck -fn "$dev" > "$d/fsck" 2>&1 || { cat "$d/fsck"; fail "e2fsck on the reattached $dev"; }
echo "stale: kill -9 left /dev/nbd2 dead; raidctl detach freed it; r5 attached again, fsck clean"

# ---- blockdev=/dev/nbd6 in raidd.conf: attached when raidd starts ---------------
stop_raidd
echo "DEVICE $d/r5-*" > "$d/raidd.conf"
R --config "$d/raidd.conf" examine --scan | sed 's|$| blockdev=/dev/nbd6|' >> "$d/raidd.conf"
start_raidd --config "$d/raidd.conf"
for _ in $(seq 300); do R detail r5 2>/dev/null | grep -q "Block Device : /dev/nbd6 " && break; sleep 0.1; done
R detail r5 | grep -q "Block Device : /dev/nbd6 (kernel NBD client)" ||
  fail "blockdev=/dev/nbd6: not attached at start: $(R detail r5 | grep -i block)"
grep -q "r5: /dev/nbd6 ($d/raidd.conf line 2: blockdev=/dev/nbd6)" "$log" ||
  fail "raidd did not say where /dev/nbd6 came from"
dev=/dev/nbd6
[ "$(size_of "$dev")" -gt 0 ] || fail "$dev has no size"
e2fsck -fn "$dev" > "$d/fsck" 2>&1 || { cat "$d/fsck"; fail "e2fsck on $dev from blockdev="; }
echo "config: blockdev=/dev/nbd6 attached r5 at raidd's start, fsck clean"

# ---- stop --force on a mounted device (the last step: it makes I/O errors) -----
mount "$dev" "$d/mnt"
R stop r5 --force > /dev/null || fail "stop --force r5"
# Disconnected: I/O fails (the mount keeps the device's size until it goes).
dd if="$dev" of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null &&
  fail "$dev still reads after stop --force"
umount -l "$d/mnt" 2>/dev/null || :
grep -q "in use; disconnecting it anyway" "$log" || fail "stop --force did not warn"
echo "force: stop --force disconnected the mounted $dev"
stop_raidd
echo "nbd-attach: OK"

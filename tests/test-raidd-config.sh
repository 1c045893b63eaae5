#!/usr/bin/env bash
# Description: the configuration file (raidd.conf(5)) through raidd and
# raidctl, on member files and loop devices.
#  - `raidctl --config F examine --scan -v` prints ARRAY lines that raidd
#    and raidctl read back without a complaint.
#  - A "reboot": raidd stopped, started with only --config, brings back a
#    RAID 1 (under the ARRAY line's name, not the superblock's) and a
#    RAID 5 with every byte written before; readonly=yes starts read-only;
#    blockdev= that this host cannot give (no ublk, no nbd) is named in the
#    log with its line, and the array runs without it (raidctl assemble
#    --scan: named, exit 1, the array running);
#    settings come from the file (THREADS) and the command line wins.
#  - The file's PROGRAM line is raidd's --program, and an ARRAY line's
#    spares=1 makes raidd report SparesMissing for an array without one.
#  - A member gone: raidd waits ASSEMBLE-TIMEOUT seconds, then starts the
#    array degraded (md's last resort); an ARRAY with no member found, a bad
#    ARRAY line and mdadm-only lines are errors naming the line, and the
#    other arrays still start.
#  - A setting that is wrong (unknown key, bad value) names its line and
#    keeps raidd off TCP; --config of a missing file refuses to start;
#    --config none reads nothing.
#  - raidctl --config: assemble --scan assembles only the ARRAY lines,
#    under their names, refuses one whose level contradicts its line, and
#    finds raidd's control socket from the file's CONTROL line.
#  - Loop devices: a configured array none of whose members is there when
#    raidd starts is assembled by raidd when they appear (udev), without
#    raidctl.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
set -e

top_builddir=${top_builddir:-.}
requires nbdcopy --version
requires nbdinfo --version
requires_root
requires losetup --version
requires_file /dev/loop-control

mktmpdir raidd-config
raidd_env "$tmpdir"
cleanup_fn "${top_srcdir:-.}/tests/detach-loops.sh" "$d"
# The control socket answers while raidd still waits for members; it says
# "ready" once the configured arrays are up.
wait_ready ()
{
  for _ in $(seq 200); do grep -q "raidd: ready: " "$d/raidd.log" && return 0; sleep 0.1; done
  fail "raidd never said it was ready"
}
conf=$d/raidd.conf

# ---- arrays, and the lines examine --scan writes for them ------------------------
mkdir "$d/m"
truncate -s 64M "$d/m/a0.img" "$d/m/a1.img" "$d/m/b0.img" "$d/m/b1.img" "$d/m/b2.img"
start_raidd --config none
R create mirror --level 1 --assume-clean "$d/m/a0.img" "$d/m/a1.img" > /dev/null
R create par --level 5 "$d/m/b0.img" "$d/m/b1.img" "$d/m/b2.img" > /dev/null
R wait par > /dev/null
nbdcopy -- [ nbdkit pattern size=32M ] "$d/pattern"
nbdcopy "$d/pattern" "$(uri mirror)" || fail "data into mirror"
nbdcopy "$d/pattern" "$(uri par)" || fail "data into par"
R stop mirror > /dev/null
R stop par > /dev/null
stop_raidd

echo "DEVICE $d/m/*.img" > "$conf"
"$raidctl" --config "$conf" examine --scan -v > "$d/scan" 2> "$d/err" || fail "examine --scan"
[ ! -s "$d/err" ] || fail "examine --scan complained: $(cat "$d/err")"
grep -c "^ARRAY /dev/md/" "$d/scan" | grep -qx 2 || fail "examine --scan: $(cat "$d/scan")"
# The mirror comes back under another name: the ARRAY line's.
sed -e 's|^ARRAY /dev/md/mirror |ARRAY /dev/md/boot |' \
    -e 's|^\(ARRAY /dev/md/par .*\)$|\1 spares=1|' "$d/scan" >> "$conf"
printf '#!/bin/sh\necho "$*" >> %s/hook.out\n' "$d" > "$d/hook"
chmod +x "$d/hook"
cat >> "$conf" <<EOF
PROGRAM $d/hook
# raidd's settings
THREADS 1
ASSEMBLE-TIMEOUT 2
REBUILD-MAX 50M
CONTROL $ctl
EOF

# ---- the reboot -------------------------------------------------------------------
: > "$d/raidd.log"
"$raidd" --foreground --config "$conf" --nbd-socket "$sock" >> "$d/raidd.log" 2>&1 &
raidd_pid=$!
wait_ready
# raidctl found the control socket through the file's CONTROL line.
"$raidctl" --config "$conf" status > "$d/st" || fail "raidctl --config status"
grep -q "^boot : active raid1" "$d/st" || fail "boot not running: $(cat "$d/st")"
grep -q "^par : active raid5" "$d/st" || fail "par not running: $(cat "$d/st")"
grep -q "configured arrays: 2 of 2 running" "$d/raidd.log" || fail "not 2 of 2"
grep -q "ready: .*, 1 worker thread$" "$d/raidd.log" || fail "THREADS 1 not taken"
R detail par | grep -q "Rebuild Speed : [0-9]*K/sec min, 51200K/sec max" ||
  fail "REBUILD-MAX 50M not taken: $(R detail par | grep Rebuild)"
if grep -q "raidd.conf:[0-9]*:" "$d/raidd.log"; then fail "complaints about examine's lines"; fi
# PROGRAM and spares=1 from the file: par runs without a spare.
for _ in $(seq 300); do grep -q "^SparesMissing par" "$d/hook.out" 2>/dev/null && break; sleep 0.1; done
grep -q "^SparesMissing par" "$d/hook.out" || fail "spares=1: no SparesMissing reached PROGRAM"
grep -q "^NewArray boot" "$d/hook.out" || fail "PROGRAM did not hear NewArray boot"
for a in boot par; do
  nbdcopy "$(uri $a)" "$d/back" || fail "read $a"
  cmp -n 32M "$d/pattern" "$d/back" || fail "$a: data differs after the reboot"
done
stop_raidd

# ---- a member gone: the last resort; bad lines --------------------------------------
mv "$d/m/b2.img" "$d/b2.away"
cp "$conf" "$d/conf.good"
cat >> "$conf" <<EOF
ARRAY ghost UUID=01234567:89abcdef:00112233:44556677
ARRAY broken UUID=nonsense
HOMEHOST <system>
EOF
: > "$d/raidd.log"
start_raidd --config "$conf"
wait_ready
R status par > "$d/st" || fail "status par"
grep -q "\[3/2\]" "$d/st" || fail "par not degraded: $(cat "$d/st")"
grep -q "par: only 2 of 3 members present after [0-9]* s; starting it DEGRADED (last resort)" \
  "$d/raidd.log" || fail "no last resort"
grep -q "par: 2 of 3 members present; waiting up to 2 s" "$d/raidd.log" || fail "no wait"
n=$(grep -n "ARRAY ghost" "$conf" | cut -d: -f1)
grep -q "ghost ($conf line $n): no member found: not assembled" "$d/raidd.log" || fail "ghost"
grep -q "$conf:$((n + 1)): ARRAY broken: UUID=nonsense is not a UUID" "$d/raidd.log" ||
  fail "bad ARRAY line"
grep -q "$conf:$((n + 2)): HOMEHOST is mdadm's" "$d/raidd.log" || fail "HOMEHOST"
grep -q "configured arrays: 2 of 3 running" "$d/raidd.log" || fail "not 2 of 3"
nbdcopy "$(uri par)" "$d/back" && cmp -n 32M "$d/pattern" "$d/back" || fail "degraded par data"
stop_raidd

# ---- an array whose start fails at every rescan is counted once --------------------
# boot's members are held by another process (raidd's flock says "in use"),
# so its start fails at each look while par waits for b2: 1 of 3 run, and
# the count of what failed never runs past the number of arrays.
python3 -c 'import fcntl, sys, time
fs = [open(p, "rb") for p in sys.argv[1:]]
for f in fs:
    fcntl.flock(f, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(600)' "$d/m/a0.img" "$d/m/a1.img" > "$d/holder.out" &
holder=$!
cleanup_fn kill_pid "$holder"
for _ in $(seq 100); do grep -q locked "$d/holder.out" && break; sleep 0.1; done
grep -q locked "$d/holder.out" || fail "the members were not locked"
: > "$d/raidd.log"
start_raidd --config "$conf"
wait_ready
kill_pid "$holder"; wait "$holder" 2>/dev/null || :
grep -q "configured arrays: 1 of 3 running (see the errors above)" "$d/raidd.log" ||
  fail "boot's failed starts miscounted: $(grep 'configured arrays' "$d/raidd.log")"
[ "$(grep -c "boot.*in use" "$d/raidd.log")" -ge 1 ] || fail "boot's start did not fail: busy members"
R status par > "$d/st" || fail "status par"
# The disk is back: md's way, it is added again and rebuilt.
mv "$d/b2.away" "$d/m/b2.img"
R add par "$d/m/b2.img" > /dev/null || fail "add b2 back"
R wait par > /dev/null
stop_raidd
cp "$d/conf.good" "$conf"

# ---- settings: wrong ones, the command line, readonly= -------------------------------
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -i -e 's|^\(ARRAY /dev/md/boot .*\)$|\1 readonly=yes blockdev=ublk|' \
    -e 's|^\(ARRAY /dev/md/par .*\)$|\1 blockdev=/dev/nbd3|' "$conf"
echo "THREADZ 4" >> "$conf"
echo "NBD-LISTEN 127.0.0.1:$port" >> "$conf"
: > "$d/raidd.log"
start_raidd --config "$conf" --assemble-timeout 0
wait_ready
grep -q "$conf:$(grep -n THREADZ "$conf" | cut -d: -f1): unknown setting 'threadz'" "$d/raidd.log" ||
  fail "unknown setting not named with its line"
grep -q "not listening on TCP 127.0.0.1:$port: a setting of $conf was refused" "$d/raidd.log" ||
  fail "TCP opened despite a bad setting"
if nbdinfo --list "nbd://127.0.0.1:$port" > /dev/null 2>&1; then fail "TCP port open"; fi
# --threads 2 (start_raidd) over the file's THREADS 1.
grep -q "ready: .*, 2 worker threads$" "$d/raidd.log" || fail "command line did not win"
R status --json boot | python3 -c 'import json,sys; a=json.load(sys.stdin)[0]; sys.exit(0 if a["readonly"] else 1)' ||
  fail "readonly=yes: boot is not read-only"
# blockdev=: this host has neither ublk nor the kernel's NBD client (the
# VM tests have both): the arrays run all the same, and the log names the
# line and why there is no device.
if [ ! -e /dev/ublk-control ] && [ ! -d /sys/module/nbd ]; then
  grep -q "boot ($conf line [0-9]*): runs without its block device (blockdev=ublk): ublk is not available" \
    "$d/raidd.log" || fail "blockdev=ublk: no device and no word of it"
  grep -q "par ($conf line [0-9]*): runs without its block device (blockdev=/dev/nbd3): attach par: the kernel has no NBD driver" \
    "$d/raidd.log" || fail "blockdev=/dev/nbd3: no device and no word of it"
fi
R status par | grep -q "^par : active raid5" || fail "par not running with blockdev="
stop_raidd
sed -i -e '/^THREADZ/d' "$conf"
echo "THREADS many" >> "$conf"
echo "TLS requir" >> "$conf"         # misspelt: must not leave TCP open in the clear
: > "$d/raidd.log"
start_raidd --config "$conf" --assemble-timeout 0
wait_ready
grep -q "$conf:[0-9]*: threads many: must be 1 to 256" "$d/raidd.log" || fail "bad value not named"
grep -q "$conf:$(grep -n "^TLS requir" "$conf" | cut -d: -f1): tls=requir: must be off, on or require" \
  "$d/raidd.log" || fail "bad TLS line not named"
grep -q "not listening on TCP" "$d/raidd.log" || fail "TCP opened despite a bad value"
stop_raidd
if "$raidd" --foreground --config "$d/nonexistent.conf" --control "$ctl" > "$d/out" 2>&1; then
  fail "started with a missing --config"
fi
grep -q "$d/nonexistent.conf: No such file or directory" "$d/out" || fail "missing config: $(cat "$d/out")"
sed -i -e '/^THREADS many/d' -e '/^NBD-LISTEN/d' -e '/^TLS requir/d' "$conf"

# ---- raidctl assemble --scan with the file -------------------------------------------
: > "$d/raidd.log"
start_raidd --config none
# The lines still say blockdev=ublk and /dev/nbd3, which this host cannot
# give: both arrays run, each missing device is named, the exit is 1.
st=0
"$raidctl" --config "$conf" assemble --scan > "$d/out" 2>&1 || st=$?
R status > "$d/st"
grep -q "^boot : active (read-only) raid1" "$d/st" && grep -q "^par : active raid5" "$d/st" ||
  fail "assemble --scan with the file: $(cat "$d/out" "$d/st")"
if [ ! -e /dev/ublk-control ] && [ ! -d /sys/module/nbd ]; then
  [ $st = 1 ] || fail "assemble --scan without the devices blockdev= asks for: exit $st, not 1"
  grep -q "ublk is not available" "$d/out" || fail "blockdev=ublk: $(cat "$d/out")"
  grep -q "attach par: the kernel has no NBD driver" "$d/out" ||
    fail "blockdev=/dev/nbd3: $(cat "$d/out")"
fi
R stop boot > /dev/null
R stop par > /dev/null
sed -i -e 's/ blockdev=[^ ]*//' "$conf"
"$raidctl" --config "$conf" assemble --scan > "$d/out" 2>&1 || fail "assemble --scan: $(cat "$d/out")"
R stop boot > /dev/null
R stop par > /dev/null
# Only the ARRAY lines: without the par line, par stays where it is.
grep -v "name=.*:par" "$conf" > "$d/conf.boot"
"$raidctl" --config "$d/conf.boot" assemble --scan > /dev/null 2>&1 || fail "assemble --scan boot only"
R status > "$d/st"
grep -q "^boot : " "$d/st" || fail "boot not assembled"
if grep -q "^par : " "$d/st"; then fail "par assembled without its ARRAY line"; fi
R stop boot > /dev/null
# A line that contradicts the members: refused, naming the line.
sed -e 's|^\(ARRAY /dev/md/par .*\)$|\1 level=raid1|' "$conf" > "$d/conf.lie"
if "$raidctl" --config "$d/conf.lie" assemble --scan par > "$d/out" 2>&1; then fail "lie accepted"; fi
grep -q "par: not assembled: its members are raid5, the ARRAY line [0-9]* says level=raid1" "$d/out" ||
  fail "level lie: $(cat "$d/out")"
"$raidctl" --config "$d/conf.lie" status > /dev/null 2> "$d/out" || :
if grep -q "level" "$d/out"; then fail "status repeated the file's complaints"; fi
stop_raidd

# ---- members that appear later (loop devices, udev) -----------------------------------
truncate -s 64M "$d/l0.img" "$d/l1.img"
l0=$(losetup --find --show "$d/l0.img")
l1=$(losetup --find --show "$d/l1.img")
start_raidd --config none
R create late --level 1 --assume-clean "$l0" "$l1" > /dev/null
nbdcopy "$d/pattern" "$(uri late)" || fail "data into late"
R stop late > /dev/null
stop_raidd
uuid=$(R examine --json "$l0" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["uuid"])')
losetup -d "$l0"
losetup -d "$l1"
printf 'ARRAY late UUID=%s\nASSEMBLE-TIMEOUT 1\n' "$uuid" > "$d/late.conf"
: > "$d/raidd.log"
start_raidd --config "$d/late.conf"
wait_ready
grep -q "late (.*late.conf line 1): no member found" "$d/raidd.log" || fail "late: no error at start"
l0=$(losetup --find --show "$d/l0.img")
for _ in $(seq 300); do grep -q "late: member $l0 appeared: 1 of 2" "$d/raidd.log" && break; sleep 0.1; done
grep -q "late: member $l0 appeared: 1 of 2 members present" "$d/raidd.log" || fail "first member not seen"
if R status late > /dev/null 2>&1; then fail "late started with one member of two"; fi
l1=$(losetup --find --show "$d/l1.img")
for _ in $(seq 300); do R status late > /dev/null 2>&1 && break; sleep 0.1; done
R status late | grep -q "\[2/2\] \[UU\]" || fail "late not assembled when its members appeared"
nbdcopy "$(uri late)" "$d/back" && cmp -n 32M "$d/pattern" "$d/back" || fail "late data"
R stop late > /dev/null
stop_raidd
losetup -d "$l0"
losetup -d "$l1"
echo "$0: ok"

#!/bin/bash
# Guest half of tests/test-vm-ublk-recovery.sh (the backports kernel:
# ublk_drv).  raidd and raidctl run from the shared build tree ($BUILD),
# fio from $TOOLS.
#   - A RAID 5 with ext4 mounted on its /dev/ublkbN, fio --verify=crc32c
#     writing and verifying it (passes until told to stop, 16 requests in
#     flight); raidd is killed with SIGKILL three times, and stopped with
#     SIGTERM once, in the middle of it.  Each time the device stays (the
#     kernel holds the requests), a new raidd starts, says which device
#     waits for which array, and takes the same /dev/ublkbN back: on
#     "raidctl assemble" ("(recovered)"), or, the third time, alone at its
#     start from its configuration file's ARRAY line.  SIGTERM (a restart,
#     an upgrade) makes raidd exit at once and cleanly (no resync after),
#     leaving the mounted device and its record.  fio finishes with no
#     error and every block verified, e2fsck -fn is clean, dmesg has no
#     I/O error.
#   - After a recovery: detail shows the device, unublk is refused while
#     mounted, works once unmounted and removes the record; stop works.
#   - Records: a stale one (no such device) is removed and a new device is
#     made; one whose UUID is another array's is never used for this one;
#     raidd's SIGTERM deletes an unused device and its record.
set -euo pipefail
cd /tmp
d=/tmp/raidvm
mkdir -p "$d/mnt"
R () { "$BUILD/raidctl/raidctl" --control "$d/control.sock" "$@"; }
fio=$TOOLS/fio
fail () { echo "ublk-recovery.sh: FAIL: $*" >&2; exit 1; }
step () { echo "== $(cut -d' ' -f1 /proc/uptime) s: $*"; }

modprobe ublk_drv
[ -c /dev/ublk-control ] || fail "no /dev/ublk-control after modprobe ublk_drv"
dmesg -C

pid= fpid=
start_raidd ()
{
  "$BUILD/raidd/raidd" --foreground --control "$d/control.sock" --nbd-socket "$d/nbd.sock" \
    --threads 2 --ublk-queue-depth 32 "$@" >> "$d/raidd.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do R status >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "raidd did not start"
}
# shellcheck disable=SC2317 # a trap
on_exit ()
{
  local st=$?
  # What went wrong first: the clean-up below may hang on a broken device.
  [ $st = 0 ] || { echo "--- raidd's log"; cat "$d/raidd.log"
                   echo "--- fio"; tail -n 5 "$d"/fio.*.out
                   echo "--- dmesg"; dmesg | tail -n 40; } >&2
  if [ -n "$fpid" ]; then
    : > "$d/fio.stop"
    kill "$fpid" "$(cat "$d/fio.pid" 2>/dev/null)" 2>/dev/null
    wait "$fpid" 2>/dev/null
  fi || :
  # Unmounted before raidd's SIGTERM: DEL_DEV waits until nothing holds
  # the disk.
  umount -l "$d/mnt" 2>/dev/null || :
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill "$pid"; wait "$pid" || :; fi
}
trap on_exit EXIT

step "start"
start_raidd
mapfile -t ms < <(for i in 0 1 2; do echo "$d/r5-m$i"; done)
for m in "${ms[@]}"; do truncate -s 64M "$m"; done
R create r5 --level 5 --chunk 64K --assume-clean "${ms[@]}" > /dev/null
out=$(R ublk r5)
dev=${out##* is }
[[ $dev == /dev/ublkb[0-9]* ]] || fail "raidctl ublk r5 said: $out"
n=${dev#/dev/ublkb}
[ -f "$d/ublk/ublkb$n" ] || fail "no record $d/ublk/ublkb$n for $dev"
grep -q "^name r5$" "$d/ublk/ublkb$n" || fail "record: $(cat "$d/ublk/ublkb$n")"
mkfs.ext4 -q "$dev"
mount "$dev" "$d/mnt"

# fio in passes until told to stop: each pass writes 24M at random (4K,
# 16 in flight, direct), then reads it all back checking every block's
# crc32c.  Passes, not one long run, so that the kills below always find
# fio at work however fast or slow the machine is: the first pass that
# fails stops the loop (its number in fio.failed).
fio_loop ()
{
  local i=0
  while [ ! -e "$d/fio.stop" ]; do
    i=$((i + 1))
    "$fio" --name=verify --directory="$d/mnt" --size=24M --bs=4k --rw=randwrite \
      --ioengine=libaio --iodepth=16 --direct=1 --verify=crc32c --verify_fatal=1 \
      --verify_state_save=0 > "$d/fio.$i.out" 2>&1 &
    echo $! > "$d/fio.pid"
    wait $! || { echo "$i" > "$d/fio.failed"; exit 1; }
  done
  echo "$i" > "$d/fio.passes"
}
rm -f "$d"/fio.*
fio_loop & fpid=$!

# fio_now: the PID of the fio pass at work now (waits for one to start).
fio_now ()
{
  local p
  for _ in $(seq 300); do
    [ ! -e "$d/fio.failed" ] || fail "fio pass $(cat "$d/fio.failed") failed: $(cat "$d/fio.$(cat "$d/fio.failed").out")"
    p=$(cat "$d/fio.pid" 2>/dev/null) || p=
    [ -n "$p" ] && kill -0 "$p" 2>/dev/null && { echo "$p"; return 0; }
    sleep 0.1
  done
  fail "no fio pass at work for 30 s"
}

# kill_and_recover SECS SIGNAL HOW: raidd killed (SIGNAL kill: SIGKILL;
# term: SIGTERM, a clean exit that hands the mounted device over) while
# fio runs; the device stays; a new raidd takes it back when the array is
# assembled, by "raidctl assemble" (HOW=assemble) or by raidd itself at
# its start from the ARRAY line of its configuration file (HOW=config).
recovered=0
kill_and_recover ()
{
  local out f
  local unclean at
  sleep "$1"
  f=$(fio_now)
  unclean=$(grep -c "needs a resync (new, or not stopped cleanly)" "$d/raidd.log" || :)
  if [ "$2" = term ]; then
    # SIGTERM (a restart, an upgrade): raidd exits at once, cleanly,
    # leaving the mounted device to the next one.
    step "SIGTERM to raidd (PID $pid) under fio (PID $f)"
    kill "$pid"
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then fail "raidd did not exit within 30 s of SIGTERM"; fi
    wait "$pid" || fail "raidd exited $? after SIGTERM"
    grep -q "r5: $dev is in use: left to the next raidd" "$d/raidd.log" ||
      fail "raidd did not say it left $dev to the next raidd"
    [ -e "$d/ublk/ublkb$n" ] || fail "SIGTERM removed the record of the device it left"
  else
    step "kill -9 raidd (PID $pid) under fio (PID $f)"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || :
  fi
  pid=
  [ -b "$dev" ] || fail "$dev went with raidd"
  sleep 2                       # the file system waits, fio with it
  # The pass that was at work may have had its last request answered just
  # before the kill; then the next one waits at its first.
  [ ! -e "$d/fio.failed" ] || fail "fio failed while raidd was dead"
  kill -0 "$fpid" 2>/dev/null || fail "fio's passes ended while raidd was dead"
  f=$(fio_now)
  sleep 1
  kill -0 "$f" 2>/dev/null || fail "fio (PID $f) ended while raidd was dead"
  step "a new raidd ($3)"
  if [ "$3" = config ]; then
    start_raidd --config "$d/raidd.conf"
    grep -q "ublkb$n, left by a raidd that did not stop, waits for array r5" "$d/raidd.log" ||
      fail "the new raidd did not say that $dev waits for r5"
  else
    start_raidd --config none
    grep -q "ublkb$n, left by a raidd that did not stop, waits for array r5" "$d/raidd.log" ||
      fail "the new raidd did not say that $dev waits for r5"
    out=$(R assemble r5 "${ms[@]}") || fail "assemble r5: $out"
    grep -qx "raidctl: r5 is $dev (recovered)" <<< "$out" || fail "assemble r5 said: $out"
  fi
  # Captured, not piped into grep -q: under pipefail, raidctl writing
  # after grep has quit would fail the check (SIGPIPE).
  out=$(R detail r5) || fail "detail r5: $out"
  grep -q "Block Device : $dev" <<< "$out" || fail "detail does not show $dev: $out"
  recovered=$((recovered + 1))
  [ "$(grep -c "r5: $dev recovered" "$d/raidd.log")" = $recovered ] ||
    fail "raidd did not log the recovery"
  timeout 30 dd if="$dev" of=/dev/null bs=4k count=1 iflag=direct status=none ||
    fail "a read of $dev did not complete within 30 s of the recovery"
  # A clean stop: no resync from the start.  A resync the last SIGKILL
  # started and the SIGTERM interrupted (a busy machine) goes on from the
  # point it reached, as md's does.
  if [ "$2" = term ]; then
    [ "$(grep -c "needs a resync (new, or not stopped cleanly)" "$d/raidd.log" || :)" = "$unclean" ] ||
      fail "r5 needs a resync from the start after a SIGTERM: it was not stopped cleanly"
    at=$(sed -n 's/.*resync stopped at \([0-9]*\) of.*/\1/p' "$d/raidd.log" | tail -n 1)
    if [ -n "$at" ]; then
      grep -q "resync started at $at of" "$d/raidd.log" ||
        fail "the resync the SIGTERM interrupted at byte $at did not resume there"
    fi
  fi
  step "$dev recovered"
}
# The configuration raidd reads at its start in the third round: the
# array's ARRAY line, as examine --scan prints it.
echo "DEVICE $d/r5-m*" > "$d/raidd.conf"
R --config "$d/raidd.conf" examine --scan >> "$d/raidd.conf"
grep -q "^ARRAY .*r5 " "$d/raidd.conf" || fail "examine --scan: $(cat "$d/raidd.conf")"
kill_and_recover 4 kill assemble
kill_and_recover 3 kill assemble
kill_and_recover 3 kill config
kill_and_recover 3 term assemble
: > "$d/fio.stop"
for _ in $(seq 150); do kill -0 "$fpid" 2>/dev/null || break; sleep 1; done
if kill -0 "$fpid" 2>/dev/null; then fail "fio did not finish within 150 s of the recovery"; fi
wait "$fpid" || fail "fio pass $(cat "$d/fio.failed") failed across the kills: $(cat "$d/fio.$(cat "$d/fio.failed").out")"
fpid=
passes=$(cat "$d/fio.passes")
for i in $(seq "$passes"); do
  grep -q "err= 0" "$d/fio.$i.out" || fail "fio pass $i: errors: $(cat "$d/fio.$i.out")"
  grep -q "verify" "$d/fio.$i.out" || fail "fio pass $i: no verify"
done
step "fio: $passes passes, no error"

if R unublk r5 2> "$d/err"; then fail "unublk r5 worked while mounted"; fi
umount "$d/mnt"
e2fsck -fn "$dev" > "$d/fsck" 2>&1 || { cat "$d/fsck"; fail "e2fsck $dev after the kills"; }
R unublk r5 > /dev/null
[ ! -e "$dev" ] || fail "$dev still there after unublk"
[ ! -e "$d/ublk/ublkb$n" ] || fail "unublk left the record of $dev"
R stop r5 > /dev/null

step "records: a stale one, another array's"
R assemble r5 "${ms[@]}" > /dev/null
uuid=$(R detail --json r5 | grep -o '"uuid": *"[^"]*"' | sed 's/.*: *"//; s/"//')
printf 'uuid %s\nname r5\n' "$uuid" > "$d/ublk/ublkb77"        # no such device
printf 'uuid 01234567:89abcdef:01234567:89abcdef\nname other\n' > "$d/ublk/ublkb78"
out=$(R ublk r5)
dev=${out##* is }
[[ $out == "raidctl: r5 is /dev/ublkb"[0-9]* ]] || fail "ublk r5 with a stale record: $out"
[[ $out != *recovered* ]] || fail "ublk r5 recovered from a stale record: $out"
grep -q "record of /dev/ublkb77 (array r5) is stale" "$d/raidd.log" ||
  fail "raidd did not say the record was stale"
[ ! -e "$d/ublk/ublkb77" ] || fail "the stale record is still there"
[ -e "$d/ublk/ublkb78" ] || fail "another array's record was touched"
rm -f "$d/ublk/ublkb78"

step "SIGTERM with $dev up"
kill "$pid"
wait "$pid" || fail "raidd exited $? after SIGTERM"
pid=
[ ! -e "$dev" ] || fail "$dev still there after raidd stopped"
[ -z "$(ls "$d/ublk")" ] || fail "records left after SIGTERM: $(ls "$d/ublk")"

if dmesg | grep -iE "I/O error|blk_update_request|Buffer I/O|EXT4-fs error|EXT4-fs warning"; then
  fail "the kernel logged I/O errors (above)"
fi
echo "ublk-recovery: OK"

#!/bin/bash
# Description: the ublk verbs' refusals that need no ublk in the kernel
# (tests/test-vm-ublk.sh runs the devices themselves in a VM):
# - raidctl ublk of an array that is not running names it; unublk of an
#   array without a device says so;
# - on a host without /dev/ublk-control (no ublk_drv), raidctl ublk says
#   ublk is not available and what to do, and the array keeps running
#   and stops as usual; create --ublk and assemble --ublk start the array,
#   say why there is no device and exit 1;
# - status and detail --json carry "ublk": null, detail prints no Block
#   Device line;
# - raidd --ublk-queue-depth refuses 0, 1025 and words; raidctl ublk wants
#   exactly one NAME.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires_root

mktmpdir test-raidctl-ublk
raidd_env "$tmpdir"

for bad in 0 1025 deep ''; do
  if "$raidd" --foreground --control "$d/x.sock" --ublk-queue-depth "$bad" 2> "$d/err"; then
    fail "raidd --ublk-queue-depth '$bad' started"
  fi
  grep -q "ublk-queue-depth $bad: must be 1 to 1024" "$d/err" ||
    fail "raidd --ublk-queue-depth '$bad': $(cat "$d/err")"
done

start_raidd --ublk-queue-depth 64
new_members "$d" 2 8M
R create md0 --level 1 --assume-clean "${members[@]}" > /dev/null

if R ublk nosuch 2> "$d/err"; then fail "ublk of an unknown array worked"; fi
grep -q "array nosuch is not running" "$d/err" || fail "ublk nosuch: $(cat "$d/err")"
if R unublk nosuch 2> "$d/err"; then fail "unublk of an unknown array worked"; fi
grep -q "array nosuch is not running" "$d/err" || fail "unublk nosuch: $(cat "$d/err")"
if R unublk md0 2> "$d/err"; then fail "unublk of an array without a device worked"; fi
grep -q "array md0 has no ublk device" "$d/err" || fail "unublk md0: $(cat "$d/err")"

if [ ! -e /dev/ublk-control ]; then
  if R ublk md0 2> "$d/err"; then fail "ublk worked without /dev/ublk-control"; fi
  grep -qF "ublk is not available: no /dev/ublk-control (modprobe ublk_drv; needs Linux >= 6.0)" \
    "$d/err" || fail "ublk md0 without ublk: $(cat "$d/err")"
  R detail --test md0 > /dev/null || fail "md0 is not whole after the refused ublk"
  # create --ublk: the array runs, the device's refusal is said, exit 1.
  mkdir "$d/u5"
  new_members "$d/u5" 3 8M
  st=0
  R create u5 --level 5 --assume-clean --ublk "${members[@]}" > "$d/out" 2> "$d/err" || st=$?
  [ $st = 1 ] || fail "create --ublk without ublk exited $st, not 1"
  grep -q "ublk is not available" "$d/err" || fail "create --ublk: $(cat "$d/err")"
  R detail --test u5 > /dev/null || fail "u5 is not running after create --ublk"
  R stop u5 > /dev/null
  st=0
  R assemble u5 --ublk "${members[@]}" > /dev/null 2> "$d/err" || st=$?
  [ $st = 1 ] || fail "assemble --ublk without ublk exited $st, not 1"
  grep -q "ublk is not available" "$d/err" || fail "assemble --ublk: $(cat "$d/err")"
  R stop u5 > /dev/null
else
  echo "$0: this kernel has ublk: its refusal is not tested here"
fi

R detail --json md0 | grep -q '"ublk": *null' || fail "detail --json has no \"ublk\": null"
R status --json | grep -q '"ublk": *null' || fail "status --json has no \"ublk\": null"
if R detail md0 | grep -q "Block Device"; then fail "detail shows a Block Device"; fi

st=0
R ublk > /dev/null 2> "$d/err" || st=$?
[ $st = 2 ] || fail "raidctl ublk without NAME exited $st, not 2"
grep -q "give exactly one array NAME" "$d/err" || fail "raidctl ublk: $(cat "$d/err")"

R stop md0 > /dev/null
stop_raidd
echo "$0: OK"

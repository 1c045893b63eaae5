#!/bin/bash
# Guest half of tests/test-vm-ublk.sh (the backports kernel: ublk_drv).
# raidd and raidctl run from the shared build tree ($BUILD), fio from
# $TOOLS.  For RAID 0, 1, 5 and 10 over files on the guest's tmpfs:
#   - raidctl ublk NAME makes /dev/ublkbN; status and detail name it;
#   - its geometry is the array's: blockdev --getss --getpbsz --getiomin
#     --getioopt, and the queue's fua, write_cache, discard and write
#     zeroes limits in sysfs;
#   - raidctl stop is refused while the device is mounted;
#   - mkfs.ext4, mount, fio --verify=crc32c, unmount, e2fsck -fn clean;
#   - unublk is refused while mounted, then works; stop then works (on
#     RAID 10, stop without unublk takes the unused device away).
# Then a drill on a mounted RAID 5 under fio (fail, remove, add, rebuild:
# fio finishes without an error), a read-only array (a read-only device),
# the refusals (unknown array, a second device), stop --force with a
# device, assemble --readonly --ublk, raidd's SIGTERM with a device up (it
# goes, raidd exits 0), and a raidd whose raidd.conf says blockdev=ublk
# for that array: the device is there once raidd has started.
# dmesg must show no I/O error.
set -euo pipefail
cd /tmp
d=/tmp/raidvm
mkdir -p "$d/mnt"
R () { "$BUILD/raidctl/raidctl" --control "$d/control.sock" "$@"; }
fio=$TOOLS/fio
fail () { echo "ublk.sh: FAIL: $*" >&2; exit 1; }
step () { echo "== $(cut -d' ' -f1 /proc/uptime) s: $*"; }

step "start"
modprobe ublk_drv
[ -c /dev/ublk-control ] || fail "no /dev/ublk-control after modprobe ublk_drv"
dmesg -C

"$BUILD/raidd/raidd" --foreground --control "$d/control.sock" --nbd-socket "$d/nbd.sock" \
  --threads 2 --ublk-queue-depth 32 > "$d/raidd.log" 2>&1 &
pid=$!
# shellcheck disable=SC2317 # a trap
on_exit ()
{
  local st=$?
  umount "$d/mnt" 2>/dev/null || :
  if kill -0 "$pid" 2>/dev/null; then kill "$pid"; wait "$pid" || :; fi
  [ $st = 0 ] || { echo "--- raidd's log"; cat "$d/raidd.log"; echo "--- dmesg"; dmesg | tail -n 40; }
}
trap on_exit EXIT
for _ in $(seq 100); do R status >/dev/null 2>&1 && break; sleep 0.1; done
step "raidd is up"

# fio_verify DIR SIZE: write SIZE at random in a file of DIR with crc32c
# checksums (direct I/O, 16 in flight), then read it all back checking
# them.  fio exits non-zero on an I/O error or a bad checksum.
fio_verify ()
{
  "$fio" --name=verify --directory="$1" --size="$2" --bs=4k --rw=randwrite \
    --ioengine=libaio --iodepth=16 --direct=1 --verify=crc32c --verify_fatal=1 \
    --verify_state_save=0 > "$d/fio.out" 2>&1 ||
    { cat "$d/fio.out"; fail "fio in $1 failed"; }
  grep -q "err= 0" "$d/fio.out" || { cat "$d/fio.out"; fail "fio in $1: errors"; }
}

# ublk_of NAME: the device raidctl ublk made, checked in status and detail.
ublk_of ()
{
  local out dev
  out=$(R ublk "$1") || fail "raidctl ublk $1 failed"
  dev=${out##* is }
  [[ $dev == /dev/ublkb[0-9]* ]] || fail "raidctl ublk $1 said: $out"
  for _ in $(seq 50); do [ -b "$dev" ] && break; sleep 0.1; done
  [ -b "$dev" ] || fail "$dev is not a block device"
  # Captured, not piped into grep -q (SIGPIPE under pipefail).
  out=$(R status) && grep -q "block device: $dev" <<< "$out" ||
    fail "status does not show $dev: $out"
  out=$(R detail "$1") && grep -q "Block Device : $dev" <<< "$out" ||
    fail "detail does not show $dev: $out"
  out=$(R detail --json "$1") && grep -q "\"ublk\": *\"$dev\"" <<< "$out" ||
    fail "detail --json does not show $dev: $out"
  echo "$dev"
}

# jf JSON KEY: the first field KEY of JSON (a number or a plain string).
jf () { grep -o "\"$2\": *[^,}]*" <<< "$1" | head -n 1 | sed 's/^[^:]*: *//; s/"//g'; }

# expect WHAT GOT WANT
expect () { [ "$2" = "$3" ] || fail "$1: $2, expected $3"; }

# geometry NAME DEV: the device's limits against the array's.
geometry ()
{
  local name=$1 dev=$2 json level chunk disks lbs data iomin ioopt q
  json=$(R detail --json "$name")
  level=$(jf "$json" level) chunk=$(jf "$json" chunk_size)
  disks=$(jf "$json" raid_disks) lbs=$(jf "$json" logical_block_size)
  case $level in
    0) data=$disks ;; 5) data=$((disks - 1)) ;; 10) data=$((disks / 2)) ;; *) data=0 ;;
  esac
  if [ "$data" = 0 ]; then iomin=4096 ioopt=4096; else iomin=$chunk ioopt=$((chunk * data)); fi
  read -r ss pbsz gotmin gotopt < <(blockdev --getss --getpbsz --getiomin --getioopt "$dev" | xargs)
  echo "$name: raid$level, $disks members, chunk $chunk: ss $ss pbsz $pbsz iomin $gotmin ioopt $gotopt"
  expect "$dev logical block size" "$ss" "$lbs"
  expect "$dev physical block size" "$pbsz" 4096
  expect "$dev io_min" "$gotmin" "$iomin"
  expect "$dev io_opt" "$gotopt" "$ioopt"
  expect "$dev size" "$(blockdev --getsize64 "$dev")" "$(jf "$json" size)"
  q=/sys/block/${dev#/dev/}/queue
  expect "$dev fua" "$(cat "$q/fua")" 1
  expect "$dev write_cache" "$(cat "$q/write_cache")" "write back"
  [ "$(cat "$q/write_zeroes_max_bytes")" -gt 0 ] || fail "$dev: no write zeroes"
  if [ "$level" = 5 ]; then
    expect "$dev discard_max_bytes (raid5: none)" "$(cat "$q/discard_max_bytes")" 0
  else
    [ "$(cat "$q/discard_max_bytes")" -gt 0 ] || fail "$dev: no discard on raid$level"
  fi
  expect "$dev read-only" "$(blockdev --getro "$dev")" 0
}

members () { local i; for i in $(seq 0 $(($2 - 1))); do echo "$d/$1-m$i"; done; }

# UBLK_QUICK=1 (a mutation check by hand): RAID 0 only, then done.
levels="0:2 1:2 5:3 10:4"
[ "${UBLK_QUICK:-}" != 1 ] || levels="0:2"
for spec in $levels; do
  level=${spec%:*} n=${spec#*:} name=r$level
  step "raid$level over $n members"
  mapfile -t ms < <(members "$name" "$n")
  for m in "${ms[@]}"; do truncate -s 24M "$m"; done
  R create "$name" --level "$level" --chunk 64K --assume-clean "${ms[@]}" >/dev/null
  dev=$(ublk_of "$name")
  geometry "$name" "$dev"
  mkfs.ext4 -q "$dev"
  mount "$dev" "$d/mnt"
  fio_verify "$d/mnt" 6M
  if R stop "$name" 2> "$d/err"; then fail "stop $name worked while $dev was mounted"; fi
  grep -q "$dev is in use" "$d/err" || fail "stop $name: $(cat "$d/err")"
  if R unublk "$name" 2> "$d/err"; then fail "unublk $name worked while mounted"; fi
  grep -q "in use (mounted?)" "$d/err" || fail "unublk $name: $(cat "$d/err")"
  umount "$d/mnt"
  e2fsck -fn "$dev" > "$d/fsck" 2>&1 || { cat "$d/fsck"; fail "e2fsck $dev"; }
  if [ "$level" = 10 ]; then
    # stop takes an unused device away with the array.
    R stop "$name" > /dev/null
    [ ! -e "$dev" ] || fail "$dev still there after stop"
  else
    R unublk "$name" > /dev/null
    [ ! -e "$dev" ] || fail "$dev still there after unublk"
    R stop "$name" > /dev/null
  fi
  rm -f "${ms[@]}"
done
if [ "${UBLK_QUICK:-}" = 1 ]; then
  echo "ublk: quick: OK"
  exit 0
fi

step "drill: raid5 mounted, fio running: fail, remove, add, rebuild"
mapfile -t ms < <(members d5 3)
for m in "${ms[@]}"; do truncate -s 48M "$m"; done
R create d5 --level 5 --chunk 64K --assume-clean "${ms[@]}" >/dev/null
dev=$(ublk_of d5)
mkfs.ext4 -q "$dev"
mount "$dev" "$d/mnt"
# fio runs, verifying each pass, from before the failure until the rebuild
# is over (however fast this machine is): a pass starts while drill-done
# is not there yet.
rm -f "$d/drill-done"
( passes=0
  while [ ! -e "$d/drill-done" ] || [ $passes = 0 ]; do
    fio_verify "$d/mnt" 8M; passes=$((passes + 1))
  done
  echo "fio: $passes passes, every one verified" ) & fpid=$!
sleep 2
R fail d5 "${ms[1]}" >/dev/null
R remove d5 "${ms[1]}" >/dev/null
R detail d5 | grep -q degraded || fail "d5 is not degraded after fail"
sleep 2                          # fio on the degraded array
R add d5 "${ms[1]}" --force >/dev/null
R wait d5 >/dev/null
touch "$d/drill-done"              # the pass running now is the last
wait "$fpid" || fail "fio during the drill failed"
R detail --test d5 >/dev/null || fail "d5 is not whole after its rebuild"
umount "$d/mnt"
e2fsck -fn "$dev" > "$d/fsck" 2>&1 || { cat "$d/fsck"; fail "e2fsck $dev after the drill"; }

step "refusals"
if R ublk d5 2> "$d/err"; then fail "a second device for d5"; fi
grep -q "already has a ublk device: $dev" "$d/err" || fail "ublk d5 twice: $(cat "$d/err")"
if R ublk nosuch 2> "$d/err"; then fail "ublk for an unknown array"; fi
grep -q "array nosuch is not running" "$d/err" || fail "ublk nosuch: $(cat "$d/err")"

step "stop --force with a device"
R stop --force d5 > /dev/null
[ ! -e "$dev" ] || fail "$dev still there after stop --force"

step "a read-only array"
out=$(R assemble ro5 --readonly --ublk "${ms[@]}") || fail "assemble --ublk ro5 failed"
dev=$(sed -n 's/^raidctl: ro5 is //p' <<< "$out")
[ -b "$dev" ] || fail "assemble --ublk: $out"
expect "$dev read-only" "$(blockdev --getro "$dev")" 1
expect "$dev discard_max_bytes (read-only)" "$(cat "/sys/block/${dev#/dev/}/queue/discard_max_bytes")" 0
dd if="$dev" of=/dev/null bs=1M count=8 status=none
e2fsck -fn "$dev" > "$d/fsck" 2>&1 || { cat "$d/fsck"; fail "e2fsck $dev read-only"; }

step "raidd's SIGTERM with $dev up"
kill "$pid"
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then fail "raidd did not exit within 30 s of SIGTERM"; fi
wait "$pid" || fail "raidd exited $? after SIGTERM"
[ ! -e "$dev" ] || fail "$dev still there after raidd stopped"
grep -q "/dev/ublkb[0-9]* removed" "$d/raidd.log" || fail "raidd did not say it removed $dev"

step "blockdev=ublk: raidd gives a configured array its device at start"
echo "DEVICE ${ms[*]}" > "$d/raidd.conf"
R --config "$d/raidd.conf" examine --scan | sed 's/$/ blockdev=ublk/' >> "$d/raidd.conf"
grep -q "^ARRAY .* blockdev=ublk$" "$d/raidd.conf" || fail "no ARRAY line: $(cat "$d/raidd.conf")"
"$BUILD/raidd/raidd" --foreground --control "$d/control.sock" --nbd-socket "$d/nbd.sock" \
  --config "$d/raidd.conf" --threads 2 --ublk-queue-depth 32 >> "$d/raidd.log" 2>&1 &
pid=$!
# Ready (its second "ready:") once the configured arrays are assembled.
for _ in $(seq 300); do
  [ "$(grep -c "^raidd: ready: " "$d/raidd.log")" = 2 ] && break
  sleep 0.1
done
a=$(awk '/^ARRAY/ { sub("^/dev/md/", "", $2); print $2 }' "$d/raidd.conf")
dev=$(R detail "$a" | sed -n 's/^ *Block Device : \([^ ]*\).*/\1/p')
[[ $dev == /dev/ublkb[0-9]* ]] && [ -b "$dev" ] ||
  fail "blockdev=ublk: no device for $a at start: $(R detail "$a")"
grep -q "$a: $dev ($d/raidd.conf line 2: blockdev=ublk)" "$d/raidd.log" ||
  fail "raidd did not say where $dev came from"
e2fsck -fn "$dev" > "$d/fsck" 2>&1 || { cat "$d/fsck"; fail "e2fsck $dev from blockdev=ublk"; }
kill "$pid"
wait "$pid" || fail "raidd exited $? after SIGTERM"

if dmesg | grep -iE "I/O error|blk_update_request|Buffer I/O|EXT4-fs error"; then
  fail "the kernel logged I/O errors (above)"
fi
echo "ublk: OK"

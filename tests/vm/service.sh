#!/bin/bash
# Guest half of tests/test-vm-service.sh: raidd as a service across
# reboots, one VM boot per step (STEP is $1), on five virtio disks
# (/dev/vda../dev/vde) that keep their contents from one boot to the next.
# raidd and raidctl run from the shared build tree ($BUILD); $SHARE is a
# shared folder for the configuration file, the data and the logs.
#   create    a boot pair (RAID 1, metadata 1.0) on vda+vdb and a RAID 5 on
#             vdc..vde, data written; the configuration file made with
#             raidctl examine --scan -v (DEVICE: the virtio disks).
#   reboot    raidd started with nothing but --config: both arrays back,
#             whole, clean (no resync), every byte as written.
#   degraded  vdb's virtio device is unbound before raidd starts (the disk
#             is missing at boot): raidd waits ASSEMBLE-TIMEOUT, starts the
#             pair degraded, it is written; the device is bound again (a
#             real "add" uevent): raidd takes the disk back and rebuilds
#             it; both disks then hold the same bytes.  Then a drill on the
#             RAID 5 (fail, remove, zero, add, rebuild); the PROGRAM line of
#             the file heard every event (DegradedArray, RebuildStarted,
#             RebuildFinished for the pair; Fail ... SpareActive for par).
set -euo pipefail
step=$1
cd /tmp
d=/tmp/raidvm
mkdir -p "$d"
conf=$SHARE/raidd.conf
R () { "$BUILD/raidctl/raidctl" --config "$([ -e "$conf" ] && echo "$conf" || echo none)" "$@"; }
log=$SHARE/raidd-$step.log
fail () { echo "FAIL ($step): $*" >&2; tail -40 "$log" >&2 || :; exit 1; }

# raidd as the service runs it, in the foreground (no syslog here): it
# says "ready" once the configured arrays are up.
start_raidd ()
{
  "$BUILD/raidd/raidd" --foreground --pidfile "$d/raidd.pid" "$@" >> "$log" 2>&1 &
  for _ in $(seq 600); do grep -q "raidd: ready: " "$log" && return 0; sleep 0.1; done
  fail "raidd did not say it was ready"
}
stop_raidd ()
{
  local pid
  pid=$(cat "$d/raidd.pid")
  kill "$pid"
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  fail "raidd did not stop"
}
uri () { echo "nbd+unix:///$1?socket=/run/raidd/nbd.sock"; }

# The arrays' bytes, read straight from the members (raidd stopped):
# must match FILE over its length.
check_data ()
{
  "$BUILD/tests/raidio" read "$d/back" "${@:2}" || fail "raidio read ${*:2}"
  cmp -n "$(stat -c %s "$1")" "$1" "$d/back" || fail "data differs on ${*:2}"
  rm -f "$d/back"
}

case $step in
create)
  start_raidd --config none
  R create pair --level 1 --metadata 1.0 --assume-clean /dev/vda /dev/vdb
  R create par --level 5 --chunk 64K --assume-clean /dev/vdc /dev/vdd /dev/vde
  R stop pair
  R stop par
  stop_raidd
  head -c 24M /dev/urandom > "$SHARE/data"
  "$BUILD/tests/raidio" write "$SHARE/data" /dev/vda /dev/vdb || fail "raidio write pair"
  "$BUILD/tests/raidio" write "$SHARE/data" /dev/vdc /dev/vdd /dev/vde || fail "raidio write par"
  echo "DEVICE /dev/vd*" > "$conf"
  R examine --scan -v >> "$conf"
  echo "ASSEMBLE-TIMEOUT 5" >> "$conf"
  # mdadm's PROGRAM: every event, as EVENT ARRAY [MEMBER], into a file.
  printf '#!/bin/sh\necho "$*" >> %s/events\n' "$SHARE" > "$SHARE/hook"
  chmod +x "$SHARE/hook"
  echo "PROGRAM $SHARE/hook" >> "$conf"
  cat "$conf"
  ;;
reboot)
  start_raidd --config "$conf"
  R status
  R status | grep -A1 "^pair" | grep -q "\[2/2\] \[UU\]" || fail "pair not back whole"
  R status | grep -A1 "^par" | grep -q "\[3/3\] \[UUU\]" || fail "par not back whole"
  grep -q "configured arrays: 2 of 2 running" "$log" || fail "not 2 of 2"
  if grep -q "needs a resync (new, or not stopped cleanly)" "$log"; then
    fail "a clean stop came back dirty"
  fi
  stop_raidd
  check_data "$SHARE/data" /dev/vda /dev/vdb
  check_data "$SHARE/data" /dev/vdc /dev/vdd /dev/vde
  ;;
degraded)
  dev=$(basename "$(readlink -f /sys/block/vdb/device)")
  echo "$dev" > /sys/bus/virtio/drivers/virtio_blk/unbind
  [ ! -e /sys/block/vdb ] || fail "vdb still there after the unbind"
  start_raidd --config "$conf"
  R status
  R status | grep -A1 "^pair" | grep -q "\[2/1\] \[U_\]" || fail "pair not degraded"
  grep -q "pair: only 1 of 2 members present after [0-9]* s; starting it DEGRADED" "$log" ||
    fail "no last resort for pair"
  # Written while the disk is away (the kernel's NBD client): the rebuild
  # must bring it.
  cp "$SHARE/data" "$d/want"
  head -c 8M /dev/urandom > "$d/new"
  dd if="$d/new" of="$d/want" bs=1M seek=8 conv=notrunc status=none
  modprobe nbd
  nbd-client -unix /run/raidd/nbd.sock -N pair /dev/nbd0 -b 4096 > /dev/null
  dd if="$d/new" of=/dev/nbd0 bs=1M seek=8 oflag=direct status=none
  nbd-client -d /dev/nbd0 > /dev/null
  echo "$dev" > /sys/bus/virtio/drivers/virtio_blk/bind
  for _ in $(seq 100); do [ -e /dev/vdb ] && break; sleep 0.1; done
  for _ in $(seq 300); do
    grep -q "pair: member /dev/vdb is back (events [0-9]*, seen by udev)" "$log" && break
    sleep 0.1
  done
  grep -q "pair: member /dev/vdb is back" "$log" || fail "the disk that came back was not taken"
  R wait pair
  R status | grep -A1 "^pair" | grep -q "\[2/2\] \[UU\]" || fail "pair not whole after the return"
  R scrub pair --wait | grep -q "mismatch_cnt 0" || fail "scrub after the return"
  # A drill on the RAID 5: a disk fails, is removed, comes back as a new one.
  R fail par /dev/vdd
  R remove par /dev/vdd
  R zero /dev/vdd
  R add par /dev/vdd
  R wait par
  R status | grep -A1 "^par" | grep -q "\[3/3\] \[UUU\]" || fail "par not whole after the drill"
  stop_raidd
  # What the PROGRAM line's hook heard, in order for each array.
  cat "$SHARE/events"
  # These events, in this order (others may come between).
  want_events ()
  {
    local array=$1 got
    shift
    got=$(awk -v a="$array" '$2 == a { print $1 }' "$SHARE/events" | tr '\n' ' ')
    awk -v got="$got" -v want="$*" 'BEGIN {
      n = split(got, g, " "); m = split(want, w, " "); j = 1
      for (i = 1; i <= n && j <= m; i++) if (g[i] == w[j]) j++
      exit j <= m }' || fail "$array: events '$got' lack '$*' in that order"
  }
  want_events pair NewArray DegradedArray RebuildStarted RebuildFinished
  want_events par NewArray Fail DegradedArray RebuildStarted Rebuild20 Rebuild40 Rebuild60 \
    Rebuild80 RebuildFinished SpareActive
  grep -q "^Fail par /dev/vdd$" "$SHARE/events" || fail "no Fail par /dev/vdd"
  size=$(R examine --json /dev/vda | tr -d ' \n' | sed -n 's/.*"used_dev_size":\([0-9]*\).*/\1/p')
  [ -n "$size" ] || fail "no used_dev_size in examine --json"
  cmp -n "$size" /dev/vda /dev/vdb || fail "the returned disk is not a copy of the other"
  check_data "$d/want" /dev/vda /dev/vdb
  ;;
*)
  fail "unknown step $step"
  ;;
esac
echo "service $step: OK"

#!/bin/bash
# Description: raidd as a service across real reboots: three boots of a VM
# running Debian's kernel (tests/vm/run), on the same five disk images
# (virtio disks), each running one step of tests/vm/service.sh: arrays made
# and the configuration file written by `raidctl examine --scan -v`; a
# reboot where raidd, given only the file, brings both arrays back whole
# and clean with every byte; a boot with one disk of the mirror missing
# (its virtio device unbound), where raidd starts the pair degraded after
# the timeout, and, when the disk comes back (bound again: a real uevent),
# takes it back and rebuilds it, data written meanwhile included; then a
# drill on the RAID 5; the configuration file's PROGRAM hook must have heard
# DegradedArray, RebuildStarted and RebuildFinished for the pair, and Fail,
# DegradedArray, RebuildStarted, Rebuild20..80, RebuildFinished and
# SpareActive for the RAID 5, in that order.  Run by "make check-vm" (CI
# runs it).
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"

requires_vm
fail () { echo "$0: FAIL: $*" >&2; exit 1; }

mktmpdir raid-vm-service
for i in 0 1 2 3 4; do truncate -s 64M "$tmpdir/disk$i"; done
for step in create reboot degraded; do
  echo "== boot: $step"
  "$vm" --env BUILD="$top_builddir" --env SHARE="$tmpdir" --share "$tmpdir" \
    --disk "$tmpdir/disk0" --disk "$tmpdir/disk1" --disk "$tmpdir/disk2" \
    --disk "$tmpdir/disk3" --disk "$tmpdir/disk4" \
    --libs-of "$top_builddir/raidd/raidd" --libs-of "$top_builddir/raidctl/raidctl" \
    --libs-of "$top_builddir/tests/raidio" \
    --timeout 600 -- "$top_srcdir/tests/vm/service.sh" "$step" ||
    fail "boot $step (tests/vm/service.sh $step) failed: exit $?"
done
echo "$0: OK"

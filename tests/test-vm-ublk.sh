#!/bin/bash
# Description: raidd serves arrays as /dev/ublkbN (ublk): inside a VM
# running bookworm-backports' 6.12 kernel (tests/vm/run --kernel
# backports; Debian 12's own 6.1 has no ublk_drv), tests/vm/ublk.sh makes
# a device for RAID 0, 1, 5 and 10, checks its geometry against the
# array's, runs ext4 and fio --verify=crc32c on it, a drill under fio on
# a mounted RAID 5, the refusals (stop while a device exists, unublk while
# mounted), a read-only array, raidd's SIGTERM with a device up, and
# raidd.conf's blockdev=ublk giving an array its device at raidd's start.
# Run by "make check-vm".
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"

requires_vm
requires fio --version
fail () { echo "$0: FAIL: $*" >&2; exit 1; }

# fio is not in the VM's initramfs (its libraries weigh 80 MB): it runs
# from a shared folder, its libraries copied in for this run.
mktmpdir raid-vm-ublk
cp "$(command -v fio)" "$tmpdir/fio"
vm_run --kernel backports --mem 1536 --env BUILD="$top_builddir" --env TOOLS="$tmpdir" \
  --share "$tmpdir" --libs-of "$tmpdir/fio" \
  --libs-of "$top_builddir/raidd/raidd" --libs-of "$top_builddir/raidctl/raidctl" \
  --timeout 600 -- "$top_srcdir/tests/vm/ublk.sh" ||
  fail "the VM half (tests/vm/ublk.sh) failed: exit $?"
echo "$0: OK"

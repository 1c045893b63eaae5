#!/bin/bash
# Description: raidctl attach / detach, the kernel's NBD client connected
# to arrays by raidd itself over generic netlink: inside a VM running
# Debian's kernel (tests/vm/run), a file system on /dev/nbdN for RAID 0,
# 1, 5 and 10 with fio verifying, a drill under it, stop refused while
# mounted, chosen devices and connections, refusals, raidctl grow
# --size max resizing an attached /dev/nbdN at once (sysfs and blockdev
# show the new size, direct I/O in the new region reads back, a mounted
# ext4 grows online with resize2fs), a RAID 5 restriped from 3 to 4
# members under a mounted ext4 (the device takes the new size by itself
# when the reshape ends), raidd's exit, a
# stale device after kill -9, and raidd.conf's blockdev=/dev/nbd6
# attaching an array at raidd's start (see tests/vm/nbd-attach.sh).  Run
# by "make check-vm" (CI runs it).
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"

requires_vm
requires fio --version
fail () { echo "$0: FAIL: $*" >&2; exit 1; }

# fio is not in the VM's initramfs (its libraries weigh 80 MB): it runs
# from a shared folder, its libraries copied in for this run.
mktmpdir raid-vm-attach
cp "$(command -v fio)" "$tmpdir/fio"
"$vm" --mem 1536 --env BUILD="$top_builddir" --env TOOLS="$tmpdir" \
  --share "$tmpdir" --libs-of "$tmpdir/fio" \
  --libs-of "$top_builddir/raidd/raidd" --libs-of "$top_builddir/raidctl/raidctl" \
  --timeout 900 -- "$top_srcdir/tests/vm/nbd-attach.sh" ||
  fail "the VM half (tests/vm/nbd-attach.sh) failed: exit $?"

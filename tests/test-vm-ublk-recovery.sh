#!/bin/bash
# Description: ublk devices outlive raidd (UBLK_F_USER_RECOVERY with
# _REISSUE): inside a VM running bookworm-backports' 6.12 kernel
# (tests/vm/run --kernel backports), tests/vm/ublk-recovery.sh kills raidd
# with SIGKILL three times under fio --verify=crc32c on ext4 mounted on a
# RAID 5's /dev/ublkbN; a new raidd takes the same device back when the
# array is assembled (twice by raidctl assemble, once by raidd itself at
# its start, from raidd.conf), fio finishes without an error, every block
# verified, e2fsck is clean, dmesg has
# no I/O error.  Then unublk and stop after a recovery, stale and foreign
# records, and SIGTERM deleting the device and its record.  Run by "make
# check-vm".
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"

requires_vm
requires fio --version
fail () { echo "$0: FAIL: $*" >&2; exit 1; }

# fio is not in the VM's initramfs (its libraries weigh 80 MB): it runs
# from a shared folder, its libraries copied in for this run.
mktmpdir raid-vm-ublk-recovery
cp "$(command -v fio)" "$tmpdir/fio"
vm_run --kernel backports --mem 1536 --env BUILD="$top_builddir" --env TOOLS="$tmpdir" \
  --share "$tmpdir" --libs-of "$tmpdir/fio" \
  --libs-of "$top_builddir/raidd/raidd" --libs-of "$top_builddir/raidctl/raidctl" \
  --timeout 900 -- "$top_srcdir/tests/vm/ublk-recovery.sh" ||
  fail "the VM half (tests/vm/ublk-recovery.sh) failed: exit $?"
echo "$0: OK"

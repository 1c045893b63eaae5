#!/bin/bash
# Description: the Linux kernel's NBD client uses an array served by raidd:
# inside a VM running Debian's kernel (shared/vm), nbd-client attaches a
# RAID 5 as /dev/nbd0, mkfs.ext4, mount, write, drop caches, read back
# with checksums, e2fsck clean.  Run by "make check-vm" (CI runs it).
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"

vm=${RAID_VM_RUN:-$top_srcdir/../shared/vm/run}
requires_file "$vm"
requires_root

# raidd and raidctl run from the shared build tree through their libtool
# wrappers; the guest has their libraries but for ISA-L, which goes in.
isal=$(ldconfig -p | awk '/libisal\.so\.2 .*x86-64/ { print $NF; exit }')
[ -n "$isal" ] || { echo "$0: libisal.so.2 not found"; exit 1; }
export VM_EXTRA_FILES="$isal $(readlink -f "$isal")"
"$vm" --env BUILD="$top_builddir" --timeout 600 -- "$top_srcdir/tests/vm/nbd-kernel.sh"
